/* SPDX-License-Identifier: BSD-2-Clause */
/* See ctl_live.h. The status JSON (docs/operations.md "Seeing what
 * runs"): {"instances": [{"panels": [{"tables": [{"name", "columns",
 * "rows"}]}]}]}; the columns are found by name, so a column added later
 * changes nothing here. */
#include "ctl_proxy_live.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

#define LIVE_TOKENS 4096 /* one panel with one row: a few hundred */
#define CELL_MAX 512

int ctl_live_path(const char *id, char *out, size_t cap) {
  int n = snprintf(out, cap,
                   "/v1/status/controlplane_server/proxies/proxies?key=%s",
                   id);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Element k of array a, or -1. */
static long at(const json_doc *d, long a, uint32_t k) {
  if (a < 0 || json_type_of(d, (size_t)a) != JSON_ARRAY ||
      k >= d->toks[a].size)
    return -1;
  size_t i = (size_t)a + 1;
  for (uint32_t j = 0; j < k; j++)
    i = d->toks[i].next;
  return (long)i;
}

static long get(const json_doc *d, long obj, const char *key) {
  return obj < 0 ? -1 : json_get(d, (size_t)obj, key);
}

/* Cell v as text: a string, a number, "" for null or anything else. */
static void cell(const json_doc *d, long v, char *out, size_t cap) {
  out[0] = '\0';
  int t = v < 0 ? 0 : json_type_of(d, (size_t)v);
  if (t == JSON_STRING) {
    if (json_str(d, (size_t)v, out, cap) < 0)
      snprintf(out, cap, "?");
  } else if (t == JSON_NUMBER) {
    int64_t x;
    if (json_int(d, (size_t)v, &x) == 0)
      snprintf(out, cap, "%lld", (long long)x);
  }
}

/* The "proxies" table of the first panel of the first instance. */
static long table_of(const json_doc *d) {
  long panels = get(d, at(d, get(d, 0, "instances"), 0), "panels");
  long tables = get(d, at(d, panels, 0), "tables");
  for (uint32_t k = 0; tables >= 0 && k < d->toks[tables].size; k++) {
    long t = at(d, tables, k);
    long name = get(d, t, "name");
    if (name >= 0 && json_str_eq(d, (size_t)name, "proxies"))
      return t;
  }
  return -1;
}

static int print_row(FILE *out, const json_doc *d, long cols, long row) {
  static const char *const want[] = {"owner",        "state_basic",
                                     "state_egress", "state_target",
                                     "capacity",     "active",
                                     "last_outcome"};
  char v[7][CELL_MAX];
  for (int w = 0; w < 7; w++) {
    v[w][0] = '\0';
    for (uint32_t c = 0; c < d->toks[cols].size; c++) {
      long name = at(d, cols, c);
      if (json_type_of(d, (size_t)name) == JSON_STRING &&
          json_str_eq(d, (size_t)name, want[w])) {
        cell(d, at(d, row, c), v[w], sizeof(v[w]));
        break;
      }
    }
  }
#define OR_DASH(s) ((s)[0] ? (s) : "-")
  fprintf(out, "owner: %s\n", OR_DASH(v[0]));
  fprintf(out, "state: basic=%s egress=%s target=%s\n", OR_DASH(v[1]),
          OR_DASH(v[2]), OR_DASH(v[3]));
  fprintf(out, "capacity/active: %s/%s\n", OR_DASH(v[4]), OR_DASH(v[5]));
  fprintf(out, "last_outcome: %s\n", OR_DASH(v[6]));
#undef OR_DASH
  return 1;
}

int ctl_print_live(FILE *out, const char *body, size_t len, const char *id) {
  json_tok *toks = malloc(LIVE_TOKENS * sizeof(*toks));
  json_doc d;
  if (!toks ||
      json_parse(&d, body, len, toks, LIVE_TOKENS, 16, NULL) != JSON_OK ||
      json_type_of(&d, 0) != JSON_OBJECT) {
    free(toks);
    return -1;
  }
  int rc = 0;
  long t = table_of(&d);
  long cols = get(&d, t, "columns"), rows = get(&d, t, "rows");
  if (cols >= 0 && json_type_of(&d, (size_t)cols) == JSON_ARRAY)
    for (uint32_t k = 0; rows >= 0 && rc == 0 && k < d.toks[rows].size;
         k++) {
      long row = at(&d, rows, k);
      long first = at(&d, row, 0);
      if (first >= 0 && json_type_of(&d, (size_t)first) == JSON_STRING &&
          json_str_eq(&d, (size_t)first, id))
        rc = print_row(out, &d, cols, row);
    }
  free(toks);
  return rc;
}

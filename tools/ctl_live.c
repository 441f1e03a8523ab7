/* SPDX-License-Identifier: BSD-2-Clause */
/* See ctl_live.h. */
#include "ctl_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_print.h"
#include "lib/json.h"

/* The first table of the answer's first panel of its first instance (the
 * host answers /v1/status/I/P/T with that panel holding that table only),
 * or -1. */
static long first_table(const json_doc *d) {
  long v = json_type_of(d, 0) == JSON_OBJECT ? json_get(d, 0, "instances")
                                             : -1;
  static const char *const path[] = {"panels", "tables"};
  for (int step = 0; step < 3; step++) {
    if (v < 0 || json_type_of(d, (size_t)v) != JSON_ARRAY ||
        d->toks[v].size == 0 || json_type_of(d, (size_t)v + 1) != JSON_OBJECT)
      return -1;
    v = step < 2 ? json_get(d, (size_t)v + 1, path[step]) : v + 1;
  }
  return v;
}

/* Parses body into x and finds the answer's table (first_table) and its
 * rows array (*rows, -1 when none): the table's token, -1 when there is
 * none (x to free), -2 when body is not JSON (nothing to free). */
static long read_table(ctl_doc *x, const char *body, size_t len,
                       long *rows) {
  *rows = -1;
  if (ctl_json_parse(x, body, len) < 0)
    return -2;
  long t = first_table(&x->d);
  long r = t < 0 ? -1 : json_get(&x->d, (size_t)t, "rows");
  if (r >= 0 && json_type_of(&x->d, (size_t)r) == JSON_ARRAY)
    *rows = r;
  return t;
}

/* The index of column name in table t's columns, or -1 (none, no t). */
static long column(const json_doc *d, long t, const char *name) {
  long cols = t < 0 ? -1 : json_get(d, (size_t)t, "columns");
  if (cols < 0 || json_type_of(d, (size_t)cols) != JSON_ARRAY)
    return -1;
  size_t k = (size_t)cols + 1;
  for (uint32_t i = 0; i < d->toks[cols].size; i++, k = d->toks[k].next)
    if (json_str_eq(d, k, name))
      return (long)i;
  return -1;
}

/* Token of cell c of row r, or -1. */
static long cell(const json_doc *d, size_t r, long c) {
  if (c < 0 || json_type_of(d, r) != JSON_ARRAY ||
      (uint32_t)c >= d->toks[r].size)
    return -1;
  size_t k = r + 1;
  for (long i = 0; i < c; i++)
    k = d->toks[k].next;
  return (long)k;
}

/* Cell c of row r as text shown on a terminal (a control or non-ASCII
 * byte as '?'), "" when it is not a string. */
static void text_cell(const json_doc *d, size_t r, long c, char *out,
                      size_t cap) {
  long k = cell(d, r, c);
  if (k < 0 || json_str(d, (size_t)k, out, cap) < 0)
    out[0] = '\0';
  for (char *q = out; *q; q++)
    if ((unsigned char)*q < 0x20 || *q == 0x7f || (*q & 0x80))
      *q = '?';
}

long ctl_live_page(const char *body, size_t len, ctl_live_agent *a, size_t n,
                   int *more, int64_t *offset) {
  *more = 0;
  *offset = 0;
  ctl_doc x;
  long rows, t = read_table(&x, body, len, &rows);
  if (t == -2)
    return -1;
  long id = column(&x.d, t, "agent");
  long node = column(&x.d, t, "node");
  long online = column(&x.d, t, "online");
  long seen = column(&x.d, t, "last_seen_at");
  if (id < 0 || rows < 0) {
    free(x.toks);
    return -1;
  }
  long mv = json_get(&x.d, (size_t)t, "more");
  long ov = json_get(&x.d, (size_t)t, "offset");
  if (mv < 0 || json_bool(&x.d, (size_t)mv, more) < 0)
    *more = 0;
  if (ov < 0 || json_int(&x.d, (size_t)ov, offset) < 0 || *offset < 0)
    *offset = 0;
  size_t r = (size_t)rows + 1;
  uint32_t nrow = x.d.toks[rows].size;
  for (uint32_t i = 0; i < nrow; i++, r = x.d.toks[r].next) {
    long c = cell(&x.d, r, id);
    char name[CTL_LIVE_NAME_MAX + 1], on[8] = "yes";
    if (c < 0 || json_str(&x.d, (size_t)c, name, sizeof(name)) <= 0)
      continue;
    /* No online column (a server before it): every row is online. */
    if (online >= 0)
      text_cell(&x.d, r, online, on, sizeof(on));
    int yes = strcmp(on, "yes") == 0, no = strcmp(on, "no") == 0;
    for (size_t k = 0; k < n; k++) {
      if (strcmp(a[k].name, name) != 0)
        continue;
      if (yes) { /* online somewhere wins over a node it left */
        a[k].online = 1;
        text_cell(&x.d, r, node, a[k].node, sizeof(a[k].node));
      } else if (no && !a[k].online) {
        text_cell(&x.d, r, seen, a[k].last_seen, sizeof(a[k].last_seen));
      }
    }
  }
  free(x.toks);
  return (long)nrow;
}

static int instance_ok(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.'))
      return 0;
  return 1;
}

long ctl_live_servers(const char *body, size_t len,
                      char names[][CTL_LIVE_INSTANCE_MAX + 1], size_t max) {
  ctl_doc x;
  long rows, t = read_table(&x, body, len, &rows);
  if (t == -2)
    return -1;
  long inst = column(&x.d, t, "instance"), mod = column(&x.d, t, "module");
  if (inst < 0 || mod < 0 || rows < 0) {
    free(x.toks);
    return -1;
  }
  size_t found = 0, r = (size_t)rows + 1;
  uint32_t nrow = x.d.toks[rows].size;
  for (uint32_t i = 0; i < nrow && found < max; i++, r = x.d.toks[r].next) {
    long m = cell(&x.d, r, mod), c = cell(&x.d, r, inst);
    if (m < 0 || c < 0 || !json_str_eq(&x.d, (size_t)m, "tunnel_server"))
      continue;
    if (json_str(&x.d, (size_t)c, names[found], CTL_LIVE_INSTANCE_MAX + 1) >
            0 &&
        instance_ok(names[found]))
      found++;
  }
  free(x.toks);
  return (long)found;
}

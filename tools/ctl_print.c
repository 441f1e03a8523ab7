/* SPDX-License-Identifier: BSD-2-Clause */
/* See ctl_print.h. */
#include "ctl_print.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/bw.h"
#include "lib/json.h"

#define VALUE_MAX 512

static const char *const user_cols[] = {"name", "owner", "enabled",
                                        "created_at", NULL};
static const char *const token_cols[] = {"id", "user", "agent", "scopes",
                                         "expires_at", "revoked_at", NULL};
static const char *const agent_cols[] = {"name", "owner", "enabled",
                                         "created_at", NULL};
static const char *const policy_cols[] = {"id", "agent", "subject_kind",
                                          "subject", "host_pattern",
                                          "port_min", "port_max", NULL};

static const char *const proxy_cols[] = {"proxy_id", "protocol", "host",
                                         "port", "groups", "capacity",
                                         "secret_ref", "admin_state",
                                         "health", NULL};
static const char *const route_cols[] = {"position", "rule_id", "enabled",
                                         "host_pattern", "target_group",
                                         "strategy", "on_unavailable", NULL};
static const char *const cred_cols[] = {"secret_ref", "credential_version",
                                        NULL};

const char *const *ctl_columns(const char *collection) {
  if (strcmp(collection, "pool/proxies") == 0)
    return proxy_cols;
  if (strcmp(collection, "pool/routes") == 0)
    return route_cols;
  if (strcmp(collection, "pool/credentials") == 0)
    return cred_cols;
  if (strcmp(collection, "users") == 0)
    return user_cols;
  if (strcmp(collection, "tokens") == 0)
    return token_cols;
  if (strcmp(collection, "agents") == 0)
    return agent_cols;
  return policy_cols;
}

int ctl_json_parse(ctl_doc *x, const char *body, size_t len) {
  size_t n = len / 2 + 16;
  x->toks = malloc(n * sizeof(*x->toks));
  if (!x->toks)
    return -1;
  if (json_parse(&x->d, body, len, x->toks, n, 16, NULL) != JSON_OK) {
    free(x->toks);
    x->toks = NULL;
    return -1;
  }
  return 0;
}

void ctl_value_text(const json_doc *d, long v, const char *key, char *out,
                    size_t cap) {
  out[0] = '\0';
  if (v < 0)
    return;
  size_t kl = strlen(key);
  int is_time = kl > 3 && strcmp(key + kl - 3, "_at") == 0;
  switch (json_type_of(d, (size_t)v)) {
  case JSON_STRING:
    if (json_str(d, (size_t)v, out, cap) < 0)
      snprintf(out, cap, "?");
    return;
  case JSON_NULL:
    snprintf(out, cap, "-");
    return;
  case JSON_TRUE:
    snprintf(out, cap, "yes");
    return;
  case JSON_FALSE:
    snprintf(out, cap, "no");
    return;
  case JSON_NUMBER: {
    int64_t x = 0;
    if (is_time && json_int(d, (size_t)v, &x) == 0) {
      if (x == 0) {
        snprintf(out, cap, "-");
        return;
      }
      time_t t = (time_t)x;
      struct tm tm;
      gmtime_r(&t, &tm);
      strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
      return;
    }
    const json_tok *t = &d->toks[v];
    snprintf(out, cap, "%.*s", (int)(t->end - t->start), d->text + t->start);
    return;
  }
  case JSON_ARRAY: {
    size_t k = (size_t)v + 1;
    ph_bw w;
    ph_bw_init(&w, out, cap, PH_BW_TEXT);
    for (uint32_t i = 0; i < d->toks[v].size; i++, k = d->toks[k].next) {
      char item[VALUE_MAX];
      ctl_value_text(d, (long)k, "", item, sizeof(item));
      if (ph_bw_printf(&w, "%s%s", i ? "," : "", item) < 0)
        break; /* the items that fit, whole */
    }
    if (d->toks[v].size == 0)
      snprintf(out, cap, "-");
    return;
  }
  case JSON_OBJECT: { /* "key=value" for each member but nulls */
    size_t k = (size_t)v + 1;
    ph_bw w;
    ph_bw_init(&w, out, cap, PH_BW_TEXT);
    int any = 0;
    for (uint32_t i = 0; i < d->toks[v].size; i++, k = d->toks[k + 1].next) {
      char name[64], item[VALUE_MAX];
      if (json_type_of(d, k + 1) == JSON_NULL ||
          json_str(d, k, name, sizeof(name)) < 0)
        continue;
      ctl_value_text(d, (long)(k + 1), name, item, sizeof(item));
      if (ph_bw_printf(&w, "%s%s=%s", any ? " " : "", name, item) < 0)
        break;
      any = 1;
    }
    return;
  }
  default:
    snprintf(out, cap, "...");
  }
}

static void print_object(FILE *out, const json_doc *d, size_t obj) {
  size_t k = obj + 1;
  for (uint32_t m = 0; m < d->toks[obj].size; m++) {
    char key[64], val[VALUE_MAX];
    if (json_str(d, k, key, sizeof(key)) < 0)
      snprintf(key, sizeof(key), "?");
    size_t v = k + 1;
    if (json_type_of(d, v) == JSON_ARRAY && d->toks[v].size > 0 &&
        json_type_of(d, v + 1) == JSON_OBJECT) {
      /* a list of objects (a proxy's health_items): one line each */
      size_t e = v + 1;
      for (uint32_t i = 0; i < d->toks[v].size; i++, e = d->toks[e].next) {
        ctl_value_text(d, (long)e, key, val, sizeof(val));
        fprintf(out, "%-12s %s\n", key, val);
      }
    } else {
      ctl_value_text(d, (long)v, key, val, sizeof(val));
      fprintf(out, "%-12s %s\n", key, val);
    }
    k = d->toks[k + 1].next;
  }
}

int ctl_print_record(FILE *out, const char *body, size_t len) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0 || json_type_of(&x.d, 0) != JSON_OBJECT) {
    free(x.toks);
    return -1;
  }
  long tok = json_get(&x.d, 0, "token");
  long bearer = json_get(&x.d, 0, "bearer");
  long item = json_get(&x.d, 0, "item"); /* the pool's {"item", "revision"} */
  long rev = json_get(&x.d, 0, "revision");
  if (item > 0 && json_type_of(&x.d, (size_t)item) == JSON_OBJECT) {
    print_object(out, &x.d, (size_t)item);
    if (rev > 0) {
      char v[64];
      ctl_value_text(&x.d, rev, "revision", v, sizeof(v));
      fprintf(out, "%-12s %s\n", "revision", v);
    }
  } else if (tok > 0 && bearer > 0) {
    print_object(out, &x.d, (size_t)tok);
    char b[256];
    ctl_value_text(&x.d, bearer, "bearer", b, sizeof(b));
    fprintf(out, "%-12s %s\n", "bearer", b);
    fprintf(out, "This bearer token is shown once and will not be shown "
                 "again: store it now.\n");
  } else {
    print_object(out, &x.d, 0);
  }
  free(x.toks);
  return 0;
}

int ctl_print_extraction(FILE *out, const char *body, size_t len) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0 || json_type_of(&x.d, 0) != JSON_OBJECT) {
    free(x.toks);
    return -1;
  }
  char state[32], id[VALUE_MAX];
  ctl_value_text(&x.d, json_get(&x.d, 0, "state"), "state", state, sizeof(state));
  ctl_value_text(&x.d, json_get(&x.d, 0, "proxy_id"), "proxy_id", id, sizeof(id));
  print_object(out, &x.d, 0);
  if (strcmp(state, "reclaiming") == 0)
    fprintf(out, "The owner drains it first; it is extracted once its "
                 "streams are done: see proxyhostctl proxy extraction %s\n",
            id);
  free(x.toks);
  return 0;
}

int ctl_print_list(FILE *out, const char *body, size_t len,
                   const char *const *columns) {
  return ctl_print_list_ex(out, body, len, columns, NULL, NULL, NULL);
}

/* Cell (row r, column c) of the list: an item's member, or one of the
 * caller's columns after them. */
static void cell_of(const json_doc *d, size_t item, uint32_t r, size_t c,
                    const char *const *columns, size_t nitem_cols,
                    ctl_extra_fn extra, void *arg, char *v, size_t cap) {
  if (c < nitem_cols)
    ctl_value_text(d, json_get(d, item, columns[c]), columns[c], v, cap);
  else
    extra(arg, r, c - nitem_cols, v, cap);
}

int ctl_print_list_ex(FILE *out, const char *body, size_t len,
                      const char *const *item_columns,
                      const char *const *extra_columns, ctl_extra_fn extra,
                      void *arg) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0) {
    free(x.toks);
    return -1;
  }
  long items = json_get(&x.d, 0, "items");
  if (json_type_of(&x.d, (size_t)(items < 0 ? 0 : items)) != JSON_ARRAY ||
      items < 0) {
    free(x.toks);
    return -1;
  }
  const char *columns[16];
  size_t ncol = 0, nitem = 0;
  for (; item_columns[nitem] && ncol < 16; nitem++)
    columns[ncol++] = item_columns[nitem];
  for (size_t e = 0; extra && extra_columns && extra_columns[e] && ncol < 16;
       e++)
    columns[ncol++] = extra_columns[e];
  uint32_t nrow = x.d.toks[items].size;
  /* Widths from the header and every cell. */
  size_t width[16] = {0};
  for (size_t c = 0; c < ncol; c++)
    width[c] = strlen(columns[c]);
  size_t k = (size_t)items + 1;
  for (uint32_t r = 0; r < nrow; r++, k = x.d.toks[k].next)
    for (size_t c = 0; c < ncol; c++) {
      char v[VALUE_MAX];
      cell_of(&x.d, k, r, c, columns, nitem, extra, arg, v, sizeof(v));
      if (strlen(v) > width[c])
        width[c] = strlen(v);
    }
  for (size_t c = 0; c < ncol; c++) {
    char up[64];
    size_t i = 0;
    for (; columns[c][i] && i + 1 < sizeof(up); i++)
      up[i] = (char)(columns[c][i] >= 'a' && columns[c][i] <= 'z'
                         ? columns[c][i] - 32
                         : columns[c][i]);
    up[i] = '\0';
    if (c + 1 < ncol)
      fprintf(out, "%-*s  ", (int)width[c], up);
    else
      fprintf(out, "%s\n", up);
  }
  k = (size_t)items + 1;
  for (uint32_t r = 0; r < nrow; r++, k = x.d.toks[k].next)
    for (size_t c = 0; c < ncol; c++) {
      char v[VALUE_MAX];
      cell_of(&x.d, k, r, c, columns, nitem, extra, arg, v, sizeof(v));
      if (c + 1 < ncol)
        fprintf(out, "%-*s  ", (int)width[c], v);
      else
        fprintf(out, "%s\n", v);
    }
  int more = 0;
  long mv = json_get(&x.d, 0, "more");
  if (mv > 0 && json_bool(&x.d, (size_t)mv, &more) == 0 && more) {
    char next[VALUE_MAX];
    ctl_value_text(&x.d, json_get(&x.d, 0, "next_after"), "", next, sizeof(next));
    fprintf(out, "(more: add --after %s)\n", next);
  }
  free(x.toks);
  return 0;
}

int ctl_api_error(const char *body, size_t len, char *code, size_t ccap,
                  char *msg, size_t mcap) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0)
    return 0;
  long e = json_get(&x.d, 0, "error");
  long c = e > 0 ? json_get(&x.d, (size_t)e, "code") : -1;
  long m = e > 0 ? json_get(&x.d, (size_t)e, "message") : -1;
  int yes = c > 0 && m > 0 && json_str(&x.d, (size_t)c, code, ccap) > 0 &&
            json_str(&x.d, (size_t)m, msg, mcap) >= 0;
  free(x.toks);
  return yes;
}

int ctl_print_error(FILE *err, int status, const char *body, size_t len) {
  char code[64], msg[VALUE_MAX];
  if (ctl_api_error(body, len, code, sizeof(code), msg, sizeof(msg))) {
    fprintf(err, "error: %d %s: %s\n", status, code, msg);
    return 1;
  }
  fprintf(err, "error: the server answered %d\n", status);
  return 0;
}

int ctl_string_field_is(const char *body, size_t len, const char *key,
                        const char *want) {
  ctl_doc x;
  if (ctl_json_parse(&x, body, len) < 0)
    return 0;
  int yes = 0;
  if (json_type_of(&x.d, 0) == JSON_OBJECT) {
    long v = json_get(&x.d, 0, key);
    yes = v >= 0 && json_str_eq(&x.d, (size_t)v, want);
  }
  free(x.toks);
  return yes;
}

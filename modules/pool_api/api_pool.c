/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_pool.h. */
#include "api_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_kit/admin_http.h"
#include "lib/json.h"
#include "store_common/pool_validate.h"

#define POOL_BODY_TOKENS 96
#define POOL_BODY_DEPTH 3
#define POOL_LIST_DEFAULT 100
/* The bytes one row takes at most as JSON (a host 255, 8 groups of 64,
 * escapes at most 6 bytes each, field names). */
#define POOL_ROW_JSON_MAX 6000

static const char *const protocols[] = {NULL, "http_connect", "socks5",
                                        "http"};
static const char *const states[] = {NULL, "active", "draining", "disabled"};
static const char *const unavail[] = {NULL, "reject", "wait", "direct"};

static int name_index(const char *const *names, int n, const char *s) {
  for (int i = 1; i < n; i++)
    if (strcmp(names[i], s) == 0)
      return i;
  return 0;
}

/* ---- answers ------------------------------------------------------------- */

static void reply_error(api_pool_call *c, int http, const char *code,
                        const char *message) {
  char buf[600];
  size_t n = api_write_error(buf, sizeof(buf), code, message);
  c->reply(c->arg, http, buf, n);
}

static void store_error(api_pool_call *c, int status, const char *detail) {
  switch (status) {
  case PH_EINVAL:
    reply_error(c, 400, "invalid", detail ? detail : "the request is not valid");
    return;
  case PH_ENOENT:
    reply_error(c, 404, "not_found", detail ? detail : "no such record");
    return;
  case PH_EEXIST:
    reply_error(c, 409, "conflict", detail ? detail : "the id is taken");
    return;
  case PH_EBUSY:
    reply_error(c, 409, "busy", detail ? detail : "the record is in use");
    return;
  case PH_ESTATE:
    reply_error(c, 409, "conflict",
                "the pool changed while this request ran; try again");
    return;
  case PH_ELIMIT:
    reply_error(c, 409, "conflict", detail ? detail : "a bound of the pool");
    return;
  case PH_EFULL:
    reply_error(c, 503, "busy",
                "the store has too many calls in flight; try again");
    return;
  case PH_AZ_EUNAVAILABLE:
    reply_error(c, 503, "unavailable",
                "the store is unavailable; nothing was changed");
    return;
  case PH_AZ_EOUTCOME:
    reply_error(c, 500, "outcome_unknown",
                "the connection to the database was lost during the commit: "
                "the change may or may not have been made; list to check");
    return;
  }
  reply_error(c, 500, "internal", "the store failed");
}

/* Whether a proxy can be delivered as far as the controller can tell
 * here (issue 23 item 6): not when disabled, nor when its credential
 * cannot be read (cp.credentials, when [pool_api] credentials names a
 * loaded controller). "usable" and "unusable_reason" (null when usable). */
static void write_usable(json_w *w, const api_pool_call *c,
                         const ph_pool_proxy_row *p) {
  const char *why = NULL;
  if (p->admin_state == PH_POOL_ADMIN_DISABLED)
    why = "disabled";
  else if (c->cred && p->secret_ref[0])
    why = c->cred->problem(c->cred_self, p->secret_ref,
                           p->credential_version);
  json_w_kbool(w, "usable", why == NULL);
  json_w_kstr(w, "unusable_reason", why);
}

static void write_proxy(json_w *w, const api_pool_call *c,
                        const ph_pool_proxy_row *p) {
  json_w_obj(w);
  json_w_kstr(w, "proxy_id", p->proxy_id);
  json_w_kstr(w, "protocol",
              p->protocol >= 1 && p->protocol <= 3 ? protocols[p->protocol]
                                                   : NULL);
  json_w_kstr(w, "host", p->host);
  json_w_kint(w, "port", p->port);
  json_w_key(w, "groups");
  json_w_arr(w);
  for (uint32_t i = 0; i < p->n_groups && i < PH_POOL_GROUPS_MAX; i++)
    json_w_str(w, p->groups[i]);
  json_w_arr_end(w);
  json_w_kstr(w, "zone", p->zone);
  json_w_kuint(w, "capacity", p->capacity);
  json_w_kuint(w, "weight", p->weight);
  json_w_kint(w, "expires_at_ms", p->expires_at_ms);
  json_w_kstr(w, "secret_ref", p->secret_ref[0] ? p->secret_ref : NULL);
  json_w_kuint(w, "credential_version", p->credential_version);
  json_w_kstr(w, "admin_state",
              p->admin_state >= 1 && p->admin_state <= 3
                  ? states[p->admin_state]
                  : NULL);
  write_usable(w, c, p);
  json_w_obj_end(w);
}

static void write_route(json_w *w, const ph_pool_route_row *r) {
  json_w_obj(w);
  json_w_kstr(w, "rule_id", r->rule_id);
  json_w_kuint(w, "position", r->position);
  json_w_kbool(w, "enabled", r->enabled);
  json_w_kstr(w, "host_pattern", r->host_pattern);
  json_w_kint(w, "port_min", r->port_min);
  json_w_kint(w, "port_max", r->port_max);
  json_w_kstr(w, "client_identity", r->client_identity);
  json_w_kstr(w, "listener", r->listener);
  json_w_kstr(w, "target_group", r->target_group);
  json_w_kstr(w, "strategy", r->strategy);
  json_w_kstr(w, "on_unavailable",
              r->on_unavailable >= 1 && r->on_unavailable <= 3
                  ? unavail[r->on_unavailable]
                  : NULL);
  json_w_kuint(w, "wait_timeout_ms", r->wait_timeout_ms);
  json_w_kstr(w, "sticky_key", r->sticky_key);
  json_w_obj_end(w);
}

static void write_cred(json_w *w, const ph_pool_credential_ref *c) {
  json_w_obj(w);
  json_w_kstr(w, "secret_ref", c->secret_ref);
  json_w_kuint(w, "credential_version", c->credential_version);
  json_w_obj_end(w);
}

static void write_row(json_w *w, const api_pool_call *c, int kind,
                      const void *row) {
  if (kind == PH_POOL_KIND_PROXY)
    write_proxy(w, c, row);
  else if (kind == PH_POOL_KIND_ROUTE)
    write_route(w, row);
  else
    write_cred(w, row);
}

static void reply_doc(api_pool_call *c, int http, char *buf, json_w *w) {
  long n = json_w_finish(w);
  if (n < 0)
    reply_error(c, 500, "internal", "the answer could not be written");
  else
    c->reply(c->arg, http, buf, (size_t)n);
}

/* ---- bodies -------------------------------------------------------------- */

static const char *const proxy_fields[] = {
    "proxy_id", "protocol", "host",       "port",       "groups",
    "zone",     "capacity", "weight",     "expires_at_ms", "secret_ref",
    "admin_state", NULL};
static const char *const route_fields[] = {
    "rule_id",     "position",        "enabled",  "host_pattern",
    "port_min",    "port_max",        "client_identity", "listener",
    "target_group", "strategy",       "on_unavailable", "wait_timeout_ms",
    "sticky_key",  NULL};
static const char *const cred_fields[] = {"secret_ref", "credential_version",
                                          NULL};

typedef struct reader {
  json_doc d;
  const char *msg;
} reader;

static int str_field(reader *r, const char *key, char *out, size_t cap,
                     int nullable) {
  long v = json_get(&r->d, 0, key);
  if (v < 0)
    return 0;
  if (nullable && json_type_of(&r->d, (size_t)v) == JSON_NULL) {
    out[0] = '\0';
    return 1;
  }
  if (json_str(&r->d, (size_t)v, out, cap) < 0) {
    r->msg = "a text field is not a string or is too long";
    return -1;
  }
  return 1;
}

static int int_field(reader *r, const char *key, int64_t lo, int64_t hi,
                     int64_t *out) {
  long v = json_get(&r->d, 0, key);
  if (v < 0)
    return 0;
  if (json_int(&r->d, (size_t)v, out) < 0 || *out < lo || *out > hi) {
    r->msg = "a number is not an integer or out of its bounds";
    return -1;
  }
  return 1;
}

static int enum_field(reader *r, const char *key, const char *const *names,
                      int *out) {
  char s[32];
  int got = str_field(r, key, s, sizeof(s), 0);
  if (got <= 0)
    return got;
  int i = name_index(names, 4, s);
  if (!i) {
    r->msg = "an enumerated field has a value it does not take";
    return -1;
  }
  *out = i;
  return 1;
}

/* Applies the body's fields to the row (create: onto defaults; PATCH:
 * onto the stored row). Keys are read only when key_ok. 0 or -1 (msg). */
static int apply_proxy(reader *r, ph_pool_proxy_row *p, int key_ok) {
  int64_t v;
  int rc;
  if (key_ok && str_field(r, "proxy_id", p->proxy_id, sizeof(p->proxy_id), 0) < 0)
    return -1;
  if (enum_field(r, "protocol", protocols, &p->protocol) < 0 ||
      str_field(r, "host", p->host, sizeof(p->host), 0) < 0 ||
      str_field(r, "zone", p->zone, sizeof(p->zone), 1) < 0 ||
      str_field(r, "secret_ref", p->secret_ref, sizeof(p->secret_ref), 1) < 0 ||
      enum_field(r, "admin_state", states, &p->admin_state) < 0)
    return -1;
  if ((rc = int_field(r, "port", 0, 65535, &v)) < 0)
    return -1;
  if (rc)
    p->port = (uint16_t)v;
  if ((rc = int_field(r, "capacity", 0, UINT32_MAX, &v)) < 0)
    return -1;
  if (rc)
    p->capacity = (uint32_t)v;
  if ((rc = int_field(r, "weight", 0, UINT32_MAX, &v)) < 0)
    return -1;
  if (rc)
    p->weight = (uint32_t)v;
  if ((rc = int_field(r, "expires_at_ms", -1, INT64_MAX, &v)) < 0)
    return -1;
  if (rc)
    p->expires_at_ms = v;
  long g = json_get(&r->d, 0, "groups");
  if (g >= 0) {
    const json_doc *d = &r->d;
    if (json_type_of(d, (size_t)g) != JSON_ARRAY ||
        d->toks[g].size > PH_POOL_GROUPS_MAX) {
      r->msg = "groups must be an array of 1..8 names";
      return -1;
    }
    memset(p->groups, 0, sizeof(p->groups));
    p->n_groups = d->toks[g].size;
    size_t k = (size_t)g + 1;
    for (uint32_t i = 0; i < p->n_groups; i++, k = d->toks[k].next)
      if (json_str(d, k, p->groups[i], sizeof(p->groups[i])) < 0) {
        r->msg = "groups must be an array of 1..8 names";
        return -1;
      }
  }
  return 0;
}

static int apply_route(reader *r, ph_pool_route_row *q, int key_ok) {
  int64_t v;
  int rc;
  if (key_ok) {
    if (str_field(r, "rule_id", q->rule_id, sizeof(q->rule_id), 0) < 0)
      return -1;
    if ((rc = int_field(r, "position", 0, UINT32_MAX, &v)) < 0)
      return -1;
    if (rc)
      q->position = (uint32_t)v;
  }
  long e = json_get(&r->d, 0, "enabled");
  if (e >= 0 && json_bool(&r->d, (size_t)e, &q->enabled) < 0) {
    r->msg = "enabled must be true or false";
    return -1;
  }
  if (str_field(r, "host_pattern", q->host_pattern, sizeof(q->host_pattern), 0) < 0 ||
      str_field(r, "client_identity", q->client_identity,
                sizeof(q->client_identity), 1) < 0 ||
      str_field(r, "listener", q->listener, sizeof(q->listener), 1) < 0 ||
      str_field(r, "target_group", q->target_group, sizeof(q->target_group), 0) < 0 ||
      str_field(r, "strategy", q->strategy, sizeof(q->strategy), 0) < 0 ||
      str_field(r, "sticky_key", q->sticky_key, sizeof(q->sticky_key), 1) < 0 ||
      enum_field(r, "on_unavailable", unavail, &q->on_unavailable) < 0)
    return -1;
  if ((rc = int_field(r, "port_min", 0, 65535, &v)) < 0)
    return -1;
  if (rc)
    q->port_min = (uint16_t)v;
  if ((rc = int_field(r, "port_max", 0, 65535, &v)) < 0)
    return -1;
  if (rc)
    q->port_max = (uint16_t)v;
  if ((rc = int_field(r, "wait_timeout_ms", 0, UINT32_MAX, &v)) < 0)
    return -1;
  if (rc)
    q->wait_timeout_ms = (uint32_t)v;
  return 0;
}

/* Parses the body: an object with only the kind's fields (patch: not the
 * keys). 0 or -1 with the reason in r->msg. */
static int parse(reader *r, json_tok *toks, int kind, int patch,
                 const char *body, size_t len) {
  r->msg = NULL;
  if (len == 0) {
    r->msg = "a JSON object body is required";
    return -1;
  }
  if (json_parse(&r->d, body, len, toks, POOL_BODY_TOKENS, POOL_BODY_DEPTH,
                 NULL) != JSON_OK ||
      json_type_of(&r->d, 0) != JSON_OBJECT) {
    r->msg = "the body is not a JSON object within the bounds";
    return -1;
  }
  const char *const *allowed = kind == PH_POOL_KIND_PROXY   ? proxy_fields
                               : kind == PH_POOL_KIND_ROUTE ? route_fields
                                                            : cred_fields;
  size_t k = 1;
  for (uint32_t i = 0; i < r->d.toks[0].size; i++) {
    int ok = 0;
    for (const char *const *f = allowed; *f; f++)
      if (json_str_eq(&r->d, k, *f))
        ok = !(patch && (strcmp(*f, "proxy_id") == 0 ||
                         strcmp(*f, "rule_id") == 0 ||
                         strcmp(*f, "position") == 0));
    if (!ok) {
      /* Never echoed: a refused field may hold a password. */
      r->msg = patch ? "a field this kind does not take, or a key (use move "
                       "for a route's position); credential material is "
                       "never taken here"
                     : "a field this kind does not take; credential "
                       "material is never taken here (secret_ref names a "
                       "file of the controller's secrets_dir)";
      return -1;
    }
    k = r->d.toks[k + 1].next; /* past the key's value */
  }
  return 0;
}

/* ---- store answers ------------------------------------------------------- */

static void on_write(void *arg, const ph_pool_write_result *res) {
  api_pool_call *c = arg;
  c->call = 0;
  if (res->status != PH_OK) {
    store_error(c, res->status, res->detail);
    return;
  }
  if (c->op == OP_DELETE) {
    c->reply(c->arg, 204, NULL, 0);
    return;
  }
  char buf[POOL_ROW_JSON_MAX + 128];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_key(&w, "item");
  write_row(&w, c, res->kind, &res->u);
  json_w_key(&w, "revision");
  json_w_uint(&w, res->revision);
  json_w_obj_end(&w);
  reply_doc(c, c->op == OP_CREATE ? 201 : 200, buf, &w);
}

static void submit_write(api_pool_call *c) {
  c->call = c->st->write(c->self, &c->w, on_write, c);
  if (c->call <= 0) {
    int st = (int)c->call;
    c->call = 0;
    store_error(c, st == PH_ENOMEM ? PH_AZ_EUNAVAILABLE : st, NULL);
  }
}

/* A PATCH's read: apply the body onto the stored row, write it back. */
static void patch_read(api_pool_call *c, const ph_pool_list_result *res) {
  if (res->n != 1) {
    reply_error(c, 404, "not_found", "no such record");
    return;
  }
  json_tok toks[POOL_BODY_TOKENS];
  reader r;
  parse(&r, toks, c->kind, 1, c->body, c->body_len); /* checked before */
  memset(&c->w, 0, sizeof(c->w));
  c->w.size = sizeof(c->w);
  c->w.kind = c->kind;
  c->w.action = PH_POOL_UPDATE;
  c->w.expect_revision = res->revision;
  int rc;
  if (c->kind == PH_POOL_KIND_PROXY) {
    c->w.u.proxy = res->proxies[0];
    rc = apply_proxy(&r, &c->w.u.proxy, 0);
  } else {
    c->w.u.route = res->routes[0];
    rc = apply_route(&r, &c->w.u.route, 0);
  }
  if (rc < 0) {
    reply_error(c, 400, "invalid", r.msg);
    return;
  }
  submit_write(c);
}

static void on_list(void *arg, const ph_pool_list_result *res) {
  api_pool_call *c = arg;
  c->call = 0;
  if (res->status != PH_OK) {
    store_error(c, res->status, NULL);
    return;
  }
  if (c->op == OP_UPDATE) {
    patch_read(c, res);
    return;
  }
  if (c->op == OP_GET && res->n != 1) {
    reply_error(c, 404, "not_found", "no such record");
    return;
  }
  size_t cap = 256 + (res->n + 1) * POOL_ROW_JSON_MAX;
  char *buf = malloc(cap);
  if (!buf) {
    reply_error(c, 503, "unavailable", "out of memory");
    return;
  }
  json_w w;
  json_w_init(&w, buf, cap);
  const void *rows = res->kind == PH_POOL_KIND_PROXY   ? (const void *)res->proxies
                     : res->kind == PH_POOL_KIND_ROUTE ? (const void *)res->routes
                                                       : (const void *)res->credentials;
  size_t size = res->kind == PH_POOL_KIND_PROXY   ? sizeof(ph_pool_proxy_row)
                : res->kind == PH_POOL_KIND_ROUTE ? sizeof(ph_pool_route_row)
                                                  : sizeof(ph_pool_credential_ref);
  json_w_obj(&w);
  if (c->op == OP_GET) {
    json_w_key(&w, "item");
    write_row(&w, c, res->kind, rows);
  } else {
    json_w_key(&w, "items");
    json_w_arr(&w);
    for (size_t i = 0; i < res->n; i++)
      write_row(&w, c, res->kind, (const char *)rows + i * size);
    json_w_arr_end(&w);
    json_w_key(&w, "more");
    json_w_bool(&w, res->more);
    json_w_key(&w, "next_after");
    if (!res->more || !res->n)
      json_w_null(&w);
    else if (res->kind == PH_POOL_KIND_ROUTE)
      json_w_uint(&w, (uint64_t)res->routes[res->n - 1].position + 1);
    else if (res->kind == PH_POOL_KIND_PROXY)
      json_w_str(&w, res->proxies[res->n - 1].proxy_id);
    else
      json_w_str(&w, res->credentials[res->n - 1].secret_ref);
  }
  json_w_key(&w, "revision");
  json_w_uint(&w, res->revision);
  json_w_obj_end(&w);
  reply_doc(c, 200, buf, &w);
  free(buf);
}

/* ---- requests ------------------------------------------------------------ */

static int query_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
         ch == '_' || ch == '-';
}

/* "after=K&limit=N" (routes: after is a position, the next page's
 * next_after). Each at most once, [a-z0-9._-] values only. */
static int parse_query(api_pool_call *c, const char *q, ph_pool_list *l,
                       char *after, size_t cap, const char **msg) {
  int seen_after = 0, seen_limit = 0;
  l->limit = POOL_LIST_DEFAULT;
  api_qpair kv;
  int more;
  while ((more = api_query_next(&q, &kv)) > 0) {
    const char *v = kv.v;
    size_t vn = kv.vl;
    for (size_t i = 0; i < vn; i++)
      if (!query_char(v[i])) {
        *msg = "a query value must be [a-z0-9._-]";
        return -1;
      }
    if (api_qpair_is(&kv, "after") && !seen_after && vn > 0 && vn < cap) {
      seen_after = 1;
      memcpy(after, v, vn);
      after[vn] = '\0';
    } else if (api_qpair_is(&kv, "limit") && !seen_limit && vn > 0 &&
               vn <= 4) {
      seen_limit = 1;
      char num[8];
      memcpy(num, v, vn);
      num[vn] = '\0';
      char *end;
      long lim = strtol(num, &end, 10);
      if (*end || lim < 1 || lim > (long)PH_POOL_LIST_MAX) {
        *msg = "limit must be 1..1000";
        return -1;
      }
      l->limit = (uint32_t)lim;
    } else {
      *msg = "the query takes after and limit, each once";
      return -1;
    }
  }
  if (more < 0) {
    *msg = "the query is name=value pairs: after, limit";
    return -1;
  }
  if (seen_after && c->kind == PH_POOL_KIND_ROUTE) {
    char *end;
    long long pos = strtoll(after, &end, 10);
    if (*end || pos < 0 || pos > (long long)UINT32_MAX + 1) {
      *msg = "after of routes is a position (the answer's next_after)";
      return -1;
    }
    l->from_position = pos;
  } else if (seen_after) {
    l->after = after;
  }
  return 0;
}

static void start_list(api_pool_call *c, const char *key, const char *query) {
  ph_pool_list l;
  memset(&l, 0, sizeof(l));
  l.size = sizeof(l);
  l.kind = c->kind;
  char after[API_POOL_KEY_MAX + 1] = "";
  const char *msg = NULL;
  if (key) {
    l.key = key;
    l.limit = 1;
  } else if (parse_query(c, query, &l, after, sizeof(after), &msg) < 0) {
    reply_error(c, 400, "invalid", msg);
    return;
  }
  if (pool_validate_list(&l, &msg) != PH_OK) {
    /* A key that cannot name a record names none. */
    if (key)
      reply_error(c, 404, "not_found", "no such record");
    else
      reply_error(c, 400, "invalid", msg);
    return;
  }
  c->call = c->st->list(c->self, &l, on_list, c);
  if (c->call <= 0) {
    int st = (int)c->call;
    c->call = 0;
    store_error(c, st == PH_ENOMEM ? PH_AZ_EUNAVAILABLE : st, NULL);
  }
}

void api_pool_start(api_pool_call *c, const char *query, const char *body,
                    size_t len) {
  if (c->op >= OP_EXTRACTION) {
    /* api_extract.c's: pool_api.c never sends them here. */
    reply_error(c, 500, "internal", "not a pool.store route");
    return;
  }
  int is_read = c->op == OP_LIST || c->op == OP_GET;
  if (is_read && len > 0) {
    reply_error(c, 400, "invalid", "a GET takes no body");
    return;
  }
  if (c->op != OP_LIST && query && query[0]) {
    reply_error(c, 400, "invalid", "this call takes no query");
    return;
  }
  if (c->op == OP_LIST) {
    start_list(c, NULL, query);
    return;
  }
  if (c->op == OP_GET) {
    start_list(c, c->key, NULL);
    return;
  }
  json_tok toks[POOL_BODY_TOKENS];
  reader r;
  memset(&c->w, 0, sizeof(c->w));
  c->w.size = sizeof(c->w);
  c->w.kind = c->kind;
  if (c->op == OP_UPDATE) {
    if (parse(&r, toks, c->kind, 1, body, len) < 0) {
      reply_error(c, 400, "invalid", r.msg);
      return;
    }
    c->body = malloc(len);
    if (!c->body) {
      reply_error(c, 503, "unavailable", "out of memory");
      return;
    }
    memcpy(c->body, body, len);
    c->body_len = len;
    start_list(c, c->key, NULL); /* then patch_read */
    return;
  }
  if (c->op == OP_CREATE) {
    if (parse(&r, toks, c->kind, 0, body, len) < 0) {
      reply_error(c, 400, "invalid", r.msg);
      return;
    }
    c->w.action = PH_POOL_CREATE;
    int rc = 0;
    if (c->kind == PH_POOL_KIND_PROXY) {
      ph_pool_proxy_row *p = &c->w.u.proxy;
      p->admin_state = PH_POOL_ADMIN_ACTIVE;
      p->weight = 1;
      rc = apply_proxy(&r, p, 1);
    } else if (c->kind == PH_POOL_KIND_ROUTE) {
      ph_pool_route_row *q = &c->w.u.route;
      q->enabled = 1;
      q->on_unavailable = PH_POOL_ON_UNAVAILABLE_REJECT;
      rc = apply_route(&r, q, 1);
    } else {
      int64_t v = 1;
      rc = str_field(&r, "secret_ref", c->w.u.credential.secret_ref,
                     sizeof(c->w.u.credential.secret_ref), 0) < 0 ||
                   int_field(&r, "credential_version", 1, INT64_MAX, &v) < 0
               ? -1
               : 0;
      c->w.u.credential.credential_version = (uint64_t)v;
    }
    if (rc < 0) {
      reply_error(c, 400, "invalid", r.msg);
      return;
    }
  } else {
    /* delete, move, rotate: the key from the path. */
    if (len > 0 && c->op != OP_MOVE) {
      reply_error(c, 400, "invalid", "this call takes no body");
      return;
    }
    if (c->kind == PH_POOL_KIND_PROXY)
      snprintf(c->w.u.proxy.proxy_id, sizeof(c->w.u.proxy.proxy_id), "%s",
               c->key);
    else if (c->kind == PH_POOL_KIND_ROUTE)
      snprintf(c->w.u.route.rule_id, sizeof(c->w.u.route.rule_id), "%s",
               c->key);
    else
      snprintf(c->w.u.credential.secret_ref,
               sizeof(c->w.u.credential.secret_ref), "%s", c->key);
    c->w.action = c->op == OP_DELETE   ? PH_POOL_DELETE
                  : c->op == OP_ROTATE ? PH_POOL_ROTATE
                                       : PH_POOL_MOVE;
    if (c->op == OP_MOVE) {
      int64_t pos;
      if (len == 0 || json_parse(&r.d, body, len, toks, POOL_BODY_TOKENS,
                                 POOL_BODY_DEPTH, NULL) != JSON_OK ||
          json_type_of(&r.d, 0) != JSON_OBJECT || r.d.toks[0].size != 1 ||
          int_field(&r, "position", 0, UINT32_MAX, &pos) != 1) {
        reply_error(c, 400, "invalid",
                    "move takes {\"position\": 0..4294967295}");
        return;
      }
      c->w.u.route.position = (uint32_t)pos;
    }
  }
  submit_write(c);
}

void api_pool_cancel(api_pool_call *c) {
  if (c->call > 0)
    c->st->cancel(c->self, c->call);
  c->call = 0;
}

void api_pool_free(api_pool_call *c) {
  if (c->body) {
    explicit_bzero(c->body, c->body_len);
    free(c->body);
    c->body = NULL;
  }
}

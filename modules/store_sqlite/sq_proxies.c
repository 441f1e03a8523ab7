/* SPDX-License-Identifier: BSD-2-Clause */
/* pool.store reads (sdk/proxyhost/pool_store.h) in store_sqlite: the
 * pool revision, the rows of the v10 tables as ph_pool_* rows, snapshot()
 * (everything in one read transaction, with the revision it was read at)
 * and list() (one page). Writes are sq_proxies_write.c. Work functions
 * run on a helper thread; the rest on the loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_common/pool_validate.h"
#include "store_sqlite.h"

int sq_read_pool_revision(sq_call *c, sqlite3 *db) {
  c->pool_rev_set = 1;
  return sq_rev_read(c, db, SQ_POOL_REV_SELECT, &c->pool_what,
                     &c->pool_value);
}

/* ---- rows ----------------------------------------------------------- */

static void col_copy(sqlite3_stmt *st, int col, char *out, size_t cap) {
  const unsigned char *t = sqlite3_column_text(st, col);
  snprintf(out, cap, "%s", t ? (const char *)t : "");
}

/* Grows *rows to hold one more (doubling); 0 or -1. */
static int grow(void **rows, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  void *p = realloc(*rows, nc * size);
  if (!p)
    return -1;
  *rows = p;
  *cap = nc;
  return 0;
}

/* Steps a prepared, bound query, handing each row to take. 0, or -1 (the
 * database failed: db_broken as the code says; *nomem when take failed). */
static int each_row(sq_call *c, sqlite3_stmt *st,
                    int (*take)(void *ctx, sqlite3_stmt *st), void *ctx,
                    int *nomem) {
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (take(ctx, st) < 0) {
      *nomem = 1;
      sqlite3_finalize(st);
      return -1;
    }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    c->db_broken |= sq_rc_broken(rc);
    return -1;
  }
  return 0;
}

typedef struct proxies_ctx {
  ph_pool_proxy_row *rows;
  size_t n, cap, gi; /* gi: where the group merge stands */
} proxies_ctx;

static int take_proxy(void *arg, sqlite3_stmt *st) {
  proxies_ctx *x = arg;
  if (grow((void **)&x->rows, &x->cap, x->n, sizeof(*x->rows)) < 0)
    return -1;
  ph_pool_proxy_row *p = &x->rows[x->n++];
  memset(p, 0, sizeof(*p));
  col_copy(st, 0, p->proxy_id, sizeof(p->proxy_id));
  p->protocol = sqlite3_column_int(st, 1);
  col_copy(st, 2, p->host, sizeof(p->host));
  p->port = (uint16_t)sqlite3_column_int(st, 3);
  col_copy(st, 4, p->zone, sizeof(p->zone));
  p->capacity = (uint32_t)sqlite3_column_int64(st, 5);
  p->weight = (uint32_t)sqlite3_column_int64(st, 6);
  p->expires_at_ms = sqlite3_column_int64(st, 7);
  col_copy(st, 8, p->secret_ref, sizeof(p->secret_ref));
  p->credential_version = (uint64_t)sqlite3_column_int64(st, 9);
  p->admin_state = sqlite3_column_int(st, 10);
  return 0;
}

/* Groups come in (proxy_id, group_name) order, as the proxies do: a merge. */
static int take_group(void *arg, sqlite3_stmt *st) {
  proxies_ctx *x = arg;
  const char *id = (const char *)sqlite3_column_text(st, 0);
  if (!id)
    return 0;
  while (x->gi < x->n && strcmp(x->rows[x->gi].proxy_id, id) < 0)
    x->gi++;
  if (x->gi == x->n || strcmp(x->rows[x->gi].proxy_id, id) != 0)
    return 0; /* a proxy past the page */
  ph_pool_proxy_row *p = &x->rows[x->gi];
  if (p->n_groups < PH_POOL_GROUPS_MAX)
    col_copy(st, 1, p->groups[p->n_groups++], sizeof(p->groups[0]));
  return 0;
}

#define PROXY_COLS                                                          \
  "p.proxy_id, p.protocol, p.host, p.port, p.zone, p.capacity, p.weight, " \
  "p.expires_at_ms, p.secret_ref, coalesce(c.credential_version, 0), "     \
  "p.admin_state"

int sq_pool_proxies(sq_call *c, sqlite3 *db, const char *after,
                    const char *key, uint32_t limit, ph_pool_proxy_row **rows,
                    size_t *n, int *nomem) {
  proxies_ctx x = {0};
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_prepare(
      c, db,
      "SELECT " PROXY_COLS " FROM pool_proxies p LEFT JOIN pool_credentials "
      "c ON c.secret_ref = p.secret_ref WHERE (?1 IS NULL OR p.proxy_id > "
      "?1) AND (?2 IS NULL OR p.proxy_id = ?2) ORDER BY p.proxy_id LIMIT ?3");
  if (!st)
    return -1;
  sq_bind_text(st, 1, after);
  sq_bind_text(st, 2, key);
  sqlite3_bind_int64(st, 3, limit);
  if (each_row(c, st, take_proxy, &x, nomem) < 0)
    goto fail;
  if (x.n > 0) {
    st = sq_prepare(c, db,
                    "SELECT proxy_id, group_name FROM pool_proxy_groups "
                    "WHERE proxy_id >= ?1 AND proxy_id <= ?2 ORDER BY "
                    "proxy_id, group_name");
    if (!st)
      goto fail;
    sq_bind_text(st, 1, x.rows[0].proxy_id);
    sq_bind_text(st, 2, x.rows[x.n - 1].proxy_id);
    if (each_row(c, st, take_group, &x, nomem) < 0)
      goto fail;
  }
  *rows = x.rows;
  *n = x.n;
  return 0;
fail:
  free(x.rows);
  return -1;
}

typedef struct routes_ctx {
  ph_pool_route_row *rows;
  size_t n, cap;
} routes_ctx;

static int take_route(void *arg, sqlite3_stmt *st) {
  routes_ctx *x = arg;
  if (grow((void **)&x->rows, &x->cap, x->n, sizeof(*x->rows)) < 0)
    return -1;
  ph_pool_route_row *r = &x->rows[x->n++];
  memset(r, 0, sizeof(*r));
  col_copy(st, 0, r->rule_id, sizeof(r->rule_id));
  r->position = (uint32_t)sqlite3_column_int64(st, 1);
  r->enabled = sqlite3_column_int(st, 2);
  col_copy(st, 3, r->host_pattern, sizeof(r->host_pattern));
  r->port_min = (uint16_t)sqlite3_column_int(st, 4);
  r->port_max = (uint16_t)sqlite3_column_int(st, 5);
  col_copy(st, 6, r->client_identity, sizeof(r->client_identity));
  col_copy(st, 7, r->listener, sizeof(r->listener));
  col_copy(st, 8, r->target_group, sizeof(r->target_group));
  col_copy(st, 9, r->strategy, sizeof(r->strategy));
  r->on_unavailable = sqlite3_column_int(st, 10);
  r->wait_timeout_ms = (uint32_t)sqlite3_column_int64(st, 11);
  col_copy(st, 12, r->sticky_key, sizeof(r->sticky_key));
  return 0;
}

int sq_pool_routes(sq_call *c, sqlite3 *db, int64_t from, const char *key,
                   uint32_t limit, ph_pool_route_row **rows, size_t *n,
                   int *nomem) {
  routes_ctx x = {0};
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_prepare(
      c, db,
      "SELECT rule_id, position, enabled, host_pattern, port_min, port_max, "
      "client_identity, listener, target_group, strategy, on_unavailable, "
      "wait_timeout_ms, sticky_key FROM pool_routes WHERE position >= ?1 "
      "AND (?2 IS NULL OR rule_id = ?2) ORDER BY position LIMIT ?3");
  if (!st)
    return -1;
  sqlite3_bind_int64(st, 1, from);
  sq_bind_text(st, 2, key);
  sqlite3_bind_int64(st, 3, limit);
  if (each_row(c, st, take_route, &x, nomem) < 0) {
    free(x.rows);
    return -1;
  }
  *rows = x.rows;
  *n = x.n;
  return 0;
}

typedef struct creds_ctx {
  ph_pool_credential_ref *rows;
  size_t n, cap;
} creds_ctx;

static int take_cred(void *arg, sqlite3_stmt *st) {
  creds_ctx *x = arg;
  if (grow((void **)&x->rows, &x->cap, x->n, sizeof(*x->rows)) < 0)
    return -1;
  ph_pool_credential_ref *r = &x->rows[x->n++];
  memset(r, 0, sizeof(*r));
  col_copy(st, 0, r->secret_ref, sizeof(r->secret_ref));
  r->credential_version = (uint64_t)sqlite3_column_int64(st, 1);
  return 0;
}

int sq_pool_credentials(sq_call *c, sqlite3 *db, const char *after,
                        const char *key, uint32_t limit,
                        ph_pool_credential_ref **rows, size_t *n,
                        int *nomem) {
  creds_ctx x = {0};
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_prepare(
      c, db,
      "SELECT secret_ref, credential_version FROM pool_credentials WHERE "
      "(?1 IS NULL OR secret_ref > ?1) AND (?2 IS NULL OR secret_ref = ?2) "
      "ORDER BY secret_ref LIMIT ?3");
  if (!st)
    return -1;
  sq_bind_text(st, 1, after);
  sq_bind_text(st, 2, key);
  sqlite3_bind_int64(st, 3, limit);
  if (each_row(c, st, take_cred, &x, nomem) < 0) {
    free(x.rows);
    return -1;
  }
  *rows = x.rows;
  *n = x.n;
  return 0;
}

/* ---- snapshot() ------------------------------------------------------ */

typedef struct snap_call {
  sq_call c;
  ph_pool_snapshot_cb cb;
  void *arg;
  ph_pool_snapshot out;
  ph_pool_route_row *routes;
  ph_pool_proxy_row *proxies;
  ph_pool_credential_ref *creds;
} snap_call;

static void snap_work(sq_call *c, sqlite3 *db) {
  snap_call *x = (snap_call *)c;
  x->out.status = PH_AZ_EUNAVAILABLE;
  /* One read transaction: every statement sees the same state. */
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  int nomem = 0;
  size_t nr = 0, np = 0, nc = 0;
  int ok = sq_read_pool_revision(c, db) == 0 &&
           c->pool_what == AZ_REV_READ_OK &&
           sq_pool_routes(c, db, 0, NULL, PH_POOL_ROUTES_MAX + 1, &x->routes,
                          &nr, &nomem) == 0 &&
           sq_pool_proxies(c, db, NULL, NULL, PH_POOL_PROXIES_MAX + 1,
                           &x->proxies, &np, &nomem) == 0 &&
           sq_pool_credentials(c, db, NULL, NULL, PH_POOL_PROXIES_MAX + 1,
                               &x->creds, &nc, &nomem) == 0;
  sq_exec(c, db, "COMMIT");
  if (!ok) {
    x->out.status = nomem ? PH_ENOMEM : PH_AZ_EUNAVAILABLE;
    return;
  }
  if (nr > PH_POOL_ROUTES_MAX || np > PH_POOL_PROXIES_MAX ||
      nc > PH_POOL_PROXIES_MAX) {
    x->out.status = PH_ELIMIT; /* fail closed: no partial pool */
    return;
  }
  x->out.status = PH_OK;
  x->out.revision = (uint64_t)c->pool_value;
  x->out.routes = x->routes;
  x->out.n_routes = nr;
  x->out.proxies = x->proxies;
  x->out.n_proxies = np;
  x->out.credentials = x->creds;
  x->out.n_credentials = nc;
}

static void snap_deliver(sq_call *c) {
  snap_call *x = (snap_call *)c;
  ph_pool_snapshot res = {.size = sizeof(res), .status = x->out.status};
  if (c->no_db)
    res.status = PH_AZ_EUNAVAILABLE;
  else if (x->out.status == PH_OK)
    res = x->out;
  res.size = sizeof(res);
  c->s->api->inc(c->s->m_calls[SQ_CALL_POOL_SNAPSHOT], 1);
  x->cb(x->arg, &res);
}

static void snap_destroy(sq_call *c) {
  snap_call *x = (snap_call *)c;
  free(x->routes);
  free(x->proxies);
  free(x->creds);
  free(x);
}

int64_t sq_pool_snapshot(void *self, ph_pool_snapshot_cb cb, void *arg) {
  sq *s = self;
  if (!cb)
    return PH_EINVAL;
  snap_call *x =
      sq_call_new(s, sizeof(*x), snap_work, snap_deliver, snap_destroy);
  if (!x)
    return PH_ENOMEM;
  x->cb = cb;
  x->arg = arg;
  int64_t id = x->c.id;
  sq_call_start(s, &x->c, &x->out.status, NULL);
  return id;
}

/* ---- list() ---------------------------------------------------------- */

typedef struct plist_call {
  sq_page p; /* first */
  ph_pool_list_cb cb;
  int64_t from;
  char after[PH_POOL_SECRET_REF_MAX + 1], key[PH_POOL_SECRET_REF_MAX + 1];
  int has_after, has_key;
  void *rows;
} plist_call;

static void plist_work(sq_call *c, sqlite3 *db) {
  plist_call *l = (plist_call *)c;
  sq_page *p = &l->p;
  p->status = PH_AZ_EUNAVAILABLE;
  if (sq_exec(c, db, "BEGIN") < 0)
    return;
  const char *after = l->has_after ? l->after : NULL;
  const char *key = l->has_key ? l->key : NULL;
  int nomem = 0, rc = -1;
  if (sq_read_pool_revision(c, db) == 0 && c->pool_what == AZ_REV_READ_OK) {
    uint32_t want = p->limit + 1; /* one more says "more" */
    if (p->kind == PH_POOL_KIND_PROXY)
      rc = sq_pool_proxies(c, db, after, key, want,
                           (ph_pool_proxy_row **)&l->rows, &p->n, &nomem);
    else if (p->kind == PH_POOL_KIND_ROUTE)
      rc = sq_pool_routes(c, db, l->from, key, want,
                          (ph_pool_route_row **)&l->rows, &p->n, &nomem);
    else
      rc = sq_pool_credentials(c, db, after, key, want,
                               (ph_pool_credential_ref **)&l->rows, &p->n,
                               &nomem);
  }
  sq_exec(c, db, "COMMIT");
  if (rc < 0) {
    p->status = nomem ? PH_ENOMEM : PH_AZ_EUNAVAILABLE;
    p->n = 0;
    return;
  }
  sq_page_cut(p);
  p->status = PH_OK;
  p->revision = (uint64_t)c->pool_value;
}

static void plist_deliver(sq_call *c) {
  plist_call *l = (plist_call *)c;
  const sq_page *p = &l->p;
  int ok = p->status == PH_OK && !c->no_db;
  ph_pool_list_result res = {.size = sizeof(res),
                             .status = c->no_db ? PH_AZ_EUNAVAILABLE
                                                : p->status,
                             .kind = p->kind,
                             .n = ok ? p->n : 0,
                             .more = ok && p->more,
                             .revision = ok ? p->revision : 0};
  if (ok && p->kind == PH_POOL_KIND_PROXY)
    res.proxies = l->rows;
  else if (ok && p->kind == PH_POOL_KIND_ROUTE)
    res.routes = l->rows;
  else if (ok)
    res.credentials = l->rows;
  c->s->api->inc(c->s->m_calls[SQ_CALL_POOL_LIST], 1);
  l->cb(p->arg, &res);
}

static void plist_destroy(sq_call *c) {
  plist_call *l = (plist_call *)c;
  free(l->rows);
  free(l);
}

int64_t sq_pool_list(void *self, const ph_pool_list *req, ph_pool_list_cb cb,
                     void *arg) {
  sq *s = self;
  if (!req || !cb || pool_validate_list(req, NULL) != PH_OK)
    return PH_EINVAL;
  plist_call *l = sq_page_new(s, sizeof(*l), req->kind, req->limit, arg,
                              plist_work, plist_deliver, plist_destroy);
  if (!l)
    return PH_ENOMEM;
  l->cb = cb;
  l->from = req->from_position;
  if (req->after) {
    l->has_after = 1;
    snprintf(l->after, sizeof(l->after), "%s", req->after);
  }
  if (req->key) {
    l->has_key = 1;
    snprintf(l->key, sizeof(l->key), "%s", req->key);
  }
  int64_t id = l->p.c.id;
  sq_call_start(s, &l->p.c, &l->p.status, NULL);
  return id;
}

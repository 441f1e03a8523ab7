/* SPDX-License-Identifier: BSD-2-Clause */
/* pool.store writes (sdk/proxyhost/pool_store.h) in store_sqlite: each
 * one is one BEGIN IMMEDIATE transaction that reads pool_revision
 * (checking expect_revision), checks what the change refers to, makes
 * it, raises pool_revision by one (exactly one row, the value still
 * fitting), reads the record back and commits. Any failure rolls back:
 * the data and the revision stay as they were. Fields were validated
 * (pool_validate.h) before the call was accepted; the schema's CHECKs are
 * the second fence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clocks.h"
#include "store_common/pool_validate.h"
#include "store_sqlite.h"

typedef struct pwrite_call {
  sq_tx t; /* first: the call, status, detail, time (milliseconds) */
  ph_pool_write_cb cb;
  void *arg;
  ph_pool_write w; /* the request, copied (rows are plain values) */
  uint64_t revision;
  ph_pool_write_result out; /* the record as stored */
} pwrite_call;

static int fail(pwrite_call *x, int status, const char *detail) {
  return sq_tx_fail(&x->t, status, detail);
}

static int fail_rc(pwrite_call *x, int rc) { return sq_tx_fail_rc(&x->t, rc); }

/* Binds per fmt ('t' text, 'i' int64, 'n' the write's time) and runs a
 * statement without rows (sq_tx_exec). 0, or -1 with the status set. */
#define exec_args(x, ...) sq_tx_exec(&(x)->t, __VA_ARGS__)

/* One integer from a query with one text parameter and, optionally, an
 * integer second one; -1 with the status set on a failure. */
static int64_t query_int(pwrite_call *x, sqlite3 *db, const char *sql,
                         const char *a, int64_t b) {
  sqlite3_stmt *st = sq_prepare(&x->t.c, db, sql);
  if (!st)
    return fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  sq_bind_text(st, 1, a);
  sqlite3_bind_int64(st, 2, b);
  int rc = sqlite3_step(st);
  int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    x->t.c.db_broken |= sq_rc_broken(rc);
    return fail_rc(x, rc);
  }
  return v;
}

#define PROXY_EXISTS "SELECT count(*) FROM pool_proxies WHERE proxy_id = ?1"
#define ROUTE_EXISTS "SELECT count(*) FROM pool_routes WHERE rule_id = ?1"
#define CRED_EXISTS                                                         \
  "SELECT count(*) FROM pool_credentials WHERE secret_ref = ?1"

/* 0 when the query counts more than zero rows, else -1 with status. */
static int need(pwrite_call *x, sqlite3 *db, const char *sql, const char *k,
                int status, const char *detail) {
  int64_t v = query_int(x, db, sql, k, 0);
  if (v < 0)
    return -1;
  return v > 0 ? 0 : fail(x, status, detail);
}

/* 0 when the query counts no row, else -1 with status. */
static int none(pwrite_call *x, sqlite3 *db, const char *sql, const char *k,
                int64_t b, int status, const char *detail) {
  int64_t v = query_int(x, db, sql, k, b);
  if (v < 0)
    return -1;
  return v == 0 ? 0 : fail(x, status, detail);
}

static int under_bound(pwrite_call *x, sqlite3 *db, const char *table_count,
                       uint32_t max, const char *detail) {
  int64_t v = query_int(x, db, table_count, NULL, 0);
  if (v < 0)
    return -1;
  return v < (int64_t)max ? 0 : fail(x, PH_ELIMIT, detail);
}

/* ---- the changes ------------------------------------------------------ */

static int proxy_groups(pwrite_call *x, sqlite3 *db,
                        const ph_pool_proxy_row *p) {
  if (exec_args(x, db, "DELETE FROM pool_proxy_groups WHERE proxy_id = ?1",
                "t", p->proxy_id) < 0)
    return -1;
  for (uint32_t i = 0; i < p->n_groups; i++)
    if (exec_args(x, db,
                  "INSERT INTO pool_proxy_groups (proxy_id, group_name) "
                  "VALUES (?1, ?2)",
                  "tt", p->proxy_id, p->groups[i]) < 0)
      return -1;
  return 0;
}

static int proxy_write(pwrite_call *x, sqlite3 *db) {
  const ph_pool_proxy_row *p = &x->w.u.proxy;
  const char *ref = p->secret_ref[0] ? p->secret_ref : NULL;
  int action = x->w.action;
  if (action == PH_POOL_CREATE &&
      (under_bound(x, db, "SELECT count(*) FROM pool_proxies",
                   PH_POOL_PROXIES_MAX, "the pool has its most proxies") < 0 ||
       none(x, db, PROXY_EXISTS, p->proxy_id, 0, PH_EEXIST,
            "proxy_id is taken") < 0))
    return -1;
  if (action != PH_POOL_CREATE &&
      need(x, db, PROXY_EXISTS, p->proxy_id, PH_ENOENT, "no such proxy") < 0)
    return -1;
  if ((action == PH_POOL_CREATE || action == PH_POOL_UPDATE) && ref &&
      need(x, db, CRED_EXISTS, ref, PH_ENOENT,
           "secret_ref names no credential reference (add it first)") < 0)
    return -1;
  switch (action) {
  case PH_POOL_CREATE:
  case PH_POOL_UPDATE:
    /* The same parameters: ?11 is the time (created and updated). */
    if (exec_args(x, db,
                  action == PH_POOL_CREATE
                      ? "INSERT INTO pool_proxies (proxy_id, protocol, host, "
                        "port, zone, capacity, weight, expires_at_ms, "
                        "secret_ref, admin_state, created_at_ms, "
                        "updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                        "?8, ?9, ?10, ?11, ?11)"
                      : "UPDATE pool_proxies SET protocol = ?2, host = ?3, "
                        "port = ?4, zone = ?5, capacity = ?6, weight = ?7, "
                        "expires_at_ms = ?8, secret_ref = ?9, admin_state = "
                        "?10, updated_at_ms = ?11 WHERE proxy_id = ?1",
                  "tititiiitin", p->proxy_id, (int64_t)p->protocol, p->host,
                  (int64_t)p->port, p->zone, (int64_t)p->capacity,
                  (int64_t)p->weight, p->expires_at_ms, ref,
                  (int64_t)p->admin_state) < 0)
      return -1;
    return proxy_groups(x, db, p);
  case PH_POOL_SET_STATE:
    return exec_args(x, db,
                     "UPDATE pool_proxies SET admin_state = ?2, "
                     "updated_at_ms = ?3 WHERE proxy_id = ?1",
                     "tin", p->proxy_id, (int64_t)p->admin_state);
  default: /* delete */
    if (exec_args(x, db, "DELETE FROM pool_proxy_groups WHERE proxy_id = ?1",
                  "t", p->proxy_id) < 0)
      return -1;
    return exec_args(x, db, "DELETE FROM pool_proxies WHERE proxy_id = ?1",
                     "t", p->proxy_id);
  }
}

#define POSITION_TAKEN                                                      \
  "SELECT count(*) FROM pool_routes WHERE position = ?2 AND rule_id <> ?1"

static int route_write(pwrite_call *x, sqlite3 *db) {
  const ph_pool_route_row *r = &x->w.u.route;
  int action = x->w.action;
  if (action == PH_POOL_CREATE &&
      (under_bound(x, db, "SELECT count(*) FROM pool_routes",
                   PH_POOL_ROUTES_MAX, "the pool has its most routes") < 0 ||
       none(x, db, ROUTE_EXISTS, r->rule_id, 0, PH_EEXIST,
            "rule_id is taken") < 0))
    return -1;
  if (action != PH_POOL_CREATE &&
      need(x, db, ROUTE_EXISTS, r->rule_id, PH_ENOENT, "no such route") < 0)
    return -1;
  if ((action == PH_POOL_CREATE || action == PH_POOL_MOVE) &&
      none(x, db, POSITION_TAKEN, r->rule_id, (int64_t)r->position, PH_EEXIST,
           "another route has this position (positions are unique: leave "
           "gaps)") < 0)
    return -1;
  switch (action) {
  case PH_POOL_CREATE:
    return exec_args(
        x, db,
        "INSERT INTO pool_routes (rule_id, position, enabled, host_pattern, "
        "port_min, port_max, client_identity, listener, target_group, "
        "strategy, on_unavailable, wait_timeout_ms, sticky_key, "
        "created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
        "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
        "tiitiittttiitn", r->rule_id, (int64_t)r->position,
        (int64_t)r->enabled, r->host_pattern, (int64_t)r->port_min,
        (int64_t)r->port_max, r->client_identity, r->listener,
        r->target_group, r->strategy, (int64_t)r->on_unavailable,
        (int64_t)r->wait_timeout_ms, r->sticky_key);
  case PH_POOL_UPDATE:
    return exec_args(
        x, db,
        "UPDATE pool_routes SET enabled = ?2, host_pattern = ?3, port_min = "
        "?4, port_max = ?5, client_identity = ?6, listener = ?7, "
        "target_group = ?8, strategy = ?9, on_unavailable = ?10, "
        "wait_timeout_ms = ?11, sticky_key = ?12, updated_at_ms = ?13 WHERE "
        "rule_id = ?1",
        "titiittttiitn", r->rule_id, (int64_t)r->enabled, r->host_pattern,
        (int64_t)r->port_min, (int64_t)r->port_max, r->client_identity,
        r->listener, r->target_group, r->strategy,
        (int64_t)r->on_unavailable, (int64_t)r->wait_timeout_ms,
        r->sticky_key);
  case PH_POOL_MOVE:
    return exec_args(x, db,
                     "UPDATE pool_routes SET position = ?2, updated_at_ms = "
                     "?3 WHERE rule_id = ?1",
                     "tin", r->rule_id, (int64_t)r->position);
  default:
    return exec_args(x, db, "DELETE FROM pool_routes WHERE rule_id = ?1", "t",
                     r->rule_id);
  }
}

static int credential_write(pwrite_call *x, sqlite3 *db) {
  const ph_pool_credential_ref *c = &x->w.u.credential;
  switch (x->w.action) {
  case PH_POOL_CREATE:
    if (under_bound(x, db, "SELECT count(*) FROM pool_credentials",
                    PH_POOL_PROXIES_MAX,
                    "the pool has its most credential references") < 0 ||
        none(x, db, CRED_EXISTS, c->secret_ref, 0, PH_EEXIST,
             "secret_ref is taken") < 0)
      return -1;
    return exec_args(x, db,
                     "INSERT INTO pool_credentials (secret_ref, "
                     "credential_version, created_at_ms, updated_at_ms) "
                     "VALUES (?1, ?2, ?3, ?3)",
                     "tin", c->secret_ref,
                     (int64_t)(c->credential_version ? c->credential_version
                                                     : 1));
  case PH_POOL_ROTATE:
    if (need(x, db, CRED_EXISTS, c->secret_ref, PH_ENOENT,
             "no such credential reference") < 0 ||
        none(x, db,
             "SELECT count(*) FROM pool_credentials WHERE secret_ref = ?1 "
             "AND credential_version >= 9223372036854775807",
             c->secret_ref, 0, PH_ELIMIT,
             "credential_version cannot go higher") < 0)
      return -1;
    return exec_args(x, db,
                     "UPDATE pool_credentials SET credential_version = "
                     "credential_version + 1, updated_at_ms = ?2 WHERE "
                     "secret_ref = ?1",
                     "tn", c->secret_ref);
  default: /* delete */
    if (need(x, db, CRED_EXISTS, c->secret_ref, PH_ENOENT,
             "no such credential reference") < 0 ||
        none(x, db, "SELECT count(*) FROM pool_proxies WHERE secret_ref = ?1",
             c->secret_ref, 0, PH_EBUSY,
             "proxies still use this credential: change or delete them "
             "first") < 0)
      return -1;
    return exec_args(x, db,
                     "DELETE FROM pool_credentials WHERE secret_ref = ?1", "t",
                     c->secret_ref);
  }
}

/* ---- the transaction ------------------------------------------------- */

static int read_back(pwrite_call *x, sqlite3 *db) {
  if (x->w.action == PH_POOL_DELETE)
    return 0;
  int nomem = 0, rc;
  size_t n = 0;
  void *rows = NULL;
  size_t size;
  if (x->w.kind == PH_POOL_KIND_PROXY) {
    rc = sq_pool_proxies(&x->t.c, db, NULL, x->w.u.proxy.proxy_id, 1,
                         (ph_pool_proxy_row **)&rows, &n, &nomem);
    size = sizeof(ph_pool_proxy_row);
  } else if (x->w.kind == PH_POOL_KIND_ROUTE) {
    rc = sq_pool_routes(&x->t.c, db, 0, x->w.u.route.rule_id, 1,
                        (ph_pool_route_row **)&rows, &n, &nomem);
    size = sizeof(ph_pool_route_row);
  } else {
    rc = sq_pool_credentials(&x->t.c, db, NULL, x->w.u.credential.secret_ref,
                             1, (ph_pool_credential_ref **)&rows, &n, &nomem);
    size = sizeof(ph_pool_credential_ref);
  }
  if (rc < 0 || n != 1) {
    free(rows);
    return fail(x, nomem ? PH_ENOMEM : PH_AZ_EUNAVAILABLE,
                "the record could not be read back");
  }
  x->out.kind = x->w.kind;
  memcpy(&x->out.u, rows, size);
  free(rows);
  return 0;
}

/* Inside the transaction (sq_tx_run), the revision read. */
static int pwrite_change(sq_tx *t, sqlite3 *db) {
  pwrite_call *x = (pwrite_call *)t;
  if (x->w.expect_revision &&
      x->w.expect_revision != (uint64_t)t->c.pool_value)
    return fail(x, PH_ESTATE, "the pool changed since it was read: read it "
                              "again");
  int (*change)(pwrite_call *, sqlite3 *) =
      x->w.kind == PH_POOL_KIND_PROXY   ? proxy_write
      : x->w.kind == PH_POOL_KIND_ROUTE ? route_write
                                        : credential_write;
  if (change(x, db) < 0 || sq_tx_bump(t, db) < 0)
    return -1;
  return read_back(x, db);
}

static void pwrite_work(sq_call *c, sqlite3 *db) {
  pwrite_call *x = (pwrite_call *)c;
  x->t.now = wall_ms();
  if (sq_tx_run(&x->t, db, pwrite_change) < 0) {
    memset(&x->out, 0, sizeof(x->out));
    return;
  }
  x->revision = (uint64_t)c->pool_value;
}

static void pwrite_deliver(sq_call *c) {
  pwrite_call *x = (pwrite_call *)c;
  ph_pool_write_result res = {.size = sizeof(res)};
  if (c->no_db) {
    res.status = PH_AZ_EUNAVAILABLE;
    res.detail = "the database could not be opened";
  } else if (x->t.status == PH_OK) {
    res = x->out;
    res.size = sizeof(res);
    res.status = PH_OK;
    res.revision = x->revision;
  } else {
    res.status = x->t.status;
    res.detail = x->t.detail;
  }
  c->s->api->inc(c->s->m_calls[SQ_CALL_POOL_WRITE], 1);
  x->cb(x->arg, &res);
}

static void pwrite_destroy(sq_call *c) { free(c); }

int64_t sq_pool_write(void *self, const ph_pool_write *w,
                      ph_pool_write_cb cb, void *arg) {
  sq *s = self;
  if (!w || !cb || w->size < sizeof(*w))
    return PH_EINVAL;
  pwrite_call *x =
      sq_call_new(s, sizeof(*x), pwrite_work, pwrite_deliver, pwrite_destroy);
  if (!x)
    return PH_ENOMEM;
  x->t.taken = "the id or the position is taken";
  x->t.pool = 1;
  x->cb = cb;
  x->arg = arg;
  x->w = *w;
  x->w.size = sizeof(x->w);
  const char *detail = NULL;
  if (pool_validate_write(&x->w, &detail) != PH_OK) {
    /* Answered through the callback, so the operator gets the detail. */
    fail(x, PH_EINVAL, detail);
    sq_call_answer_later(s, &x->t.c);
  } else {
    sq_call_start(s, &x->t.c, &x->t.status, &x->t.detail);
  }
  return x->t.c.id;
}

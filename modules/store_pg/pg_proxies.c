/* SPDX-License-Identifier: BSD-2-Clause */
/* pool.store (sdk/proxyhost/pool_store.h) in store_pg: snapshot(), list()
 * and write(), asynchronous on the loop through the connection pool
 * (pg_pool.h), statements in pg_proxies_sql.h.
 *
 *  - snapshot: one round, BEGIN ISOLATION LEVEL REPEATABLE READ READ
 *    ONLY; the pool revision; routes; proxies; credential references;
 *    COMMIT: every read sees one state, the revision of exactly it.
 *  - list: one round, the revision and one page (one row more than the
 *    limit says "more").
 *  - write: round 1 BEGIN; the expect_revision guard; a bound guard for a
 *    create; the change (one to three statements); the pool revision
 *    step; the record read back. Round 2 COMMIT when all of it did what
 *    it should, else ROLLBACK: a failed write changes neither the data
 *    nor the revision. A connection lost while the COMMIT was in flight
 *    is PH_AZ_EOUTCOME. After the COMMIT, revision() reports the new
 *    revision before the callback runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bw.h"
#include "lib/clocks.h"
#include "store_common/pool_validate.h"
#include "store_pg_int.h"

/* ---- rows -------------------------------------------------------------- */

static void col(const PGresult *r, int row, int c, char *out, size_t cap) {
  const char *s = res_str(r, row, c);
  snprintf(out, cap, "%s", s ? s : "");
}

static void proxy_at(const PGresult *r, int i, ph_pool_proxy_row *p) {
  memset(p, 0, sizeof(*p));
  col(r, i, 0, p->proxy_id, sizeof(p->proxy_id));
  p->protocol = (int)res_int(r, i, 1);
  col(r, i, 2, p->host, sizeof(p->host));
  p->port = (uint16_t)res_int(r, i, 3);
  col(r, i, 4, p->zone, sizeof(p->zone));
  p->capacity = (uint32_t)res_int(r, i, 5);
  p->weight = (uint32_t)res_int(r, i, 6);
  p->expires_at_ms = res_int(r, i, 7);
  col(r, i, 8, p->secret_ref, sizeof(p->secret_ref));
  p->credential_version = (uint64_t)res_int(r, i, 9);
  p->admin_state = (int)res_int(r, i, 10);
  const char *g = res_str(r, i, 11);
  while (g && *g && p->n_groups < PH_POOL_GROUPS_MAX) {
    size_t n = strcspn(g, ",");
    snprintf(p->groups[p->n_groups++], sizeof(p->groups[0]), "%.*s",
             (int)(n < PH_POOL_GROUP_MAX ? n : PH_POOL_GROUP_MAX), g);
    g += n;
    if (*g == ',')
      g++;
  }
}

static void route_at(const PGresult *r, int i, ph_pool_route_row *q) {
  memset(q, 0, sizeof(*q));
  col(r, i, 0, q->rule_id, sizeof(q->rule_id));
  q->position = (uint32_t)res_int(r, i, 1);
  q->enabled = (int)res_int(r, i, 2);
  col(r, i, 3, q->host_pattern, sizeof(q->host_pattern));
  q->port_min = (uint16_t)res_int(r, i, 4);
  q->port_max = (uint16_t)res_int(r, i, 5);
  col(r, i, 6, q->client_identity, sizeof(q->client_identity));
  col(r, i, 7, q->listener, sizeof(q->listener));
  col(r, i, 8, q->target_group, sizeof(q->target_group));
  col(r, i, 9, q->strategy, sizeof(q->strategy));
  q->on_unavailable = (int)res_int(r, i, 10);
  q->wait_timeout_ms = (uint32_t)res_int(r, i, 11);
  col(r, i, 12, q->sticky_key, sizeof(q->sticky_key));
}

static void cred_at(const PGresult *r, int i, ph_pool_credential_ref *c) {
  memset(c, 0, sizeof(*c));
  col(r, i, 0, c->secret_ref, sizeof(c->secret_ref));
  c->credential_version = (uint64_t)res_int(r, i, 1);
}

/* n rows of kind out of r (at most max) into a new array; NULL with
 * *nomem on no memory (and for 0 rows, NULL without it). */
static void *rows_of(int kind, const PGresult *r, int max, int *nomem) {
  int n = PQntuples(r);
  if (n > max)
    n = max;
  if (n <= 0)
    return NULL;
  size_t size = kind == PH_POOL_KIND_PROXY   ? sizeof(ph_pool_proxy_row)
                : kind == PH_POOL_KIND_ROUTE ? sizeof(ph_pool_route_row)
                                             : sizeof(ph_pool_credential_ref);
  char *rows = calloc((size_t)n, size);
  if (!rows) {
    *nomem = 1;
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    void *at = rows + (size_t)i * size;
    if (kind == PH_POOL_KIND_PROXY)
      proxy_at(r, i, at);
    else if (kind == PH_POOL_KIND_ROUTE)
      route_at(r, i, at);
    else
      cred_at(r, i, at);
  }
  return rows;
}

static const char *num(char (*buf)[24], int *used, int64_t v) {
  char *b = buf[(*used)++];
  snprintf(b, 24, "%lld", (long long)v);
  return b;
}

/* A pool revision another statement read, for revision(). */
static void saw(spg *s, const PGresult *r, uint64_t floor) {
  int64_t v;
  az_rev_read what = res_revision(r, &v);
  if (what != AZ_REV_READ_FAILED)
    pool_revision_observe(&s->prev, what, v, floor);
}

/* ---- snapshot() --------------------------------------------------------- */

typedef struct snreq {
  sreq base;
  ph_pool_snapshot_cb cb;
  void *arg;
  uint64_t floor;
  PGresult *res[4]; /* revision, routes, proxies, credentials */
  void *routes, *proxies, *creds;
  ph_pool_snapshot out;
} snreq;

static void sn_answer(sreq *r) {
  snreq *x = (snreq *)r;
  x->cb(x->arg, &x->out);
}

static void sn_free(sreq *r) {
  snreq *x = (snreq *)r;
  for (int i = 0; i < 4; i++)
    PQclear(x->res[i]);
  free(x->routes);
  free(x->proxies);
  free(x->creds);
  free(x);
}

static void sn_begin(void *arg, pg_send *snd) {
  snreq *x = arg;
  char lr[24], lp[24];
  snprintf(lr, sizeof(lr), "%u", PH_POOL_ROUTES_MAX + 1);
  snprintf(lp, sizeof(lp), "%u", PH_POOL_PROXIES_MAX + 1);
  const char *vr[] = {"0", NULL, lr}, *vp[] = {NULL, NULL, lp};
  (void)x;
  pg_exec_sql(snd, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  pg_exec(snd, Q_POOL_REVISION, 0, NULL);
  pg_exec(snd, Q_POOL_LIST_ROUTES, 3, vr);
  pg_exec(snd, Q_POOL_LIST_PROXIES, 3, vp);
  pg_exec(snd, Q_POOL_LIST_CREDS, 3, vp);
  pg_exec_sql(snd, "COMMIT");
}

static int sn_result(void *arg, int i, PGresult *res) {
  snreq *x = arg;
  if (i < 1 || i > 4)
    return 0;
  x->res[i - 1] = res;
  return 1;
}

static void sn_round_done(void *arg, pg_send *snd) {
  (void)arg;
  (void)snd;
}

static void sn_done(void *arg, int status) {
  snreq *x = arg;
  spg *s = x->base.s;
  x->out.size = sizeof(x->out);
  x->out.status = PH_AZ_EUNAVAILABLE;
  int64_t rev;
  int good = status == PH_OK;
  for (int i = 1; good && i < 4; i++)
    good = x->res[i] && PQresultStatus(x->res[i]) == PGRES_TUPLES_OK;
  if (status == PH_OK)
    saw(s, x->res[0], x->floor);
  if (!good || res_revision(x->res[0], &rev) != AZ_REV_READ_OK) {
    if (status == PH_OK)
      pg_pool_count_query_error(s->pool);
    req_finish(&x->base);
    return;
  }
  int nr = PQntuples(x->res[1]), np = PQntuples(x->res[2]),
      nc = PQntuples(x->res[3]);
  if (nr > (int)PH_POOL_ROUTES_MAX || np > (int)PH_POOL_PROXIES_MAX ||
      nc > (int)PH_POOL_PROXIES_MAX) {
    x->out.status = PH_ELIMIT; /* fail closed: no partial pool */
    req_finish(&x->base);
    return;
  }
  int nomem = 0;
  x->routes = rows_of(PH_POOL_KIND_ROUTE, x->res[1], nr, &nomem);
  x->proxies = rows_of(PH_POOL_KIND_PROXY, x->res[2], np, &nomem);
  x->creds = rows_of(PH_POOL_KIND_CREDENTIAL, x->res[3], nc, &nomem);
  if (nomem) {
    x->out.status = PH_ENOMEM;
    req_finish(&x->base);
    return;
  }
  x->out.status = PH_OK;
  x->out.revision = (uint64_t)rev;
  x->out.routes = x->routes;
  x->out.n_routes = (size_t)nr;
  x->out.proxies = x->proxies;
  x->out.n_proxies = (size_t)np;
  x->out.credentials = x->creds;
  x->out.n_credentials = (size_t)nc;
  req_finish(&x->base);
}

static const pg_task_ops snap_ops = {sn_begin, sn_result, sn_round_done,
                                     sn_done};

int64_t spg_pool_snapshot(void *self, ph_pool_snapshot_cb cb, void *arg) {
  spg *s = self;
  if (!cb)
    return PH_EINVAL;
  snreq *x = calloc(1, sizeof(*x));
  if (!x)
    return PH_ENOMEM;
  x->base.answer = sn_answer;
  x->base.free_fn = sn_free;
  x->cb = cb;
  x->arg = arg;
  x->floor = s->prev.value;
  req_add(s, &x->base);
  int rc = req_submit(&x->base, &snap_ops);
  if (rc != PH_OK) {
    x->out.size = sizeof(x->out);
    x->out.status = rc == PH_EFULL ? PH_EFULL : PH_AZ_EUNAVAILABLE;
    req_later(&x->base);
  }
  return x->base.id;
}

/* ---- list() --------------------------------------------------------------- */

typedef struct plreq {
  sreq base;
  ph_pool_list_cb cb;
  void *arg;
  int kind;
  uint32_t limit;
  char after[PH_POOL_SECRET_REF_MAX + 1], key[PH_POOL_SECRET_REF_MAX + 1];
  int has_after, has_key;
  int64_t from;
  uint64_t floor;
  PGresult *res[2];
  void *rows;
  ph_pool_list_result out;
} plreq;

static void pl_answer(sreq *r) {
  plreq *l = (plreq *)r;
  l->cb(l->arg, &l->out);
}

static void pl_free(sreq *r) {
  plreq *l = (plreq *)r;
  PQclear(l->res[0]);
  PQclear(l->res[1]);
  free(l->rows);
  free(l);
}

static void pl_begin(void *arg, pg_send *snd) {
  plreq *l = arg;
  char b[3][24];
  int used = 0;
  const char *lim = num(b, &used, (int64_t)l->limit + 1);
  const char *after = l->has_after ? l->after : NULL;
  const char *key = l->has_key ? l->key : NULL;
  pg_exec(snd, Q_POOL_REVISION, 0, NULL);
  if (l->kind == PH_POOL_KIND_ROUTE) {
    const char *v[] = {num(b, &used, l->from), key, lim};
    pg_exec(snd, Q_POOL_LIST_ROUTES, 3, v);
  } else {
    const char *v[] = {after, key, lim};
    pg_exec(snd, l->kind == PH_POOL_KIND_PROXY ? Q_POOL_LIST_PROXIES
                                               : Q_POOL_LIST_CREDS,
            3, v);
  }
}

static int pl_result(void *arg, int i, PGresult *res) {
  plreq *l = arg;
  if (i < 0 || i > 1)
    return 0;
  l->res[i] = res;
  return 1;
}

static void pl_done(void *arg, int status) {
  plreq *l = arg;
  spg *s = l->base.s;
  l->out.size = sizeof(l->out);
  l->out.kind = l->kind;
  l->out.status = PH_AZ_EUNAVAILABLE;
  int64_t rev;
  if (status == PH_OK)
    saw(s, l->res[0], l->floor);
  if (status != PH_OK || !l->res[1] ||
      PQresultStatus(l->res[1]) != PGRES_TUPLES_OK ||
      res_revision(l->res[0], &rev) != AZ_REV_READ_OK) {
    if (status == PH_OK)
      pg_pool_count_query_error(s->pool);
    req_finish(&l->base);
    return;
  }
  int n = PQntuples(l->res[1]);
  if ((uint32_t)n > l->limit) {
    l->out.more = 1;
    n = (int)l->limit;
  }
  int nomem = 0;
  l->rows = rows_of(l->kind, l->res[1], n, &nomem);
  if (nomem) {
    l->out.status = PH_ENOMEM;
    l->out.more = 0;
    req_finish(&l->base);
    return;
  }
  l->out.status = PH_OK;
  l->out.n = (size_t)n;
  l->out.revision = (uint64_t)rev;
  if (l->kind == PH_POOL_KIND_PROXY)
    l->out.proxies = l->rows;
  else if (l->kind == PH_POOL_KIND_ROUTE)
    l->out.routes = l->rows;
  else
    l->out.credentials = l->rows;
  req_finish(&l->base);
}

static const pg_task_ops plist_ops = {pl_begin, pl_result, sn_round_done,
                                      pl_done};

int64_t spg_pool_list(void *self, const ph_pool_list *q, ph_pool_list_cb cb,
                      void *arg) {
  spg *s = self;
  if (!q || !cb || pool_validate_list(q, NULL) != PH_OK)
    return PH_EINVAL;
  plreq *l = calloc(1, sizeof(*l));
  if (!l)
    return PH_ENOMEM;
  l->base.answer = pl_answer;
  l->base.free_fn = pl_free;
  l->cb = cb;
  l->arg = arg;
  l->kind = q->kind;
  l->limit = q->limit;
  l->from = q->from_position;
  if (q->after) {
    l->has_after = 1;
    snprintf(l->after, sizeof(l->after), "%s", q->after);
  }
  if (q->key) {
    l->has_key = 1;
    snprintf(l->key, sizeof(l->key), "%s", q->key);
  }
  l->floor = s->prev.value;
  req_add(s, &l->base);
  int rc = req_submit(&l->base, &plist_ops);
  if (rc != PH_OK) {
    l->out.size = sizeof(l->out);
    l->out.status = rc == PH_EFULL ? PH_EFULL : PH_AZ_EUNAVAILABLE;
    req_later(&l->base);
  }
  return l->base.id;
}

/* ---- write() ---------------------------------------------------------------- */

#define PW_STMTS 6  /* guards and the change */
#define PW_PARAMS 14
#define PW_NUMS 24

typedef struct pwstmt {
  int q, n;
  const char *v[PW_PARAMS];
  int guard_status; /* a guard: its one value must be 't' */
  const char *guard_detail;
  int main;         /* its RETURNING row must be there, else ENOENT */
} pwstmt;

typedef struct pwreq {
  sreq base;
  ph_pool_write_cb cb;
  void *arg;
  ph_pool_write w;
  char groups[PH_POOL_GROUPS_MAX * (PH_POOL_GROUP_MAX + 1) + 1];
  char nums[PW_NUMS][24];
  int n_num;
  pwstmt st[PW_STMTS];
  int n_st;
  int round, committing, commit_sent;
  int status;
  const char *detail;
  int64_t new_rev;
  PGresult *back; /* the record read back */
  ph_pool_write_result out;
} pwreq;

static void pw_answer(sreq *r) {
  pwreq *x = (pwreq *)r;
  x->cb(x->arg, &x->out);
}

static void pw_free(sreq *r) {
  pwreq *x = (pwreq *)r;
  PQclear(x->back);
  free(x);
}

static void pw_fail(pwreq *x, int status, const char *detail) {
  if (x->status != PH_OK)
    return; /* the first reason stands */
  x->status = status;
  x->detail = detail;
}

static const char *key_of(const pwreq *x) {
  return x->w.kind == PH_POOL_KIND_PROXY   ? x->w.u.proxy.proxy_id
         : x->w.kind == PH_POOL_KIND_ROUTE ? x->w.u.route.rule_id
                                           : x->w.u.credential.secret_ref;
}

/* A change statement's error as a contract status and detail. */
static void pw_sql_error(pwreq *x, const PGresult *res) {
  const char *st = res_state(res);
  const char *con = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
  con = con ? con : "";
  if (strcmp(st, "23505") == 0) {
    if (strcmp(con, "pool_routes_position_key") == 0)
      pw_fail(x, PH_EEXIST, "another route has this position (positions "
                            "are unique: leave gaps)");
    else if (x->w.kind == PH_POOL_KIND_PROXY)
      pw_fail(x, PH_EEXIST, "proxy_id is taken");
    else if (x->w.kind == PH_POOL_KIND_ROUTE)
      pw_fail(x, PH_EEXIST, "rule_id is taken");
    else
      pw_fail(x, PH_EEXIST, "secret_ref is taken");
  } else if (strcmp(st, "23503") == 0) {
    if (x->w.kind == PH_POOL_KIND_CREDENTIAL)
      pw_fail(x, PH_EBUSY, "proxies still use this credential: change or "
                           "delete them first");
    else
      pw_fail(x, PH_ENOENT, "secret_ref names no credential reference (add "
                            "it first)");
  } else if (strcmp(st, "22003") == 0) {
    pw_fail(x, PH_ELIMIT, "credential_version cannot go higher");
  } else if (strcmp(st, "23514") == 0 || strncmp(st, "22", 2) == 0) {
    pw_fail(x, PH_EINVAL, "a value the database refused");
  } else {
    pw_fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
  }
}

static const char *pnum(pwreq *x, int64_t v) {
  return num(x->nums, &x->n_num, v);
}

static pwstmt *add(pwreq *x, int q, int n, const char *const *v) {
  pwstmt *s = &x->st[x->n_st++];
  memset(s, 0, sizeof(*s));
  s->q = q;
  s->n = n;
  for (int i = 0; i < n; i++)
    s->v[i] = v[i];
  return s;
}

static void guard(pwreq *x, int q, int n, const char *const *v, int status,
                  const char *detail) {
  pwstmt *s = add(x, q, n, v);
  s->guard_status = status;
  s->guard_detail = detail;
}

static const char *missing_detail(const pwreq *x) {
  return x->w.kind == PH_POOL_KIND_PROXY   ? "no such proxy"
         : x->w.kind == PH_POOL_KIND_ROUTE ? "no such route"
                                           : "no such credential reference";
}

/* The statements of the write. */
static void plan(pwreq *x, int64_t now_ms) {
  const char *now = pnum(x, now_ms);
  const char *ev[] = {pnum(x, (int64_t)x->w.expect_revision)};
  guard(x, Q_POOL_GUARD_REV, 1, ev, PH_ESTATE,
        "the pool changed since it was read: read it again");
  int a = x->w.action;
  if (x->w.kind == PH_POOL_KIND_PROXY) {
    const ph_pool_proxy_row *p = &x->w.u.proxy;
    const char *id[] = {p->proxy_id};
    if (a == PH_POOL_CREATE) {
      const char *cv[] = {"1", pnum(x, PH_POOL_PROXIES_MAX)};
      guard(x, Q_POOL_GUARD_COUNT, 2, cv, PH_ELIMIT,
            "the pool has its most proxies");
    }
    if (a == PH_POOL_CREATE || a == PH_POOL_UPDATE) {
      const char *v[] = {p->proxy_id,
                         pnum(x, p->protocol),
                         p->host,
                         pnum(x, p->port),
                         p->zone,
                         pnum(x, p->capacity),
                         pnum(x, p->weight),
                         pnum(x, p->expires_at_ms),
                         p->secret_ref[0] ? p->secret_ref : NULL,
                         pnum(x, p->admin_state),
                         now};
      add(x, a == PH_POOL_CREATE ? Q_PROXY_INS : Q_PROXY_UPD, 11, v)->main = 1;
      /* Fits: sized for PH_POOL_GROUPS_MAX names and their commas. */
      ph_bw g;
      ph_bw_init(&g, x->groups, sizeof(x->groups), PH_BW_TEXT);
      for (uint32_t i = 0; i < p->n_groups; i++)
        ph_bw_printf(&g, "%s%s", i ? "," : "", p->groups[i]);
      add(x, Q_GROUPS_DEL, 1, id);
      const char *gv[] = {p->proxy_id, x->groups};
      add(x, Q_GROUPS_INS, 2, gv);
    } else if (a == PH_POOL_SET_STATE) {
      const char *v[] = {p->proxy_id, pnum(x, p->admin_state), now};
      add(x, Q_PROXY_STATE, 3, v)->main = 1;
    } else {
      add(x, Q_PROXY_DEL, 1, id)->main = 1;
    }
  } else if (x->w.kind == PH_POOL_KIND_ROUTE) {
    const ph_pool_route_row *r = &x->w.u.route;
    const char *id[] = {r->rule_id};
    if (a == PH_POOL_CREATE) {
      const char *cv[] = {"2", pnum(x, PH_POOL_ROUTES_MAX)};
      guard(x, Q_POOL_GUARD_COUNT, 2, cv, PH_ELIMIT,
            "the pool has its most routes");
    }
    if (a == PH_POOL_CREATE || a == PH_POOL_UPDATE) {
      const char *v[] = {r->rule_id,          pnum(x, r->position),
                         pnum(x, r->enabled), r->host_pattern,
                         pnum(x, r->port_min), pnum(x, r->port_max),
                         r->client_identity,  r->listener,
                         r->target_group,     r->strategy,
                         pnum(x, r->on_unavailable),
                         pnum(x, r->wait_timeout_ms),
                         r->sticky_key,       now};
      add(x, a == PH_POOL_CREATE ? Q_ROUTE_INS : Q_ROUTE_UPD, 14, v)->main = 1;
    } else if (a == PH_POOL_MOVE) {
      const char *v[] = {r->rule_id, pnum(x, r->position), now};
      add(x, Q_ROUTE_MOVE, 3, v)->main = 1;
    } else {
      add(x, Q_ROUTE_DEL, 1, id)->main = 1;
    }
  } else {
    const ph_pool_credential_ref *c = &x->w.u.credential;
    if (a == PH_POOL_CREATE) {
      const char *cv[] = {"3", pnum(x, PH_POOL_PROXIES_MAX)};
      guard(x, Q_POOL_GUARD_COUNT, 2, cv, PH_ELIMIT,
            "the pool has its most credential references");
      const char *v[] = {c->secret_ref,
                         pnum(x, (int64_t)(c->credential_version
                                               ? c->credential_version
                                               : 1)),
                         now};
      add(x, Q_CRED_INS, 3, v)->main = 1;
    } else if (a == PH_POOL_ROTATE) {
      const char *v[] = {c->secret_ref, now};
      add(x, Q_CRED_ROT, 2, v)->main = 1;
    } else {
      const char *v[] = {c->secret_ref};
      add(x, Q_CRED_DEL, 1, v)->main = 1;
    }
  }
}

static void pw_begin(void *arg, pg_send *snd) {
  pwreq *x = arg;
  x->round = 1;
  pg_exec_sql(snd, "BEGIN");
  for (int i = 0; i < x->n_st; i++)
    pg_exec(snd, x->st[i].q, x->st[i].n, x->st[i].v);
  pg_exec(snd, Q_POOL_BUMP, 0, NULL);
  if (x->w.action != PH_POOL_DELETE) {
    const char *k = key_of(x);
    const char *v[] = {x->w.kind == PH_POOL_KIND_ROUTE ? "0" : NULL, k, "1"};
    pg_exec(snd,
            x->w.kind == PH_POOL_KIND_PROXY   ? Q_POOL_LIST_PROXIES
            : x->w.kind == PH_POOL_KIND_ROUTE ? Q_POOL_LIST_ROUTES
                                              : Q_POOL_LIST_CREDS,
            3, v);
  }
}

/* Round 1: 0 BEGIN, 1..n_st guards and change, n_st + 1 the revision
 * step, n_st + 2 the read back. Round 2: COMMIT or ROLLBACK. */
static int pw_result(void *arg, int i, PGresult *res) {
  pwreq *x = arg;
  ExecStatusType st = PQresultStatus(res);
  if (x->round == 2) {
    if (x->committing) {
      const char *tag = PQcmdStatus(res);
      if (st != PGRES_COMMAND_OK || !tag || strcmp(tag, "COMMIT") != 0)
        pw_fail(x, PH_AZ_EUNAVAILABLE, "the commit failed");
    }
    return 0;
  }
  if (st == PGRES_PIPELINE_ABORTED)
    return 0;
  if (i == 0) {
    if (st != PGRES_COMMAND_OK)
      pw_fail(x, PH_AZ_EUNAVAILABLE, "the database failed");
    return 0;
  }
  if (i <= x->n_st) {
    if (st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR) {
      pg_pool_count_query_error(x->base.s->pool);
      pw_sql_error(x, res);
      return 0;
    }
    const pwstmt *ws = &x->st[i - 1];
    if (ws->guard_status) {
      const char *v = res_str(res, 0, 0);
      if (!v || strcmp(v, "t") != 0)
        pw_fail(x, ws->guard_status, ws->guard_detail);
    } else if (ws->main && PQntuples(res) < 1) {
      pw_fail(x, PH_ENOENT, missing_detail(x));
    }
    return 0;
  }
  if (i == x->n_st + 1) {
    if (st != PGRES_TUPLES_OK) {
      pg_pool_count_query_error(x->base.s->pool);
      pw_fail(x, PH_AZ_EUNAVAILABLE, "the pool revision could not be raised");
    } else if (res_revision(res, &x->new_rev) != AZ_REV_READ_OK) {
      pw_fail(x, PH_AZ_EUNAVAILABLE, "the pool revision row is missing or "
                                     "out of range");
    }
    return 0;
  }
  if (st != PGRES_TUPLES_OK || PQntuples(res) != 1) {
    pw_fail(x, PH_AZ_EUNAVAILABLE, "the record could not be read back");
    return 0;
  }
  x->back = res;
  return 1;
}

static void pw_round_done(void *arg, pg_send *snd) {
  pwreq *x = arg;
  if (x->round != 1)
    return;
  x->round = 2;
  x->committing = x->status == PH_OK;
  int rc = pg_exec_sql(snd, x->committing ? "COMMIT" : "ROLLBACK");
  x->commit_sent = x->committing && rc == PH_OK;
}

static void pw_done(void *arg, int status) {
  pwreq *x = arg;
  spg *s = x->base.s;
  x->out.size = sizeof(x->out);
  if (status != PH_OK) {
    x->out.status = x->round == 2 && x->commit_sent ? PH_AZ_EOUTCOME
                                                    : PH_AZ_EUNAVAILABLE;
    x->out.detail = x->out.status == PH_AZ_EOUTCOME
                        ? "the connection was lost during the commit: list "
                          "the record to know"
                        : "the database did not answer";
    req_finish(&x->base);
    return;
  }
  if (x->status != PH_OK || x->round != 2 || !x->committing) {
    x->out.status = x->status != PH_OK ? x->status : PH_AZ_EUNAVAILABLE;
    x->out.detail = x->detail;
    req_finish(&x->base);
    return;
  }
  pool_revision_observe(&s->prev, AZ_REV_READ_OK, x->new_rev, s->prev.value);
  x->out.status = PH_OK;
  x->out.revision = (uint64_t)x->new_rev;
  if (x->back) {
    x->out.kind = x->w.kind;
    if (x->w.kind == PH_POOL_KIND_PROXY)
      proxy_at(x->back, 0, &x->out.u.proxy);
    else if (x->w.kind == PH_POOL_KIND_ROUTE)
      route_at(x->back, 0, &x->out.u.route);
    else
      cred_at(x->back, 0, &x->out.u.credential);
  }
  req_finish(&x->base);
}

static const pg_task_ops pwrite_ops = {pw_begin, pw_result, pw_round_done,
                                       pw_done};

int64_t spg_pool_write(void *self, const ph_pool_write *w,
                       ph_pool_write_cb cb, void *arg) {
  spg *s = self;
  if (!w || !cb || w->size < sizeof(*w))
    return PH_EINVAL;
  pwreq *x = calloc(1, sizeof(*x));
  if (!x)
    return PH_ENOMEM;
  x->base.answer = pw_answer;
  x->base.free_fn = pw_free;
  x->cb = cb;
  x->arg = arg;
  x->w = *w;
  x->w.size = sizeof(x->w);
  req_add(s, &x->base);
  const char *detail = NULL;
  if (pool_validate_write(&x->w, &detail) != PH_OK) {
    /* Answered through the callback, so the operator gets the detail. */
    x->out.size = sizeof(x->out);
    x->out.status = PH_EINVAL;
    x->out.detail = detail;
    req_later(&x->base);
    return x->base.id;
  }
  plan(x, wall_ms());
  int rc = req_submit(&x->base, &pwrite_ops);
  if (rc != PH_OK) {
    x->out.size = sizeof(x->out);
    x->out.status = rc == PH_EFULL ? PH_EFULL : PH_AZ_EUNAVAILABLE;
    x->out.detail = rc == PH_EFULL ? "too many calls in flight"
                                   : "the database did not answer";
    req_later(&x->base);
  }
  return x->base.id;
}

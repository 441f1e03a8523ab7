/* SPDX-License-Identifier: BSD-2-Clause */
/* tm.presence's writes for store_pg (modules/contracts/tm_presence.h): each
 * call is one pool task of one statement (pg_presence_sql.h), so a
 * heartbeat costs one statement whatever the node's number of agents, and
 * an agent's change one. The view (read, LISTEN, poll) is
 * pg_presence_view.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg_int.h"

#define TM_PARAMS_MAX 6

typedef struct treq {
  sreq base;
  tm_presence_cb cb;
  void *arg;
  int stmt, nparams;
  int heartbeat; /* no row: superseded, not stale */
  int status;
  char *v[TM_PARAMS_MAX];
} treq;

static void t_answer(sreq *r) {
  treq *t = (treq *)r;
  t->cb(t->arg, t->status);
}

static void t_free(sreq *r) {
  treq *t = (treq *)r;
  for (int i = 0; i < TM_PARAMS_MAX; i++)
    free(t->v[i]);
  free(t);
}

static void t_begin(void *arg, pg_send *snd) {
  treq *t = arg;
  pg_exec(snd, t->stmt, t->nparams, (const char *const *)t->v);
}

/* Every write answers one row but the superseded heartbeat: column 0 is
 * the rows changed (the heartbeat: the lease left). */
static int t_result(void *arg, int i, PGresult *res) {
  treq *t = arg;
  if (i != 0)
    return 0;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    pg_pool_count_query_error(t->base.s->pool);
    PH_LOG_RL(t->base.s->api, t->base.s->ctx, PH_LOG_WARN,
              "store_pg: presence write failed",
              PH_STR("sqlstate", res_state(res)));
    t->status = TM_PRESENCE_EUNAVAIL;
  } else if (PQntuples(res) == 0 || res_int(res, 0, 0) <= 0) {
    t->status = t->heartbeat ? TM_PRESENCE_SUPERSEDED : TM_PRESENCE_STALE;
  } else {
    t->status = PH_OK;
  }
  return 0;
}

static void t_round_done(void *arg, pg_send *snd) {
  (void)arg;
  (void)snd;
}

static void t_done(void *arg, int status) {
  treq *t = arg;
  if (status != PH_OK)
    t->status = TM_PRESENCE_EUNAVAIL;
  req_finish(&t->base);
}

static const pg_task_ops tm_ops = {t_begin, t_result, t_round_done, t_done};

static char *i64s(int64_t v) {
  char b[24];
  snprintf(b, sizeof(b), "%" PRId64, v);
  return strdup(b);
}

/* A new request for stmt with nparams values, each strdup'd by the caller
 * into vals (NULL entries: no memory). Submits it. */
static int64_t submit(spg *s, int stmt, int heartbeat, char **vals,
                      int nparams, tm_presence_cb cb, void *arg) {
  treq *t = calloc(1, sizeof(*t));
  int nomem = !t;
  for (int i = 0; i < nparams; i++)
    nomem |= !vals[i];
  if (nomem) {
    for (int i = 0; i < nparams; i++)
      free(vals[i]);
    free(t);
    return PH_ENOMEM;
  }
  memcpy(t->v, vals, sizeof(char *) * (size_t)nparams);
  t->cb = cb;
  t->arg = arg;
  t->stmt = stmt;
  t->nparams = nparams;
  t->heartbeat = heartbeat;
  t->base.answer = t_answer;
  t->base.free_fn = t_free;
  req_add(s, &t->base);
  int rc = req_submit(&t->base, &tm_ops);
  if (rc != PH_OK) {
    t->status = rc == PH_EFULL ? PH_EFULL : TM_PRESENCE_EUNAVAIL;
    req_later(&t->base);
  }
  return t->base.id;
}

static int id_ok(const char *id) {
  size_t n = id ? strlen(id) : 0;
  return n >= 1 && n <= TM_PRESENCE_ID_MAX;
}

static int64_t tm_heartbeat(void *self, const tm_presence_node_reg *n,
                            tm_presence_cb cb, void *arg) {
  if (!n || !cb || !id_ok(n->node_id) || !n->zone || !n->relay_addr ||
      strlen(n->zone) > TM_PRESENCE_ZONE_MAX ||
      strlen(n->relay_addr) > TM_PRESENCE_RELAY_MAX ||
      n->lease_ms < TM_PRESENCE_LEASE_MIN_MS ||
      n->lease_ms > TM_PRESENCE_LEASE_MAX_MS)
    return PH_EINVAL;
  char *v[] = {strdup(n->node_id), strdup(n->zone), strdup(n->relay_addr),
               i64s(n->instance_nonce), i64s(n->lease_ms)};
  return submit(self, Q_TM_HEARTBEAT, 1, v, 5, cb, arg);
}

static int64_t tm_agent_connected(void *self, const tm_presence_agent_reg *a,
                                  tm_presence_cb cb, void *arg) {
  if (!a || !cb || !id_ok(a->node_id) || !id_ok(a->agent_id) ||
      a->connections > TM_PRESENCE_CONNS_MAX ||
      a->capabilities > (uint64_t)INT64_MAX)
    return PH_EINVAL;
  char *v[] = {strdup(a->agent_id),        strdup(a->node_id),
               i64s(a->instance_nonce),    i64s(a->session_nonce),
               i64s((int64_t)a->connections), i64s((int64_t)a->capabilities)};
  return submit(self, Q_TM_AGENT_UP, 0, v, 6, cb, arg);
}

static int64_t tm_agent_left(void *self, const char *node_id,
                             const char *agent_id, int64_t session_nonce,
                             tm_presence_cb cb, void *arg) {
  if (!cb || !id_ok(node_id) || !id_ok(agent_id))
    return PH_EINVAL;
  char *v[] = {strdup(agent_id), strdup(node_id), i64s(session_nonce)};
  return submit(self, Q_TM_AGENT_LEFT, 0, v, 3, cb, arg);
}

static int64_t tm_node_leave(void *self, const char *node_id,
                             int64_t instance_nonce, tm_presence_cb cb,
                             void *arg) {
  if (!cb || !id_ok(node_id))
    return PH_EINVAL;
  char *v[] = {strdup(node_id), i64s(instance_nonce)};
  return submit(self, Q_TM_NODE_LEAVE, 1, v, 2, cb, arg);
}

/* The array literal of ids ({"a","b"}: each quoted, quotes and backslashes
 * escaped), or NULL on no memory. */
static char *text_array(const char *const *ids, size_t n) {
  size_t len = 3;
  for (size_t i = 0; i < n; i++)
    len += 2 * strlen(ids[i]) + 3;
  char *b = malloc(len), *p = b;
  if (!b)
    return NULL;
  *p++ = '{';
  for (size_t i = 0; i < n; i++) {
    if (i)
      *p++ = ',';
    *p++ = '"';
    for (const char *c = ids[i]; *c; c++) {
      if (*c == '"' || *c == '\\')
        *p++ = '\\';
      *p++ = *c;
    }
    *p++ = '"';
  }
  *p++ = '}';
  *p = 0;
  return b;
}

static int64_t tm_agents_sync(void *self, const char *node_id,
                              int64_t instance_nonce,
                              const char *const *agent_ids, size_t n,
                              int64_t below_session, tm_presence_cb cb,
                              void *arg) {
  if (!cb || !id_ok(node_id) || n > TM_PRESENCE_SYNC_MAX ||
      (n && !agent_ids))
    return PH_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!id_ok(agent_ids[i]))
      return PH_EINVAL;
  char *v[] = {strdup(node_id), i64s(instance_nonce), i64s(below_session),
               text_array(agent_ids, n)};
  return submit(self, Q_TM_AGENTS_SYNC, 0, v, 4, cb, arg);
}

static int tm_cancel(void *self, int64_t id) {
  spg *s = self;
  return req_cancel(s, id);
}

const tm_presence_v1 spg_presence_vt = {
    tm_heartbeat, tm_agent_connected, tm_agent_left, tm_node_leave,
    tm_cancel,    tm_view_get,        tm_view_watch, tm_agents_sync};

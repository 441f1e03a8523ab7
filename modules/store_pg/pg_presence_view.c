/* SPDX-License-Identifier: BSD-2-Clause */
/* tm.presence's view for store_pg: the live presence in memory, so that
 * choosing a candidate never queries the database on a stream's path
 * (TM-P2-33). Kept by:
 * - LISTEN tm_presence on a connection of its own (not the pool's: a
 *   pipelined pool connection is lent to tasks), driven on the loop like
 *   the pool's (PQconnectStart/PQconnectPoll, PQconsumeInput, PQnotifies).
 *   Every write that changes presence notifies at its commit
 *   (pg_presence_sql.h), so another node's change is read at once;
 * - a poll every presence_poll, the safety net: it finds what no
 *   notification says (a lease that lapsed: a crashed or partitioned
 *   node) and whatever a lost LISTEN connection missed.
 * A read is one statement (Q_TM_READ) through the pool; one at a time,
 * with a re-read queued when asked meanwhile. The view's revision rises
 * only when its content (nodes, zones, relays, agents, nonces, counts,
 * capabilities; not the lease left) differs from the last read's.
 *
 * Bounded (presence_max_nodes, presence_max_agents): the read asks for at
 * most max_nodes + max_agents + 1 rows (a node without agents is one row,
 * each agent connection one), enough for every row within both limits
 * and one more to tell that some were left out. The view keeps the first
 * max_nodes nodes (by node_id) and the first max_agents agents; what is
 * beyond is not in it (fail closed: an agent not in the view is no
 * candidate), counted per read in
 * proxyhost_store_pg_presence_truncated_total{limit} and logged once
 * until a read fits again. Everything the view holds (the result, its
 * signature, the two arrays) is thus bounded by the two limits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metric_table.h"
#include "store_pg_int.h"

#define TM_CHANNEL "tm_presence"

enum { L_NONE, L_CONNECTING, L_LISTEN_SENT, L_LISTENING };

struct spg_tm {
  spg *s;
  int active;                 /* started by a view() or watch() */
  ph_timer *poll, *retry;
  PGconn *lc;                 /* the LISTEN connection */
  ph_io *lio;
  int lstate;
  int64_t backoff_ms;         /* the next retry's wait */
  int64_t read_task;          /* > 0 while a read runs */
  int dirty;                  /* asked again while it ran */
  int stopped;
  PGresult *cur, *next;       /* the view's rows; the running read's */
  char *sig;                  /* the content of cur, to compare */
  tm_presence_node *nodes;
  tm_presence_agent *agents;
  size_t n_nodes, n_agents;
  uint64_t rev;
  int64_t good_ms;            /* the last good read (loop clock) */
  tm_presence_watch_cb cb;
  void *cbarg;
  int over_logged; /* the last read left rows out, and said so */
  ph_series *m_trunc[2]; /* truncated reads: max_nodes, max_agents */
  ph_series *m_nodes, *m_agents; /* the view's size */
};

enum { OVER_NODES = 1, OVER_AGENTS = 2 };

static void read_now(struct spg_tm *v);

/* ---- the view from a read ----------------------------------------------- */

/* The content of a read as one string (fields separated by \x1f, rows by
 * \x1e), the lease left (column 3) left out. NULL on no memory. */
static char *signature(const PGresult *r) {
  size_t len = 1;
  int rows = PQntuples(r);
  for (int i = 0; i < rows; i++)
    for (int c = 0; c < 8; c++)
      len += (size_t)PQgetlength(r, i, c) + 1;
  char *sig = malloc(len), *p = sig;
  if (!sig)
    return NULL;
  for (int i = 0; i < rows; i++)
    for (int c = 0; c < 8; c++) {
      if (c != 3) {
        size_t n = (size_t)PQgetlength(r, i, c);
        memcpy(p, PQgetvalue(r, i, c), n);
        p += n;
      }
      *p++ = c == 7 ? '\x1e' : '\x1f';
    }
  *p = 0;
  return sig;
}

/* The rows a read asks for at most (Q_TM_READ's LIMIT). */
static int64_t row_limit(const spg *s) {
  return s->presence_max_nodes + s->presence_max_agents + 1;
}

/* Builds the arrays over r (rows by node, then agent), within the limits;
 * *over: OVER_NODES | OVER_AGENTS for what was left out. 0, or -1. */
static int build(struct spg_tm *v, const PGresult *r, tm_presence_node **pn,
                 size_t *nn, tm_presence_agent **pa, size_t *na, int *over) {
  int rows = PQntuples(r);
  size_t max_n = (size_t)v->s->presence_max_nodes;
  size_t max_a = (size_t)v->s->presence_max_agents;
  size_t cap_n = (size_t)rows < max_n ? (size_t)rows : max_n;
  size_t cap_a = (size_t)rows < max_a ? (size_t)rows : max_a;
  tm_presence_node *nodes = calloc(cap_n + 1, sizeof(*nodes));
  tm_presence_agent *agents = calloc(cap_a + 1, sizeof(*agents));
  if (!nodes || !agents) {
    free(nodes);
    free(agents);
    return -1;
  }
  size_t n = 0, a = 0;
  int skip = 0; /* the rows of a node left out */
  const char *last = NULL;
  *over = 0;
  for (int i = 0; i < rows; i++) {
    const char *id = PQgetvalue(r, i, 0);
    if (!last || strcmp(last, id) != 0) {
      last = id;
      skip = n == max_n;
      if (skip) {
        *over |= OVER_NODES;
        continue;
      }
      tm_presence_node *x = &nodes[n++];
      x->node_id = id;
      x->zone = PQgetvalue(r, i, 1);
      x->relay_addr = PQgetvalue(r, i, 2);
      x->lease_left_ms = res_int(r, i, 3);
      x->first = a;
    }
    if (skip || PQgetisnull(r, i, 4))
      continue;
    if (a == max_a) {
      *over |= OVER_AGENTS;
      continue;
    }
    tm_presence_agent *y = &agents[a++];
    y->agent_id = PQgetvalue(r, i, 4);
    y->session_nonce = res_int(r, i, 5);
    y->connections = (uint32_t)res_int(r, i, 6);
    y->capabilities = (uint64_t)res_int(r, i, 7);
    nodes[n - 1].n_agents++;
  }
  /* The LIMIT reached: the rows not read are beyond a limit too (within
   * both, there are at most max_nodes + max_agents rows). */
  if ((int64_t)rows >= row_limit(v->s) && !*over)
    *over = OVER_AGENTS;
  *pn = nodes;
  *nn = n;
  *pa = agents;
  *na = a;
  return 0;
}

/* The view's size in the gauges; a read that left rows out counted, and
 * logged once until a read fits again. */
static void note_size(struct spg_tm *v, int over) {
  const ph_api *api = v->s->api;
  if (v->m_nodes)
    api->gauge_set(v->m_nodes, (double)v->n_nodes);
  if (v->m_agents)
    api->gauge_set(v->m_agents, (double)v->n_agents);
  for (int i = 0; i < 2; i++)
    if ((over & (1 << i)) && v->m_trunc[i])
      api->inc(v->m_trunc[i], 1);
  if (over && !v->over_logged)
    PH_LOG(api, v->s->ctx, PH_LOG_WARN,
           "store_pg: presence view over its limit; rows left out (their "
           "agents are no candidates)",
           PH_STR("limit", over & OVER_NODES ? "presence_max_nodes"
                                             : "presence_max_agents"),
           PH_INT("max_nodes", v->s->presence_max_nodes),
           PH_INT("max_agents", v->s->presence_max_agents),
           PH_UINT("nodes", v->n_nodes), PH_UINT("agents", v->n_agents));
  v->over_logged = over != 0;
}

/* Installs v->next as the view; the watcher hears of a change. */
static void install(struct spg_tm *v) {
  PGresult *r = v->next;
  v->next = NULL;
  tm_presence_node *nodes;
  tm_presence_agent *agents;
  size_t nn, na;
  int over = 0;
  char *sig = signature(r);
  if (!sig || build(v, r, &nodes, &nn, &agents, &na, &over) != 0) {
    free(sig);
    PQclear(r);
    return;
  }
  int changed = !v->sig || strcmp(sig, v->sig) != 0;
  PQclear(v->cur);
  free(v->sig);
  free(v->nodes);
  free(v->agents);
  v->cur = r;
  v->sig = sig;
  v->nodes = nodes;
  v->agents = agents;
  v->n_nodes = nn;
  v->n_agents = na;
  v->good_ms = v->s->api->now_ms(v->s->ctx);
  note_size(v, over);
  if (!changed)
    return;
  v->rev++;
  if (v->cb)
    v->cb(v->cbarg, v->rev);
}

/* ---- the read ------------------------------------------------------------ */

static void r_begin(void *arg, pg_send *snd) {
  struct spg_tm *v = arg;
  char lim[24];
  snprintf(lim, sizeof(lim), "%" PRId64, row_limit(v->s));
  const char *p[] = {lim};
  pg_exec(snd, Q_TM_READ, 1, p);
}

static int r_result(void *arg, int i, PGresult *res) {
  struct spg_tm *v = arg;
  if (i != 0 || PQresultStatus(res) != PGRES_TUPLES_OK) {
    if (i == 0)
      pg_pool_count_query_error(v->s->pool);
    return 0;
  }
  PQclear(v->next);
  v->next = res;
  return 1;
}

static void r_round_done(void *arg, pg_send *snd) {
  (void)arg;
  (void)snd;
}

static void r_done(void *arg, int status) {
  struct spg_tm *v = arg;
  v->read_task = 0;
  if (status == PH_OK && v->next)
    install(v);
  PQclear(v->next);
  v->next = NULL;
  if (v->dirty && !v->stopped) {
    v->dirty = 0;
    read_now(v);
  }
}

static const pg_task_ops read_ops = {r_begin, r_result, r_round_done, r_done};

static void read_now(struct spg_tm *v) {
  if (v->stopped)
    return;
  if (v->read_task > 0) {
    v->dirty = 1;
    return;
  }
  int64_t t = pg_pool_submit(v->s->pool, &read_ops, v);
  if (t > 0)
    v->read_task = t;
}

static void on_poll(ph_timer *t, void *arg) {
  (void)t;
  read_now(arg);
}

/* ---- LISTEN ------------------------------------------------------------- */

static void on_lio(ph_io *io, int fd, int revents, void *arg);

static void l_close(struct spg_tm *v) {
  const ph_api *api = v->s->api;
  if (v->lio)
    api->io_free(v->lio);
  v->lio = NULL;
  if (v->lc)
    PQfinish(v->lc);
  v->lc = NULL;
  v->lstate = L_NONE;
}

/* The LISTEN connection failed (or its deadline passed): closed, and
 * tried again after a backoff doubling from reconnect_min to
 * reconnect_max; the poll goes on meanwhile. */
static void l_fail(struct spg_tm *v, const char *what) {
  spg *s = v->s;
  PH_LOG_RL(s->api, s->ctx, PH_LOG_WARN,
            "store_pg: presence LISTEN connection lost; the poll goes on",
            PH_STR("stage", what));
  l_close(v);
  if (v->stopped)
    return;
  if (v->backoff_ms < s->reconnect_min_ms)
    v->backoff_ms = s->reconnect_min_ms;
  s->api->timer_set(v->retry, (uint64_t)v->backoff_ms, 0);
  v->backoff_ms = v->backoff_ms * 2 > s->reconnect_max_ms
                      ? s->reconnect_max_ms
                      : v->backoff_ms * 2;
}

static int l_watch(struct spg_tm *v, int events) {
  const ph_api *api = v->s->api;
  if (v->lio)
    api->io_free(v->lio);
  v->lio = NULL;
  int fd = PQsocket(v->lc);
  if (fd < 0)
    return -1;
  v->lio = api->io_new(v->s->ctx, fd, events, on_lio, v);
  return v->lio ? 0 : -1;
}

static void l_start(struct spg_tm *v) {
  v->lc = PQconnectStart(v->s->dsn);
  if (!v->lc || PQstatus(v->lc) == CONNECTION_BAD ||
      PQsetnonblocking(v->lc, 1) != 0 || l_watch(v, PH_WRITE) != 0) {
    l_fail(v, "connect");
    return;
  }
  v->lstate = L_CONNECTING;
  /* The deadline of connecting and LISTEN: query_timeout, as the pool's
   * connection attempts. */
  v->s->api->timer_set(v->retry, (uint64_t)v->s->query_timeout_ms, 0);
}

/* The retry timer: a deadline while connecting, the backoff when down. */
static void on_retry(ph_timer *t, void *arg) {
  (void)t;
  struct spg_tm *v = arg;
  if (v->stopped)
    return;
  if (v->lstate == L_NONE)
    l_start(v);
  else if (v->lstate != L_LISTENING)
    l_fail(v, "timeout");
}

static void l_connecting(struct spg_tm *v) {
  switch (PQconnectPoll(v->lc)) {
  case PGRES_POLLING_READING:
    if (l_watch(v, PH_READ) != 0)
      l_fail(v, "connect");
    return;
  case PGRES_POLLING_WRITING:
    if (l_watch(v, PH_WRITE) != 0)
      l_fail(v, "connect");
    return;
  case PGRES_POLLING_OK:
    if (!PQsendQuery(v->lc, "LISTEN " TM_CHANNEL) || l_watch(v, PH_READ) != 0) {
      l_fail(v, "listen");
      return;
    }
    v->lstate = L_LISTEN_SENT;
    if (PQflush(v->lc) == 1)
      v->s->api->io_set(v->lio, PH_READ | PH_WRITE);
    return;
  default:
    l_fail(v, "connect");
  }
}

static void l_input(struct spg_tm *v, int revents) {
  if ((revents & PH_WRITE) && PQflush(v->lc) == 0)
    v->s->api->io_set(v->lio, PH_READ);
  if (!PQconsumeInput(v->lc)) {
    l_fail(v, "read");
    return;
  }
  int seen = 0;
  while (!PQisBusy(v->lc)) {
    PGresult *r = PQgetResult(v->lc);
    if (!r)
      break;
    if (v->lstate == L_LISTEN_SENT) {
      if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        PQclear(r);
        l_fail(v, "listen");
        return;
      }
      v->lstate = L_LISTENING;
      v->backoff_ms = 0;
      v->s->api->timer_set(v->retry, 0, 0);
      PH_LOG(v->s->api, v->s->ctx, PH_LOG_INFO,
             "store_pg: presence LISTEN connection up",
             PH_STR("channel", TM_CHANNEL));
      seen = 1; /* caught up: whatever happened before LISTEN is read */
    }
    PQclear(r);
  }
  PGnotify *n;
  while ((n = PQnotifies(v->lc))) {
    seen = 1;
    PQfreemem(n);
  }
  if (seen)
    read_now(v);
}

static void on_lio(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  struct spg_tm *v = arg;
  if (v->lstate == L_CONNECTING)
    l_connecting(v);
  else if (v->lc)
    l_input(v, revents);
}

/* ---- the module's side ---------------------------------------------------- */

static const char *const limits[] = {"max_nodes", "max_agents", NULL};
static const ph_label_def limit_l[] = {{"limit", limits}};

static const ph_metric_table tm_metrics[] = {
    PH_METRIC("proxyhost_store_pg_presence_truncated_total",
              PH_METRIC_COUNTER,
              "Reads of tm.presence that left rows out, by the limit "
              "reached (presence_max_nodes, presence_max_agents)",
              PH_METRIC_LABELS(limit_l), PH_METRIC_NO_BUCKETS, struct spg_tm,
              m_trunc),
    PH_METRIC("proxyhost_store_pg_presence_nodes", PH_METRIC_GAUGE,
              "Live nodes in tm.presence's view", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, struct spg_tm, m_nodes),
    PH_METRIC("proxyhost_store_pg_presence_agents", PH_METRIC_GAUGE,
              "Agent connections (rows) in tm.presence's view",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, struct spg_tm,
              m_agents),
    PH_METRIC_END};

int tm_view_init(spg *s) {
  struct spg_tm *v = calloc(1, sizeof(*v));
  if (!v)
    return PH_ENOMEM;
  v->s = s;
  s->tm = v;
  if (ph_metric_table_register(s->api, s->ctx, tm_metrics, v) != PH_OK)
    return PH_EINVAL;
  v->poll = s->api->timer_new(s->ctx, on_poll, v);
  v->retry = s->api->timer_new(s->ctx, on_retry, v);
  return v->poll && v->retry ? PH_OK : PH_ENOMEM;
}

static void activate(spg *s) {
  struct spg_tm *v = s->tm;
  if (v->active || !s->started)
    return;
  v->active = 1;
  v->stopped = 0;
  uint64_t ms = (uint64_t)s->presence_poll_ms;
  s->api->timer_set(v->poll, ms, ms);
  l_start(v);
  read_now(v);
}

void tm_view_stop(spg *s) {
  struct spg_tm *v = s->tm;
  if (!v)
    return;
  v->stopped = 1;
  v->active = 0;
  s->api->timer_set(v->poll, 0, 0);
  s->api->timer_set(v->retry, 0, 0);
  l_close(v);
  if (v->read_task > 0 && pg_pool_cancel(s->pool, v->read_task) == PH_OK)
    v->read_task = 0;
}

void tm_view_free(spg *s) {
  struct spg_tm *v = s->tm;
  if (!v)
    return;
  l_close(v);
  if (v->poll)
    s->api->timer_free(v->poll);
  if (v->retry)
    s->api->timer_free(v->retry);
  PQclear(v->cur);
  PQclear(v->next);
  free(v->sig);
  free(v->nodes);
  free(v->agents);
  free(v);
  s->tm = NULL;
}

int tm_view_get(void *self, tm_presence_view *out) {
  spg *s = self;
  struct spg_tm *v = s->tm;
  if (!out)
    return PH_EINVAL;
  activate(s);
  memset(out, 0, sizeof(*out));
  out->revision = v->rev;
  out->n_nodes = v->n_nodes;
  out->n_agents = v->n_agents;
  out->nodes = v->nodes;
  out->agents = v->agents;
  if (v->rev == 0)
    return PH_ESTATE;
  /* Vouched for while the last good read is within three polls. */
  int64_t age = s->api->now_ms(s->ctx) - v->good_ms;
  return age <= 3 * s->presence_poll_ms ? PH_OK : PH_ESTATE;
}

void tm_view_watch(void *self, tm_presence_watch_cb cb, void *arg) {
  spg *s = self;
  s->tm->cb = cb;
  s->tm->cbarg = arg;
  activate(s);
}

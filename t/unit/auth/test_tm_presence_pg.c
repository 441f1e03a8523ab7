/* SPDX-License-Identifier: BSD-2-Clause */
/* tm.presence on store_pg (modules/contracts/tm_presence.h, issue 27),
 * with real PostgreSQL and several mock hosts, each loading store_pg on
 * one database (the servers of a mesh):
 *  - a heartbeat registers a node, an agent's connection is one write, and
 *    another node's view shows both (TM-P2-29: lease, capabilities);
 *  - a NOTIFY reaches another node's view without its poll (its
 *    presence_poll is 60 s, the bound of the wait far below it);
 *  - a stale session's update or leave changes nothing
 *    (TM_PRESENCE_STALE), an older instance's heartbeat neither
 *    (TM_PRESENCE_SUPERSEDED), and a newer instance takes its node over
 *    and drops the older one's agents;
 *  - heartbeats keep a node and its agents in the view; a lapsed lease
 *    hides both (seen by the poll, no notification);
 *  - PostgreSQL restarted: the LISTEN connection comes back by itself;
 *  - statements per heartbeat do not grow with the node's agents: the
 *    cluster logs every statement of the database (log_statement = all)
 *    and the lines of each heartbeat are counted, with 1 and 200 agents;
 *  - the view answers from memory (TM-P2-33): a watcher hears of each
 *    change with the view's revision;
 *  - agents_sync (1.1) deletes the node's rows of agents not named and of
 *    sessions older than its bound, only for the node's instance;
 *  - the view is bounded (presence_max_nodes, presence_max_agents): rows
 *    beyond are left out, counted per read by the limit reached, logged
 *    once.
 * Run by t/integration/store_pg.sh (PH_TEST_PG_DSN, PH_TEST_PG_LOG: the
 * cluster's server log, PH_TEST_PG_STOP/START, PH_TEST_LOG). Every wait is a bounded number of
 * 20 ms loop slices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>


#include "contracts/tm_presence.h"
#include "file_test.h"
#include "mock_test.h"
#include "pg_test.h"
#include "tap.h"

#define DB "tm_presence"

typedef struct client {
  PG_TEST_CLIENT_BASE;
  const tm_presence_v1 *tp;
  void *self;
  uint64_t heard; /* the watcher's last revision */
  int heard_n;
} client;

PG_TEST_CLIENTS(client, 8)

static int cl_start(void *state) {
  client *c = state;
  c->tp = c->api->service_get_named(c->ctx, TM_PRESENCE_SERVICE, "store_pg",
                                    TM_PRESENCE_MAJOR, 0, &c->self);
  return c->tp ? PH_OK : PH_ENOENT;
}

static const char *const cl_requires[] = {TM_PRESENCE_SERVICE, NULL};
static const ph_module cl_mod = {
    PH_MODULE_HEADER("client", "1.0"),
    .requires = cl_requires,
    .init = cl_init,
    .start = cl_start,
};

static const char *base_dsn, *log_path, *pg_log;

static client *up_with(const char *poll, const char *extra) {
  char ini[2048], err[1024];
  snprintf(ini, sizeof(ini),
           "[proxyhost]\nmodules = %s\ndrain_timeout = 3s\n"
           "[log]\nlevel = debug\nfile = %s\n"
           "[store_pg]\ndsn = %s dbname=" DB "\nmigrate = auto\n"
           "pool_size = 2\nquery_timeout = 2s\npresence_poll = %s\n"
           "reconnect_min = 50ms\nreconnect_max = 200ms\n%s",
           PG_TEST_MODULE, log_path, base_dsn, poll, extra);
  int before = n_clients;
  ph_mock *m = mock_test_boot(ini, &cl_mod, err, sizeof(err));
  if (!m) {
    printf("# mock: %s\n", err);
    n_clients = before;
    return NULL;
  }
  clients[before].m = m;
  return &clients[before];
}

static client *up(const char *poll) { return up_with(poll, ""); }

static int sql(const char *db, const char *q) {
  return pg_test_exec(base_dsn, db, q);
}

/* ---- synchronous calls ---------------------------------------------- */

typedef struct wres {
  int calls, status;
} wres;

static void on_done(void *arg, int status) {
  wres *w = arg;
  w->calls++;
  w->status = status;
}

/* Runs the loops until the call answered (bounded); its status, or -999. */
static int finish(int64_t id, wres *w) {
  if (id <= 0)
    return (int)id;
  for (int i = 0; i < 500 && !w->calls; i++)
    slice();
  return w->calls == 1 ? w->status : -999;
}

static int heartbeat(client *c, const char *node, const char *zone,
                     int64_t nonce, int64_t lease) {
  wres w = {0};
  tm_presence_node_reg n = {node, zone, "relay.example:7443", nonce, lease};
  return finish(c->tp->node_heartbeat(c->self, &n, on_done, &w), &w);
}

static int connected(client *c, const char *node, int64_t inst,
                     const char *agent, int64_t session, uint32_t conns,
                     uint64_t caps) {
  wres w = {0};
  tm_presence_agent_reg a = {node, inst, agent, session, conns, caps};
  return finish(c->tp->agent_connected(c->self, &a, on_done, &w), &w);
}

static int sync_agents(client *c, const char *node, int64_t inst,
                       const char *const *ids, size_t n, int64_t below) {
  wres w = {0};
  return finish(c->tp->agents_sync(c->self, node, inst, ids, n, below,
                                   on_done, &w),
                &w);
}

static int leave(client *c, const char *node, int64_t inst) {
  wres w = {0};
  return finish(c->tp->node_leave(c->self, node, inst, on_done, &w), &w);
}

/* Lines of the module log (shared by the instances) containing needle. */
static int mlog_count(const char *needle) {
  char *log = file_test_slurp(log_path);
  int n = 0;
  for (const char *p = log; p && (p = strstr(p, needle)); p++)
    n++;
  free(log);
  return n;
}

static double metric(client *c, const char *name, const char *labels) {
  double v = 0;
  ph_mock_metric(c->m, name, labels, &v);
  return v;
}

static int left(client *c, const char *node, const char *agent,
                int64_t session) {
  wres w = {0};
  return finish(c->tp->agent_left(c->self, node, agent, session, on_done, &w),
                &w);
}

/* ---- the view ----------------------------------------------------------- */

static const tm_presence_node *node_of(const tm_presence_view *v,
                                       const char *id) {
  for (size_t i = 0; i < v->n_nodes; i++)
    if (strcmp(v->nodes[i].node_id, id) == 0)
      return &v->nodes[i];
  return NULL;
}

static const tm_presence_agent *agent_of(const tm_presence_view *v,
                                         const char *node, const char *id) {
  const tm_presence_node *n = node_of(v, node);
  for (size_t i = 0; n && i < n->n_agents; i++)
    if (strcmp(v->agents[n->first + i].agent_id, id) == 0)
      return &v->agents[n->first + i];
  return NULL;
}

/* What a condition on c's view looks at. */
typedef int (*vcond)(const tm_presence_view *v, const void *arg);

/* Runs the loops until cond holds on c's view; 1, or 0 after slices. */
static int wait_view(client *c, vcond cond, const void *arg, int slices) {
  tm_presence_view v;
  for (int i = 0; i <= slices; i++) {
    if (c->tp->view(c->self, &v) == PH_OK && cond(&v, arg))
      return 1;
    slice();
  }
  return 0;
}

typedef struct want_agent {
  const char *node, *agent;
  int64_t session;
  uint32_t conns;
  uint64_t caps;
} want_agent;

static int has_agent(const tm_presence_view *v, const void *arg) {
  const want_agent *w = arg;
  const tm_presence_agent *a = agent_of(v, w->node, w->agent);
  return a && a->session_nonce == w->session && a->connections == w->conns &&
         a->capabilities == w->caps;
}

static int has_node(const tm_presence_view *v, const void *arg) {
  return node_of(v, arg) != NULL;
}

static int lacks_node(const tm_presence_view *v, const void *arg) {
  return node_of(v, arg) == NULL;
}

static int lacks_agent(const tm_presence_view *v, const void *arg) {
  const want_agent *w = arg;
  return node_of(v, w->node) && !agent_of(v, w->node, w->agent);
}

static void on_watch(void *arg, uint64_t rev) {
  client *c = arg;
  c->heard = rev;
  c->heard_n++;
}

/* ---- statement count ---------------------------------------------------- */

/* Lines of the server log from offset on that contain needle. */
static int log_count(long offset, const char *needle) {
  FILE *f = fopen(pg_log, "r");
  if (!f)
    return -1;
  fseek(f, offset, SEEK_SET);
  char line[8192];
  int n = 0;
  while (fgets(line, sizeof(line), f))
    n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

static long log_size(void) {
  FILE *f = fopen(pg_log, "r");
  if (!f)
    return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* The log lines of three heartbeats of node (instance inst): every
 * presence statement ("execute tm_") and the heartbeats'. */
static void count_heartbeats(client *c, const char *node, int64_t inst,
                             int *all, int *hb) {
  long off = log_size();
  for (int i = 0; i < 3; i++)
    heartbeat(c, node, "z1", inst, 60000);
  /* The log is written by the server process: wait (bounded) for the
   * third line, then for nothing more. */
  for (int i = 0; i < 100 && log_count(off, "execute tm_heartbeat") < 3; i++)
    slice();
  *all = log_count(off, "execute tm_");
  *hb = log_count(off, "execute tm_heartbeat");
}

int main(void) {
  plan_lazy();
  base_dsn = getenv("PH_TEST_PG_DSN");
  log_path = getenv("PH_TEST_LOG");
  pg_log = getenv("PH_TEST_PG_LOG");
  if (!base_dsn || !log_path || !pg_log) {
    ok(0, "PH_TEST_PG_DSN, PH_TEST_PG_LOG and PH_TEST_LOG are set "
          "(t/integration/store_pg.sh runs this)");
    return done_testing();
  }
  ok(sql("postgres", "CREATE DATABASE " DB) == 0, "a database for presence");
  /* a: a node writing; b: another node's view, poll 60 s (so what it sees
   * in time came by NOTIFY); c: a view polling every 200 ms. */
  client *a = up("2s"), *b = up("60s"), *c = up("200ms");
  ok(a && b && c, "three store_pg instances on one database provide "
                  "tm.presence");
  if (!a || !b || !c)
    return done_testing();
  b->tp->watch(b->self, on_watch, b);
  tm_presence_view v;
  for (int i = 0; i < 200 && b->tp->view(b->self, &v) != PH_OK; i++)
    slice();
  is_int(b->tp->view(b->self, &v), PH_OK, "b's view is read at once");
  is_int((int)v.n_nodes, 0, "no node yet");
  c->tp->view(c->self, &v);

  /* Register, connect. */
  is_int(heartbeat(a, "node-a", "z1", 100, 60000), PH_OK,
         "TM-P2-29: node-a's first heartbeat registers it");
  ok(wait_view(b, has_node, "node-a", 100),
     "TM-P2-29: b sees node-a by NOTIFY (its poll is 60 s)");
  b->tp->view(b->self, &v);
  const tm_presence_node *n = node_of(&v, "node-a");
  ok(n && strcmp(n->zone, "z1") == 0 &&
         strcmp(n->relay_addr, "relay.example:7443") == 0 &&
         n->lease_left_ms > 0 && n->lease_left_ms <= 60000,
     "with its zone, relay address and the lease left");
  uint64_t before = b->heard;
  is_int(connected(a, "node-a", 100, "agent-1", 5, 2, 0x3), PH_OK,
         "agent-1 connected to node-a: one write");
  want_agent w1 = {"node-a", "agent-1", 5, 2, 0x3};
  ok(wait_view(b, has_agent, &w1, 100),
     "TM-P2-29: b sees agent-1 on node-a (session, connections, "
     "capabilities) by NOTIFY");
  ok(b->heard > before && b->heard_n >= 2,
     "TM-P2-33: b's watcher heard of the change with the view's revision");

  /* Stale updates. */
  is_int(connected(a, "node-a", 100, "agent-1", 4, 9, 0x1),
         TM_PRESENCE_STALE,
         "an older session's late update is refused (TM_PRESENCE_STALE)");
  is_int(left(a, "node-a", "agent-1", 4), TM_PRESENCE_STALE,
         "an older session's late leave is refused");
  is_int(connected(a, "node-a", 99, "agent-1", 6, 9, 0x1), TM_PRESENCE_STALE,
         "an update naming an older instance of the node is refused");
  for (int i = 0; i < 25; i++)
    slice();
  ok(wait_view(c, has_agent, &w1, 100),
     "the row is still agent-1's session 5 with 2 connections");
  is_int(connected(a, "node-a", 100, "agent-1", 6, 3, 0x7), PH_OK,
         "a newer session's update is taken");
  want_agent w1b = {"node-a", "agent-1", 6, 3, 0x7};
  ok(wait_view(b, has_agent, &w1b, 100), "and b sees it by NOTIFY");
  is_int(left(a, "node-a", "agent-1", 6), PH_OK,
         "the session's leave deletes its row");
  ok(wait_view(b, lacks_agent, &w1b, 100), "and b sees agent-1 gone");

  /* Instances. */
  is_int(connected(a, "node-a", 100, "agent-2", 1, 1, 0), PH_OK,
         "agent-2 on node-a (instance 100)");
  is_int(heartbeat(a, "node-a", "z1", 99, 60000), TM_PRESENCE_SUPERSEDED,
         "an older instance's heartbeat renews nothing "
         "(TM_PRESENCE_SUPERSEDED)");
  is_int(heartbeat(a, "node-a", "z2", 101, 60000), PH_OK,
         "a newer instance (a restart) takes node-a over");
  want_agent w2 = {"node-a", "agent-2", 1, 1, 0};
  ok(wait_view(b, lacks_agent, &w2, 100),
     "and the older instance's agents are gone from b's view");
  b->tp->view(b->self, &v);
  n = node_of(&v, "node-a");
  ok(n && strcmp(n->zone, "z2") == 0, "with the new zone");

  /* Leases: heartbeats keep node-l (lease 1 s) and its agent; then they
   * stop, and the lapse hides both (the poll finds it: no write, no
   * notification). */
  is_int(heartbeat(a, "node-l", "z1", 1, 1000), PH_OK, "node-l, lease 1 s");
  is_int(connected(a, "node-l", 1, "agent-l", 1, 1, 0), PH_OK,
         "agent-l on node-l");
  want_agent wl = {"node-l", "agent-l", 1, 1, 0};
  ok(wait_view(c, has_agent, &wl, 100), "c sees node-l and agent-l");
  int kept = 1;
  for (int k = 0; k < 20; k++) { /* 20 heartbeats, 5 slices apart */
    kept &= heartbeat(a, "node-l", "z1", 1, 1000) == PH_OK;
    for (int i = 0; i < 5; i++)
      slice();
    tm_presence_view cv;
    kept &= c->tp->view(c->self, &cv) == PH_OK && has_agent(&cv, &wl);
  }
  ok(kept, "TM-P2-29: heartbeats renew node-l's lease and keep agent-l, "
           "with no write of the agent's row");
  ok(wait_view(c, lacks_node, "node-l", 500),
     "TM-P2-29: heartbeats stopped: the lapsed lease hides node-l (poll)");
  c->tp->view(c->self, &v);
  ok(!agent_of(&v, "node-l", "agent-l") && node_of(&v, "node-a"),
     "and its agent, while node-a stays");

  /* Leaving. */
  wres lw = {0};
  is_int(finish(a->tp->node_leave(a->self, "node-a", 100, on_done, &lw), &lw),
         TM_PRESENCE_SUPERSEDED, "an older instance cannot remove node-a");
  lw = (wres){0};
  is_int(finish(a->tp->node_leave(a->self, "node-a", 101, on_done, &lw), &lw),
         PH_OK, "node-a leaves");
  ok(wait_view(b, lacks_node, "node-a", 100), "b sees it gone by NOTIFY");

  /* PostgreSQL restarted: b's LISTEN connection comes back by itself
   * (backoff 50..200 ms) and b's view follows a write without its poll. */
  const char *pg_stop = getenv("PH_TEST_PG_STOP");
  const char *pg_start = getenv("PH_TEST_PG_START");
  if (pg_stop && pg_start) {
    ok(system(pg_stop) == 0, "PostgreSQL stopped");
    for (int i = 0; i < 10; i++)
      slice();
    ok(system(pg_start) == 0, "and started again");
    int r = -999;
    for (int i = 0; i < 100 && r != PH_OK; i++) {
      r = heartbeat(a, "node-r", "z1", 1, 60000);
      slice();
    }
    is_int(r, PH_OK, "a's heartbeat goes through again (node-r)");
    ok(wait_view(b, has_node, "node-r", 250),
       "b's LISTEN connection came back: it sees node-r (poll 60 s)");
  }

  /* Statements per heartbeat: 1 agent, then 200. */
  ok(sql(DB, "ALTER DATABASE " DB " SET log_statement = 'all'") == 0,
     "every statement on the database is logged (new sessions)");
  client *d = up("60s");
  ok(d != NULL, "a fourth instance, whose sessions log statements");
  if (d) {
    heartbeat(d, "node-s", "z1", 1, 60000);
    connected(d, "node-s", 1, "s-0", 1, 1, 0);
    int all1, hb1, all200, hb200;
    count_heartbeats(d, "node-s", 1, &all1, &hb1);
    int good = 1;
    char id[32];
    for (int i = 1; i < 200; i++) {
      snprintf(id, sizeof(id), "s-%d", i);
      good &= connected(d, "node-s", 1, id, 1, 1, 0) == PH_OK;
    }
    ok(good, "199 more agents connected to node-s");
    count_heartbeats(d, "node-s", 1, &all200, &hb200);
    is_int(hb1, 3, "three heartbeats with 1 agent: three statements logged");
    is_int(all1, 3, "and no other presence statement");
    is_int(hb200, 3, "three heartbeats with 200 agents: three statements");
    is_int(all200, 3, "TM-P2-29, issue 27: a heartbeat's statements do not "
                      "grow with the node's agents");
    ok(wait_view(b, has_node, "node-s", 100), "b sees node-s");
    b->tp->view(b->self, &v);
    n = node_of(&v, "node-s");
    ok(n && n->n_agents == 200, "with its 200 agents");
  }

  /* agents_sync: node-x1's rows of agents not named, of sessions below the
   * bound, go; only for the node's instance. */
  leave(a, "node-r", 1);
  leave(a, "node-s", 1);
  is_int(heartbeat(a, "node-x1", "z1", 7, 60000), PH_OK, "node-x1");
  connected(a, "node-x1", 7, "x-a", 10, 1, 0);
  connected(a, "node-x1", 7, "x-b", 11, 1, 0);
  connected(a, "node-x1", 7, "x-c", 12, 1, 0);
  connected(a, "node-x1", 7, "x-d", 30, 1, 0);
  const char *keep[] = {"x-a", "x\"q\\"};
  is_int(sync_agents(a, "node-x1", 6, keep, 2, 20), TM_PRESENCE_STALE,
         "agents_sync naming an older instance changes nothing "
         "(TM_PRESENCE_STALE)");
  want_agent wb = {"node-x1", "x-b", 11, 1, 0};
  ok(wait_view(c, has_agent, &wb, 100), "x-b is still there");
  is_int(sync_agents(a, "node-x1", 7, keep, 2, 20), PH_OK,
         "agents_sync keeping x-a (and a name to quote), bound 20: one "
         "statement");
  ok(wait_view(b, lacks_agent, &wb, 100),
     "x-b (not named, session 11 < 20) is gone from b's view by NOTIFY");
  b->tp->view(b->self, &v);
  ok(agent_of(&v, "node-x1", "x-a") && !agent_of(&v, "node-x1", "x-c") &&
         agent_of(&v, "node-x1", "x-d"),
     "x-a (named) stays, x-c goes, x-d (session 30, begun after the bound) "
     "stays");
  connected(a, "node-x1", 7, "x-b", 13, 1, 0);
  is_int(heartbeat(a, "node-x2", "z1", 7, 60000), PH_OK, "node-x2");
  connected(a, "node-x2", 7, "y-a", 1, 1, 0);
  connected(a, "node-x2", 7, "y-b", 1, 1, 0);
  is_int(heartbeat(a, "node-x3", "z1", 7, 60000), PH_OK,
         "node-x3, no agent: 3 nodes (x1: 3 agents, x2: 2), 6 rows");

  /* Bounds: e keeps 2 nodes and 4 agents of them; f reads at most 5 rows
   * (max_nodes 3 + max_agents 1 + 1): node-x1 with one agent, node-x2
   * with none, node-x3 not read; g (the defaults) holds everything. */
  client *e = up_with("200ms", "presence_max_nodes = 2\n"
                               "presence_max_agents = 4\n");
  client *f = up_with("200ms", "presence_max_nodes = 3\n"
                               "presence_max_agents = 1\n");
  client *g = up("200ms");
  ok(e && f && g, "three views with limits (2 nodes and 4 agents; 3 and 1; "
                  "the defaults)");
  if (e && f && g) {
    e->tp->view(e->self, &v);
    f->tp->view(f->self, &v);
    g->tp->view(g->self, &v);
    for (int i = 0; i < 40; i++) /* 800 ms: several polls of each */
      slice();
    is_int(g->tp->view(g->self, &v), PH_OK, "g's view is good");
    ok(v.n_nodes == 3 && v.n_agents == 5,
       "g (defaults 256 and 65536) holds the 3 nodes and 5 agents");
    is_int(e->tp->view(e->self, &v), PH_OK, "e's view is good");
    ok(v.n_nodes == 2 && v.n_agents == 4 && node_of(&v, "node-x1") &&
           node_of(&v, "node-x2") && !node_of(&v, "node-x3"),
       "e holds node-x1 and node-x2, not node-x3 (presence_max_nodes = 2), "
       "and 4 agents (presence_max_agents = 4)");
    const tm_presence_node *x2 = node_of(&v, "node-x2");
    ok(x2 && x2->n_agents == 1 && agent_of(&v, "node-x2", "y-a") &&
           !agent_of(&v, "node-x2", "y-b"),
       "node-x2 with y-a only: y-b, beyond the limit, is no candidate");
    ok(metric(e, "proxyhost_store_pg_presence_truncated_total",
              "limit=\"max_nodes\"") >= 2 &&
           metric(e, "proxyhost_store_pg_presence_truncated_total",
                  "limit=\"max_agents\"") >= 2,
       "each read of e counted truncated{limit=max_nodes} and "
       "{limit=max_agents}");
    is_int((int)metric(e, "proxyhost_store_pg_presence_nodes", ""), 2,
           "e's gauge: 2 nodes");
    is_int((int)metric(e, "proxyhost_store_pg_presence_agents", ""), 4,
           "e's gauge: 4 agents");
    f->tp->view(f->self, &v);
    ok(v.n_nodes == 2 && v.n_agents == 1 && agent_of(&v, "node-x1", "x-a") &&
           node_of(&v, "node-x2") && !node_of(&v, "node-x3"),
       "f read 5 rows: node-x1 with x-a, node-x2 without agents, no "
       "node-x3");
    ok(metric(f, "proxyhost_store_pg_presence_truncated_total",
              "limit=\"max_agents\"") >= 2,
       "f counted truncated{limit=max_agents}");
    is_int((int)metric(g, "proxyhost_store_pg_presence_truncated_total",
                       "limit=\"max_agents\"") +
               (int)metric(g, "proxyhost_store_pg_presence_truncated_total",
                           "limit=\"max_nodes\""),
           0, "g counted nothing");
    is_int(mlog_count("presence view over its limit"), 2,
           "logged once by e and once by f, not at every read");
  }

  char *log = file_test_slurp(log_path);
  unlike(log, "password", "no password in the module log");
  free(log);
  for (int i = 0; i < n_clients; i++) {
    ph_mock_stop(clients[i].m);
    ph_mock_free(clients[i].m);
  }
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's presence in the mesh (issue 27, the first brick): with
 * presence = true, this node registers itself in the store's tm.presence
 * (modules/contracts/tm_presence.h: store_pg) and renews its lease every
 * third of presence.lease with one heartbeat, whatever its number of
 * agents; each agent's connection count is written when it changes (one
 * statement per agent connection opened or closed, never per stream),
 * and its row deleted when its last connection closes. A write that
 * failed (the database away, the node's row not there yet) is made good
 * after the next good heartbeat: every connected agent is written again,
 * and one agents_sync statement names them, deleting the node's other
 * rows of sessions older than the sync (an agent whose "left" failed
 * would otherwise stay in presence for as long as the node renews its
 * lease). A sync that fails is tried again after the next heartbeat, so
 * the retries are one per heartbeat interval, never more.
 *
 * At the module's stop (clean shutdown, within its drain) the node
 * leaves: one statement deletes its row and (cascade) its agents', and
 * the other nodes' views drop it at once (NOTIFY), not after its lease;
 * the store's stop waits for that call (its deadline: query_timeout). The
 * agents' own writes stop then. A crash still relies on the lease.
 *
 * The state the store's callbacks see is its own (ts_mesh), freed once
 * the module stopped and no call is in flight, so a call answering
 * after the module's state is gone touches nothing of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contracts/tm_presence.h"
#include "ts_int.h"

struct ts_mesh {
  ts_mod *m; /* while not dead */
  const tm_presence_v1 *tp;
  void *self;
  ph_ctx *ctx;
  ph_timer *hb;
  char node[TS_NODE_ID_MAX + 1];
  int64_t inst, lease_ms, last_nonce;
  unsigned in_flight;
  int dead;
  int resend; /* an agent write failed: every agent again after the next
                 good heartbeat, and a sync */
  int leaving; /* the module stopped: the node's leave is sent */
};

/* Increasing nonces (wall-clock microseconds, at least the last + 1):
 * across the sessions of an agent and the starts of a node. */
static int64_t nonce(ts_mesh *x) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t n = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  if (x && n <= x->last_nonce)
    n = x->last_nonce + 1;
  if (x)
    x->last_nonce = n;
  return n;
}

static void release(ts_mesh *x) {
  if (x->in_flight)
    x->in_flight--;
  if (x->dead && !x->in_flight)
    free(x);
}

/* A write's outcome as a word: the log field "status" is a string
 * everywhere (tunnel_logs.sh: one type per field name). */
static const char *status_text(int status) {
  switch (status) {
  case TM_PRESENCE_SUPERSEDED:
    return "superseded";
  case TM_PRESENCE_STALE:
    return "stale";
  case TM_PRESENCE_EUNAVAIL:
    return "unavailable";
  case PH_EFULL:
    return "queue_full";
  default:
    return "failed";
  }
}

static void on_agent(void *arg, int status);

/* After a write failed: every connected agent written again, and the
 * node's other rows (older sessions) deleted by one sync. */
static void reconcile(ts_mesh *x) {
  size_t n = 0;
  for (const ts_agent *a = x->m->agents; a; a = a->next)
    n++;
  const char **ids = calloc(n + 1, sizeof(*ids));
  if (!ids || n > TM_PRESENCE_SYNC_MAX) {
    free(ids);
    x->resend = 1; /* after the next heartbeat */
    return;
  }
  n = 0;
  for (const ts_agent *a = x->m->agents; a; a = a->next) {
    ids[n++] = a->name;
    ts_mesh_agent(x->m, a);
  }
  /* Sessions that begin from now on have larger nonces: never touched. */
  int64_t id = x->tp->agents_sync(x->self, x->node, x->inst, ids, n,
                                  nonce(x), on_agent, x);
  free(ids);
  if (id > 0)
    x->in_flight++;
  else
    x->resend = 1;
}

static void on_beat(void *arg, int status) {
  ts_mesh *x = arg;
  if (!x->dead && status == PH_OK && x->resend) {
    x->resend = 0;
    reconcile(x);
  }
  if (!x->dead && status == TM_PRESENCE_SUPERSEDED)
    PH_LOG_RL(ts_api, x->ctx, PH_LOG_WARN,
              "presence: a newer instance holds this node id",
              PH_STR("node", x->node));
  else if (!x->dead && status != PH_OK)
    PH_LOG_RL(ts_api, x->ctx, PH_LOG_WARN, "presence: heartbeat failed",
              PH_STR("node", x->node), PH_STR("status", status_text(status)));
  release(x);
}

static void on_agent(void *arg, int status) {
  ts_mesh *x = arg;
  /* STALE here is also the node's row not (yet, or no longer) this
   * instance's: sent again after the next good heartbeat, as a failure
   * (an older session's answer is harmless to send again: the newer
   * row stays). */
  if (!x->dead && status != PH_OK)
    x->resend = 1;
  if (!x->dead && status != PH_OK && status != TM_PRESENCE_STALE)
    PH_LOG_RL(ts_api, x->ctx, PH_LOG_WARN, "presence: agent write failed",
              PH_STR("node", x->node), PH_STR("status", status_text(status)));
  release(x);
}

static void beat(ph_timer *t, void *arg) {
  (void)t;
  ts_mod *m = arg;
  ts_mesh *x = m->mesh;
  tm_presence_node_reg n = {x->node, m->c.presence_zone, m->c.presence_relay,
                            x->inst, x->lease_ms};
  if (x->tp->node_heartbeat(x->self, &n, on_beat, x) > 0)
    x->in_flight++;
}

int ts_mesh_start(ts_mod *m) {
  if (!m->c.presence)
    return PH_OK;
  const char *store = ts_api->conf_str(m->ctx, "store");
  void *self = NULL;
  const tm_presence_v1 *tp = ts_api->service_get_named(
      m->ctx, TM_PRESENCE_SERVICE, store, TM_PRESENCE_MAJOR, 1, &self);
  if (!tp) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR,
           "presence = true needs a store providing tm.presence (store_pg)",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  ts_mesh *x = calloc(1, sizeof(*x));
  if (!x)
    return PH_ENOMEM;
  x->m = m;
  x->tp = tp;
  x->self = self;
  x->ctx = m->ctx;
  snprintf(x->node, sizeof(x->node), "%s", m->c.node_id);
  x->lease_ms = (int64_t)m->c.presence_lease_ms;
  x->inst = nonce(x);
  x->hb = ts_api->timer_new(m->ctx, beat, m);
  if (!x->hb) {
    free(x);
    return PH_ENOMEM;
  }
  m->mesh = x;
  uint64_t every = (uint64_t)(x->lease_ms / 3);
  ts_api->timer_set(x->hb, 1, every ? every : 1);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "presence: registering this node",
         PH_STR("node", x->node), PH_STR("zone", m->c.presence_zone),
         PH_INT("lease_ms", x->lease_ms));
  return PH_OK;
}

static void on_leave(void *arg, int status) {
  ts_mesh *x = arg;
  /* The module's log is still there: the host frees modules after every
   * stop ended, and the store's stop waits for this call. */
  if (status == PH_OK)
    PH_LOG(ts_api, x->ctx, PH_LOG_INFO, "presence: this node left",
           PH_STR("node", x->node));
  else
    PH_LOG(ts_api, x->ctx, PH_LOG_WARN,
           "presence: leaving failed; the node's lease lapses by itself",
           PH_STR("node", x->node), PH_STR("status", status_text(status)));
  release(x);
}

void ts_mesh_stop(ts_mod *m) {
  ts_mesh *x = m->mesh;
  if (!x)
    return;
  m->mesh = NULL;
  ts_api->timer_free(x->hb);
  x->dead = 1; /* calls in flight end; their answers touch only x */
  /* A clean stop: the node and its agents' rows go now (one statement);
   * if it fails, the lease lapses by itself. */
  if (!x->leaving) {
    x->leaving = 1;
    if (x->tp->node_leave(x->self, x->node, x->inst, on_leave, x) > 0)
      x->in_flight++;
  }
  if (!x->in_flight)
    free(x);
}

int64_t ts_mesh_session(ts_mod *m) { return nonce(m->mesh); }

void ts_mesh_agent(ts_mod *m, const ts_agent *a) {
  ts_mesh *x = m->mesh;
  if (!x)
    return;
  int64_t id;
  if (a->nconns == 0) {
    id = x->tp->agent_left(x->self, x->node, a->name, a->mesh_session,
                           on_agent, x);
  } else {
    tm_presence_agent_reg r = {x->node, x->inst, a->name, a->mesh_session,
                               a->nconns, 0};
    id = x->tp->agent_connected(x->self, &r, on_agent, x);
  }
  if (id > 0)
    x->in_flight++;
}

int ts_mesh_view(ts_mod *m, tm_presence_view *v) {
  ts_mesh *x = m->mesh;
  if (!x)
    return PH_ENOENT;
  return x->tp->view(x->self, v) == PH_OK ? PH_OK : PH_ESTATE;
}

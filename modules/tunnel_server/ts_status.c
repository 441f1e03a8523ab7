/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_server's panels on the status page and in /v1/status (issue 28,
 * docs/operations.md "Seeing what runs"), filled from what the module
 * keeps on its loop thread:
 *   agents    the agents connected to this node: name (the row's key;
 *             the page is behind the admin token, so log_names, which
 *             is about logs, does not hide it), the hash the logs use
 *             (log_id: how an operator matches a log line to an
 *             agent), connections, streams,
 *             capabilities, heartbeat RTT, the oldest connection's age,
 *             node, online, last_seen_at. Local agents first; then, with
 *             presence on and its view fresh, the agents other live
 *             nodes hold (node = that node, their connection count
 *             there; streams, capabilities, RTT and age are not in
 *             presence: empty, never a made-up 0); then the last
 *             TS_GONE_MAX agents that left this node (ts_gone.h),
 *             newest first: online "no", last_seen_at (RFC 3339 UTC)
 *             when their last connection here closed.
 *   sessions  client sessions: number, user (never a token), streams,
 *             open mode, age.
 *   opens     stream results by stage and code over the last minutes
 *             (ts_opens.h).
 * Never a token, a bearer or a target.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "contracts/tm_presence.h"
#include "ts_int.h"

static int64_t age_s(int64_t since_ms) {
  int64_t n = mono_ms();
  return n > since_ms ? (n - since_ms) / 1000 : 0;
}

/* The negotiated capabilities' names, comma-separated. */
static void caps_text(unsigned caps, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (unsigned bit = 1; bit && bit <= caps; bit <<= 1) {
    const char *n = (caps & bit) ? tm_cap_name(bit) : NULL;
    if (!n)
      continue;
    int w = snprintf(out + len, cap - len, "%s%s", len ? "," : "", n);
    if (w < 0 || (size_t)w >= cap - len)
      break;
    len += (size_t)w;
  }
}

/* The agents table's columns (tools/ctl_live.c reads agent, node,
 * online and last_seen_at by name). */
static const char *const agent_cols[] = {
    "agent",       "log_id", "connections", "streams",     "capabilities",
    "rtt_ms",      "connected_s", "node",   "online",      "last_seen_at"};
#define AGENT_COLS 10

/* One row; 1 once the host's page is full. */
static int agent_row(ph_panel *p, const char *name, const char *conns,
                     const char *streams, const char *caps, const char *rtt,
                     const char *age, const char *node, const char *online,
                     const char *seen) {
  char red[TS_REDACTED_LEN];
  ts_redact_agent(name, red);
  const char *cells[AGENT_COLS] = {name, red,  conns, streams, caps,
                                   rtt,  age,  node,  online,  seen};
  return ts_api->status_row(p, cells, AGENT_COLS) == PH_ELIMIT;
}

/* The agents connected here; 1 once the page is full. */
static int local_rows(ts_mod *m, ph_panel *p) {
  for (ts_agent *a = m->agents; a; a = a->next) {
    char nconns[16], streams[16], caps[128];
    char rtt[24] = "", age[24];
    uint32_t st = 0;
    unsigned cbits = 0;
    uint64_t rtt_us = 0;
    int64_t oldest = mono_ms();
    for (ts_conn *c = a->conns; c; c = c->agent_next) {
      if (c->s) {
        st += tm_session_streams(c->s);
        cbits |= tm_session_caps(c->s);
        uint64_t r = tm_session_rtt_us(c->s);
        rtt_us = r > rtt_us ? r : rtt_us; /* the worst connection's */
      }
      if (c->since_ms < oldest)
        oldest = c->since_ms;
    }
    snprintf(nconns, sizeof(nconns), "%" PRIu32, a->nconns);
    snprintf(streams, sizeof(streams), "%" PRIu32, st);
    caps_text(cbits, caps, sizeof(caps));
    if (rtt_us)
      snprintf(rtt, sizeof(rtt), "%" PRIu64, rtt_us / 1000);
    snprintf(age, sizeof(age), "%" PRId64, age_s(oldest));
    if (agent_row(p, a->name, nconns, streams, caps, rtt, age, m->c.node_id,
                  "yes", ""))
      return 1;
  }
  return 0;
}

/* The agents presence says other live nodes hold (their connection count
 * there; streams, RTT and age are not in presence: empty, never 0); 1
 * once the page is full. */
static int remote_rows(ts_mod *m, ph_panel *p, const tm_presence_view *v) {
  for (size_t i = 0; i < v->n_nodes; i++) {
    const tm_presence_node *nd = &v->nodes[i];
    if (strcmp(nd->node_id, m->c.node_id) == 0)
      continue; /* this node's own: listed from memory above */
    for (size_t k = nd->first; k < nd->first + nd->n_agents &&
                               k < v->n_agents; k++) {
      const tm_presence_agent *a = &v->agents[k];
      char nconns[16];
      snprintf(nconns, sizeof(nconns), "%" PRIu32, a->connections);
      if (agent_row(p, a->agent_id, nconns, "", "", "", "", nd->node_id,
                    "yes", ""))
        return 1;
    }
  }
  return 0;
}

/* RFC 3339 UTC of Unix seconds ("" when it cannot say). */
static void rfc3339(int64_t at_s, char *out, size_t cap) {
  time_t t = (time_t)at_s;
  struct tm tm;
  if (at_s <= 0 || !gmtime_r(&t, &tm) ||
      strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    out[0] = '\0';
}

typedef struct gone_fill {
  ts_mod *m;
  ph_panel *p;
} gone_fill;

static int gone_row(void *arg, const char *name, int64_t at_s) {
  gone_fill *f = arg;
  char seen[32];
  rfc3339(at_s, seen, sizeof(seen));
  return agent_row(f->p, name, "0", "", "", "", "", f->m->c.node_id, "no",
                   seen);
}

static void fill_agents(void *arg, ph_panel *p) {
  ts_mod *m = arg;
  uint32_t conns = 0, agents = 0;
  for (ts_agent *a = m->agents; a; a = a->next) {
    agents++;
    conns += a->nconns;
  }
  ts_api->status_field_int(p, "connected", conns);
  ts_api->status_field_int(p, "agents", agents);
  /* presence: "off", "stale" (its view is not shown: not vouched for) or
   * "ok"; remote_agents: the agents other nodes hold, by presence. */
  tm_presence_view v;
  int vrc = ts_mesh_view(m, &v);
  ts_api->status_field(p, "presence", vrc == PH_ENOENT ? "off"
                                      : vrc == PH_OK   ? "ok"
                                                       : "stale");
  if (vrc == PH_OK) {
    int64_t remote = 0;
    for (size_t i = 0; i < v.n_nodes; i++)
      if (strcmp(v.nodes[i].node_id, m->c.node_id) != 0)
        remote += (int64_t)v.nodes[i].n_agents;
    ts_api->status_field_int(p, "remote_agents", remote);
  }
  ts_api->status_field_int(p, "offline_agents", m->gone.n);
  ts_api->status_table(p, "agents", agent_cols, AGENT_COLS,
                       PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3) |
                           PH_STATUS_COL_NUM(5) | PH_STATUS_COL_NUM(6));
  if (local_rows(m, p) || (vrc == PH_OK && remote_rows(m, p, &v)))
    return;
  gone_fill f = {m, p};
  ts_gone_walk(&m->gone, gone_row, &f);
}

static void fill_sessions(void *arg, ph_panel *p) {
  ts_mod *m = arg;
  uint32_t clients = 0, relays = 0;
  ILIST_FOREACH_SAFE(&m->conns, n, nx) {
    const ts_conn *c = ILIST_ENTRY(n, ts_conn, mlink);
    clients += c->kind == TS_CONN_CLIENT;
    relays += c->kind == TS_CONN_RELAY;
  }
  ts_api->status_field_int(p, "sessions", clients);
  ts_api->status_field_int(p, "relay_links", relays);
  ts_api->status_field_int(p, "streams", ts_open_relays(m));
  static const char *const cols[] = {"session", "user", "streams",
                                     "open_mode", "connected_s"};
  ts_api->status_table(p, "sessions", cols, 5,
                       PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(4));
  ILIST_FOREACH_SAFE(&m->conns, n, nx) {
    const ts_conn *c = ILIST_ENTRY(n, ts_conn, mlink);
    if (c->kind != TS_CONN_CLIENT)
      continue;
    char id[24], streams[16], age[24];
    snprintf(id, sizeof(id), "%" PRIu64, c->seq);
    snprintf(streams, sizeof(streams), "%" PRIu32,
             c->s ? tm_session_streams(c->s) : 0);
    snprintf(age, sizeof(age), "%" PRId64, age_s(c->since_ms));
    const char *cells[] = {
        id, c->user && c->user->key[0] ? c->user->key : c->token_id, streams,
        (c->caps & TM_CAP_OPEN_RESULT) ? "strict" : "legacy", age};
    if (ts_api->status_row(p, cells, 5) == PH_ELIMIT)
      break;
  }
}

typedef struct opens_fill {
  ph_panel *p;
  char window[24];
} opens_fill;

static int opens_row(void *arg, const char *stage, const char *code,
                     uint32_t count) {
  opens_fill *f = arg;
  char n[16];
  snprintf(n, sizeof(n), "%" PRIu32, count);
  const char *cells[] = {stage, code, n, f->window};
  return ts_api->status_row(f->p, cells, 4) == PH_ELIMIT;
}

static void fill_opens(void *arg, ph_panel *p) {
  ts_mod *m = arg;
  static const char *const cols[] = {"stage", "code", "count", "window_s"};
  ts_api->status_table(p, "opens", cols, 4,
                       PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3));
  opens_fill f = {.p = p};
  int64_t now = mono_ms() / 1000, window = 0;
  /* The window first: every row carries the same one. */
  ts_opens_walk(&m->opens_win, now, &window, NULL, NULL);
  snprintf(f.window, sizeof(f.window), "%" PRId64, window);
  ts_opens_walk(&m->opens_win, now, &window, opens_row, &f);
}

int ts_status_init(ts_mod *m) {
  if (ts_api->size <= offsetof(ph_api, status_row) ||
      !ts_api->status_register)
    return PH_OK; /* a 1.6 host (or one without it): no panel */
  int rc = ts_api->status_register(m->ctx, "agents", "Connected agents",
                                   fill_agents, m);
  if (rc == PH_OK)
    rc = ts_api->status_register(m->ctx, "sessions", "Client sessions",
                                 fill_sessions, m);
  if (rc == PH_OK)
    rc = ts_api->status_register(m->ctx, "opens",
                                 "Open results (last minutes)", fill_opens,
                                 m);
  return rc;
}

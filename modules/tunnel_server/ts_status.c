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
 *             node. Local only: agents held by other nodes (presence)
 *             are not listed.
 *   sessions  client sessions: number, user (never a token), streams,
 *             open mode, age.
 *   opens     stream results by stage and code over the last minutes
 *             (ts_opens.h).
 * Never a token, a bearer or a target.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

static void fill_agents(void *arg, ph_panel *p) {
  ts_mod *m = arg;
  uint32_t conns = 0, agents = 0;
  for (ts_agent *a = m->agents; a; a = a->next) {
    agents++;
    conns += a->nconns;
  }
  ts_api->status_field_int(p, "connected", conns);
  ts_api->status_field_int(p, "agents", agents);
  static const char *const cols[] = {"agent",        "log_id",   "connections",
                                     "streams",      "capabilities", "rtt_ms",
                                     "connected_s",  "node"};
  ts_api->status_table(p, "agents", cols, 8,
                       PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3) |
                           PH_STATUS_COL_NUM(5) | PH_STATUS_COL_NUM(6));
  for (ts_agent *a = m->agents; a; a = a->next) {
    char red[TS_REDACTED_LEN], nconns[16], streams[16], caps[128];
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
    ts_redact_agent(a->name, red);
    snprintf(nconns, sizeof(nconns), "%" PRIu32, a->nconns);
    snprintf(streams, sizeof(streams), "%" PRIu32, st);
    caps_text(cbits, caps, sizeof(caps));
    if (rtt_us)
      snprintf(rtt, sizeof(rtt), "%" PRIu64, rtt_us / 1000);
    snprintf(age, sizeof(age), "%" PRId64, age_s(oldest));
    const char *cells[] = {a->name, red, nconns,
                           streams, caps, rtt, age, m->c.node_id};
    if (ts_api->status_row(p, cells, 8) == PH_ELIMIT)
      break;
  }
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

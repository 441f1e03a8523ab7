/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_agent's panel on the status page and in /v1/status (issue 28,
 * docs/operations.md "Seeing what runs"): `sessions`, one row per server
 * URL (server_url, then extra_server_urls): the URL (up to its query:
 * never a token), the state of its connections (up, draining,
 * connecting, or down), its reconnects (handshakes after the first), the
 * streams on its connections and the oldest one's age; fields for the
 * totals.
 */
#include <inttypes.h>
#include <stdio.h>

#include "agent_int.h"
#include "tunnel_common/session/tm_ws_url.h"

typedef struct url_sum {
  uint32_t up, draining, connecting, streams;
  int64_t oldest_up; /* 0: none up */
} url_sum;

static void sum_url(const agent *a, uint32_t ix, url_sum *u) {
  memset(u, 0, sizeof(*u));
  ILIST_FOREACH_SAFE(&a->conns, n, nx) {
    const agent_conn *c = ILIST_ENTRY(n, agent_conn, link);
    if (c->url_ix != ix)
      continue;
    if (c->state == CONN_UP) {
      u->up++;
      if (!u->oldest_up || c->up_at_ms < u->oldest_up)
        u->oldest_up = c->up_at_ms;
    }
    u->draining += c->state == CONN_DRAINING;
    u->connecting += c->state == CONN_CONNECTING;
    if (c->s)
      u->streams += tm_session_streams(c->s);
  }
}

static void fill_sessions(void *arg, ph_panel *p) {
  agent *a = arg;
  const ph_api *api = a->api;
  uint32_t streams = 0, reconnects = 0;
  url_sum u;
  for (uint32_t i = 0; i < a->cfg.n_urls; i++) {
    sum_url(a, i, &u);
    streams += u.streams;
    reconnects += a->url_ups[i] ? a->url_ups[i] - 1 : 0;
  }
  api->status_field(p, "agent", a->cfg.agent_id);
  api->status_field_int(p, "up", a->n_up);
  api->status_field_int(p, "connecting", a->n_connecting);
  api->status_field_int(p, "draining", a->n_draining);
  api->status_field_int(p, "target", a->target);
  api->status_field_int(p, "streams", streams);
  api->status_field_int(p, "reconnects", reconnects);
  static const char *const cols[] = {"server", "state", "reconnects",
                                     "streams", "connected_s"};
  api->status_table(p, "sessions", cols, 5,
                    PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3) |
                        PH_STATUS_COL_NUM(4));
  int64_t now = api->now_ms(a->ctx);
  for (uint32_t i = 0; i < a->cfg.n_urls; i++) {
    sum_url(a, i, &u);
    char server[AGENT_URL_MAX + 1], rec[16], st[16], age[24] = "";
    tm_ws_url_shown(a->cfg.urls[i], server, sizeof(server));
    snprintf(rec, sizeof(rec), "%" PRIu32,
             a->url_ups[i] ? a->url_ups[i] - 1 : 0);
    snprintf(st, sizeof(st), "%" PRIu32, u.streams);
    if (u.oldest_up)
      snprintf(age, sizeof(age), "%" PRId64,
               now > u.oldest_up ? (now - u.oldest_up) / 1000 : 0);
    const char *state = u.up           ? "up"
                        : u.draining   ? "draining"
                        : u.connecting ? "connecting"
                                       : "down";
    const char *cells[] = {server, state, rec, st, age};
    if (api->status_row(p, cells, 5) == PH_ELIMIT)
      break;
  }
}

int agent_status_init(agent *a) {
  if (a->api->size <= offsetof(ph_api, status_row) ||
      !a->api->status_register)
    return PH_OK; /* a 1.6 host (or one without it): no panel */
  return a->api->status_register(a->ctx, "sessions",
                                 "Sessions to the servers", fill_sessions,
                                 a);
}

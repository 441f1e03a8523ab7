/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_client's panel on the status page and in /v1/status (issue 28,
 * docs/operations.md "Seeing what runs"): `sessions`, one row per
 * connection slot (`connections`): the server's URL (up to its query:
 * never a token), its state, its reconnects (sessions brought up after
 * the first), its streams and its session's age; fields for the totals.
 */
#include <inttypes.h>
#include <stdio.h>

#include "tunnel_common/session/tm_ws_url.h"
#include "tunnel_client_int.h"

static const char *state_name(const tc_conn *c) {
  if (!c->cur)
    return "waiting"; /* for its reconnect (backoff) */
  switch (c->cur->state) {
  case TC_S_CONNECTING:
    return "connecting";
  case TC_S_UP:
    return "up";
  case TC_S_DRAINING:
    return "draining";
  }
  return "closed";
}

static uint32_t conn_streams(const tc_conn *c) {
  uint32_t n = 0;
  const tc_sess *both[2] = {c->cur, c->old};
  for (int i = 0; i < 2; i++)
    if (both[i] && both[i]->s)
      n += tm_session_streams(both[i]->s);
  return n;
}

static void fill_sessions(void *arg, ph_panel *p) {
  tc_client *tc = arg;
  const ph_api *api = tc->api;
  uint32_t up = 0, streams = 0, reconnects = 0;
  for (uint32_t i = 0; i < tc->cfg.connections; i++) {
    const tc_conn *c = &tc->conns[i];
    up += c->cur && c->cur->state == TC_S_UP;
    streams += conn_streams(c);
    reconnects += c->ups ? c->ups - 1 : 0;
  }
  api->status_field_int(p, "connections", tc->cfg.connections);
  api->status_field_int(p, "up", up);
  api->status_field_int(p, "streams", streams);
  api->status_field_int(p, "reconnects", reconnects);
  api->status_field(p, "ready", tc->ready ? "yes" : "no");
  static const char *const cols[] = {"server", "state", "reconnects",
                                     "streams", "connected_s"};
  api->status_table(p, "sessions", cols, 5,
                    PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3) |
                        PH_STATUS_COL_NUM(4));
  char server[256];
  tm_ws_url_shown(tc->cfg.url, server, sizeof(server));
  int64_t now = api->now_ms(tc->ctx);
  for (uint32_t i = 0; i < tc->cfg.connections; i++) {
    const tc_conn *c = &tc->conns[i];
    char rec[16], st[16], age[24] = "";
    snprintf(rec, sizeof(rec), "%" PRIu32, c->ups ? c->ups - 1 : 0);
    snprintf(st, sizeof(st), "%" PRIu32, conn_streams(c));
    if (c->cur && c->cur->state == TC_S_UP)
      snprintf(age, sizeof(age), "%" PRId64,
               now > c->cur->up_ms ? (now - c->cur->up_ms) / 1000 : 0);
    const char *cells[] = {server, state_name(c), rec, st, age};
    if (api->status_row(p, cells, 5) == PH_ELIMIT)
      break;
  }
}

int tc_status_init(tc_client *tc) {
  if (tc->api->size <= offsetof(ph_api, status_row) ||
      !tc->api->status_register)
    return PH_OK; /* a 1.6 host (or one without it): no panel */
  return tc->api->status_register(tc->ctx, "sessions",
                                  "Sessions to the server", fill_sessions,
                                  tc);
}

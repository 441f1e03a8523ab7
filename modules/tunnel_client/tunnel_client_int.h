/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_client's parts and what they share: the module (tunnel_client.c:
 * keys, check, lifecycle), the connections (tc_conn.c: token, backoff,
 * one session per connection, GOAWAY, readiness), the opens (tc_open.c:
 * the connector service) and the streams it hands over (tc_stream.c: the
 * session's tm_stream seen through a thin ph_stream that times the first
 * byte and logs the end). Loop thread only. */
#ifndef TUNNEL_CLIENT_INT_H
#define TUNNEL_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/host.h>
#include <proxyhost/stream.h>

#include "lib/clocks.h"
#include "lib/idtab.h"
#include "tc_link.h"
#include "lib/tls_reload.h"
#include "tunnel_common/session/tm_token.h"
#include "tunnel_common/session/tm_metrics.h"
#include "tunnel_common/proto/tm_proto.h"
#include "tunnel_common/session/tm_session.h"

#define TC_MAX_CONNECTIONS 8
/* retry_after_ms hints. */
#define TC_RETRY_OFFLINE_MS 1000
#define TC_RETRY_FULL_MS 100

typedef struct tc_client tc_client;
typedef struct tc_conn tc_conn;
typedef struct tc_req tc_req;

enum tc_sess_state { TC_S_CONNECTING = 0, TC_S_UP, TC_S_DRAINING,
                     TC_S_CLOSED };

/* One connection attempt and, once up, its session. Lives until its link
 * reports failed or closed (so a late event never finds freed memory). */
struct tc_sess {
  tc_conn *c;
  void *link;
  tm_session *s; /* NULL until up, and after the session closed */
  int state;
  unsigned caps; /* negotiated */
  int64_t up_ms; /* when it came up (now_ms), for the status page */
  tc_sess *next; /* tc_client.all */
};

/* One of the `connections` slots: its current attempt or session, the
 * one draining after a GOAWAY, and its reconnect timer. */
struct tc_conn {
  tc_client *tc;
  unsigned idx;
  tc_sess *cur, *old;
  ph_timer *retry;
  uint32_t failures; /* since the last success, for the backoff */
  uint32_t ups;      /* sessions it brought up (the status page's
                        reconnects: all but the first) */
};

typedef struct tc_cfg {
  char *url;
  char *agent;
  char *token_file; /* NULL: the token key */
  char *token;      /* the token key (sensitive), NULL when unset */
  uint32_t connections;
  uint32_t reconnect_min_ms, reconnect_max_ms;
  uint32_t open_timeout_ms;
  int log_target;
  unsigned caps; /* local: TM_CAP_OPEN_RESULT|FLOW_CONTROL|FAIR_WRITER */
  tm_session_cfg scfg; /* everything but caps */
} tc_cfg;

struct tc_client {
  const ph_api *api;
  ph_ctx *ctx;
  tc_cfg cfg;
  tm_metrics *metrics;
  const tc_link_ops *lops;
  void *lenv;
  ph_tls_reload tls; /* tls.ca_file re-read (issue 23 item 14) */
  char ca_file[1025]; /* as read at init (restart-only) */
  tc_conn conns[TC_MAX_CONNECTIONS];
  tc_sess *all;  /* every live tc_sess */
  int started, stopping, stop_pending, ready;
  int token_state; /* tm_token_state of the last read, for the warnings */
  uint64_t rng;
  /* opens */
  idtab ids; /* tc_req by id */
  int64_t next_id;
};

/* tc_conn.c */
int tc_conns_start(tc_client *tc);
/* Stop: no reconnects, GOAWAY on every session. 1 while some remain
 * (tc_conns_check_stopped calls stop_done once the last is gone). */
int tc_conns_stop(tc_client *tc);
void tc_conns_destroy(tc_client *tc);
/* The session a new stream goes on: up, accepting, the fewest streams;
 * NULL when none. */
tm_session *tc_conns_pick(tc_client *tc);
/* Whether any connection is up (readiness). */
int tc_conns_up(const tc_client *tc);
/* The link events (tc_link.h). subproto: the server's choice, NULL for
 * none (legacy, TM-PROTO-16). */
void tc_link_up(tc_sess *ts, const char *subproto);
void tc_link_failed(tc_sess *ts);
void tc_link_closed(tc_sess *ts);

/* tc_status.c: the status page's sessions panel (issue 28), registered
 * when the host has ABI 1.7 (PH_OK otherwise). */
int tc_status_init(tc_client *tc);

/* tc_open.c */
extern const ph_connector_v1 tc_connector;
int tc_opens_init(tc_client *tc);
void tc_opens_destroy(tc_client *tc);

/* tc_stream.c: st (open, the caller's) wrapped for the frontend; NULL
 * without memory (st is then untouched). t_open_us: when open() was
 * called, for the end's log line, as trace (the stream's trace id). */
ph_stream *tc_stream_wrap(tc_client *tc, tm_stream *st, int strict,
                          int64_t t_open_us, const char *host,
                          uint16_t port, const char *trace);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_agent's state, shared by its files:
 *   tunnel_agent.c  the module: lifecycle, the connector lookup, readiness
 *   agent_pool.c    the WebSocket connections: connect with the token,
 *                   metadata, reconnect with backoff, GOAWAY, the pool
 *                   controller (pool_policy.h) on a timer
 *   agent_stream.c  one stream: on_open's enqueue into the connection's
 *                   dial executor, accept/reject, the relay, its log line
 *
 * Lifetimes: an agent_conn lives until its WebSocket is gone, its session
 * has ended and no stream of it is left (agent_conn_maybe_free); a stream
 * record lives until its dial was refused or cancelled, or its relay
 * ended. Loop thread only.
 */
#ifndef TM_AGENT_INT_H
#define TM_AGENT_INT_H

#include <stdint.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "agent_conf.h"
#include "dial_exec.h"
#include "lib/ilist.h"
#include "lib/lat_window.h"
#include "pool_policy.h"
#include "frontend/relay.h"
#include "lib/tls_reload.h"
#include "tunnel_common/session/tm_metrics.h"
#include "tunnel_common/session/tm_session.h"
#include "tunnel_common/session/tm_ws.h"

#define TUNNEL_AGENT_VERSION "1.0.0"

typedef struct agent agent;
typedef struct agent_conn agent_conn;
typedef struct agent_stream agent_stream;

enum conn_state { CONN_CONNECTING = 1, CONN_UP, CONN_DRAINING, CONN_GONE };

struct agent_stream {
  ilist_node link; /* on conn->streams */
  agent_conn *conn;
  tm_stream *st;      /* the session's stream (until the relay owns it) */
  dial_task *task;    /* while dialing */
  ph_relay *relay;    /* while relaying */
  tm_stream *relayed; /* the stream the relay owns: only in relay_ending */
  int end_code;       /* why the relay ended, as the stream's reset says */
  int strict;
  uint64_t t_open_us; /* on_open, monotonic */
  uint64_t open_us;   /* on_open to the answer */
  uint16_t port;
  char host[TM_HOST_MAX + 1]; /* for the debug line with log_target only */
  char trace[TM_TRACE_LEN + 1]; /* the stream's trace id (issue 24 item 10) */
};

struct agent_conn {
  ilist_node link; /* on agent->conns */
  agent *a;
  int state;
  tm_ws_conn *ws;  /* NULL once the WebSocket is gone */
  tm_session *s;   /* NULL before the handshake and after on_close */
  dial_exec *dx;
  unsigned caps;   /* negotiated (subprotocol, checked against the ACK) */
  int acked;       /* AGENT_METADATA_ACK arrived */
  int64_t up_at_ms; /* the handshake */
  uint32_t url_ix;  /* which of cfg.urls it connected to */
  ilist streams;
  uint32_t n_relaying;
};

struct agent {
  const ph_api *api;
  ph_ctx *ctx;
  agent_cfg cfg;
  tm_metrics *m;
  const ph_connector_v1 *conn;
  void *cself;
  target_guard *guard;        /* host-local destinations (issue 22) */
  ph_tls_reload tls;          /* tls.ca_file re-read (issue 23 item 14) */
  ph_series *c_host_local;    /* opens the guard refused */
  tm_ws *ws;
  ilist conns;
  uint32_t n_connecting, n_up, n_draining;
  uint32_t target;  /* connections wanted: connections.min .. max */
  uint32_t attempt; /* failed attempts since the last handshake */
  /* per URL of cfg.urls: a failed node is skipped until then (ms) */
  int64_t url_retry_at[AGENT_URLS_MAX];
  uint32_t url_next; /* where the tie-break starts */
  uint32_t url_ups[AGENT_URLS_MAX]; /* handshakes per URL (the status
                                       page's reconnects: all but the
                                       first) */
  ph_timer *retry_timer;
  int retry_armed;
  ph_timer *pool_timer;
  pool_state ps;
  /* the pool controller's inputs over the current tick (TM-P2-26) */
  lat_window w_dial, w_open, w_ttfb;
  uint32_t w_opens, w_failed;
  ph_series *m_conns;         /* proxyhost_tunnel_agent_connections */
  ph_series *m_pool[4];       /* ..._pool_decisions_total{decision} */
  int token_warned; /* the token status last warned about, -1: none */
  int started, stopping, stop_pending;
  uint32_t rng;
};

/* agent_pool.c */
int agent_pool_start(agent *a);
void agent_pool_stop(agent *a);  /* GOAWAY everything, no new attempts */
void agent_pool_free(agent *a);  /* destroy: close and free all */
int agent_pool_idle(const agent *a); /* no connection left */
void agent_conn_maybe_free(agent_conn *c);
uint64_t agent_conn_load(const agent_conn *c);
extern const tm_session_ops agent_session_ops;

/* agent_ack.c: ops.on_metadata. The server's ACK (the intersection,
 * TM-PROTO-18) narrows the session's caps while it has no stream yet. */
void agent_conn_metadata(void *arg, const tm_metadata *m, int ack);

/* agent_stream.c */
void agent_on_open(void *arg, tm_stream *st, const tm_open_stream *req);
void agent_on_abandon(void *arg, tm_stream *st);
/* The session ended: drop the records of streams never answered (their
 * dials are cancelled; on_abandon normally did it already). */
void agent_streams_session_gone(agent_conn *c);
/* destroy: abort every relay and dial of c. */
void agent_streams_abort(agent_conn *c);

/* agent_status.c: the status page's sessions panel (issue 28),
 * registered when the host has ABI 1.7 (PH_OK otherwise). */
int agent_status_init(agent *a);

/* tunnel_agent.c */
void agent_update_ready(agent *a);
void agent_check_stop_done(agent *a);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The seed's stream metrics (TM-OBS-1..5, 10..18), registered once per
 * role module at init and shared by its sessions. Labels are only the
 * seed's bounded sets (TM-OBS-10..17): component, stage, result,
 * error_class (= the OPEN_RESULT code enum), open_mode, scope; never a
 * host, port, token, stream or connection id (TM-SEC-8). (The session
 * families, proxyhost_stream_*, are ours and add their reason.)
 *
 *   tunnelmesh_stream_stage_duration_seconds{component,stage,result,scope}
 *       histogram; stage in socks5_handshake|remote_validation|
 *       authorization|selection|relay|queue|dns|connect|open|ttfb;
 *       scope local, or remote for a server's stream relayed to another
 *       node (selection, relay, open, ttfb; issue 27)
 *   tunnelmesh_stream_open_total{component,result,error_class,open_mode}
 *   tunnelmesh_stream_queue_wait_seconds{component}   (dial, open queues)
 *   tunnelmesh_stream_window_stall_seconds{component}   histogram
 *   tunnelmesh_stream_backpressure_total{component,open_mode,result}
 *       result success (window stall, reader paused: the stream waited),
 *       rejected (inbound queue full, legacy backpressure, window
 *       violation: the stream was reset), failure (control queue full:
 *       the session closed)
 *   proxyhost_stream_writer_wait_seconds{component}     histogram
 *   proxyhost_stream_tunnel_sessions{component}         gauge
 *   proxyhost_stream_tunnel_sessions_closed_total{component,reason}
 *
 * The first three families are the ones modules/frontend/stream_metrics.c
 * registers for the frontends and direct too (one name has one
 * definition in a process: socks5 + tunnel_client, direct +
 * tunnel_agent). The client's opens are counted by its frontend, which
 * learns the open mode from the connector's result (PH_OPEN_R_LEGACY);
 * the server and the agent count theirs with tm_obs_open. queue_wait has
 * no queue label (the writer's wait is its own family); the TTFB is
 * stage="ttfb" of the component (server: TM-OBS-20, client: TM-OBS-21;
 * the kind argument is implied by it); the session families are
 * proxyhost_stream_* (the seed names no such metric).
 * docs/operations/tunnel-session.md lists them.
 *
 * Loop thread only.
 */
#ifndef TM_METRICS_H
#define TM_METRICS_H

#include <stdint.h>

#include <proxyhost/host.h>

/* The role a session plays (its metrics' component label). */
enum tm_component { TM_COMPONENT_CLIENT = 0, TM_COMPONENT_SERVER,
                    TM_COMPONENT_AGENT };

/* Why a session ended (on_close); also the audit/log reason. */
enum tm_close_reason {
  TM_CLOSE_TRANSPORT = 1, /* the WebSocket failed or the peer closed it */
  TM_CLOSE_PROTOCOL,      /* an undecodable or unattributable frame */
  TM_CLOSE_ABUSE,         /* violation_limit passed */
  TM_CLOSE_CONTROL_FULL,  /* the control queue overflowed (TM-FAIL-8) */
  TM_CLOSE_HEARTBEAT,     /* no PONG within ping_timeout_ms */
  TM_CLOSE_LOCAL,         /* tm_session_close */
  TM_CLOSE_GOAWAY_DONE    /* drained after GOAWAY: no stream left */
};

/* The reason's name in logs and the sessions_closed metric's label
 * ("transport", "protocol", ...); "unknown" for any other value. */
const char *tm_close_reason_name(int reason);
/* The same names as a NULL-terminated list, [0] for TM_CLOSE_TRANSPORT
 * (a metric label's values). */
extern const char *const tm_close_reason_names[];

typedef struct tm_metrics tm_metrics;

enum tm_queue { TM_Q_DIAL = 0, TM_Q_OPEN, TM_Q_WRITER };
/* Why backpressure was counted; tm_obs_backpressure turns it into the
 * result label (the reason itself is not a seed label: TM-OBS-5). */
enum tm_bp_reason {
  TM_BP_WINDOW_STALL = 0,
  TM_BP_INBOUND_FULL,
  TM_BP_LEGACY,
  TM_BP_CONTROL_FULL,
  TM_BP_WINDOW_VIOLATION,
  TM_BP_READ_PAUSED /* the control queue could not take more answers */
};
enum tm_result { TM_R_SUCCESS = 0, TM_R_FAILURE, TM_R_TIMEOUT, TM_R_REJECTED };
enum tm_obs_stage {
  TM_OS_SOCKS5_HANDSHAKE = 0, TM_OS_REMOTE_VALIDATION, TM_OS_AUTHORIZATION,
  TM_OS_SELECTION, TM_OS_RELAY, TM_OS_QUEUE, TM_OS_DNS, TM_OS_CONNECT,
  TM_OS_OPEN, TM_OS_TTFB
};
enum tm_ttfb_kind { TM_TTFB_SERVER = 0, TM_TTFB_SOCKS5_LOCAL };

/* Init only: registers the families for component (tm_component). Every
 * role module calls it once; NULL on failure (init fails). Freed with the
 * module (the host owns the metric objects). Only the stages a component
 * records exist (tm_obs_stage of another is a no-op): client open, ttfb;
 * server authorization, selection, relay, open, ttfb; agent queue, open
 * (its dns and connect are direct's). */
tm_metrics *tm_metrics_register(const ph_api *api, ph_ctx *ctx,
                                int component);
/* The same; remote (a server with the relay between nodes, issue 27):
 * its selection, relay, open and ttfb stages also have scope="remote"
 * series (none otherwise: one server is the whole mesh). */
tm_metrics *tm_metrics_register_remote(const ph_api *api, ph_ctx *ctx,
                                       int component, int remote);
void tm_metrics_free(tm_metrics *m);

/* Observations (m may be NULL: no-op). Durations in microseconds. */
void tm_obs_stage(tm_metrics *m, int stage, int result, uint64_t us);
/* The same stage with scope="remote" when remote (a server's stream
 * relayed to another node's agent: selection, relay, open, ttfb). */
void tm_obs_stage_scope(tm_metrics *m, int stage, int result, int remote,
                        uint64_t us);
void tm_obs_open(tm_metrics *m, int strict, int code);
void tm_obs_queue_wait(tm_metrics *m, int queue, uint64_t us);
void tm_obs_window_stall(tm_metrics *m, uint64_t us);
/* strict: the stream's open mode (a session-wide event: the session's,
 * TM_CAP_OPEN_RESULT negotiated). */
void tm_obs_backpressure(tm_metrics *m, int strict, int reason);
void tm_obs_ttfb(tm_metrics *m, int kind, uint64_t us);
void tm_obs_session(tm_metrics *m, int delta);
void tm_obs_session_closed(tm_metrics *m, int reason);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The stream metrics shared by frontends and connectors, with the 001
 * seed's names and bounded labels. Every module registers the same
 * definitions (the host hands back the one metric) with only the series
 * it produces (its component, the stages it records with the results each
 * can end in, one result per open code), resolves them once, and updates
 * them on the hot path without lookups. A series it did not declare is
 * NULL, and updating it does nothing. */
#ifndef PH_STREAM_METRICS_H
#define PH_STREAM_METRICS_H

#include <proxyhost/connector.h>
#include <proxyhost/host.h>

/* Label values (stable). */
enum sm_component { SM_CLIENT = 0, SM_SERVER, SM_AGENT, SM_COMPONENTS };
enum sm_stage {
  SM_SOCKS5_HANDSHAKE = 0,
  SM_REMOTE_VALIDATION,
  SM_AUTHORIZATION,
  SM_SELECTION,
  SM_RELAY,
  SM_QUEUE,
  SM_DNS,
  SM_CONNECT,
  SM_OPEN,
  SM_TTFB,
  SM_STAGES
};
enum sm_result { SM_SUCCESS = 0, SM_FAILURE, SM_TIMEOUT, SM_REJECTED,
                 SM_RESULTS };
enum sm_direction { SM_UP = 0, SM_DOWN, SM_DIRECTIONS };
/* protocol (TM-OBS-14): tcp|udp|http|websocket, in the label's order.
 * Only TCP streams and HTTP forward requests exist (no UDP ASSOCIATE,
 * Upgrade is not forwarded), so only these two have series (the others'
 * are NULL). */
enum sm_protocol { SM_TCP = 0, SM_UDP, SM_HTTP, SM_WEBSOCKET, SM_PROTOCOLS };
/* scope (TM-OBS-15): local|remote. remote has series only for a server
 * with SM_USES_REMOTE (the streams it relays to another node's agent,
 * issue 27): its selection, relay, open and ttfb stages. */
enum sm_scope { SM_LOCAL = 0, SM_REMOTE };
/* open_mode (TM-OBS-17): strict, or a TunnelMesh legacy open. */
enum sm_open_mode { SM_STRICT = 0, SM_LEGACY, SM_OPEN_MODES };

/* One component's series, resolved at init. */
typedef struct stream_metrics {
  const ph_api *api;
  /* tunnelmesh_stream_stage_duration_seconds{component,stage,result,scope}
   * (scope="local") */
  ph_series *stage[SM_STAGES][SM_RESULTS];
  /* the same with scope="remote" (SM_USES_REMOTE; else NULL) */
  ph_series *remote[SM_STAGES][SM_RESULTS];
  /* tunnelmesh_stream_open_total{component,result,error_class,open_mode},
   * by open mode and code (the result follows from the code:
   * stream_metrics_result) */
  ph_series *open[SM_OPEN_MODES][PH_OPEN_CODE_COUNT_];
  /* tunnelmesh_stream_queue_wait_seconds{component} */
  ph_series *queue_wait;
  /* proxyhost_stream_active{component} */
  ph_series *active;
  /* proxyhost_stream_bytes_total{component,direction,protocol}; the HTTP
   * series only with SM_USES_HTTP (else NULL) */
  ph_series *bytes[SM_PROTOCOLS][SM_DIRECTIONS];
} stream_metrics;

/* What a module records, for stream_metrics_init: the stages it times
 * (SM_STAGE_BIT(SM_DNS) | ...), and the other metrics it updates. */
#define SM_STAGE_BIT(stage) (1u << (stage))
#define SM_USES_OPENS (1u << 16)      /* tunnelmesh_stream_open_total */
#define SM_USES_QUEUE_WAIT (1u << 17) /* tunnelmesh_stream_queue_wait_seconds */
#define SM_USES_STREAMS (1u << 18)    /* proxyhost_stream_active, _bytes_total */
#define SM_USES_HTTP (1u << 19) /* _bytes_total{protocol="http"} too */
/* scope="remote" stage series: selection, relay, open, ttfb (the server
 * relaying to another node, issue 27) */
#define SM_USES_REMOTE (1u << 20)
#define SM_REMOTE_STAGES                                                   \
  (SM_STAGE_BIT(SM_SELECTION) | SM_STAGE_BIT(SM_RELAY) |                   \
   SM_STAGE_BIT(SM_OPEN) | SM_STAGE_BIT(SM_TTFB))
/* A frontend through frontend_session: it times the open and the first
 * byte, counts opens, streams and bytes. */
#define SM_FRONTEND                                                        \
  (SM_STAGE_BIT(SM_OPEN) | SM_STAGE_BIT(SM_TTFB) | SM_USES_OPENS |         \
   SM_USES_STREAMS)
/* A dialing connector (direct): its queue, resolution and connect. */
#define SM_DIALER                                                          \
  (SM_STAGE_BIT(SM_QUEUE) | SM_STAGE_BIT(SM_DNS) |                         \
   SM_STAGE_BIT(SM_CONNECT) | SM_USES_QUEUE_WAIT)

/* Init only. component is an sm_component, uses the SM_* bits above:
 * only those series are registered (api->metric_only) and shown, for this
 * component. 0 or a negative ph_status. */
int stream_metrics_init(stream_metrics *m, const ph_api *api, ph_ctx *ctx,
                        int component, unsigned uses);
/* Whether a stage can end with a result (the combinations registered). */
int stream_metrics_stage_has(int stage, int result);
/* The result label for an open code: ok→success, timeout→timeout,
 * forbidden→rejected, others→failure. */
int stream_metrics_result(int code);
/* Records one stage's duration in seconds. */
void stream_metrics_stage(stream_metrics *m, int stage, int result,
                          double seconds);
/* The same with a scope (sm_scope): remote only where registered. */
void stream_metrics_stage_scope(stream_metrics *m, int stage, int result,
                                int scope, double seconds);
/* Counts one finished open with its code and open mode (sm_open_mode). */
void stream_metrics_open(stream_metrics *m, int code, int open_mode);
/* The open mode an open result says (PH_OPEN_R_LEGACY, connector minor
 * 2; strict for an older connector). */
int stream_metrics_mode_of(const ph_open_result *res);
/* Parses "client|server|agent"; -1 otherwise. */
int stream_metrics_component(const char *name);

#endif

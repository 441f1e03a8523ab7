/* SPDX-License-Identifier: BSD-2-Clause */
/* The stream metrics shared by frontends and connectors, with the 001
 * seed's names and bounded labels. Every module registers the same
 * definitions (the host hands back the one metric), resolves the series it
 * needs once, and updates them on the hot path without lookups. */
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

/* One component's series, resolved at init. */
typedef struct stream_metrics {
  const ph_api *api;
  /* tunnelmesh_stream_stage_duration_seconds{component,stage,result} */
  ph_series *stage[SM_STAGES][SM_RESULTS];
  /* tunnelmesh_stream_open_total{component,result,error_class} */
  ph_series *open[SM_RESULTS][PH_OPEN_CODE_COUNT_];
  /* tunnelmesh_stream_queue_wait_seconds{component} */
  ph_series *queue_wait;
  /* proxyhost_streams_active{component} */
  ph_series *active;
  /* proxyhost_stream_bytes_total{component,direction} */
  ph_series *bytes[SM_DIRECTIONS];
} stream_metrics;

/* Init only. component is an sm_component. 0 or a negative ph_status. */
int stream_metrics_init(stream_metrics *m, const ph_api *api, ph_ctx *ctx,
                        int component);
/* The result label for an open code: ok→success, timeout→timeout,
 * forbidden→rejected, others→failure. */
int stream_metrics_result(int code);
/* Records one stage's duration in seconds. */
void stream_metrics_stage(stream_metrics *m, int stage, int result,
                          double seconds);
/* Counts one finished open with its code. */
void stream_metrics_open(stream_metrics *m, int code);
/* Parses "client|server|agent"; -1 otherwise. */
int stream_metrics_component(const char *name);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The seed's stream metrics for the tunnel roles (tm_metrics.h).
 *
 * The families the frontends and connectors already register
 * (modules/frontend/stream_metrics.c: stage durations, opens by code, the
 * queue wait) are the same metrics here, registered through the same
 * definitions: a process holding socks5 and tunnel_client, or
 * tunnel_agent and direct, shares them, and a second definition of one
 * name would be refused by the host. So tm_obs_open counts
 * tunnelmesh_stream_open_total{component,result,error_class,open_mode}
 * as the frontends do (their connector's result says the open mode:
 * PH_OPEN_R_LEGACY, TM-OBS-17/24); the TTFB of each side is stage="ttfb" of its component (server: TM-OBS-20,
 * client: TM-OBS-21, recorded apart: TM-OBS-22). The writer's queue wait
 * is proxyhost_stream_writer_wait_seconds{component}, apart from the dial
 * and open queues' tunnelmesh_stream_queue_wait_seconds{component}.
 * Backpressure is counted with the seed's labels only (TM-OBS-5, -10,
 * -12, -17): by open mode and result (bp_result).
 * Every label value comes from a fixed list (TM-SEC-8, TM-OBS-18). */
#include "tm_metrics.h"

#include <stddef.h>
#include <stdlib.h>

#include "frontend/stream_metrics.h"
#include "lib/metric_table.h"

/* In enum order from TM_CLOSE_TRANSPORT (1). */
const char *const tm_close_reason_names[] = {
    "transport", "protocol", "abuse", "control_full", "heartbeat", "local",
    "goaway_done", NULL};

const char *tm_close_reason_name(int reason) {
  return reason >= TM_CLOSE_TRANSPORT && reason <= TM_CLOSE_GOAWAY_DONE
             ? tm_close_reason_names[reason - TM_CLOSE_TRANSPORT]
             : "unknown";
}

struct tm_metrics {
  const ph_api *api;
  stream_metrics sm;
  ph_series *stall;
  ph_series *bp[2][TM_R_REJECTED + 1]; /* [legacy][result] */
  ph_series *writer_wait;
  ph_series *sessions;
  ph_series *closed[TM_CLOSE_GOAWAY_DONE]; /* [reason - 1] */
};

static const char *const components[] = {"client", "server", "agent", NULL};
static const char *const modes[] = {"strict", "legacy", NULL};
static const char *const results[] = {"success", "failure", "timeout",
                                      "rejected", NULL};

/* Seconds, 10 µs (an uncontended writer) to 10 s (a stalled window). */
static const double buckets[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025,
                                 0.0005,  0.001,    0.0025,  0.005,  0.01,
                                 0.025,   0.05,     0.1,     0.25,   0.5,
                                 1,       2.5,      5,       10};

static const ph_label_def comp_label[] = {{"component", components}};
static const ph_label_def bp_labels[] = {{"component", components},
                                         {"open_mode", modes},
                                         {"result", results}};
static const ph_label_def closed_labels[] = {{"component", components},
                                             {"reason", tm_close_reason_names}};

/* The results a backpressure event can have (bp_result), either mode:
 * over (open_mode, result), the component being fixed. */
static const char *const bp_combos[] = {NULL,       "success", NULL,
                                        "rejected", NULL,      "failure"};

/* Every family's first label is the component, fixed to the role's
 * (ph_metric_table_register_fixed). In registration order. */
static const ph_metric_table tm_table[] = {
    PH_METRIC("tunnelmesh_stream_window_stall_seconds", PH_METRIC_HISTOGRAM,
              "Time a stream's writer waited for send window",
              PH_METRIC_LABELS(comp_label), PH_METRIC_BUCKETS(buckets),
              tm_metrics, stall),
    PH_METRIC_ONLY("tunnelmesh_stream_backpressure_total", PH_METRIC_COUNTER,
                   "Backpressure events by open mode and what became of the "
                   "stream: success (it waited and went on), rejected (it "
                   "was reset), failure (its session closed)",
                   PH_METRIC_LABELS(bp_labels), PH_METRIC_NO_BUCKETS,
                   PH_METRIC_COMBOS(bp_combos, 3), tm_metrics, bp),
    PH_METRIC("proxyhost_stream_writer_wait_seconds", PH_METRIC_HISTOGRAM,
              "Time a frame waited in a tunnel connection's writer",
              PH_METRIC_LABELS(comp_label), PH_METRIC_BUCKETS(buckets),
              tm_metrics, writer_wait),
    PH_METRIC("proxyhost_stream_tunnel_sessions", PH_METRIC_GAUGE,
              "Tunnel sessions (WebSockets) now", PH_METRIC_LABELS(comp_label),
              PH_METRIC_NO_BUCKETS, tm_metrics, sessions),
    PH_METRIC("proxyhost_stream_tunnel_sessions_closed_total",
              PH_METRIC_COUNTER, "Tunnel sessions ended, by reason",
              PH_METRIC_LABELS(closed_labels), PH_METRIC_NO_BUCKETS, tm_metrics,
              closed),
    PH_METRIC_END};

/* What each role records besides its session metrics (stream_metrics.h). */
static unsigned uses_of(int component) {
  switch (component) {
  case TM_COMPONENT_CLIENT:
    return SM_STAGE_BIT(SM_OPEN) | SM_STAGE_BIT(SM_TTFB) | SM_USES_OPENS;
  case TM_COMPONENT_SERVER:
    return SM_STAGE_BIT(SM_AUTHORIZATION) | SM_STAGE_BIT(SM_SELECTION) |
           SM_STAGE_BIT(SM_RELAY) | SM_STAGE_BIT(SM_OPEN) |
           SM_STAGE_BIT(SM_TTFB) | SM_USES_OPENS | SM_USES_QUEUE_WAIT;
  default:
    return SM_STAGE_BIT(SM_QUEUE) | SM_STAGE_BIT(SM_OPEN) | SM_USES_OPENS |
           SM_USES_QUEUE_WAIT;
  }
}

tm_metrics *tm_metrics_register(const ph_api *api, ph_ctx *ctx,
                                int component) {
  return tm_metrics_register_remote(api, ctx, component, 0);
}

tm_metrics *tm_metrics_register_remote(const ph_api *api, ph_ctx *ctx,
                                       int component, int remote) {
  if (component < TM_COMPONENT_CLIENT || component > TM_COMPONENT_AGENT)
    return NULL;
  tm_metrics *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->api = api;
  unsigned uses = uses_of(component);
  if (remote && component == TM_COMPONENT_SERVER)
    uses |= SM_USES_REMOTE;
  if (stream_metrics_init(&m->sm, api, ctx, component, uses) !=
          PH_OK ||
      ph_metric_table_register_fixed(api, ctx, tm_table, components[component],
                                     m) != PH_OK) {
    free(m);
    return NULL;
  }
  return m;
}

void tm_metrics_free(tm_metrics *m) { free(m); }

static int result_of(int r) {
  switch (r) {
  case TM_R_SUCCESS:
    return SM_SUCCESS;
  case TM_R_TIMEOUT:
    return SM_TIMEOUT;
  case TM_R_REJECTED:
    return SM_REJECTED;
  default:
    return SM_FAILURE;
  }
}

void tm_obs_stage(tm_metrics *m, int stage, int result, uint64_t us) {
  /* enum tm_obs_stage has the order of enum sm_stage */
  if (m && stage >= 0 && stage < SM_STAGES)
    stream_metrics_stage(&m->sm, stage, result_of(result), (double)us / 1e6);
}

void tm_obs_stage_scope(tm_metrics *m, int stage, int result, int remote,
                        uint64_t us) {
  if (m && stage >= 0 && stage < SM_STAGES)
    stream_metrics_stage_scope(&m->sm, stage, result_of(result),
                               remote ? SM_REMOTE : SM_LOCAL, (double)us / 1e6);
}

void tm_obs_open(tm_metrics *m, int strict, int code) {
  if (m)
    stream_metrics_open(&m->sm, code, strict ? SM_STRICT : SM_LEGACY);
}

void tm_obs_queue_wait(tm_metrics *m, int queue, uint64_t us) {
  if (!m)
    return;
  ph_series *s = queue == TM_Q_WRITER ? m->writer_wait : m->sm.queue_wait;
  if (s)
    m->api->observe(s, (double)us / 1e6);
}

void tm_obs_window_stall(tm_metrics *m, uint64_t us) {
  if (m)
    m->api->observe(m->stall, (double)us / 1e6);
}

/* What a backpressure event did to its stream (TM-OBS-5, with the seed's
 * labels only): the writer or the reader waited and the stream went on,
 * the stream was reset (its queue overflowed, or the peer broke the
 * window: under legacy this is the seed's legacy_backpressure), or the
 * whole session closed (control queue full). */
static int bp_result(int reason) {
  switch (reason) {
  case TM_BP_WINDOW_STALL:
  case TM_BP_READ_PAUSED:
    return TM_R_SUCCESS;
  case TM_BP_CONTROL_FULL:
    return TM_R_FAILURE;
  default:
    return TM_R_REJECTED;
  }
}

void tm_obs_backpressure(tm_metrics *m, int strict, int reason) {
  if (m && reason >= 0 && reason <= TM_BP_READ_PAUSED)
    m->api->inc(m->bp[!strict][bp_result(reason)], 1);
}

void tm_obs_ttfb(tm_metrics *m, int kind, uint64_t us) {
  (void)kind; /* the component tells server from socks5_local (TM-OBS-22) */
  if (m)
    stream_metrics_stage(&m->sm, SM_TTFB, SM_SUCCESS, (double)us / 1e6);
}

void tm_obs_session(tm_metrics *m, int delta) {
  if (m)
    m->api->gauge_add(m->sessions, delta);
}

void tm_obs_session_closed(tm_metrics *m, int reason) {
  if (m && reason >= TM_CLOSE_TRANSPORT && reason <= TM_CLOSE_GOAWAY_DONE)
    m->api->inc(m->closed[reason - TM_CLOSE_TRANSPORT], 1);
}


/* SPDX-License-Identifier: BSD-2-Clause */
#include "stream_metrics.h"

#include <string.h>

static const char *const components[] = {"client", "server", "agent", NULL};
static const char *const stages[] = {
    "socks5_handshake", "remote_validation", "authorization", "selection",
    "relay",            "queue",             "dns",           "connect",
    "open",             "ttfb",              NULL};
static const char *const results[] = {"success", "failure", "timeout",
                                      "rejected", NULL};
static const char *const codes[] = {PH_OPEN_CODE_NAMES, NULL};
static const char *const directions[] = {"up", "down", NULL};

/* Seconds: from 100 µs (a loopback connect) to 30 s (a stuck open). */
static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                 0.005,  0.01,    0.025,  0.05,  0.1,
                                 0.25,   0.5,     1,      2.5,   5,
                                 10,     30};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const ph_label_def stage_labels[] = {
    {"component", components}, {"stage", stages}, {"result", results}};
static const ph_label_def open_labels[] = {{"component", components},
                                           {"result", results},
                                           {"error_class", codes}};
static const ph_label_def component_label[] = {{"component", components}};
static const ph_label_def bytes_labels[] = {{"component", components},
                                            {"direction", directions}};

static const ph_metric_def stage_def = {
    "tunnelmesh_stream_stage_duration_seconds",
    "Duration of each stream open stage",
    PH_METRIC_HISTOGRAM,
    stage_labels,
    3,
    buckets,
    N_BUCKETS};
static const ph_metric_def open_def = {
    "tunnelmesh_stream_open_total", "Stream opens by result and error class",
    PH_METRIC_COUNTER, open_labels, 3, NULL, 0};
static const ph_metric_def queue_def = {
    "tunnelmesh_stream_queue_wait_seconds",
    "Time a stream open waited for a dial slot",
    PH_METRIC_HISTOGRAM,
    component_label,
    1,
    buckets,
    N_BUCKETS};
static const ph_metric_def active_def = {
    "proxyhost_streams_active", "Streams open now", PH_METRIC_GAUGE,
    component_label, 1, NULL, 0};
static const ph_metric_def bytes_def = {
    "proxyhost_stream_bytes_total",
    "Bytes relayed: up is client to target, down is target to client",
    PH_METRIC_COUNTER,
    bytes_labels,
    2,
    NULL,
    0};

int stream_metrics_component(const char *name) {
  for (int i = 0; components[i]; i++)
    if (name && strcmp(name, components[i]) == 0)
      return i;
  return -1;
}

int stream_metrics_init(stream_metrics *m, const ph_api *api, ph_ctx *ctx,
                        int component) {
  memset(m, 0, sizeof(*m));
  m->api = api;
  if (component < 0 || component >= SM_COMPONENTS)
    return PH_EINVAL;
  ph_metric *stage = api->metric(ctx, &stage_def);
  ph_metric *open = api->metric(ctx, &open_def);
  ph_metric *queue = api->metric(ctx, &queue_def);
  ph_metric *active = api->metric(ctx, &active_def);
  ph_metric *bytes = api->metric(ctx, &bytes_def);
  if (!stage || !open || !queue || !active || !bytes)
    return PH_EINVAL;
  const char *comp = components[component];
  for (int s = 0; s < SM_STAGES; s++)
    for (int r = 0; r < SM_RESULTS; r++) {
      const char *v[] = {comp, stages[s], results[r]};
      m->stage[s][r] = api->series(stage, v);
    }
  for (int r = 0; r < SM_RESULTS; r++)
    for (int c = 0; c < PH_OPEN_CODE_COUNT_; c++) {
      const char *v[] = {comp, results[r], codes[c]};
      m->open[r][c] = api->series(open, v);
    }
  const char *cv[] = {comp};
  m->queue_wait = api->series(queue, cv);
  m->active = api->series(active, cv);
  for (int d = 0; d < SM_DIRECTIONS; d++) {
    const char *v[] = {comp, directions[d]};
    m->bytes[d] = api->series(bytes, v);
  }
  return PH_OK;
}

int stream_metrics_result(int code) {
  switch (code) {
  case PH_OPEN_OK:
    return SM_SUCCESS;
  case PH_OPEN_TIMEOUT:
    return SM_TIMEOUT;
  case PH_OPEN_FORBIDDEN:
    return SM_REJECTED;
  default:
    return SM_FAILURE;
  }
}

void stream_metrics_stage(stream_metrics *m, int stage, int result,
                          double seconds) {
  if (stage >= 0 && stage < SM_STAGES && result >= 0 && result < SM_RESULTS)
    m->api->observe(m->stage[stage][result], seconds);
}

void stream_metrics_open(stream_metrics *m, int code) {
  if (code < 0 || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  m->api->inc(m->open[stream_metrics_result(code)][code], 1);
}

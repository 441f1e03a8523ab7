/* SPDX-License-Identifier: BSD-2-Clause */
#include "stream_metrics.h"

#include <stddef.h>
#include <string.h>

#include "lib/metric_table.h"

static const char *const components[] = {"client", "server", "agent", NULL};
static const char *const stages[] = {
    "socks5_handshake", "remote_validation", "authorization", "selection",
    "relay",            "queue",             "dns",           "connect",
    "open",             "ttfb",              NULL};
static const char *const results[] = {"success", "failure", "timeout",
                                      "rejected", NULL};
static const char *const codes[] = {PH_OPEN_CODE_NAMES, NULL};
static const char *const directions[] = {"up", "down", NULL};
static const char *const modes[] = {"strict", "legacy", NULL};
/* The seed's sets (TM-OBS-14, -15); only the values a module produces
 * are declared (stream_metrics.h). */
static const char *const protocols[] = {"tcp", "udp", "http", "websocket",
                                        NULL};
static const char *const scopes[] = {"local", "remote", NULL};

/* Seconds: from 100 µs (a loopback connect) to 30 s (a stuck open). */
static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                 0.005,  0.01,    0.025,  0.05,  0.1,
                                 0.25,   0.5,     1,      2.5,   5,
                                 10,     30};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const ph_label_def stage_labels[] = {{"component", components},
                                            {"stage", stages},
                                            {"result", results},
                                            {"scope", scopes}};
static const ph_label_def open_labels[] = {{"component", components},
                                           {"result", results},
                                           {"error_class", codes},
                                           {"open_mode", modes}};
static const ph_label_def component_label[] = {{"component", components}};
static const ph_label_def bytes_labels[] = {{"component", components},
                                            {"direction", directions},
                                            {"protocol", protocols}};

static const ph_metric_def stage_def = {
    "tunnelmesh_stream_stage_duration_seconds",
    "Duration of each stream open stage; scope: the stream stayed on "
    "this server (local) or was relayed to another (remote)",
    PH_METRIC_HISTOGRAM,
    stage_labels,
    4,
    buckets,
    N_BUCKETS};
static const ph_metric_def open_def = {
    "tunnelmesh_stream_open_total",
    "Stream opens by result, error class and open mode",
    PH_METRIC_COUNTER, open_labels, 4, NULL, 0};
static const ph_metric_def queue_def = {
    "tunnelmesh_stream_queue_wait_seconds",
    "Time a stream open waited for a dial slot",
    PH_METRIC_HISTOGRAM,
    component_label,
    1,
    buckets,
    N_BUCKETS};
static const ph_metric_def active_def = {
    "proxyhost_stream_active", "Streams open now", PH_METRIC_GAUGE,
    component_label, 1, NULL, 0};
static const ph_metric_def bytes_def = {
    "proxyhost_stream_bytes_total",
    "Bytes relayed: up is client to target, down is target to client; "
    "protocol: what the client's stream carries",
    PH_METRIC_COUNTER,
    bytes_labels,
    3,
    NULL,
    0};

int stream_metrics_component(const char *name) {
  for (int i = 0; components[i]; i++)
    if (name && strcmp(name, components[i]) == 0)
      return i;
  return -1;
}

/* The results each stage can end with, by who records it: the handshake
 * ends in any of them, remote validation allows, rejects (a deny) or
 * fails (no usable answer: frontend_session.c), authorization allows or
 * rejects, the dialer's
 * queue/dns/connect end in success, failure (queue_full, the resolver's
 * or connect's errors) or timeout, the open in its code's result, and the
 * first byte only arrives. The server's selection succeeds, fails (no
 * agent session) or rejects (the agent's stream limit); its relay (the
 * agent's leg) succeeds, fails or times out (ts_open.c). */
static const unsigned char stage_results[SM_STAGES] = {
    [SM_SOCKS5_HANDSHAKE] = 0xF,
    [SM_REMOTE_VALIDATION] = 1u << SM_SUCCESS | 1u << SM_FAILURE |
                             1u << SM_REJECTED,
    [SM_AUTHORIZATION] = 1u << SM_SUCCESS | 1u << SM_REJECTED,
    [SM_SELECTION] = 1u << SM_SUCCESS | 1u << SM_FAILURE | 1u << SM_REJECTED,
    [SM_RELAY] = 1u << SM_SUCCESS | 1u << SM_FAILURE | 1u << SM_TIMEOUT,
    [SM_QUEUE] = 1u << SM_SUCCESS | 1u << SM_FAILURE | 1u << SM_TIMEOUT,
    [SM_DNS] = 1u << SM_SUCCESS | 1u << SM_FAILURE | 1u << SM_TIMEOUT,
    [SM_CONNECT] = 1u << SM_SUCCESS | 1u << SM_FAILURE | 1u << SM_TIMEOUT,
    [SM_OPEN] = 0xF,
    [SM_TTFB] = 1u << SM_SUCCESS,
};

int stream_metrics_stage_has(int stage, int result) {
  return stage >= 0 && stage < SM_STAGES && result >= 0 &&
         result < SM_RESULTS && (stage_results[stage] >> result & 1u);
}

/* Every stage series a component records is scope="local"; a server
 * that relays to other nodes (SM_USES_REMOTE, issue 27) also has
 * scope="remote" for the stages of a relayed stream (SM_REMOTE_STAGES):
 * docs/operations/tunnel-session.md, "Labels". */
static int init_stages(stream_metrics *m, ph_ctx *ctx, const char *comp,
                       unsigned uses) {
  const char *t[SM_STAGES * SM_RESULTS * 4 * 2];
  size_t n = 0;
  for (int sc = SM_LOCAL; sc <= SM_REMOTE; sc++)
    for (int s = 0; s < SM_STAGES; s++)
      for (int r = 0; r < SM_RESULTS; r++) {
        unsigned want = sc == SM_LOCAL ? uses
                        : (uses & SM_USES_REMOTE) ? uses & SM_REMOTE_STAGES
                                                  : 0;
        if ((want & SM_STAGE_BIT(s)) && stream_metrics_stage_has(s, r)) {
          t[4 * n] = comp;
          t[4 * n + 1] = stages[s];
          t[4 * n + 2] = results[r];
          t[4 * n + 3] = scopes[sc];
          n++;
        }
      }
  if (n == 0)
    return PH_OK;
  ph_metric *stage = ph_metric_register_only(m->api, ctx, &stage_def, t, n);
  if (!stage)
    return PH_EINVAL;
  for (int s = 0; s < SM_STAGES; s++)
    for (int r = 0; r < SM_RESULTS; r++) {
      const char *v[] = {comp, stages[s], results[r], scopes[SM_LOCAL]};
      m->stage[s][r] = m->api->series(stage, v);
      if (uses & SM_USES_REMOTE) {
        v[3] = scopes[SM_REMOTE];
        m->remote[s][r] = m->api->series(stage, v);
      }
    }
  return PH_OK;
}

/* One result per code, in either open mode: the tuples
 * stream_metrics_open can count. */
static int init_opens(stream_metrics *m, ph_ctx *ctx, const char *comp) {
  enum { N = SM_OPEN_MODES * PH_OPEN_CODE_COUNT_ };
  const char *t[N * 4];
  for (int i = 0; i < N; i++) {
    int c = i % PH_OPEN_CODE_COUNT_;
    t[4 * i] = comp;
    t[4 * i + 1] = results[stream_metrics_result(c)];
    t[4 * i + 2] = codes[c];
    t[4 * i + 3] = modes[i / PH_OPEN_CODE_COUNT_];
  }
  ph_metric *open = ph_metric_register_only(m->api, ctx, &open_def, t, N);
  if (!open)
    return PH_EINVAL;
  for (int i = 0; i < N; i++)
    m->open[i / PH_OPEN_CODE_COUNT_][i % PH_OPEN_CODE_COUNT_] =
        m->api->series(open, &t[4 * i]);
  return PH_OK;
}

/* Bytes by protocol: every frontend relays TCP streams (SOCKS5 CONNECT,
 * HTTP CONNECT); SM_USES_HTTP adds the HTTP forward proxy's requests. */
static int init_streams(stream_metrics *m, ph_ctx *ctx, const char *comp,
                        unsigned uses) {
  const char *one[] = {comp};
  const char *bt[] = {comp, NULL, protocols[SM_TCP],
                      comp, NULL, protocols[SM_HTTP]};
  ph_metric *active = ph_metric_register_only(m->api, ctx, &active_def, one, 1);
  ph_metric *bytes = ph_metric_register_only(m->api, ctx, &bytes_def, bt,
                                             (uses & SM_USES_HTTP) ? 2 : 1);
  if (!active || !bytes)
    return PH_EINVAL;
  m->active = m->api->series(active, one);
  for (int p = 0; p < SM_PROTOCOLS; p++)
    for (int d = 0; d < SM_DIRECTIONS; d++) {
      const char *v[] = {comp, directions[d], protocols[p]};
      m->bytes[p][d] = m->api->series(bytes, v);
    }
  return PH_OK;
}

int stream_metrics_init(stream_metrics *m, const ph_api *api, ph_ctx *ctx,
                        int component, unsigned uses) {
  memset(m, 0, sizeof(*m));
  m->api = api;
  if (component < 0 || component >= SM_COMPONENTS)
    return PH_EINVAL;
  const char *comp = components[component];
  if (init_stages(m, ctx, comp, uses) != PH_OK)
    return PH_EINVAL;
  if ((uses & SM_USES_OPENS) && init_opens(m, ctx, comp) != PH_OK)
    return PH_EINVAL;
  if (uses & SM_USES_QUEUE_WAIT) {
    const char *cv[] = {comp};
    ph_metric *queue = ph_metric_register_only(api, ctx, &queue_def, cv, 1);
    if (!queue)
      return PH_EINVAL;
    m->queue_wait = api->series(queue, cv);
  }
  if ((uses & SM_USES_STREAMS) && init_streams(m, ctx, comp, uses) != PH_OK)
    return PH_EINVAL;
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

void stream_metrics_stage_scope(stream_metrics *m, int stage, int result,
                                int scope, double seconds) {
  if (scope != SM_REMOTE) {
    stream_metrics_stage(m, stage, result, seconds);
    return;
  }
  if (stage >= 0 && stage < SM_STAGES && result >= 0 && result < SM_RESULTS)
    m->api->observe(m->remote[stage][result], seconds);
}

void stream_metrics_open(stream_metrics *m, int code, int open_mode) {
  if (code < 0 || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  m->api->inc(m->open[open_mode == SM_LEGACY][code], 1);
}

int stream_metrics_mode_of(const ph_open_result *res) {
  return res && res->size >= offsetof(ph_open_result, flags) +
                                 sizeof(res->flags) &&
                 (res->flags & PH_OPEN_R_LEGACY)
             ? SM_LEGACY
             : SM_STRICT;
}

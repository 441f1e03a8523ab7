/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client: the gateway's control-plane session (issue 12, the
 * 000 design's sections 2, 3 and 9). The driver of cp_supervisor.h: it
 * performs the one action each event returns (RegisterWorker, the
 * WatchSnapshots stream, AcknowledgeSnapshot, ReportRuntime, the backoff
 * timer), validates each snapshot (cp_snapshot_check, deltas with
 * cp_snapshot_apply_delta), compiles the view in a host job, publishes it
 * with one atomic swap and provides it as "pool.view". Readiness is
 * cp_sup_ready (CP-1-28). docs/user-guide/gateway.md "Running a gateway".
 *
 * Which answer still matters: every call of the session is remembered in
 * one pointer (c_reg, c_watch, c_ack, c_rt); a cancelled call's late
 * on_done finds its pointer gone and is dropped. A build job carries the
 * session generation it was started in.
 *
 * It also provides "cp.session" (cp_session.h) to outcome_reporter: the
 * session's identity and state, and ReportOutcomes calls on this
 * module's channel (cpc_outcalls.c), so that no gRPC object is shared
 * with another module; a session-fence error the reporter sees comes back
 * through fence_failed as the supervisor's CP_CALL_OUTCOMES failure
 * (CP-5-17). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_view.h>

#include "lib/conf_values.h"
#include "lib/clocks.h"
#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/grpc/cp_grpc_unary.h"
#include "contracts/cp_session.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cp_supervisor.h"
#include "cp_common/view/cp_view.h"
#include "cpc_conf.h"
#include "cpc_material.h"
#include "cpc_outcalls.h"
#include "cp_common/grpc/cp_client_tls.h"
#include "cpc_tls_probe.h"
#include "cpc_view_route.h"
#include "cpc_wire.h"
#include "lib/metric_table.h"

#define SVC "/controlplane.v1.WorkerControlPlane/"

/* The rpc label of the call metrics. */
enum { RPC_REGISTER, RPC_WATCH, RPC_ACK, RPC_RUNTIME, RPC_OUTCOMES,
       RPC_COUNT };
static const char *const rpc_names[] = {"register", "watch",    "ack",
                                        "runtime",  "outcomes", NULL};
static const char *const status_names[] = {CP_GRPC_STATUS_NAMES, NULL};
#define N_STATUS CP_GRPC_STATUS_COUNT
static const char *const state_names[] = {
    "idle",    "backoff", "registering", "watching", "swapping",
    "acking",  "nacking", "running",     "fatal",    NULL};
#define N_STATE 9
/* RejectReason values 0..5 by their wire number, then the driver's own. */
static const char *const reject_names[] = {
    "unspecified", "expired",  "bad_checksum", "malformed", "too_large",
    "identity",    "delta",    "compile",      "overrun",   NULL};
enum { REJ_DELTA = 6, REJ_COMPILE = 7, REJ_OVERRUN = 8, N_REJECT = 9 };

typedef struct cpc {
  ph_ctx *ctx;
  cpc_conf conf;
  cp_snapshot_limits limits;
  cp_grpc_cq *cq;
  cp_grpc_channel *ch;
  cp_client_tls tls; /* the mTLS files re-read: a new ch (issue 23 item 14) */
  cp_sup sup;
  ph_timer *timer;
  uint64_t gen; /* bumped whenever the session's calls are cancelled */
  cp_grpc_ccall *c_reg, *c_watch, *c_ack, *c_rt;
  char session[PH_POOL_ID_MAX + 1];
  cp_snapshot *held;  /* the snapshot of the view in use (deltas' base) */
  int building;       /* a build job is in flight */
  int64_t job;
  int64_t probe_job;  /* a TLS probe after a register (cpc_tls_probe.h) */
  int mtls;           /* tls.mode = mtls */
  uint8_t *pending;   /* one stream message that came while building */
  size_t pending_len;
  cp_buf last_rt;    /* the last runtime report, resent byte for byte */
  /* "cp.session": the generation of the session registered last (0:
   * none yet), live from its registration until its calls are
   * cancelled, running after its first accepted ACK (CP-2-4). */
  uint64_t sess_gen;
  int sess_live, sess_acked;
  uint32_t max_counters;
  /* The pool's counts for runtime reports (NULL: no pool loaded, all
   * zero) and the buffer they are read into (max_counters entries). */
  const pool_runtime_v1 *rt;
  void *rt_self;
  pool_runtime_counter *rt_buf;
  uint32_t rt_cap;
  ph_series *m_rt_truncated;
  cpc_outcalls outc;
  cp_view_slot slot;
  cpc_view_route view_route; /* GET /v1/cp/view */
  uint64_t registrations;
  /* The last instant a proxy of the view in use can take a new stream
   * (0: none can): readiness means the gateway can serve (issue 23 item
   * 4), not only that its view is valid. */
  int64_t serving_until_ms;
  int fatal_logged, stopping, started;
  ph_series *m_state[N_STATE], *m_rpc[RPC_COUNT][N_STATUS];
  ph_series *m_accepted, *m_rejected[N_REJECT], *m_version, *m_valid, *m_view_at,
      *m_reconnects, *m_ready, *m_epoch_waits, *m_ready_retries;
} cpc;

static const ph_api *api;

/* The session's clock is wall_ms() (clocks.h): the snapshots' deadlines are
 * wall-clock instants (the controller's Redis TIME) and pool.view's readers
 * ask usable(v, p, now) with the same clock; the host's monotonic now_ms
 * would never reach them. */

static void perform(cpc *m, cp_sup_action act);
static void handle_message(cpc *m, const uint8_t *msg, size_t len);

/* ---- metrics ------------------------------------------------------------ */

static const ph_label_def state_label[] = {{"state", state_names}};
static const ph_label_def rpc_labels[] = {{"rpc", rpc_names},
                                          {"status", status_names}};
static const ph_label_def reject_label[] = {{"reason", reject_names}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table cpc_metrics[] = {
    PH_METRIC("proxyhost_cp_gateway_runtime_truncated_total",
              PH_METRIC_COUNTER, "runtime reports cut at max_runtime_counters",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_rt_truncated),
    PH_METRIC("proxyhost_cp_gateway_session_state", PH_METRIC_GAUGE,
              "1 for the session's current state",
              PH_METRIC_LABELS(state_label), PH_METRIC_NO_BUCKETS, cpc,
              m_state),
    PH_METRIC("proxyhost_cp_gateway_rpcs_total", PH_METRIC_COUNTER,
              "control-plane calls by rpc and final gRPC status",
              PH_METRIC_LABELS(rpc_labels), PH_METRIC_NO_BUCKETS, cpc, m_rpc),
    PH_METRIC("proxyhost_cp_gateway_snapshots_accepted_total",
              PH_METRIC_COUNTER,
              "snapshots validated, swapped in and acknowledged",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_accepted),
    PH_METRIC("proxyhost_cp_gateway_snapshots_rejected_total",
              PH_METRIC_COUNTER, "snapshots or deltas refused, by reason",
              PH_METRIC_LABELS(reject_label), PH_METRIC_NO_BUCKETS, cpc,
              m_rejected),
    PH_METRIC("proxyhost_cp_gateway_view_version", PH_METRIC_GAUGE,
              "snapshot version of the view in use (0: none)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_version),
    PH_METRIC("proxyhost_cp_gateway_view_valid_seconds", PH_METRIC_GAUGE,
              "seconds until the view's valid_until or stale "
              "deadline, at the last session event (<= 0: none)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_valid),
    PH_METRIC("proxyhost_cp_gateway_view_accepted_timestamp_seconds",
              PH_METRIC_GAUGE,
              "Unix time the view in use was accepted (0: none); the "
              "snapshot's age is time() minus this",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_view_at),
    PH_METRIC("proxyhost_cp_gateway_reconnects_total", PH_METRIC_COUNTER,
              "sessions started after the first", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, cpc, m_reconnects),
    PH_METRIC("proxyhost_cp_gateway_ready", PH_METRIC_GAUGE,
              "1 while the view may be used (CP-1-28)", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, cpc, m_ready),
    PH_METRIC("proxyhost_cp_gateway_epoch_waits_total", PH_METRIC_COUNTER,
              "ACKs and runtime reports refused only for a stale "
              "ownership epoch: the session waited for its next "
              "snapshot instead of ending",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc, m_epoch_waits),
    PH_METRIC("proxyhost_cp_gateway_ready_retries_total", PH_METRIC_COUNTER,
              "sessions started before the backoff timer, when "
              "the channel's connection became ready (issue 23 "
              "item 3)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cpc,
              m_ready_retries),
    PH_METRIC_END};

static int register_metrics(cpc *m) {
  return ph_metric_table_register(api, m->ctx, cpc_metrics, m);
}

static void count_rpc(cpc *m, int rpc, int status) {
  if (status < 0 || status >= N_STATUS)
    status = CP_GRPC_UNKNOWN;
  api->inc(m->m_rpc[rpc][status], 1);
}

/* An ACK's or a report's status for the supervisor: the stale-epoch
 * refusal is told apart from a lost session by its message (CP-2-6,
 * issue 23 item 2), counted and logged. */
static int session_status(cpc *m, const char *rpc, int status,
                          const char *msg) {
  if (!cp_status_stale_epoch(status, msg))
    return status;
  api->inc(m->m_epoch_waits, 1);
  PH_LOG_RL(api, m->ctx, PH_LOG_INFO,
            "the ownership epoch moved on: waiting for the controller's "
            "next snapshot, the session goes on",
            PH_STR("rpc", rpc));
  return CP_SUP_STALE_EPOCH;
}

static void count_reject(cpc *m, int reason) {
  if (reason < 0 || reason >= N_REJECT)
    reason = 0;
  api->inc(m->m_rejected[reason], 1);
}

/* ---- the timer, readiness ------------------------------------------------ */

/* The last instant a proxy of v is usable (not draining, capacity above
 * zero, before its usable_until and expires_at: usable() without the
 * view-wide half, which the supervisor checks), 0 when none is. */
static int64_t serving_until(const ph_pool_view *v) {
  int64_t last = 0;
  for (uint32_t i = 0; v && i < v->n_proxies; i++) {
    const ph_pool_view_proxy *p = &v->proxies[i];
    int64_t until = p->usable_until_ms < p->expires_at_ms ? p->usable_until_ms
                                                          : p->expires_at_ms;
    if (!p->draining && p->capacity > 0 && until > last)
      last = until;
  }
  return last;
}

/* After every event: the state gauge, readiness, and the timer at the
 * supervisor's next deadline (or the view's last usable proxy's). */
static void settle(cpc *m) {
  if (m->stopping)
    return;
  int64_t now = wall_ms();
  for (int i = 0; i < N_STATE; i++)
    api->gauge_set(m->m_state[i], (int)m->sup.state == i ? 1 : 0);
  int live = cp_sup_ready(&m->sup, now);
  int ready = live && now < m->serving_until_ms;
  api->set_ready(m->ctx, ready);
  api->gauge_set(m->m_ready, ready);
  int64_t until = m->sup.view_valid_until_ms < m->sup.view_stale_at_ms
                      ? m->sup.view_valid_until_ms
                      : m->sup.view_stale_at_ms;
  api->gauge_set(m->m_valid, until > 0 ? (double)(until - now) / 1000.0 : 0);
  int64_t t = cp_sup_next_timer_ms(&m->sup, now);
  if (ready && (t < 0 || m->serving_until_ms < t))
    t = m->serving_until_ms;
  if (t < 0)
    api->timer_set(m->timer, 0, 0);
  else
    api->timer_set(m->timer, t > now ? (uint64_t)(t - now) : 1, 0);
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  cpc *m = arg;
  perform(m, cp_sup_timer(&m->sup, wall_ms()));
}

/* The channel's connection is READY (cp_grpc_client_cfg.on_ready): a
 * session waiting out its backoff starts now, so that it comes within
 * backoff.max of the controller's return, the channel's bound, not after
 * the timer's next try as well (issue 23 item 3). RegisterWorker still
 * goes without wait_for_ready: a TLS refusal must fail it (cpc_tls_probe.h,
 * issue 23 item 8). */
static void on_channel_ready(void *arg) {
  cpc *m = arg;
  if (m->stopping || m->sup.state != CP_SUP_BACKOFF)
    return;
  api->inc(m->m_ready_retries, 1);
  PH_LOG_RL(api, m->ctx, PH_LOG_DEBUG,
            "control-plane connection ready: new session before the backoff "
            "ends",
            PH_UINT("failed_attempts", m->sup.attempt));
  perform(m, cp_sup_channel_ready(&m->sup));
}

/* ---- calls ---------------------------------------------------------------- */

/* The one stream message that waited: a raw snapshot, credentials and
 * all, wiped before it is freed (issue 23 item 10). */
static void drop_pending(cpc *m) {
  if (m->pending)
    OPENSSL_cleanse(m->pending, m->pending_len);
  free(m->pending);
  m->pending = NULL;
  m->pending_len = 0;
}

static void cancel_all(cpc *m) {
  cp_grpc_ccall **calls[] = {&m->c_reg, &m->c_watch, &m->c_ack, &m->c_rt};
  for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
    if (*calls[i]) {
      cp_grpc_ccall *c = *calls[i];
      *calls[i] = NULL;
      cp_grpc_ccall_cancel(c);
    }
  drop_pending(m);
  m->sess_live = m->sess_acked = 0;
  cpc_outcalls_end_session(&m->outc);
  if (m->building && m->job > 0)
    api->job_cancel(m->ctx, m->job); /* PH_EBUSY: its done sees gen */
  if (m->probe_job > 0)
    api->job_cancel(m->ctx, m->probe_job);
  m->building = 0;
  m->job = 0;
  m->probe_job = 0;
  m->gen++;
}

static cp_grpc_ccall *start_unary(cpc *m, const char *path, cp_buf *req,
                                  void (*done)(void *, cp_grpc_ccall *, int,
                                               const char *)) {
  return cp_unary_start(m->ch, path, m->conf.rpc_timeout_ms, req->data,
                        req->len, done, m);
}

/* Nothing could be started (no memory): the session ends as if the call
 * had failed, and the backoff bounds the retries. */
static void start_failed(cpc *m, cp_call call) {
  PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "control-plane call not started",
            PH_STR("reason", "no memory"));
  perform(m, cp_sup_failed(&m->sup, call, CP_GRPC_RESOURCE_EXHAUSTED,
                           wall_ms()));
}

static void register_failed(cpc *m, int status, const char *msg) {
  count_rpc(m, RPC_REGISTER, status);
  PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "register failed",
            PH_STR("status", status_names[status >= 0 && status < N_STATUS
                                              ? status
                                              : CP_GRPC_UNKNOWN]),
            PH_STR("message", msg ? msg : ""));
  perform(m, cp_sup_registered(&m->sup, status, 0, 0, 0, wall_ms()));
}

/* An UNAVAILABLE RegisterWorker over mTLS may be the controller refusing
 * this gateway's certificate (gRPC says only "Socket closed"): a handshake
 * of our own in a job tells (cpc_tls_probe.h), and an authentication
 * refusal is fatal (CP-3-13, issue 23 item 8). The register's outcome
 * waits for it; a session cancelled meanwhile drops it (gen). */
typedef struct probe {
  cpc *m;
  uint64_t gen;
  int status;
  char msg[CP_GRPC_STATUS_MSG_MAX + 1]; /* gRPC's own message */
  char why[256];
} probe;

static void probe_work(void *arg) {
  probe *p = arg;
  cp_grpc_client_cfg cfg; /* conf_str in a job: the submit's configuration */
  cp_grpc_conf_client(p->m->ctx, api, "address", &cfg);
  int64_t t = p->m->conf.rpc_timeout_ms;
  int ms = (int)(t < 5000 ? t : 5000);
  /* Twice: a refusal is fatal, so one controller restarting at that very
   * moment must not pass for one. */
  char a[CP_ADDR_ONE_MAX + 1];
  p->status = CP_GRPC_UNAVAILABLE;
  for (size_t i = 0; p->status != CP_GRPC_UNAUTHENTICATED &&
                     cp_addr_list_nth(cfg.address, i, a, sizeof(a)) == 0;
       i++) { /* each controller of a list (cp_addr_list.h) */
    p->status = cpc_tls_probe(a, &cfg.tls, ms, p->why, sizeof(p->why));
    if (p->status == CP_GRPC_UNAUTHENTICATED)
      p->status = cpc_tls_probe(a, &cfg.tls, ms, p->why, sizeof(p->why));
  }
}

static void probe_done(void *arg, int status) {
  probe *p = arg;
  cpc *m = p->m;
  if (status != PH_ECANCELED && p->gen == m->gen && !m->stopping) {
    m->probe_job = 0;
    if (p->status == CP_GRPC_UNAUTHENTICATED)
      register_failed(m, CP_GRPC_UNAUTHENTICATED, p->why);
    else
      register_failed(m, CP_GRPC_UNAVAILABLE, p->msg);
  }
  free(p);
}

static int start_probe(cpc *m, const char *msg) {
  if (!m->mtls)
    return 0;
  probe *p = calloc(1, sizeof(*p));
  if (!p)
    return 0;
  p->m = m;
  p->gen = m->gen;
  snprintf(p->msg, sizeof(p->msg), "%s", msg ? msg : "");
  int64_t id = api->submit(m->ctx, probe_work, probe_done, p);
  if (id < 0) {
    free(p);
    return 0;
  }
  m->probe_job = id;
  return 1;
}

static void register_done(void *arg, cp_grpc_ccall *call, int status,
                          const char *msg) {
  cp_unary *u = arg;
  cpc *m = u->owner;
  if (call != m->c_reg || m->stopping)
    goto out;
  m->c_reg = NULL;
  if (status != CP_GRPC_OK) {
    if (status != CP_GRPC_UNAVAILABLE || !start_probe(m, msg))
      register_failed(m, status, msg);
    goto out;
  }
  count_rpc(m, RPC_REGISTER, status);
  int64_t now = wall_ms();
  cpc_registered r;
  const char *why = NULL;
  if (cpc_read_registered(u->resp, u->len, &r, &why) != PH_OK) {
    PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "unusable register answer",
              PH_STR("reason", why));
    /* Another protocol version is the controller's refusal in other
     * words (CP-7-4): as fatal as FAILED_PRECONDITION. */
    status = strstr(why, "protocol") ? CP_GRPC_FAILED_PRECONDITION
                                     : CP_GRPC_INTERNAL;
    perform(m, cp_sup_registered(&m->sup, status, 0, 0, 0, now));
    goto out;
  }
  memcpy(m->session, r.session_id, sizeof(m->session));
  m->sess_gen++;
  m->sess_live = 1;
  m->sess_acked = 0;
  m->max_counters = r.max_runtime_counters;
  m->outc.live_gen = m->sess_gen;
  perform(m, cp_sup_registered(&m->sup, CP_GRPC_OK, r.epoch,
                               r.runtime_interval_ms, r.max_stale_ms, now));
out:
  cp_unary_free(u);
}

static void do_register(cpc *m) {
  cp_buf b = {0};
  if (m->registrations++)
    api->inc(m->m_reconnects, 1);
  m->session[0] = 0;
  const cp_client_ident *id = &m->conf.ident;
  if (cpc_pack_register(id->cluster_id, id->id, id->instance_id, id->zone,
                        &b) != PH_OK ||
      !(m->c_reg = start_unary(m, SVC "RegisterWorker", &b, register_done))) {
    cp_buf_free(&b);
    start_failed(m, CP_CALL_REGISTER);
    return;
  }
  cp_buf_free(&b);
}

/* The stream. */
static void watch_message(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                          size_t len) {
  cpc *m = arg;
  if (call != m->c_watch || m->stopping)
    return;
  if (!m->building && (m->sup.state == CP_SUP_WATCHING ||
                       m->sup.state == CP_SUP_RUNNING)) {
    handle_message(m, msg, len);
    return;
  }
  /* One snapshot in hand at a time: one more may wait; a third means the
   * controller outpaces the builds, and a new stream starts from a full
   * snapshot instead (bounded memory). */
  if (m->pending) {
    count_reject(m, REJ_OVERRUN);
    perform(m, CP_ACT_WATCH);
    return;
  }
  m->pending = malloc(len ? len : 1);
  if (!m->pending) {
    perform(m, cp_sup_failed(&m->sup, CP_CALL_WATCH,
                             CP_GRPC_RESOURCE_EXHAUSTED,
                             wall_ms()));
    return;
  }
  memcpy(m->pending, msg, len);
  m->pending_len = len;
}

static void watch_done(void *arg, cp_grpc_ccall *call, int status,
                       const char *msg) {
  cpc *m = arg;
  if (call != m->c_watch || m->stopping)
    return;
  m->c_watch = NULL;
  count_rpc(m, RPC_WATCH, status);
  PH_LOG_RL(api, m->ctx, status == CP_GRPC_OK ? PH_LOG_INFO : PH_LOG_WARN,
            "snapshot stream ended",
            PH_STR("status", status_names[status >= 0 && status < N_STATUS
                                              ? status
                                              : CP_GRPC_UNKNOWN]),
            PH_STR("message", msg ? msg : ""));
  perform(m, cp_sup_failed(&m->sup, CP_CALL_WATCH, status,
                           wall_ms()));
}

/* Opens (or reopens: a delta that could not be applied, CP-3-16) the
 * stream. The held snapshot is named so the controller may send deltas
 * later; it always starts with a full one (CP-2-2). */
static void do_watch(cpc *m) {
  if (m->c_watch) {
    cp_grpc_ccall *c = m->c_watch;
    m->c_watch = NULL;
    cp_grpc_ccall_cancel(c);
  }
  drop_pending(m);
  cp_buf b = {0};
  const Controlplane__V1__WorkerSnapshot *h =
      m->held ? cp_snapshot_msg(m->held) : NULL;
  int has = h && h->checksum.len == 32;
  if (cpc_pack_watch(m->conf.ident.id, m->session, has ? h->version : 0,
                     has ? h->checksum.data : NULL, &b) != PH_OK) {
    start_failed(m, CP_CALL_WATCH);
    return;
  }
  cp_grpc_ccall_cbs cbs = {watch_message, NULL, watch_done, NULL};
  m->c_watch = cp_grpc_ccall_start(m->ch, SVC "WatchSnapshots",
                                   CP_RPC_SERVER_STREAM, 0, b.data, b.len,
                                   &cbs, m);
  cp_buf_free(&b);
  if (!m->c_watch)
    start_failed(m, CP_CALL_WATCH);
}

/* ---- snapshots ------------------------------------------------------------ */

typedef struct build {
  cpc *m;
  uint64_t gen;
  cp_snapshot *snap;
  int64_t obtained_at_ms, max_stale_ms;
  ph_pool_view *view;
  /* The view current when the build started (a reference) and what the
   * subscriber (the pool) built beside the new one against it, here off
   * the loop (CP-3-17, issue 23 item 13). */
  const ph_pool_view *base;
  void *prepared;
  int rc;
  const char *why;
} build;

static void build_work(void *arg) {
  build *b = arg;
  cp_view_opts o = {b->obtained_at_ms, b->max_stale_ms};
  b->rc = cp_view_compile(cp_snapshot_msg(b->snap), &o, &b->view, &b->why);
  if (b->rc == PH_OK)
    b->prepared = cp_view_prepare(&b->m->slot, b->view, b->base);
}

static void build_done(void *arg, int status) {
  build *b = arg;
  cpc *m = b->m;
  /* base is held until the swap: the pool compares it by address with
   * the view it holds, so it must not be freed and reused before. */
  if (status == PH_ECANCELED || b->gen != m->gen || m->stopping) {
    cp_view_release(b->base);
    free(b->prepared);
    cp_view_release(b->view);
    cp_snapshot_free(b->snap);
    free(b);
    return;
  }
  m->building = 0;
  m->job = 0;
  int64_t now = wall_ms();
  if (b->rc != PH_OK) {
    /* Valid, but not a view this worker can build: NACKed (TOO_LARGE for
     * memory, MALFORMED for what the view refuses); the session and the
     * old view stay. */
    int reason =
        b->rc == PH_ENOMEM
            ? CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_TOO_LARGE
            : CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_MALFORMED;
    cp_view_release(b->base);
    count_reject(m, REJ_COMPILE);
    PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "snapshot view not built",
              PH_STR("reason", b->why ? b->why : "no memory"));
    cp_snapshot_free(b->snap);
    free(b);
    perform(m, cp_sup_build_failed(&m->sup, reason));
    return;
  }
  const Controlplane__V1__WorkerSnapshot *s = cp_snapshot_msg(b->snap);
  int64_t valid_until = 0;
  cp_ts_to_ms(s->valid_until, &valid_until);
  m->serving_until_ms = serving_until(b->view);
  if (m->serving_until_ms <= now)
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "the snapshot gives this gateway no usable proxy: not ready "
              "until one does",
              PH_INT("snapshot_version", (int64_t)cp_snapshot_msg(b->snap)->version));
  /* One atomic swap (CP-3-17), then the pool installs what it prepared. */
  cp_view_publish_prepared(&m->slot, b->view, b->prepared);
  cp_view_release(b->base);
  cp_snapshot_free(m->held);
  m->held = b->snap;
  /* The deltas' base keeps the credentials' identity, not their material:
   * the view holds the only copy (CP-1-18, issue 23 item 10). */
  cp_view_wipe_message((Controlplane__V1__WorkerSnapshot *)cp_snapshot_msg(
      m->held));
  api->gauge_set(m->m_version, (double)s->version);
  api->gauge_set(m->m_view_at, (double)now / 1000.0);
  api->inc(m->m_accepted, 1);
  PH_LOG(api, m->ctx, PH_LOG_INFO, "snapshot view in use",
         PH_INT("snapshot_version", (int64_t)s->version),
         PH_INT("proxies", (int64_t)s->n_proxies),
         PH_INT("valid_for_ms", valid_until - now));
  free(b);
  perform(m, cp_sup_swapped(&m->sup, now, valid_until)); /* then the ACK */
}

static void start_build(cpc *m, cp_snapshot *snap) {
  build *b = calloc(1, sizeof(*b));
  if (!b) {
    cp_snapshot_free(snap);
    perform(m, cp_sup_failed(&m->sup, CP_CALL_WATCH,
                             CP_GRPC_RESOURCE_EXHAUSTED,
                             wall_ms()));
    return;
  }
  b->m = m;
  b->gen = m->gen;
  b->snap = snap;
  b->obtained_at_ms = wall_ms();
  b->max_stale_ms = m->sup.max_stale_ms;
  b->base = cp_view_acquire(&m->slot);
  int64_t id = api->submit(m->ctx, build_work, build_done, b);
  if (id < 0) {
    cp_view_release(b->base);
    cp_snapshot_free(snap);
    free(b);
    perform(m, cp_sup_failed(&m->sup, CP_CALL_WATCH,
                             CP_GRPC_RESOURCE_EXHAUSTED,
                             wall_ms()));
    return;
  }
  m->building = 1;
  m->job = id;
}

static void handle_message(cpc *m, const uint8_t *msg, size_t len) {
  int64_t now = wall_ms();
  cp_expect ex = {m->conf.ident.cluster_id, m->conf.ident.id, m->session};
  const char *why = NULL;
  cp_snapshot *snap = NULL;
  int reason = 0;
  /* Unpacked once, into the bounded arena the snapshot keeps (wiped when
   * freed: it holds credentials). */
  const Controlplane__V1__SnapshotDelta *delta = NULL;
  cp_snapshot *in = cp_snapshot_unpack_response(msg, len, &delta);
  if (!in) {
    /* Nothing to NACK: no version, no checksum. A new session. */
    count_reject(m, CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_MALFORMED);
    PH_LOG_RL(api, m->ctx, PH_LOG_ERROR, "unreadable snapshot stream message");
    perform(m, cp_sup_failed(&m->sup, CP_CALL_WATCH, CP_GRPC_INTERNAL, now));
    return;
  }
  if (delta) {
    /* The held snapshot has no credential material: the view in use has
     * it (CP-1-18, issue 23 item 10). */
    cpc_material mi;
    cp_delta_result d = CP_DELTA_NEED_FULL;
    if (m->held && cpc_material_index(&mi, cp_view_current(&m->slot)) == PH_OK) {
      d = cp_snapshot_apply_delta_from(cp_snapshot_msg(m->held), delta, &ex,
                                       now, &m->limits, cpc_material_find,
                                       &mi, &snap, &why);
      cpc_material_free(&mi);
    }
    cp_snapshot_free(in);
    if (d != CP_DELTA_OK) {
      /* Discard it and ask for a full snapshot on a new stream
       * (CP-3-16); the session and the view stay. */
      count_reject(m, REJ_DELTA);
      PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "delta not applied",
                PH_STR("reason", why ? why : "no snapshot held"));
      perform(m, CP_ACT_WATCH);
      return;
    }
  } else {
    snap = in;
    reason = cp_snapshot_check(cp_snapshot_msg(snap), &ex, now, &m->limits,
                               &why);
  }
  const Controlplane__V1__WorkerSnapshot *s = cp_snapshot_msg(snap);
  uint8_t sum[32] = {0};
  if (s->checksum.len == 32)
    memcpy(sum, s->checksum.data, 32);
  if (reason) {
    count_reject(m, reason);
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "snapshot rejected",
              PH_STR("reason", why ? why : ""),
              PH_INT("snapshot_version", (int64_t)s->version));
    uint64_t v = s->version, e = s->ownership_epoch;
    cp_snapshot_free(snap);
    perform(m, cp_sup_snapshot(&m->sup, reason, v, e, sum));
    return;
  }
  cp_sup_action act =
      cp_sup_snapshot(&m->sup, 0, s->version, s->ownership_epoch, sum);
  if (act == CP_ACT_BUILD) {
    start_build(m, snap);
    settle(m);
  } else {
    cp_snapshot_free(snap);
    perform(m, act);
  }
}

/* ---- ACK and runtime ---------------------------------------------------- */

static void ack_done(void *arg, cp_grpc_ccall *call, int status,
                     const char *msg) {
  cp_unary *u = arg;
  cpc *m = u->owner;
  if (call == m->c_ack && !m->stopping) {
    m->c_ack = NULL;
    count_rpc(m, RPC_ACK, status);
    cp_sup_action act = cp_sup_acked(
        &m->sup, session_status(m, "ack", status, msg), wall_ms());
    if (m->sup.state == CP_SUP_RUNNING)
      m->sess_acked = 1; /* outcomes may flow from now on (CP-2-4) */
    perform(m, act);
    /* A message that waited for this ACK. */
    if (m->pending && !m->building &&
        (m->sup.state == CP_SUP_WATCHING || m->sup.state == CP_SUP_RUNNING)) {
      uint8_t *p = m->pending;
      size_t n = m->pending_len;
      m->pending = NULL;
      m->pending_len = 0;
      handle_message(m, p, n);
      OPENSSL_cleanse(p, n);
      free(p);
    }
  }
  cp_unary_free(u);
}

static void do_ack(cpc *m, int reason) {
  cp_buf b = {0};
  if (cpc_pack_ack(m->conf.ident.id, m->session, m->sup.ack_version,
                   m->sup.ack_epoch, m->sup.ack_checksum, reason,
                   &b) != PH_OK ||
      !(m->c_ack = start_unary(m, SVC "AcknowledgeSnapshot", &b, ack_done))) {
    cp_buf_free(&b);
    start_failed(m, CP_CALL_ACK);
    return;
  }
  cp_buf_free(&b);
}

static void revoke_cb(void *arg, const char *const *ids, size_t n) {
  cpc *m = arg;
  m->rt->revoke(m->rt_self, ids, n);
}

/* The pool's counts now: the complete sparse replacement (CP-2-14). More
 * than max_runtime_counters cannot be reported whole: the first ones go,
 * and the rest is counted and logged (raise the controller's
 * max_runtime_counters). */
static uint32_t runtime_counts(cpc *m, int *draining) {
  *draining = 0;
  if (!m->rt || !m->max_counters)
    return 0;
  if (m->rt_cap != m->max_counters) {
    free(m->rt_buf);
    m->rt_cap = 0;
    m->rt_buf = calloc(m->max_counters, sizeof(*m->rt_buf));
    if (!m->rt_buf)
      return 0;
    m->rt_cap = m->max_counters;
  }
  uint32_t n = m->rt->counters(m->rt_self, m->rt_buf, m->rt_cap, draining);
  if (n > m->rt_cap) {
    api->inc(m->m_rt_truncated, 1);
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "more proxies carry counts than max_runtime_counters: the "
              "runtime report is cut",
              PH_INT("counters", n), PH_INT("max", m->rt_cap));
    n = m->rt_cap;
  }
  return n;
}

static void runtime_done(void *arg, cp_grpc_ccall *call, int status,
                         const char *msg) {
  cp_unary *u = arg;
  cpc *m = u->owner;
  if (call == m->c_rt && !m->stopping) {
    m->c_rt = NULL;
    count_rpc(m, RPC_RUNTIME, status);
    /* revoke_proxy_ids accelerate a drain (CP-4-7): the pool takes no
     * new reservation on them; the snapshot stays the authority. */
    if (status == CP_GRPC_OK && m->rt && u->resp)
      (void)cpc_read_revokes(u->resp, u->len, revoke_cb, m);
    perform(m, cp_sup_runtime_done(
                   &m->sup, session_status(m, "runtime", status, msg),
                   wall_ms()));
  }
  cp_unary_free(u);
}

static void do_runtime(cpc *m) {
  /* A resend is the same bytes (CP-2-10): an idempotent replay. */
  if (!m->sup.resend || !m->last_rt.data) {
    cp_buf_free(&m->last_rt);
    int draining = 0;
    uint32_t n = runtime_counts(m, &draining);
    if (cpc_pack_runtime(m->conf.ident.id, m->session,
                         m->sup.report_sequence, m->sup.base_version,
                         m->sup.base_epoch, wall_ms(), m->rt_buf, n,
                         draining, &m->last_rt) != PH_OK) {
      start_failed(m, CP_CALL_RUNTIME);
      return;
    }
  }
  if (!(m->c_rt = start_unary(m, SVC "ReportRuntime", &m->last_rt,
                              runtime_done)))
    start_failed(m, CP_CALL_RUNTIME);
}

/* ---- the supervisor's actions ------------------------------------------- */

static void perform(cpc *m, cp_sup_action act) {
  if (m->stopping)
    return;
  switch (act) {
  case CP_ACT_NONE:
  case CP_ACT_BUILD: /* handle_message starts the build itself */
    break;
  case CP_ACT_REGISTER:
    do_register(m);
    break;
  case CP_ACT_WATCH:
    do_watch(m);
    break;
  case CP_ACT_ACK:
    do_ack(m, 0);
    break;
  case CP_ACT_NACK:
    do_ack(m, m->sup.nack_reason ? m->sup.nack_reason
                                 : CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_MALFORMED);
    break;
  case CP_ACT_RUNTIME:
    do_runtime(m);
    break;
  case CP_ACT_BACKOFF:
    cancel_all(m);
    cp_buf_free(&m->last_rt);
    PH_LOG_RL(api, m->ctx, PH_LOG_INFO, "control-plane session ended",
              PH_INT("retry_in_ms", m->sup.wait_ms));
    break;
  case CP_ACT_FATAL:
    cancel_all(m);
    if (!m->fatal_logged) {
      int c = m->sup.fatal_code;
      m->fatal_logged = 1;
      PH_LOG(api, m->ctx, PH_LOG_ERROR,
             "control plane refused this gateway; not retrying (fix the "
             "identity, certificate or protocol version and restart)",
             PH_STR("call", m->sup.fatal_call == CP_CALL_REGISTER
                                ? "register"
                                : "session"),
             PH_STR("status",
                    status_names[c >= 0 && c < N_STATUS ? c : CP_GRPC_UNKNOWN]));
    }
    break;
  }
  settle(m);
}

/* ---- "cp.session" --------------------------------------------------------- */

static void sess_current(void *self, cp_session_info *out) {
  cpc *m = self;
  memset(out, 0, sizeof(*out));
  out->generation = m->sess_gen;
  out->running = m->sess_live && m->sess_acked && !m->stopping;
  out->max_runtime_counters = m->max_counters;
  snprintf(out->worker_id, sizeof(out->worker_id), "%s", m->conf.ident.id);
  if (m->sess_live)
    snprintf(out->session_id, sizeof(out->session_id), "%s", m->session);
}

static int64_t sess_report(void *self, uint64_t gen,
                           const uint8_t *const *msgs, const size_t *lens,
                           uint32_t n, int64_t timeout_ms,
                           cp_session_outcomes_fn done, void *arg) {
  cpc *m = self;
  if (m->stopping || !m->ch || !m->sess_live || !m->sess_acked ||
      gen != m->sess_gen)
    return PH_ESTATE;
  return cpc_outcalls_start(&m->outc, m->ch, gen, msgs, lens, n, timeout_ms,
                            done, arg);
}

static void sess_cancel(void *self, int64_t id) {
  cpc *m = self;
  cpc_outcalls_cancel(&m->outc, id);
}

static void sess_fence_failed(void *self, uint64_t gen, int status) {
  cpc *m = self;
  if (m->stopping || !m->sess_live || gen != m->sess_gen ||
      status == CP_GRPC_OK)
    return;
  perform(m, cp_sup_failed(&m->sup, CP_CALL_OUTCOMES, status, wall_ms()));
}

static const cp_session_v1 cpc_session_service = {
    sess_current, sess_report, sess_cancel, sess_fence_failed};

static void count_outcome_call(void *arg, int status) {
  count_rpc(arg, RPC_OUTCOMES, status);
}

/* ---- lifecycle ------------------------------------------------------------ */

static uint32_t jitter(void *arg) {
  (void)arg;
  uint32_t v = UINT32_MAX;
  if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
    v = UINT32_MAX; /* no jitter: the top of the range */
  return v;
}

static int cpc_check(ph_ctx *ctx, const ph_api *a, const char **key,
                     char *why, size_t whylen) {
  cpc_conf c;
  return cpc_conf_read(ctx, a, &c, key, why, whylen);
}

static int cpc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  cpc *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  cp_view_slot_init(&m->slot);
  cpc_outcalls_init(&m->outc);
  *state = m;
  m->ctx = ctx;
  const char *key = NULL;
  char why[256];
  if (cpc_conf_read(ctx, a, &m->conf, &key, why, sizeof(why)) != PH_OK)
    return ph_conf_refused(api, ctx, "bad configuration", key, why);
  m->limits = m->conf.limits;
  m->conf.sup.rnd = jitter;
  if (register_metrics(m) != PH_OK)
    return PH_EINVAL;
  m->timer = api->timer_new(ctx, on_timer, m);
  if (!m->timer)
    return PH_ENOMEM;
  if (cp_client_tls_init(&m->tls, ctx, api, "controlplane_client") != PH_OK)
    return PH_EINVAL;
  m->outc.count = count_outcome_call;
  m->outc.count_arg = m;
  int rc = cpc_view_route_register(&m->view_route, ctx, api, &m->slot);
  if (rc == PH_EEXIST) /* another instance has it: a diagnostic only */
    PH_LOG(api, ctx, PH_LOG_WARN, "view route not registered",
           PH_STR("route", CPC_VIEW_ROUTE));
  else if (rc != PH_OK)
    return rc;
  rc = api->service_register(ctx, PH_POOL_VIEW_SERVICE, PH_POOL_VIEW_MAJOR,
                             PH_POOL_VIEW_MINOR, &cp_view_service, &m->slot);
  if (rc != PH_OK)
    return rc;
  return api->service_register(ctx, CP_SESSION_SERVICE, CP_SESSION_MAJOR,
                               CP_SESSION_MINOR, &cpc_session_service, m);
}

static int cpc_start(void *state) {
  cpc *m = state;
  api->set_ready(m->ctx, 0); /* until a view is swapped in */
  cp_grpc_client_cfg cfg;
  cp_grpc_conf_client(m->ctx, api, "address", &cfg);
  /* Connection attempts as often as sessions: within backoff.max of the
   * controller's return (issue 23 item 3). */
  cfg.reconnect_min_ms = m->conf.sup.backoff_min_ms;
  cfg.reconnect_max_ms = m->conf.sup.backoff_max_ms;
  /* Kept with cfg: a channel made again at a TLS reload is watched too. */
  cfg.on_ready = on_channel_ready;
  cfg.on_ready_arg = m;
  m->mtls = cfg.tls.mode == CP_TLS_MTLS;
  int rc = cp_client_tls_open(&m->tls, &m->cq, &m->ch, &cfg);
  if (rc != PH_OK)
    return rc;
  /* The pool, when one is loaded, registered pool.runtime at its init. */
  if (api->service_provided(m->ctx, POOL_RUNTIME_SERVICE))
    m->rt = api->service_get(m->ctx, POOL_RUNTIME_SERVICE, POOL_RUNTIME_MAJOR,
                             0, &m->rt_self);
  m->started = 1;
  perform(m, cp_sup_start(&m->sup, &m->conf.sup));
  return PH_OK;
}

static int cpc_stop(void *state) {
  cpc *m = state;
  if (m->started)
    cancel_all(m);
  m->stopping = 1;
  api->timer_set(m->timer, 0, 0);
  api->set_ready(m->ctx, 0);
  cpc_outcalls_stop(&m->outc); /* before the channel: it calls back no more */
  cp_client_tls_close(&m->tls, &m->cq, &m->ch);
  return PH_OK;
}

static void cpc_destroy(void *state) {
  cpc *m = state;
  if (!m)
    return;
  m->stopping = 1;
  cp_client_tls_close(&m->tls, &m->cq, &m->ch);
  if (m->timer)
    api->timer_free(m->timer);
  cp_view_publish(&m->slot, NULL); /* the readers were destroyed first */
  cp_view_slot_destroy(&m->slot);
  cp_snapshot_free(m->held);
  cp_buf_free(&m->last_rt);
  free(m->rt_buf);
  drop_pending(m);
  free(m);
}

static const char *const provides[] = {PH_POOL_VIEW_SERVICE,
                                       CP_SESSION_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("controlplane_client", "1.0.0"),
    .description = "gateway: the control-plane session and the snapshot view",
    .provides = provides,
    .config = cpc_conf_keys,
    .init = cpc_init,
    .start = cpc_start,
    .stop = cpc_stop,
    .destroy = cpc_destroy,
    .check = cpc_check,
};

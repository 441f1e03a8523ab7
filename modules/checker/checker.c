/* SPDX-License-Identifier: BSD-2-Clause */
/* checker: the checker role (issue 26; seed 000 section 6, CP-6-1..6). A
 * client of the controller's CheckerControlPlane over cp_common/grpc with
 * the gateway's mTLS (SPIFFE .../checker/<checker-id>):
 *  - RegisterChecker (max_concurrency, tiers), then WatchCheckTasks kept
 *    open; a stream refused for a stale session (FAILED_PRECONDITION,
 *    NOT_FOUND) registers again at once, any other end after the
 *    jittered, capped backoff (lib/backoff.h), as the gateway does;
 *  - each task runs on the loop (chk_probe.h: non-blocking, through the
 *    upstream kit), at most max_concurrency at once (more: CHECKER_ERROR
 *    no_resources, never queued beyond what it registered), each ended at
 *    its deadline (or task.max_duration, the sooner); a task with less
 *    than task.min_budget left is CHECKER_ERROR late_task, a timeout
 *    served less than it short_budget (chk_budget.h); at the deadline a
 *    proxy's answer the loop has not read yet is read first: the probe's
 *    result, or CHECKER_ERROR loop_late when the checker still had a
 *    step to take (chk_late.h);
 *  - observations go to ReportObservations in batches fenced by
 *    (session_id, sequence, SHA-256 digest) and resent byte for byte
 *    until acknowledged (chk_report.h, or_status.h's classes: a fence's
 *    refusal starts a new session);
 *  - EGRESS failures (and BASIC ones whose tunnel went to the echo) wait
 *    for a direct probe of the echo endpoint: when the checker cannot
 *    reach the echo itself, they are CHECKER_ERROR echo_unreachable,
 *    never FAILED.
 * It writes no state anywhere (CP-6-6): it observes, the controller's
 * reducer decides. Credentials live in the task's memory only and are
 * wiped when the check ends. Logs and metrics carry tiers, statuses and
 * reasons, never a proxy id, an address or a credential.
 * docs/user-guide/checker.md. Loop thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <proxyhost/connector.h>
#include <proxyhost/module.h>
#include <proxyhost/stream.h>

#include "lib/conf_values.h"
#include "chk_budget.h"
#include "chk_conf.h"
#include "chk_dial.h"
#include "chk_late.h"
#include "chk_status.h"
#include "chk_probe.h"
#include "chk_report.h"
#include "chk_wire.h"
#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/grpc/cp_grpc.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/grpc/cp_client_tls.h"
#include "cp_common/grpc/cp_grpc_unary.h"
#include "cp_common/view/or_status.h"
#include "lib/backoff.h"
#include "lib/clocks.h"
#include "lib/metric_table.h"

#define SVC "/controlplane.v1.CheckerControlPlane/"

static const char *const tier_names[] = {"basic", "egress", "target", NULL};
static const char *const hstatus_names[] = {"ok", "failed", "timeout",
                                            "checker_error", NULL};
static const char *const reason_names[] = {CHK_REASONS, NULL};
static const char *const rpc_names[] = {"register", "watch", "report", NULL};
enum { RPC_REGISTER, RPC_WATCH, RPC_REPORT, RPC_COUNT };
static const char *const status_names[] = {CP_GRPC_STATUS_NAMES, NULL};
#define N_STATUS CP_GRPC_STATUS_COUNT
static const char *const state_names[] = {"idle", "backoff", "registering",
                                          "watching", NULL};
enum { S_IDLE, S_BACKOFF, S_REGISTERING, S_WATCHING, N_STATE };
static const char *const refuse_names[] = {"busy", "bad_task", "late", NULL};
enum { REF_BUSY, REF_BAD, REF_LATE, N_REFUSE };

typedef struct checker checker;

/* One check running. */
typedef struct slot {
  checker *m;
  int used;
  chk_task task;
  chk_probe probe;
  ph_io *io;
  ph_timer *timer;
  int64_t started_ms;
  int64_t start_wall_ms, budget_ms; /* the timer's, for chk_budget_short */
  int events;
  int64_t open_id; /* the connector's dial in flight, 0: none */
  const char *own[1]; /* the probe's spec borrows it */
} slot;

/* An EGRESS failure waiting for the echo endpoint's direct probe. */
typedef struct held {
  chk_obs obs;
  int64_t failed_at_ms;
} held;

struct checker {
  ph_ctx *ctx;
  chk_conf conf;
  cp_grpc_cq *cq;
  cp_grpc_channel *ch;
  cp_client_tls tls; /* the mTLS files re-read: a new ch */
  int state, stopping, started;
  uint32_t attempt;
  ph_timer *timer;       /* backoff */
  ph_timer *flush_timer; /* reports: batch.flush and retries */
  int flush_armed;
  cp_grpc_ccall *c_reg, *c_watch, *c_rep;
  uint64_t gen;
  char session[PH_POOL_ID_MAX + 1];
  uint64_t registrations;
  chk_report rep;
  int64_t rep_retry_at;
  uint32_t rep_attempt;
  slot *slots;
  uint32_t running;
  uint32_t *free_ix; /* the slots not in use, a stack of indexes */
  uint32_t n_free;
  /* Checks counted since the metrics were last updated (metrics_flush:
   * once per report batch, not per check). */
  uint64_t n_checks[3][4], n_reasons[3][CHK_R_COUNT];
  /* The echo endpoint's direct probe. */
  slot echo;
  char echo_url[CHK_TARGET_MAX + 1];
  char echo_seen[CHK_ADDR_MAX]; /* our address as the echo saw it */
  int echo_up;                  /* -1 unknown, 0 down, 1 up */
  int64_t echo_started_ms;
  char echo_nonce[33];
  ph_timer *echo_timer;
  held *held;
  uint32_t n_held, held_cap;
  /* The connector that resolves and dials (connector key), or NULL:
   * address literals only, dialled by the probe itself. */
  const ph_connector_v1 *up;
  void *up_self;
  ph_series *m_checks[3][4], *m_reasons[3][CHK_R_COUNT], *m_seconds[3];
  ph_series *m_running, *m_state[N_STATE], *m_rpc[RPC_COUNT][N_STATUS];
  ph_series *m_refused[N_REFUSE], *m_dropped, *m_echo_up, *m_reconnects,
      *m_queue, *m_task_msgs, *m_max_running, *m_report_seconds;
  int64_t rep_started_ms; /* the ReportObservations call in flight began */
  chk_status st; /* the status panel (chk_status.h) */
  /* task_clock's readings, for the tasks of one stream message. */
  int64_t clk_mono, clk_wall;
  uint32_t clk_left;
  int in_message;
};

static const ph_api *api;

static const double secs[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                              0.5,   1,    2.5,   5,    10,  30};
static const ph_label_def tier_status[] = {{"tier", tier_names},
                                           {"status", hstatus_names}};
static const ph_label_def tier_reason[] = {{"tier", tier_names},
                                           {"reason", reason_names}};
static const ph_label_def tier_label[] = {{"tier", tier_names}};
static const ph_label_def state_label[] = {{"state", state_names}};
static const ph_label_def rpc_labels[] = {{"rpc", rpc_names},
                                          {"status", status_names}};
static const ph_label_def refuse_label[] = {{"reason", refuse_names}};

static const ph_metric_table chk_metrics[] = {
    PH_METRIC("proxyhost_checker_checks_total", PH_METRIC_COUNTER,
              "checks ended, by tier and status",
              PH_METRIC_LABELS(tier_status), PH_METRIC_NO_BUCKETS, checker,
              m_checks),
    PH_METRIC("proxyhost_checker_check_reasons_total", PH_METRIC_COUNTER,
              "checks that did not pass, by tier and reason",
              PH_METRIC_LABELS(tier_reason), PH_METRIC_NO_BUCKETS, checker,
              m_reasons),
    PH_METRIC("proxyhost_checker_check_seconds", PH_METRIC_HISTOGRAM,
              "time a check took, by tier", PH_METRIC_LABELS(tier_label),
              PH_METRIC_BUCKETS(secs), checker, m_seconds),
    PH_METRIC("proxyhost_checker_running", PH_METRIC_GAUGE,
              "checks running now (at most max_concurrency)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, checker, m_running),
    PH_METRIC("proxyhost_checker_max_concurrency", PH_METRIC_GAUGE,
              "checks that may run at once (max_concurrency): the bound of "
              "proxyhost_checker_running",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, checker,
              m_max_running),
    PH_METRIC("proxyhost_checker_session_state", PH_METRIC_GAUGE,
              "1 for the session's current state",
              PH_METRIC_LABELS(state_label), PH_METRIC_NO_BUCKETS, checker,
              m_state),
    PH_METRIC("proxyhost_checker_rpcs_total", PH_METRIC_COUNTER,
              "CheckerControlPlane calls by rpc and final gRPC status",
              PH_METRIC_LABELS(rpc_labels), PH_METRIC_NO_BUCKETS, checker,
              m_rpc),
    PH_METRIC("proxyhost_checker_tasks_refused_total", PH_METRIC_COUNTER,
              "tasks answered CHECKER_ERROR without a check (busy: "
              "max_concurrency reached; bad_task: unreadable; late: "
              "deadline passed or less than task.min_budget left)",
              PH_METRIC_LABELS(refuse_label), PH_METRIC_NO_BUCKETS, checker,
              m_refused),
    PH_METRIC("proxyhost_checker_observations_dropped_total",
              PH_METRIC_COUNTER,
              "observations dropped with the queue full (queue.max)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, checker, m_dropped),
    PH_METRIC("proxyhost_checker_observations_queued", PH_METRIC_GAUGE,
              "observations waiting to be reported", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, checker, m_queue),
    PH_METRIC("proxyhost_checker_echo_up", PH_METRIC_GAUGE,
              "1 when the last direct probe of the echo endpoint passed, 0 "
              "when it failed, -1 before the first",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, checker, m_echo_up),
    PH_METRIC("proxyhost_checker_task_messages_total", PH_METRIC_COUNTER,
              "WatchCheckTasks stream messages received, each one task or "
              "up to task_batch.max",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, checker,
              m_task_msgs),
    PH_METRIC("proxyhost_checker_report_seconds", PH_METRIC_HISTOGRAM,
              "ReportObservations calls, from the call to its status",
              PH_METRIC_NO_LABELS, PH_METRIC_BUCKETS(secs), checker,
              m_report_seconds),
    PH_METRIC("proxyhost_checker_reconnects_total", PH_METRIC_COUNTER,
              "sessions started after the first", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, checker, m_reconnects),
    PH_METRIC_END};

static void do_register(checker *m);
static void send_reports(checker *m);
static void arm_flush(checker *m);
static void echo_probe_start(checker *m);

static const char *status_name(int s) {
  return status_names[s >= 0 && s < N_STATUS ? s : CP_GRPC_UNKNOWN];
}

static void count_rpc(checker *m, int rpc, int status) {
  api->inc(m->m_rpc[rpc][status >= 0 && status < N_STATUS ? status
                                                          : CP_GRPC_UNKNOWN],
           1);
}

static void set_state(checker *m, int s) {
  m->state = s;
  for (int i = 0; i < N_STATE; i++)
    api->gauge_set(m->m_state[i], i == s);
  api->set_ready(m->ctx, s == S_WATCHING);
}

static uint32_t rnd32(void) {
  uint32_t v = UINT32_MAX;
  if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
    v = UINT32_MAX;
  return v;
}

/* ---- observations ------------------------------------------------------- */

static void queue_obs(checker *m, const chk_obs *o) {
  if (chk_report_push(&m->rep, o)) {
    api->inc(m->m_dropped, 1);
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "observation queue full: observation dropped (the controller "
              "re-issues its task)",
              PH_INT("queue_max", m->conf.queue_max));
  }
  if (m->rep.len >= m->conf.batch_max)
    send_reports(m);
  else if (!m->flush_armed)
    arm_flush(m); /* a partial batch goes after batch.flush */
}

/* at_ms: the observation's wall time (Unix ms), read by the caller. */
static void obs_of(const chk_task *t, chk_obs *o, int64_t at_ms) {
  memset(o, 0, sizeof(*o));
  memcpy(o->task_id, t->task_id, sizeof(o->task_id));
  memcpy(o->proxy_id, t->proxy_id, sizeof(o->proxy_id));
  memcpy(o->target_group, t->target_group, sizeof(o->target_group));
  o->tier = t->tier;
  o->observed_at_ms = at_ms;
}

/* now: mono_ms(), read by the caller (one clock read per check). */
static void count_check(checker *m, const chk_obs *o, int64_t now) {
  int t = o->tier >= 1 && o->tier <= 3 ? o->tier - 1 : 0;
  int s = o->status >= 1 && o->status <= 4 ? o->status - 1 : 3;
  m->n_checks[t][s]++;
  if (o->reason > 0 && o->reason < CHK_R_COUNT)
    m->n_reasons[t][o->reason]++;
  chk_status_count(&m->st, o->tier, o->status,
                   o->reason == CHK_R_LATE_TASK ||
                       o->reason == CHK_R_SHORT_BUDGET ||
                       o->reason == CHK_R_LOOP_LATE,
                   now);
  api->observe(m->m_seconds[t], (double)o->latency_ms / 1000.0);
}

/* The counts gathered since the last call, and the gauges, into the
 * metrics: before each report batch leaves (so a reported check is
 * counted), on the flush timer and at stop. */
static void metrics_flush(checker *m) {
  for (int t = 0; t < 3; t++) {
    for (int s = 0; s < 4; s++)
      if (m->n_checks[t][s]) {
        api->inc(m->m_checks[t][s], m->n_checks[t][s]);
        m->n_checks[t][s] = 0;
      }
    for (int r = 0; r < CHK_R_COUNT; r++)
      if (m->n_reasons[t][r]) {
        api->inc(m->m_reasons[t][r], m->n_reasons[t][r]);
        m->n_reasons[t][r] = 0;
      }
  }
  api->gauge_set(m->m_running, m->running);
  api->gauge_set(m->m_queue, m->rep.len);
}

static void finish_obs(checker *m, chk_obs *o, int64_t now) {
  count_check(m, o, now);
  queue_obs(m, o);
}

/* Whether the echo endpoint's own state decides o: an EGRESS failure, or
 * a BASIC one whose tunnel went to the echo (no target) and was refused
 * or timed out (the echo down looks like that through every proxy). */
static int echo_decides(const chk_task *t, const chk_obs *o) {
  if (o->status != CHK_FAILED && o->status != CHK_TIMEOUT)
    return 0;
  if (t->tier == CHK_TIER_EGRESS)
    return 1;
  return t->tier == CHK_TIER_BASIC && !t->target[0] &&
         (o->status == CHK_TIMEOUT || o->reason == CHK_R_HS_REJECTED ||
          o->reason == CHK_R_PROXY_ERROR);
}

/* A failure the echo's state decides: CHECKER_ERROR echo_unreachable
 * when the checker cannot reach the echo itself, else the failure,
 * after the direct probe that follows it. */
static void echo_failed(checker *m, chk_obs *o, int64_t now) {
  if (!m->echo_url[0]) { /* no echo to ask (a name, or none known) */
    finish_obs(m, o, now);
    return;
  }
  if (m->echo_up == 0) {
    o->status = CHK_CHECKER_ERROR;
    o->reason = CHK_R_ECHO_UNREACHABLE;
    finish_obs(m, o, now);
    return;
  }
  if (m->n_held == m->held_cap) {
    /* No room to wait: not a verdict either way. */
    o->status = CHK_CHECKER_ERROR;
    o->reason = CHK_R_NO_RESOURCES;
    finish_obs(m, o, now);
    return;
  }
  m->held[m->n_held].obs = *o;
  m->held[m->n_held].failed_at_ms = now;
  m->n_held++;
  if (!m->echo.used)
    echo_probe_start(m);
}

/* The direct probe that started at started_ms ended: the failures
 * before it are decided. */
static void release_held(checker *m, int64_t started_ms) {
  uint32_t k = 0;
  int64_t now = mono_ms();
  for (uint32_t i = 0; i < m->n_held; i++) {
    held *h = &m->held[i];
    if (h->failed_at_ms <= started_ms) {
      if (m->echo_up == 0) {
        h->obs.status = CHK_CHECKER_ERROR;
        h->obs.reason = CHK_R_ECHO_UNREACHABLE;
      }
      finish_obs(m, &h->obs, now);
    } else {
      m->held[k++] = *h;
    }
  }
  m->n_held = k;
}

/* ---- checks ------------------------------------------------------------- */

static void slot_release(slot *s) {
  checker *m = s->m;
  if (s->used && s != &m->echo) /* free again: on the stack */
    m->free_ix[m->n_free++] = (uint32_t)(s - m->slots);
  if (s->open_id > 0 && s->m->up)
    s->m->up->cancel(s->m->up_self, s->open_id);
  s->open_id = 0;
  if (s->io)
    api->io_free(s->io);
  s->io = NULL;
  if (s->timer)
    api->timer_set(s->timer, 0, 0);
  chk_probe_end(&s->probe);
  chk_task_wipe(&s->task);
  s->used = 0;
  s->events = 0;
}

static void echo_done(checker *m) {
  slot *s = &m->echo;
  const chk_probe_result *r = &s->probe.res;
  int up = r->status == CHK_OK;
  if (up)
    snprintf(m->echo_seen, sizeof(m->echo_seen), "%s", r->echo.egress_ip);
  if (up != m->echo_up)
    PH_LOG(api, m->ctx, up ? PH_LOG_INFO : PH_LOG_WARN,
           up ? "echo endpoint reachable"
              : "echo endpoint unreachable: EGRESS failures are reported as "
                "CHECKER_ERROR",
           PH_STR("reason", chk_reason_names[r->reason]));
  m->echo_up = up;
  api->gauge_set(m->m_echo_up, up);
  int64_t started = m->echo_started_ms;
  slot_release(s);
  release_held(m, started);
  if (m->n_held && !m->stopping)
    echo_probe_start(m); /* failures that came during this probe */
}

static void slot_done(slot *s) {
  checker *m = s->m;
  if (s == &m->echo) {
    echo_done(m);
    return;
  }
  /* One clock read per check: the latency on the monotonic clock, the
   * observation's wall time as the start's plus that latency. */
  int64_t now = mono_ms();
  chk_obs o;
  obs_of(&s->task, &o, s->start_wall_ms + (now - s->started_ms));
  const chk_probe_result *r = &s->probe.res;
  o.status = r->status;
  o.reason = r->reason;
  o.latency_ms = now - s->started_ms;
  if (r->status == CHK_OK && s->task.tier == CHK_TIER_EGRESS) {
    memcpy(o.egress_ip, r->echo.egress_ip, sizeof(o.egress_ip));
    o.anonymity = r->echo.anonymity;
  }
  int wait_echo = echo_decides(&s->task, &o);
  slot_release(s);
  m->running--;
  if (wait_echo)
    echo_failed(m, &o, now);
  else
    finish_obs(m, &o, now);
}

static void on_slot_io(ph_io *io, int fd, int revents, void *arg);

/* The probe asked for ev (0: it ended). */
static void slot_wait(slot *s, int ev) {
  if (!ev) {
    slot_done(s);
    return;
  }
  int want = (ev & CHK_EV_READ ? PH_READ : 0) |
             (ev & CHK_EV_WRITE ? PH_WRITE : 0);
  if (!s->io) {
    s->io = api->io_new(s->m->ctx, s->probe.fd, want, on_slot_io, s);
    if (!s->io) {
      chk_probe_end(&s->probe);
      s->probe.res.status = CHK_CHECKER_ERROR;
      s->probe.res.reason = CHK_R_NO_RESOURCES;
      slot_done(s);
      return;
    }
  } else if (want != s->events) {
    api->io_set(s->io, want);
  }
  s->events = want;
}

static void on_slot_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  slot *s = arg;
  int ev = (revents & PH_READ ? CHK_EV_READ : 0) |
           (revents & PH_WRITE ? CHK_EV_WRITE : 0);
  slot_wait(s, chk_probe_io(&s->probe, ev));
}

/* The deadline's last look (chk_late.h): what the probe waits for, ready
 * on its socket and not yet read (the loop was late), is read first. 1:
 * the probe ended on it (its own result); 0: nothing was ready; -1: the
 * answer moved the probe on a step that the checker had yet to take. */
static int last_look(slot *s) {
  if (!s->io || !s->events)
    return 0;
  int want = (s->events & PH_READ ? CHK_EV_READ : 0) |
             (s->events & PH_WRITE ? CHK_EV_WRITE : 0);
  int ev = chk_late_ready(s->probe.fd, want);
  if (!ev)
    return 0;
  return chk_probe_io(&s->probe, ev) ? -1 : 1;
}

static void on_slot_timer(ph_timer *t, void *arg) {
  (void)t;
  slot *s = arg;
  if (!s->used)
    return;
  int look = last_look(s);
  if (look > 0) {
    slot_done(s);
    return;
  }
  chk_probe_timeout(&s->probe);
  if (look < 0 && s->probe.res.status == CHK_TIMEOUT) {
    /* the proxy answered; the checker was the one waited on */
    s->probe.res.status = CHK_CHECKER_ERROR;
    s->probe.res.reason = CHK_R_LOOP_LATE;
  }
  /* Served less than task.min_budget (the loop late to end it): the
   * checker's lateness, not the proxy's (chk_budget.h). */
  if (s != &s->m->echo && s->probe.res.status == CHK_TIMEOUT &&
      chk_budget_short(s->start_wall_ms, s->budget_ms, wall_ms(),
                       s->m->conf.task_min_ms)) {
    s->probe.res.status = CHK_CHECKER_ERROR;
    s->probe.res.reason = CHK_R_SHORT_BUDGET;
  }
  slot_done(s);
}

/* The connector answered s's dial. */
static void on_dialed(void *arg, const ph_open_result *res) {
  slot *s = arg;
  s->open_id = 0;
  if (res->code == PH_OPEN_OK && res->fd >= 0) {
    slot_wait(s, chk_probe_connected(&s->probe, res->fd));
    return;
  }
  if (res->stream) /* never asked for (no PH_OPEN_F_STREAM) */
    ph_stream_close(res->stream);
  int status, reason;
  if (res->code == PH_OPEN_OK)
    chk_dial_verdict(PH_STAGE_NONE, PH_OPEN_INTERNAL_ERROR, 0, &status,
                     &reason);
  else
    chk_dial_verdict(res->stage, res->code, res->retryable, &status,
                     &reason);
  chk_probe_fail(&s->probe, status, reason);
  slot_done(s);
}

/* The probe planned, its proxy (or the echo) dialled by the connector:
 * names resolved by it, under its target policy (chk_dial.h). */
static void slot_dial(slot *s, const chk_probe_spec *spec) {
  checker *m = s->m;
  const char *host = NULL;
  uint16_t port = 0;
  if (!chk_probe_prepare(&s->probe, spec, &host, &port)) {
    slot_done(s);
    return;
  }
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = port,
                        .host = host};
  int64_t id = m->up->open(m->up_self, &rq, on_dialed, s);
  if (id < 0) {
    chk_probe_fail(&s->probe, id == PH_EINVAL ? CHK_FAILED
                                              : CHK_CHECKER_ERROR,
                   id == PH_EINVAL ? CHK_R_BAD_TASK : CHK_R_NO_RESOURCES);
    slot_done(s);
    return;
  }
  s->open_id = id;
}

/* Starts s's probe with spec; the timer at deadline_ms (Unix ms); mono
 * and wall: the clocks now (task_clock). */
static void slot_start(slot *s, const chk_probe_spec *spec,
                       int64_t deadline_ms, int64_t mono, int64_t wall) {
  checker *m = s->m;
  s->used = 1;
  s->started_ms = mono;
  s->start_wall_ms = wall;
  int64_t left = deadline_ms - s->start_wall_ms;
  if (left > m->conf.task_max_ms)
    left = m->conf.task_max_ms;
  if (left < 1)
    left = 1;
  s->budget_ms = left;
  api->timer_set(s->timer, (uint64_t)left, 0);
  if (m->up)
    slot_dial(s, spec);
  else
    slot_wait(s, chk_probe_start(&s->probe, spec));
}

static void echo_probe_start(checker *m) {
  if (m->echo.used || m->stopping || !m->echo_url[0])
    return;
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1)
    return;
  for (int i = 0; i < 16; i++)
    snprintf(m->echo_nonce + 2 * i, 3, "%02x", b[i]);
  chk_probe_spec spec = {0};
  spec.tier = CHK_TIER_EGRESS;
  spec.protocol = 0; /* direct */
  spec.echo_url = m->echo_url;
  spec.nonce = m->echo_nonce;
  spec.resp_max = m->conf.response_max;
  int64_t wall = wall_ms();
  m->echo_started_ms = mono_ms();
  slot_start(&m->echo, &spec, wall + m->conf.task_max_ms,
             m->echo_started_ms, wall);
}

static void on_echo_timer(ph_timer *t, void *arg) {
  (void)t;
  echo_probe_start(arg);
}

/* The clocks for the tasks of one stream message: read once per
 * TASK_CLOCK_USES tasks, not per task (a message carries up to
 * task_batch.max; starting 16 checks takes well under a millisecond, the
 * clocks' unit here). Outside a message (clk_left 0) read each time. */
#define TASK_CLOCK_USES 16u
static void task_clock(checker *m, int64_t *mono, int64_t *wall) {
  if (!m->clk_left) {
    m->clk_mono = mono_ms();
    m->clk_wall = wall_ms();
    m->clk_left = m->in_message ? TASK_CLOCK_USES : 1;
  }
  m->clk_left--;
  *mono = m->clk_mono;
  *wall = m->clk_wall;
}

static void refuse(checker *m, const chk_task *t, int status, int reason,
                   int which) {
  api->inc(m->m_refused[which], 1);
  int64_t mono, wall;
  task_clock(m, &mono, &wall);
  chk_obs o;
  obs_of(t, &o, wall);
  o.status = status;
  o.reason = reason;
  finish_obs(m, &o, mono);
}

/* Where the next task is read: the slot run_task will take. */
static slot *next_free(checker *m) {
  return m->n_free ? &m->slots[m->free_ix[m->n_free - 1]] : NULL;
}

static chk_task *task_dst(void *arg) {
  slot *s = next_free(arg);
  return s ? &s->task : NULL;
}

/* One task of a stream message (chk_read_tasks_into's callback): t is
 * next_free's task when a slot was free (read in place), else the
 * reader's. */
static void run_task(void *arg, int rc, chk_task *tp, const char *why) {
  checker *m = arg;
  chk_task *t = tp;
  slot *s = next_free(m);
  if (rc != PH_OK) {
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "check task not run",
              PH_STR("reason", why ? why : "no memory"));
    if (t->task_id[0])
      refuse(m, t, CHK_CHECKER_ERROR, CHK_R_BAD_TASK, REF_BAD);
    else
      api->inc(m->m_refused[REF_BAD], 1);
    return;
  }
  if (!s) {
    refuse(m, t, CHK_CHECKER_ERROR, CHK_R_NO_RESOURCES, REF_BUSY);
    chk_task_wipe(t);
    return;
  }
  /* Too little left to judge the proxy (chk_budget.h): the controller's
   * or the checker's lateness, never a verdict. */
  /* The check must end task.report_margin before the deadline: its
   * result, a timeout too, has to reach the controller in time or it is
   * dropped as late and a silent proxy is never found out. */
  int64_t mono, wall;
  task_clock(m, &mono, &wall);
  int late = chk_budget_admit(t->deadline_ms - m->conf.report_margin_ms,
                              wall, m->conf.task_min_ms);
  if (late != CHK_R_NONE) {
    refuse(m, t, CHK_CHECKER_ERROR, late, REF_LATE);
    chk_task_wipe(t);
    return;
  }
  if (t->echo_url[0] && strcmp(t->echo_url, m->echo_url)) {
    chk_url u;
    /* The echo endpoint the checker probes directly: the tasks' one. */
    if (!chk_url_parse(t->echo_url, &u) &&
        (m->up || chk_is_literal(u.host))) {
      snprintf(m->echo_url, sizeof(m->echo_url), "%s", t->echo_url);
      m->echo_up = -1;
      api->gauge_set(m->m_echo_up, -1);
      echo_probe_start(m);
    }
  }
  m->n_free--; /* s, off the stack (slot_release puts it back) */
  if (t != &s->task)
    s->task = *t; /* the credentials move into the slot */
  m->running++;
  s->own[0] = m->echo_seen;
  chk_probe_spec spec = {0};
  spec.tier = s->task.tier;
  spec.protocol = s->task.protocol;
  spec.proxy_host = s->task.host;
  spec.proxy_port = s->task.port;
  spec.user = s->task.user;
  spec.user_len = s->task.user_len;
  spec.pass = s->task.pass;
  spec.pass_len = s->task.pass_len;
  spec.target = s->task.target;
  spec.echo_url = s->task.echo_url[0] ? s->task.echo_url : m->echo_url;
  spec.nonce = s->task.nonce;
  spec.own = s->own;
  spec.n_own = m->echo_seen[0] ? 1 : 0;
  spec.resp_max = m->conf.response_max;
  slot_start(s, &spec, s->task.deadline_ms - m->conf.report_margin_ms, mono,
             wall);
}

/* Every check ends without an observation (the session ended: the
 * controller re-issues what it did not get; the module stops). */
static void abort_checks(checker *m) {
  for (uint32_t i = 0; i < m->conf.max_concurrency; i++)
    if (m->slots[i].used) {
      slot_release(&m->slots[i]);
      m->running--;
    }
  api->gauge_set(m->m_running, m->running);
}

/* ---- reports ------------------------------------------------------------ */

static void arm_flush(checker *m) {
  if (m->stopping)
    return;
  m->flush_armed = 1;
  int64_t now = api->now_ms(m->ctx);
  int64_t at = now + m->conf.flush_ms;
  if (m->rep_retry_at > at)
    at = m->rep_retry_at;
  api->timer_set(m->flush_timer, (uint64_t)(at - now), 0);
}

static void report_done(void *arg, cp_grpc_ccall *call, int status,
                        const char *msg);

static void report_message(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                           size_t len) {
  checker *m = arg;
  uint64_t acked = 0;
  if (call == m->c_rep && chk_read_obs_ack(msg, len, &acked) == PH_OK)
    chk_report_ack(&m->rep, acked);
}

static void report_sent(void *arg, cp_grpc_ccall *call) {
  (void)arg;
  cp_grpc_ccall_close_send(call);
}

static void new_session(checker *m, int immediate);

static void report_done(void *arg, cp_grpc_ccall *call, int status,
                        const char *msg) {
  checker *m = arg;
  if (call != m->c_rep || m->stopping)
    return;
  m->c_rep = NULL;
  count_rpc(m, RPC_REPORT, status);
  api->observe(m->m_report_seconds,
               (double)(api->now_ms(m->ctx) - m->rep_started_ms) / 1000.0);
  or_status_class k = or_status_classify(status);
  if (k == OR_DONE && !m->rep.packed.data) {
    m->rep_attempt = 0;
    m->rep_retry_at = 0;
    metrics_flush(m);
    if (m->rep.len)
      send_reports(m);
    return;
  }
  if (k == OR_FENCE) {
    PH_LOG(api, m->ctx, PH_LOG_WARN,
           "controller refused the observation batch; a new session follows",
           PH_STR("status", status_name(status)),
           PH_STR("message", msg ? msg : ""));
    new_session(m, 1);
    return;
  }
  /* Transient (or OK without the acknowledgement): the same bytes later. */
  uint32_t d = ph_backoff_ms(m->rep_attempt++, m->conf.backoff_min_ms,
                             m->conf.backoff_max_ms, rnd32());
  m->rep_retry_at = api->now_ms(m->ctx) + d;
  PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "observation report failed; retrying",
            PH_STR("status", status_name(status)), PH_INT("retry_in_ms", d));
  arm_flush(m);
}

static void send_reports(checker *m) {
  metrics_flush(m);
  if (m->state != S_WATCHING || m->c_rep || m->stopping)
    return;
  if (m->rep_retry_at && api->now_ms(m->ctx) < m->rep_retry_at)
    return;
  const cp_buf *b = NULL;
  int r = chk_report_next(&m->rep, m->conf.ident.id, m->session, &b);
  if (r <= 0) {
    if (r < 0)
      arm_flush(m);
    return;
  }
  cp_grpc_ccall_cbs cbs = {report_message, report_sent, report_done, NULL};
  m->rep_started_ms = api->now_ms(m->ctx);
  m->c_rep = cp_grpc_ccall_start(m->ch, SVC "ReportObservations",
                                 CP_RPC_CLIENT_STREAM, m->conf.rpc_timeout_ms,
                                 NULL, 0, &cbs, m);
  if (!m->c_rep || cp_grpc_ccall_send(m->c_rep, b->data, b->len) != PH_OK) {
    if (m->c_rep) {
      cp_grpc_ccall *c = m->c_rep;
      m->c_rep = NULL;
      cp_grpc_ccall_cancel(c);
    }
    arm_flush(m);
  }
}

static void on_flush(ph_timer *t, void *arg) {
  (void)t;
  checker *m = arg;
  m->flush_armed = 0;
  send_reports(m);
  if (m->rep.len || m->rep.packed.data)
    arm_flush(m);
}

/* ---- the session -------------------------------------------------------- */

static void cancel_calls(checker *m) {
  cp_grpc_ccall **calls[] = {&m->c_reg, &m->c_watch, &m->c_rep};
  for (size_t i = 0; i < 3; i++)
    if (*calls[i]) {
      cp_grpc_ccall *c = *calls[i];
      *calls[i] = NULL;
      cp_grpc_ccall_cancel(c);
    }
  m->gen++;
}

/* The session ended: the checks it gave stop (their tasks go to others),
 * the batch in flight waits for the next session. */
static void new_session(checker *m, int immediate) {
  cancel_calls(m);
  abort_checks(m);
  chk_report_session(&m->rep);
  m->rep_retry_at = 0;
  m->rep_attempt = 0;
  m->session[0] = 0;
  if (m->stopping)
    return;
  if (immediate && m->attempt == 0) {
    m->attempt++;
    do_register(m);
    return;
  }
  uint32_t d = ph_backoff_ms(m->attempt++, m->conf.backoff_min_ms,
                             m->conf.backoff_max_ms, rnd32());
  set_state(m, S_BACKOFF);
  PH_LOG_RL(api, m->ctx, PH_LOG_INFO, "checker session ended",
            PH_INT("retry_in_ms", d));
  api->timer_set(m->timer, d, 0);
}

static void on_backoff(ph_timer *t, void *arg) {
  (void)t;
  checker *m = arg;
  if (m->state == S_BACKOFF && !m->stopping)
    do_register(m);
}

static void watch_message(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                          size_t len) {
  checker *m = arg;
  if (call != m->c_watch || m->stopping)
    return;
  m->attempt = 0; /* the session works */
  api->inc(m->m_task_msgs, 1);
  m->in_message = 1;
  m->clk_left = 0;
  (void)chk_read_tasks_into(msg, len, m->conf.task_batch_max, task_dst,
                            run_task, m);
  m->in_message = 0;
  m->clk_left = 0;
}

static void watch_done(void *arg, cp_grpc_ccall *call, int status,
                       const char *msg) {
  checker *m = arg;
  if (call != m->c_watch || m->stopping)
    return;
  m->c_watch = NULL;
  count_rpc(m, RPC_WATCH, status);
  int stale = status == CP_GRPC_FAILED_PRECONDITION ||
              status == CP_GRPC_NOT_FOUND;
  PH_LOG_RL(api, m->ctx, stale ? PH_LOG_INFO : PH_LOG_WARN,
            stale ? "check task stream refused: stale session, registering "
                    "again"
                  : "check task stream ended",
            PH_STR("status", status_name(status)),
            PH_STR("message", msg ? msg : ""));
  new_session(m, stale);
}

static void do_watch(checker *m) {
  cp_buf b = {0};
  if (chk_pack_watch(m->conf.ident.id, m->session,
                     m->conf.task_batch_max, &b) != PH_OK) {
    new_session(m, 0);
    return;
  }
  cp_grpc_ccall_cbs cbs = {watch_message, NULL, watch_done, NULL};
  m->c_watch = cp_grpc_ccall_start(m->ch, SVC "WatchCheckTasks",
                                   CP_RPC_SERVER_STREAM, 0, b.data, b.len,
                                   &cbs, m);
  cp_buf_free(&b);
  if (!m->c_watch) {
    new_session(m, 0);
    return;
  }
  set_state(m, S_WATCHING);
  send_reports(m);
}

static void register_done(void *arg, cp_grpc_ccall *call, int status,
                          const char *msg) {
  cp_unary *u = arg;
  checker *m = u->owner;
  if (call != m->c_reg || m->stopping)
    goto out;
  m->c_reg = NULL;
  count_rpc(m, RPC_REGISTER, status);
  const char *why = NULL;
  int64_t ttl = 0;
  if (status != CP_GRPC_OK ||
      chk_read_registered(u->resp, u->len, m->session, sizeof(m->session),
                          &ttl, &why) != PH_OK) {
    PH_LOG_RL(api, m->ctx,
              status == CP_GRPC_PERMISSION_DENIED ||
                      status == CP_GRPC_UNAUTHENTICATED ||
                      status == CP_GRPC_FAILED_PRECONDITION
                  ? PH_LOG_ERROR
                  : PH_LOG_WARN,
              "checker register failed", PH_STR("status", status_name(status)),
              PH_STR("reason", why ? why : (msg ? msg : "")));
    new_session(m, 0);
    goto out;
  }
  PH_LOG(api, m->ctx, PH_LOG_INFO, "checker registered",
         PH_INT("max_concurrency", m->conf.max_concurrency),
         PH_INT("session_ttl_ms", ttl));
  do_watch(m);
out:
  cp_unary_free(u);
}

static void do_register(checker *m) {
  cancel_calls(m);
  if (m->registrations++)
    api->inc(m->m_reconnects, 1);
  set_state(m, S_REGISTERING);
  cp_buf b = {0};
  if (chk_pack_register(m->conf.ident.cluster_id, m->conf.ident.id,
                        m->conf.ident.instance_id, m->conf.ident.zone,
                        m->conf.max_concurrency, m->conf.tiers,
                        m->conf.n_tiers, &b) != PH_OK) {
    new_session(m, 0);
    return;
  }
  m->c_reg = cp_unary_start(m->ch, SVC "RegisterChecker",
                            m->conf.rpc_timeout_ms, b.data, b.len,
                            register_done, m);
  cp_buf_free(&b);
  if (!m->c_reg)
    new_session(m, 0);
}

/* ---- lifecycle ---------------------------------------------------------- */

static int chk_check(ph_ctx *ctx, const ph_api *a, const char **key,
                     char *why, size_t whylen) {
  chk_conf c;
  int rc = chk_conf_read(ctx, a, &c, key, why, whylen);
  return rc == PH_OK ? chk_conf_check_connector(ctx, a, key, why, whylen)
                     : rc;
}

static int chk_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  checker *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  *state = m;
  m->ctx = ctx;
  const char *key = NULL;
  char why[256];
  if (chk_conf_read(ctx, a, &m->conf, &key, why, sizeof(why)) != PH_OK)
    return ph_conf_refused(api, ctx, "bad configuration", key, why);
  if (ph_metric_table_register(api, ctx, chk_metrics, m) != PH_OK)
    return PH_EINVAL;
  if (cp_client_tls_init(&m->tls, ctx, api, "checker") != PH_OK)
    return PH_EINVAL;
  if (chk_report_init(&m->rep, m->conf.queue_max, m->conf.batch_max) !=
      PH_OK)
    return PH_ENOMEM;
  m->slots = calloc(m->conf.max_concurrency, sizeof(*m->slots));
  m->free_ix = calloc(m->conf.max_concurrency, sizeof(*m->free_ix));
  m->held_cap = m->conf.max_concurrency;
  m->held = calloc(m->held_cap, sizeof(*m->held));
  m->timer = api->timer_new(ctx, on_backoff, m);
  m->flush_timer = api->timer_new(ctx, on_flush, m);
  m->echo_timer = api->timer_new(ctx, on_echo_timer, m);
  m->echo.m = m;
  m->echo.probe.fd = -1;
  m->echo.timer = api->timer_new(ctx, on_slot_timer, &m->echo);
  if (!m->slots || !m->free_ix || !m->held || !m->timer || !m->flush_timer ||
      !m->echo_timer || !m->echo.timer)
    return PH_ENOMEM;
  for (uint32_t i = 0; i < m->conf.max_concurrency; i++) {
    m->free_ix[m->n_free++] = m->conf.max_concurrency - 1 - i; /* 0 on top */
    m->slots[i].m = m;
    m->slots[i].probe.fd = -1;
    m->slots[i].timer = api->timer_new(ctx, on_slot_timer, &m->slots[i]);
    if (!m->slots[i].timer)
      return PH_ENOMEM;
  }
  memcpy(m->echo_url, m->conf.echo_url, sizeof(m->echo_url));
  m->echo_up = -1;
  api->gauge_set(m->m_echo_up, -1);
  api->gauge_set(m->m_max_running, (double)m->conf.max_concurrency);
  m->st.session = m->session;
  m->st.running = &m->running;
  m->st.max_concurrency = m->conf.max_concurrency;
  return chk_status_register(api, ctx, &m->st);
}

static int chk_start(void *state) {
  checker *m = state;
  set_state(m, S_IDLE);
  if (m->conf.connector[0]) {
    m->up = api->service_get_named(m->ctx, PH_CONNECTOR_SERVICE,
                                   m->conf.connector, PH_CONNECTOR_MAJOR, 0,
                                   &m->up_self);
    if (!m->up) {
      PH_LOG(api, m->ctx, PH_LOG_ERROR,
             "checker: its connector is not there (check [checker] "
             "connector and [proxyhost] modules)",
             PH_STR("provider", m->conf.connector));
      return PH_ENOENT;
    }
  }
  cp_grpc_client_cfg cfg;
  cp_grpc_conf_client(m->ctx, api, "address", &cfg);
  cfg.reconnect_min_ms = m->conf.backoff_min_ms;
  cfg.reconnect_max_ms = m->conf.backoff_max_ms;
  int rc = cp_client_tls_open(&m->tls, &m->cq, &m->ch, &cfg);
  if (rc != PH_OK)
    return rc;
  m->started = 1;
  api->timer_set(m->echo_timer, (uint64_t)m->conf.echo_interval_ms,
                 (uint64_t)m->conf.echo_interval_ms);
  echo_probe_start(m);
  do_register(m);
  return PH_OK;
}

static int chk_stop(void *state) {
  checker *m = state;
  m->stopping = 1;
  if (m->started) {
    cancel_calls(m);
    abort_checks(m);
    if (m->echo.used)
      slot_release(&m->echo);
  }
  metrics_flush(m);
  api->timer_set(m->timer, 0, 0);
  api->timer_set(m->flush_timer, 0, 0);
  api->timer_set(m->echo_timer, 0, 0);
  api->set_ready(m->ctx, 0);
  cp_client_tls_close(&m->tls, &m->cq, &m->ch);
  return PH_OK;
}

static void chk_destroy(void *state) {
  checker *m = state;
  if (!m)
    return;
  m->stopping = 1;
  m->up = NULL; /* stop cancelled every dial; the connector may be gone */
  cp_client_tls_close(&m->tls, &m->cq, &m->ch);
  if (m->slots) {
    for (uint32_t i = 0; i < m->conf.max_concurrency; i++) {
      slot_release(&m->slots[i]);
      if (m->slots[i].timer)
        api->timer_free(m->slots[i].timer);
    }
  }
  slot_release(&m->echo);
  ph_timer *timers[] = {m->timer, m->flush_timer, m->echo_timer,
                        m->echo.timer};
  for (size_t i = 0; i < 4; i++)
    if (timers[i])
      api->timer_free(timers[i]);
  free(m->slots);
  free(m->free_ix);
  free(m->held);
  chk_report_free(&m->rep);
  OPENSSL_cleanse(m, sizeof(*m));
  free(m);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("checker", "1.0.0"),
    .description = "checker: runs the controller's health checks of the "
                   "pool's proxies (BASIC, EGRESS, TARGET) and reports what "
                   "it saw",
    .config = chk_conf_keys,
    .init = chk_init,
    .start = chk_start,
    .stop = chk_stop,
    .destroy = chk_destroy,
    .check = chk_check,
};

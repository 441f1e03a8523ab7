/* SPDX-License-Identifier: BSD-2-Clause */
/* outcome_reporter: the gateway's outcome queue and its ReportOutcomes
 * calls (issue 12; the 000 design's section 5, CP-1-29..33, CP-5-1..18).
 * It provides "outcome.sink" (<proxyhost/outcome_sink.h>): record() pushes
 * into a bounded ring (cp_outcomes.h) and never blocks. A timer, while
 * controlplane_client's session runs ("cp.session", cp_session.h):
 *  - on a new session generation starts the queue's numbering again
 *    (cp_outq_session: batches from sequence 1, CP-5-18);
 *  - cuts batches (full ones, and on the flush interval a partial one);
 *  - sends at most 16 of the oldest unacknowledged batches in one call
 *    (CP-5-9), one call at a time, and frees what the answer
 *    acknowledges; what is not acknowledged goes again, the same bytes
 *    under the same sequence (CP-5-15);
 *  - retries a transient failure in the same session after a jittered,
 *    capped backoff (CP-5-16), and hands a fence's refusal to the
 *    session's supervisor (CP-5-17), logged once per session with its
 *    status, never with the batch.
 * docs/user-guide/gateway.md "The outcome queue". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include <proxyhost/module.h>
#include <proxyhost/outcome_sink.h>

#include "lib/backoff.h"
#include "lib/conf_values.h"
#include "cp_common/view/cp_outcomes.h"
#include "contracts/cp_session.h"
#include "contracts/cp_status.h"
#include "lib/metric_table.h"
#include "cp_common/view/or_status.h"

_Static_assert((int)PH_OUTCOME_STAGE_TUNNEL ==
                   (int)CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL,
               "the SDK's stages are the protocol's numbers");
_Static_assert((int)PH_OUTCOME_TIMEOUT ==
                   (int)CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT,
               "the SDK's results are the protocol's numbers");
_Static_assert(PH_OUTCOME_ID_MAX == PH_POOL_ID_MAX, "one id bound");

static const char *const status_names[] = {CP_GRPC_STATUS_NAMES, NULL};
#define N_STATUS CP_GRPC_STATUS_COUNT
static const char *const drop_names[] = {"full", "session", "invalid", NULL};
enum { DROP_FULL, DROP_SESSION, DROP_INVALID, N_DROP };

static const char *status_name(int s) {
  return status_names[s >= 0 && s < N_STATUS ? s : CP_GRPC_UNKNOWN];
}

typedef struct orep {
  ph_ctx *ctx;
  cp_outq q;
  uint32_t flush_ms, backoff_min_ms, backoff_max_ms;
  int64_t call_timeout_ms;
  const cp_session_v1 *sess;
  void *sess_self;
  ph_timer *timer;
  /* The session the queue numbers for (0: none yet), its ids. */
  uint64_t gen;
  char worker[PH_POOL_ID_MAX + 1], session[PH_POOL_ID_MAX + 1];
  uint64_t fenced_gen;   /* a fence refused in this session: wait */
  uint64_t max_sent_seq; /* a batch at or below it again is a resend */
  int64_t call;          /* the call in flight (0: none) */
  uint32_t call_n;       /* its batches */
  uint32_t attempt;      /* transient failures in a row */
  int64_t retry_at;      /* monotonic ms; 0: no wait */
  int64_t next_flush;    /* monotonic ms of the next partial cut */
  uint64_t dropped_session_seen;
  uint8_t *pack;         /* the packed batches of one call */
  size_t pack_cap;
  int stopping;
  ph_series *m_recorded, *m_dropped[N_DROP], *m_sent, *m_acked, *m_resent,
      *m_calls[N_STATUS], *m_depth;
} orep;

static const ph_api *api;

/* The key table, generated from outcome_reporter.ini.sample (its "; type:"
 * lines) by tools/gen_conf_keys.awk into outcome_reporter_keys.c.
 * queue_capacity's bounds there are CP_OUTQ_CAPACITY_MIN..MAX, which
 * cp_outq_init checks again: a sample that allows more fails the start,
 * closed. */
extern const ph_conf_key or_keys[];

/* ---- metrics ------------------------------------------------------------ */

static const ph_label_def drop_label[] = {{"reason", drop_names}};
static const ph_label_def status_label[] = {{"status", status_names}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table or_metrics[] = {
    PH_METRIC("proxyhost_outcome_reporter_recorded_total", PH_METRIC_COUNTER,
              "outcomes taken into the queue", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, orep, m_recorded),
    PH_METRIC("proxyhost_outcome_reporter_dropped_total", PH_METRIC_COUNTER,
              "outcomes dropped: queue full, sent in a session "
              "that ended unacknowledged, malformed",
              PH_METRIC_LABELS(drop_label), PH_METRIC_NO_BUCKETS, orep,
              m_dropped),
    PH_METRIC("proxyhost_outcome_reporter_batches_sent_total",
              PH_METRIC_COUNTER,
              "batches handed to a ReportOutcomes call, resends "
              "included",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, orep, m_sent),
    PH_METRIC("proxyhost_outcome_reporter_batches_acknowledged_total",
              PH_METRIC_COUNTER, "batches the controller acknowledged (freed)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, orep, m_acked),
    PH_METRIC("proxyhost_outcome_reporter_batches_resent_total",
              PH_METRIC_COUNTER, "batches sent again, the same bytes (CP-5-15)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, orep, m_resent),
    PH_METRIC("proxyhost_outcome_reporter_calls_total", PH_METRIC_COUNTER,
              "ReportOutcomes calls by final gRPC status",
              PH_METRIC_LABELS(status_label), PH_METRIC_NO_BUCKETS, orep,
              m_calls),
    PH_METRIC("proxyhost_outcome_reporter_queue_depth", PH_METRIC_GAUGE,
              "outcomes held: queued or in unacknowledged "
              "batches",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, orep, m_depth),
    PH_METRIC_END};

static int register_metrics(orep *m) {
  return ph_metric_table_register(api, m->ctx, or_metrics, m);
}

static void update_depth(orep *m) {
  cp_outq_stats st;
  cp_outq_stats_get(&m->q, &st);
  api->gauge_set(m->m_depth, (double)(st.queued + st.in_batches));
  if (st.dropped_session > m->dropped_session_seen) {
    api->inc(m->m_dropped[DROP_SESSION],
             st.dropped_session - m->dropped_session_seen);
    m->dropped_session_seen = st.dropped_session;
  }
}

/* ---- outcome.sink --------------------------------------------------------- */

static int sink_record(void *self, const ph_outcome *o) {
  orep *m = self;
  /* cp_outq_push checks the ids, stage, result and latency; a timestamp
   * the controller would refuse (INVALID_ARGUMENT, the whole session's
   * fence) is refused here. */
  if (!o || o->observed_at_ms <= 0) {
    api->inc(m->m_dropped[DROP_INVALID], 1);
    return PH_EINVAL;
  }
  cp_outcome_in in = {o->proxy_index, o->proxy_id,   o->rule_id,
                      o->stage,       o->result,     o->latency_us,
                      o->observed_at_ms};
  int rc = cp_outq_push(&m->q, &in);
  if (rc == PH_OK)
    api->inc(m->m_recorded, 1);
  else
    api->inc(m->m_dropped[rc == PH_EFULL ? DROP_FULL : DROP_INVALID], 1);
  return rc;
}

static const ph_outcome_sink_v1 sink_service = {sink_record};

/* ---- the calls ------------------------------------------------------------ */

static void arm(orep *m);
static void send_ready(orep *m);

static uint32_t jitter(void) {
  uint32_t v = UINT32_MAX;
  if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
    v = UINT32_MAX; /* no jitter: the top of the range */
  return v;
}

static void retry_later(orep *m) {
  uint32_t d = ph_backoff_ms(m->attempt, m->backoff_min_ms, m->backoff_max_ms,
                             jitter());
  if (m->attempt < 31)
    m->attempt++;
  m->retry_at = api->now_ms(m->ctx) + d;
}

static void call_done(void *arg, int status, uint64_t acked) {
  orep *m = arg;
  uint32_t n = m->call_n;
  m->call = 0;
  m->call_n = 0;
  if (m->stopping)
    return;
  api->inc(m->m_calls[status >= 0 && status < N_STATUS ? status
                                                        : CP_GRPC_UNKNOWN],
           1);
  or_status_class k = or_status_classify(status);
  if (k == OR_DONE) {
    int freed = cp_outq_ack(&m->q, acked);
    if (freed < 0) {
      /* A sequence this session never cut: the controller and the queue
       * disagree; only a new session can set that right. */
      status = CP_GRPC_INTERNAL;
      k = OR_FENCE;
    } else {
      api->inc(m->m_acked, (uint64_t)freed);
      if ((uint32_t)freed >= n) {
        m->attempt = 0;
        m->retry_at = 0;
        /* More waiting: the next call at once. */
        cp_outq_cut(&m->q, 0);
        send_ready(m);
      } else {
        retry_later(m); /* no progress on some: the backoff paces it */
      }
    }
  } else if (k == OR_RETRY) {
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "outcome report failed; retrying",
              PH_STR("status", status_name(status)));
    retry_later(m);
  }
  if (k == OR_FENCE && m->fenced_gen != m->gen) {
    m->fenced_gen = m->gen;
    PH_LOG(api, m->ctx, PH_LOG_WARN,
           "controller refused the session's outcome batches; a new session "
           "follows",
           PH_STR("status", status_name(status)));
    m->sess->fence_failed(m->sess_self, m->gen, status);
  }
  update_depth(m);
  arm(m);
}

static int grow_pack(orep *m, size_t need) {
  if (need <= m->pack_cap)
    return PH_OK;
  uint8_t *p = realloc(m->pack, need);
  if (!p)
    return PH_ENOMEM;
  m->pack = p;
  m->pack_cap = need;
  return PH_OK;
}

/* The oldest unacknowledged batches (at most 16) in one call. */
static void send_ready(orep *m) {
  if (m->call || m->fenced_gen == m->gen || !m->gen)
    return;
  const cp_outbatch *b[CP_OUTQ_BATCHES_PER_CALL];
  uint32_t n = cp_outq_ready(&m->q, b, CP_OUTQ_BATCHES_PER_CALL);
  if (!n)
    return;
  size_t len[CP_OUTQ_BATCHES_PER_CALL], total = 0;
  for (uint32_t i = 0; i < n; i++) {
    len[i] = cp_outq_packed_size(&m->q, b[i], m->worker, m->session);
    total += len[i];
  }
  if (grow_pack(m, total) != PH_OK) {
    retry_later(m);
    return;
  }
  const uint8_t *msgs[CP_OUTQ_BATCHES_PER_CALL];
  size_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    cp_outq_pack(&m->q, b[i], m->worker, m->session, m->pack + off);
    msgs[i] = m->pack + off;
    off += len[i];
    if (b[i]->sequence <= m->max_sent_seq)
      api->inc(m->m_resent, 1);
    else
      m->max_sent_seq = b[i]->sequence;
  }
  api->inc(m->m_sent, n);
  int64_t id = m->sess->report_outcomes(m->sess_self, m->gen, msgs, len, n,
                                        m->call_timeout_ms, call_done, m);
  if (id < 0) {
    /* PH_ESTATE: the session ended; the timer sees the next one. Else a
     * local shortage: the backoff paces the next try. */
    if (id != PH_ESTATE)
      retry_later(m);
    return;
  }
  m->call = id;
  m->call_n = n;
}

/* ---- the timer -------------------------------------------------------------- */

static void arm(orep *m) {
  if (m->stopping)
    return;
  int64_t now = api->now_ms(m->ctx);
  int64_t at = m->next_flush;
  if (m->retry_at && m->retry_at < at && !m->call)
    at = m->retry_at;
  api->timer_set(m->timer, at > now ? (uint64_t)(at - now) : 1, 0);
}

/* A session the queue does not number for yet. */
static void new_session(orep *m, const cp_session_info *si) {
  if (m->call) {
    m->sess->cancel(m->sess_self, m->call); /* no callback */
    m->call = 0;
    m->call_n = 0;
  }
  if (cp_outq_session(&m->q, si->max_runtime_counters) != PH_OK) {
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN,
              "session without max_runtime_counters: no outcome batches");
    return;
  }
  m->gen = si->generation;
  memcpy(m->worker, si->worker_id, sizeof(m->worker));
  memcpy(m->session, si->session_id, sizeof(m->session));
  m->max_sent_seq = 0;
  m->attempt = 0;
  m->retry_at = 0;
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  orep *m = arg;
  int64_t now = api->now_ms(m->ctx);
  int partial = 0;
  if (now >= m->next_flush) {
    partial = 1;
    m->next_flush = now + m->flush_ms;
  }
  cp_session_info si;
  m->sess->current(m->sess_self, &si);
  if (si.running && si.generation && si.generation != m->gen)
    new_session(m, &si);
  if (si.running && si.generation == m->gen && m->gen && !m->call &&
      (!m->retry_at || now >= m->retry_at)) {
    m->retry_at = 0;
    cp_outq_cut(&m->q, partial);
    send_ready(m);
  }
  update_depth(m);
  arm(m);
}

/* ---- lifecycle -------------------------------------------------------------- */

static int or_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                    size_t whylen) {
  static const ph_conf_order order = {"backoff.min", "backoff.max",
                                      "backoff.min",
                                      "must not exceed backoff.max"};
  return ph_conf_orders(ctx, a, &order, 1, key, why, whylen);
}

static int or_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  orep *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  *state = m;
  m->ctx = ctx;
  m->flush_ms = (uint32_t)a->conf_int(ctx, "flush_interval");
  m->call_timeout_ms = a->conf_int(ctx, "call_timeout");
  m->backoff_min_ms = (uint32_t)a->conf_int(ctx, "backoff.min");
  m->backoff_max_ms = (uint32_t)a->conf_int(ctx, "backoff.max");
  int rc = cp_outq_init(&m->q, (uint32_t)a->conf_int(ctx, "queue_capacity"));
  if (rc != PH_OK)
    return rc;
  if (register_metrics(m) != PH_OK)
    return PH_EINVAL;
  m->timer = api->timer_new(ctx, on_timer, m);
  if (!m->timer)
    return PH_ENOMEM;
  return api->service_register(ctx, PH_OUTCOME_SINK_SERVICE,
                               PH_OUTCOME_SINK_MAJOR, PH_OUTCOME_SINK_MINOR,
                               &sink_service, m);
}

static int or_start(void *state) {
  orep *m = state;
  m->sess = api->service_get(m->ctx, CP_SESSION_SERVICE, CP_SESSION_MAJOR, 0,
                             &m->sess_self);
  if (!m->sess) {
    PH_LOG(api, m->ctx, PH_LOG_ERROR,
           "no cp.session: load controlplane_client with outcome_reporter");
    return PH_ENOENT;
  }
  m->next_flush = api->now_ms(m->ctx) + m->flush_ms;
  arm(m);
  return PH_OK;
}

static int or_stop(void *state) {
  orep *m = state;
  m->stopping = 1;
  api->timer_set(m->timer, 0, 0);
  if (m->call && m->sess)
    m->sess->cancel(m->sess_self, m->call);
  m->call = 0;
  return PH_OK;
}

static void or_destroy(void *state) {
  orep *m = state;
  if (!m)
    return;
  if (m->timer)
    api->timer_free(m->timer);
  cp_outq_free(&m->q);
  free(m->pack);
  free(m);
}

static const char *const provides[] = {PH_OUTCOME_SINK_SERVICE, NULL};
static const char *const requires[] = {CP_SESSION_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("outcome_reporter", "1.0.0"),
    .description = "gateway: bounded outcome queue reported to the controller",
    .provides = provides,
    .requires = requires,
    .config = or_keys,
    .init = or_init,
    .start = or_start,
    .stop = or_stop,
    .destroy = or_destroy,
    .check = or_check,
};

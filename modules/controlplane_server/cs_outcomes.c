/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ReportOutcomes: a client stream of at most CP_OUTCOME_BATCHES_PER_CALL
 * batches. Each is checked (the same worker and session as the first),
 * digested (cp_outcome_digest) and put through the authority's
 * (session, sequence, SHA-256) fence before the next is read; the
 * half-close answers the last acknowledged sequence. Each outcome of a
 * batch the fence accepts (not a replay) goes to the reducer as a passive
 * observation (cs_health_outcome); the outcomes themselves are not kept
 * (CP-1-31).
 */
#include <stdlib.h>
#include <string.h>

#include "cp_common/view/cp_outcomes.h"
#include "cs.h"
#include "cs_health.h"
#include "cs_unary.h"

#define api cs_api

typedef struct oc {
  cs_link link; /* first */
  cs *m;
  cp_grpc_call *call;
  int64_t start_ms, auth_call;
  uint32_t n; /* batches read */
  uint64_t acked;
  int any_acked;
  Controlplane__V1__ReportOutcomesRequest *first;
  /* the batch being fenced (first, or one to free once fenced) */
  Controlplane__V1__ReportOutcomesRequest *cur;
} oc;

static void drop_cur(oc *o) {
  if (o->cur && o->cur != o->first)
    controlplane__v1__report_outcomes_request__free_unpacked(o->cur, NULL);
  o->cur = NULL;
}

/* An accepted batch: each outcome to the reducer (passive health). */
static void feed(oc *o) {
  const Controlplane__V1__ReportOutcomesRequest *q = o->cur;
  for (size_t i = 0; q && i < q->n_outcomes; i++) {
    const Controlplane__V1__Outcome *x = q->outcomes[i];
    uint32_t ms = 0;
    if (x->latency && x->latency->seconds >= 0 &&
        x->latency->seconds < 4000000)
      ms = (uint32_t)(x->latency->seconds * 1000 +
                      x->latency->nanos / 1000000);
    cs_health_outcome(o->m, x->proxy_id, x->stage, x->result, ms);
  }
}

static void oc_free(oc *o) {
  cs_link_del(&o->link);
  drop_cur(o);
  if (o->first)
    controlplane__v1__report_outcomes_request__free_unpacked(o->first, NULL);
  free(o);
}

static void oc_end(oc *o, int status, const char *why) {
  if (status != CP_GRPC_OK) {
    cs_finish(o->m, o->call, CS_M_OUTCOMES, o->start_ms, status, why, NULL, 0);
    oc_free(o);
    return;
  }
  Controlplane__V1__ReportOutcomesResponse resp =
      CONTROLPLANE__V1__REPORT_OUTCOMES_RESPONSE__INIT;
  resp.acknowledged_sequence = o->acked;
  uint8_t buf[32];
  size_t n = controlplane__v1__report_outcomes_response__pack(&resp, buf);
  cs_finish(o->m, o->call, CS_M_OUTCOMES, o->start_ms, CP_GRPC_OK, NULL, buf,
            n);
  oc_free(o);
}

static void oc_abandon(cs_link *l) {
  oc *o = (oc *)l;
  if (o->auth_call > 0)
    o->m->auth->cancel(o->m->auth_self, o->auth_call);
  oc_free(o);
}

static void oc_cancel(void *arg, cp_grpc_call *call) {
  (void)call;
  oc_abandon(arg);
}

static void oc_recv(void *arg, cp_grpc_call *call, const uint8_t *msg,
                    size_t len);

static void oc_next(oc *o) {
  if (cp_grpc_call_recv(o->call, oc_recv, o) != PH_OK)
    oc_end(o, CP_GRPC_INTERNAL, "receive failed");
}

static void oc_fenced(void *arg, const cp_auth_reply *rep) {
  oc *o = arg;
  o->auth_call = 0;
  cs_note_auth(o->m, rep->result);
  if (rep->result != CP_AUTH_OK && rep->result != CP_AUTH_REPLAY) {
    oc_end(o, cp_auth_grpc_status(rep->result), cs_auth_why(rep->result));
    return;
  }
  if (rep->result == CP_AUTH_OK) /* a replay was counted the first time */
    feed(o);
  drop_cur(o);
  o->acked = rep->sequence;
  o->any_acked = 1;
  oc_next(o);
}

static void oc_recv(void *arg, cp_grpc_call *call, const uint8_t *msg,
                    size_t len) {
  oc *o = arg;
  cs *m = o->m;
  (void)call;
  if (!msg) { /* half-close */
    if (!o->n) {
      oc_end(o, CP_GRPC_INVALID_ARGUMENT, "no batch");
      return;
    }
    oc_end(o, CP_GRPC_OK, NULL);
    return;
  }
  o->n++;
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  int st = cs_peer(m, call, peer, &why);
  if (!st && o->n > CP_OUTCOME_BATCHES_PER_CALL) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "more than 16 batches in one call";
  }
  Controlplane__V1__ReportOutcomesRequest *q = NULL;
  if (!st)
    q = cp_request_unpack(&controlplane__v1__report_outcomes_request__descriptor,
                          msg, len, &st, &why);
  if (!st) {
    cp_caller c = {m->conf.mtls ? peer : NULL, m->conf.cluster_id};
    st = cp_check_outcomes(q, o->first, &c, m->conf.max_runtime_counters,
                           o->n, &why);
  }
  uint8_t digest[32];
  if (!st && cp_outcome_digest(q, digest) != 0) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "batch too large";
  }
  if (st) {
    if (q)
      controlplane__v1__report_outcomes_request__free_unpacked(q, NULL);
    oc_end(o, st, why);
    return;
  }
  int64_t id = m->auth->report_outcomes(m->auth_self, q->worker_id,
                                        q->session_id, q->sequence, digest,
                                        oc_fenced, o);
  if (!o->first)
    o->first = q;
  o->cur = q;
  if (id < 0) {
    oc_end(o, id == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT : CP_GRPC_UNAVAILABLE,
           id == PH_EINVAL ? "a field out of bounds" : "the authority is busy");
    return;
  }
  o->auth_call = id;
}

void cs_outcomes_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len) {
  cs *m = arg;
  (void)req;
  (void)len;
  int64_t start = api->now_ms(m->ctx);
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  int st = cs_peer(m, call, peer, &why);
  oc *o = NULL;
  if (!st && !(o = calloc(1, sizeof(*o)))) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "out of memory";
  }
  if (st) {
    cs_finish(m, call, CS_M_OUTCOMES, start, st, why, NULL, 0);
    return;
  }
  o->m = m;
  o->call = call;
  o->start_ms = start;
  cp_grpc_call_on_cancel(call, oc_cancel, o);
  cs_link_add(m, &o->link, oc_abandon);
  oc_next(o);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ReportOutcomes: a fenced client stream (cs_fenced.c) of at most
 * CP_OUTCOME_BATCHES_PER_CALL batches, each checked (cp_check_outcomes),
 * digested (cp_outcome_digest) and put through the authority's
 * (session, sequence, SHA-256) fence before the next is read; the
 * half-close answers the last acknowledged sequence. The outcomes
 * themselves are not kept (CP-1-31): each outcome of an accepted batch
 * (never a replay) goes to the reducer as passive health
 * (cs_health_outcome, issue 26), which keeps only aggregates in memory.
 */
#include "cp_common/view/cp_outcomes.h"
#include "cs_fenced.h"
#include "cs_health.h"

static int oc_check(cs *m, const void *q, const void *first,
                    const cp_caller *c, uint32_t n, const char **why) {
  return cp_check_outcomes(q, first, c, m->conf.max_runtime_counters, n, why);
}

static int oc_digest(const void *q, uint8_t out[32]) {
  return cp_outcome_digest(q, out);
}

static int64_t oc_fence(cs *m, const void *v, const uint8_t digest[32],
                        cp_auth_cb cb, void *arg) {
  const Controlplane__V1__ReportOutcomesRequest *q = v;
  return m->auth->report_outcomes(m->auth_self, q->worker_id, q->session_id,
                                  q->sequence, digest, cb, arg);
}

static void oc_apply(cs *m, const void *v, int64_t recv_ms) {
  const Controlplane__V1__ReportOutcomesRequest *q = v;
  (void)recv_ms;
  for (size_t i = 0; i < q->n_outcomes; i++) {
    const Controlplane__V1__Outcome *o = q->outcomes[i];
    int64_t ms = o->latency ? (int64_t)o->latency->seconds * 1000 +
                                  o->latency->nanos / 1000000
                            : 0;
    cs_health_outcome(m, o->proxy_id, (int)o->stage, (int)o->result,
                      ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms);
  }
}

static size_t oc_pack(uint64_t acked, uint8_t *buf) {
  Controlplane__V1__ReportOutcomesResponse resp =
      CONTROLPLANE__V1__REPORT_OUTCOMES_RESPONSE__INIT;
  resp.acknowledged_sequence = acked;
  return controlplane__v1__report_outcomes_response__pack(&resp, buf);
}

static const cs_fenced_kind outcomes = {
    CS_M_OUTCOMES, "worker",
    &controlplane__v1__report_outcomes_request__descriptor,
    oc_check, oc_digest, oc_fence, oc_apply, oc_pack};

void cs_outcomes_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len) {
  (void)req;
  (void)len;
  cs_fenced_rpc(arg, &outcomes, call);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ReportObservations (docs/api/controlplane.md#reportobservations, issue
 * 26, CP-6-2): the fenced client stream of ReportOutcomes (cs_fenced.c)
 * on the checker's session, with the same digest rule
 * (cp_observation_digest) and the same Lua fence (outcomes.lua, kind
 * 'c'). Each observation of an accepted batch must answer a task given to
 * that checker's live stream, for the same proxy, tier and group, before
 * its deadline: it then goes to the reducer (cs_health_observe) and its
 * item is due again after an interval; anything else is dropped and
 * counted (not_given, late), never a verdict. An accepted batch, even an
 * empty one, says the checker is alive again (its session is renewed).
 */
#include <string.h>

#include "cp_checker_requests.h"
#include "cp_common/view/cp_outcomes.h"
#include "cs_checker.h"
#include "cs_fenced.h"
#include "cs_health.h"

#define api cs_api

static int ob_check(cs *m, const void *q, const void *first,
                    const cp_caller *c, uint32_t n, const char **why) {
  (void)m;
  return cp_check_observations(q, first, c, n, why);
}

static int ob_digest(const void *q, uint8_t out[32]) {
  return cp_observation_digest(q, out);
}

static int64_t ob_fence(cs *m, const void *v, const uint8_t digest[32],
                        cp_auth_cb cb, void *arg) {
  const Controlplane__V1__ReportObservationsRequest *q = v;
  return m->auth->report_observations(m->auth_self, q->checker_id,
                                      q->session_id, q->sequence, digest, cb,
                                      arg);
}

static size_t ob_pack(uint64_t acked, uint8_t *buf) {
  Controlplane__V1__ReportObservationsResponse resp =
      CONTROLPLANE__V1__REPORT_OBSERVATIONS_RESPONSE__INIT;
  resp.acknowledged_sequence = acked;
  return controlplane__v1__report_observations_response__pack(&resp, buf);
}

static int was_late(const cs_checker *c, const char *task_id) {
  for (unsigned i = 0; i < CS_LATE_RING; i++)
    if (strcmp(c->late[i], task_id) == 0)
      return 1;
  return 0;
}

static int64_t ms_of_ts(const Google__Protobuf__Timestamp *t, int64_t dflt) {
  return t ? (int64_t)t->seconds * 1000 + t->nanos / 1000000 : dflt;
}

/* One observation against c's tasks: the obs result index. */
static int observe(cs *m, cs_checker *c,
                   const Controlplane__V1__HealthObservation *o,
                   int64_t recv_ms) {
  cs_task *t = c ? cs_task_find(c, o->task_id) : NULL;
  if (!t)
    return c && was_late(c, o->task_id) ? CS_OBS_LATE : CS_OBS_NOT_GIVEN;
  const cs_item *it = t->item;
  const char *group = o->target_group ? o->target_group : "";
  if (strcmp(it->proxy_id, o->proxy_id) != 0 || it->tier != (int)o->tier ||
      strcmp(it->group, group) != 0)
    return CS_OBS_NOT_GIVEN;
  if (recv_ms > t->deadline_ms)
    return CS_OBS_LATE; /* the tick expires it */
  cs_observation ob;
  memset(&ob, 0, sizeof(ob));
  ob.proxy_id = it->proxy_id;
  ob.tier = it->tier;
  ob.target_group = it->group;
  ob.status = (int)o->status;
  ob.latency_ms = o->latency ? (uint32_t)(o->latency->seconds * 1000 +
                                          o->latency->nanos / 1000000)
                             : 0;
  ob.egress_ip = o->egress_ip ? o->egress_ip : "";
  ob.anonymity = (int)o->anonymity;
  ob.reason = o->reason ? o->reason : "";
  ob.observed_ms = ms_of_ts(o->observed_at, recv_ms);
  cs_health_observe(m, &ob);
  cs_task_done(m, t, CS_TASK_ANSWERED);
  return CS_OBS_ACCEPTED;
}

static void ob_apply(cs *m, const void *v, int64_t recv_ms) {
  const Controlplane__V1__ReportObservationsRequest *q = v;
  cs_checker *c = cs_checker_find(m, q->checker_id, q->session_id);
  if (c) {
    c->missed = 0;
    c->report_ms = mono_ms();
  }
  for (size_t i = 0; i < q->n_observations; i++)
    api->inc(m->checkers->m_obs[observe(m, c, q->observations[i], recv_ms)],
             1);
}

static const cs_fenced_kind observations = {
    CS_M_OBSERVATIONS, "checker",
    &controlplane__v1__report_observations_request__descriptor,
    ob_check, ob_digest, ob_fence, ob_apply, ob_pack};

void cs_checker_report_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                           size_t len) {
  (void)req;
  (void)len;
  cs_fenced_rpc(arg, &observations, call);
}

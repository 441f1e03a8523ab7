/* SPDX-License-Identifier: BSD-2-Clause */
/* ReportRuntime: the checks, the content digest (cp_runtime_digest) and
 * the authority's runtime fence; the answer carries the revoke list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cs_status.h"
#include "cs_unary.h"

#define api cs_api

/* The call with what the status panels keep once the authority accepts
 * the report (cs_watch_reported). */
typedef struct rt_call {
  cs_unary u; /* first */
  char worker[PH_POOL_ID_MAX + 1], session[PH_POOL_ID_MAX + 1];
  size_t n;
  cs_count counts[];
} rt_call;

static void rt_done(void *arg, const cp_auth_reply *rep) {
  cs_unary *u = arg;
  if (cs_unary_refused(u, rep))
    return;
  rt_call *rc = (rt_call *)u;
  if (rep->result == CP_AUTH_OK)
    cs_watch_reported(u->m, rc->worker, rc->session, rc->counts, rc->n);
  Controlplane__V1__ReportRuntimeResponse resp =
      CONTROLPLANE__V1__REPORT_RUNTIME_RESPONSE__INIT;
  Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  cp_ms_to_ts(rep->session_expires_ms, &ts);
  resp.session_expires_at = &ts;
  resp.n_revoke_proxy_ids = rep->n_revoke;
  resp.revoke_proxy_ids = (char **)rep->revoke;
  size_t n = controlplane__v1__report_runtime_response__get_packed_size(&resp);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    cs_unary_end(u, CP_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
    return;
  }
  controlplane__v1__report_runtime_response__pack(&resp, buf);
  cs_unary_end(u, CP_GRPC_OK, NULL, buf, n);
  free(buf);
}

void cs_runtime_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                    size_t len) {
  cs_req r;
  Controlplane__V1__ReportRuntimeRequest *q = cs_request(
      &r, arg, call, &controlplane__v1__report_runtime_request__descriptor,
      req, len);
  cs *m = r.m;
  if (!r.st)
    r.st = cp_check_runtime(q, &r.c, m->conf.max_runtime_counters, &r.why);
  uint8_t digest[32];
  uint8_t *scratch = NULL;
  if (!r.st) {
    size_t cap = len + 64;
    scratch = malloc(cap);
    if (!scratch || cp_runtime_digest(q, scratch, cap, digest) != 0) {
      r.st = CP_GRPC_RESOURCE_EXHAUSTED;
      r.why = "report too large";
    }
    free(scratch);
  }
  cp_auth_counter *cn = NULL;
  if (!r.st && q->n_counters &&
      !(cn = calloc(q->n_counters, sizeof(*cn)))) {
    r.st = CP_GRPC_RESOURCE_EXHAUSTED;
    r.why = "out of memory";
  }
  cs_unary *u = NULL;
  size_t n = r.st ? 0 : q->n_counters;
  if (!r.st && !(u = cs_unary_new_size(m, call, CS_M_RUNTIME, r.start,
                                      sizeof(rt_call) +
                                          n * sizeof(cs_count)))) {
    r.st = CP_GRPC_RESOURCE_EXHAUSTED;
    r.why = "out of memory";
  }
  if (r.st) {
    free(cn);
    cs_request_fail(&r, CS_M_RUNTIME, q);
    return;
  }
  rt_call *rc = (rt_call *)u;
  snprintf(rc->worker, sizeof(rc->worker), "%s", q->worker_id);
  snprintf(rc->session, sizeof(rc->session), "%s", q->session_id);
  rc->n = n;
  for (size_t i = 0; i < q->n_counters; i++) {
    snprintf(rc->counts[i].proxy_id, sizeof(rc->counts[i].proxy_id), "%s",
             q->counters[i]->proxy_id);
    rc->counts[i].active = q->counters[i]->active;
    rc->counts[i].reserved = q->counters[i]->reserved;
    cn[i].proxy_id = q->counters[i]->proxy_id;
    cn[i].active = q->counters[i]->active;
    cn[i].reserved = q->counters[i]->reserved;
    cn[i].draining = q->counters[i]->draining;
  }
  int64_t id = m->auth->report_runtime(
      m->auth_self, q->worker_id, q->session_id, q->report_sequence, digest,
      q->snapshot_version, q->ownership_epoch, cn, q->n_counters, rt_done, u);
  free(cn);
  controlplane__v1__report_runtime_request__free_unpacked(q, NULL);
  cs_unary_started(u, id);
}

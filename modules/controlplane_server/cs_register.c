/* SPDX-License-Identifier: BSD-2-Clause */
/* RegisterWorker (docs/api/controlplane.md#registerworker): the checks,
 * a new random session id, the authority's register_worker. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cs.h"
#include "cs_unary.h"

#define api cs_api

typedef struct reg {
  cs_unary u; /* first */
  char session[CP_AUTH_SESSION_HEX + 1];
  char worker[PH_POOL_ID_MAX + 1]; /* its older streams end at once */
} reg;

static void reg_done(void *arg, const cp_auth_reply *rep) {
  reg *r = arg;
  cs *m = r->u.m;
  r->u.auth_call = 0;
  cs_note_auth(m, rep->result);
  if (rep->result != CP_AUTH_OK) {
    cs_unary_end(&r->u, cp_auth_grpc_status(rep->result),
                 rep->result == CP_AUTH_LIMIT ? "too many workers"
                                              : "the authority did not answer",
                 NULL, 0);
    return;
  }
  Controlplane__V1__RegisterWorkerResponse resp =
      CONTROLPLANE__V1__REGISTER_WORKER_RESPONSE__INIT;
  Google__Protobuf__Duration stale = GOOGLE__PROTOBUF__DURATION__INIT,
                             ttl = GOOGLE__PROTOBUF__DURATION__INIT,
                             ri = GOOGLE__PROTOBUF__DURATION__INIT;
  cp_ms_to_dur(m->conf.max_stale_age_ms, &stale);
  cp_ms_to_dur(m->conf.session_ttl_ms, &ttl);
  cp_ms_to_dur(m->conf.runtime_interval_ms, &ri);
  resp.session_id = r->session;
  resp.ownership_epoch = rep->epoch;
  resp.max_stale_age = &stale;
  resp.session_ttl = &ttl;
  resp.runtime_interval = &ri;
  resp.protocol_version = CP_PROTOCOL_VERSION;
  resp.max_runtime_counters = m->conf.max_runtime_counters;
  uint8_t buf[512];
  size_t n = controlplane__v1__register_worker_response__pack(&resp, buf);
  cs_watch_replaced(m, r->worker, r->session);
  cs_unary_end(&r->u, CP_GRPC_OK, NULL, buf, n);
}

void cs_register_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len) {
  cs_req f;
  Controlplane__V1__RegisterWorkerRequest *q = cs_request(
      &f, arg, call, &controlplane__v1__register_worker_request__descriptor,
      req, len);
  cs *m = f.m;
  if (!f.st)
    f.st = cp_check_register(q, &f.c, &f.why);
  reg *r = NULL;
  if (!f.st)
    r = cs_unary_joining(&f, CS_M_REGISTER, sizeof(*r), offsetof(reg, session));
  if (!f.st) {
    snprintf(r->worker, sizeof(r->worker), "%s", q->worker_id);
    cs_unary_launch(&f, &r->u,
                    m->auth->register_worker(m->auth_self, q->worker_id,
                                             q->instance_id, q->zone,
                                             r->session, reg_done, r));
  }
  cs_unary_close(&f, r ? &r->u : NULL, CS_M_REGISTER, q);
}

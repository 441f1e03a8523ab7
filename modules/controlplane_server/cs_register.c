/* SPDX-License-Identifier: BSD-2-Clause */
/* RegisterWorker (docs/api/controlplane.md#registerworker): the checks,
 * a new random session id, the authority's register_worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot_time.h"
#include "cs.h"

#define api cs_api

typedef struct reg {
  cs_link link; /* first */
  cs *m;
  cp_grpc_call *call;
  int64_t start_ms, auth_call;
  char session[CP_AUTH_SESSION_HEX + 1];
  char worker[PH_POOL_ID_MAX + 1]; /* its older streams end at once */
} reg;

static void reg_abandon(cs_link *l) {
  reg *r = (reg *)l;
  if (r->auth_call > 0)
    r->m->auth->cancel(r->m->auth_self, r->auth_call);
  free(r);
}

static void reg_cancel(void *arg, cp_grpc_call *call) {
  reg *r = arg;
  (void)call;
  cs_link_del(&r->link);
  reg_abandon(&r->link);
}

static void reg_done(void *arg, const cp_auth_reply *rep) {
  reg *r = arg;
  cs *m = r->m;
  cs_link_del(&r->link);
  cs_note_auth(m, rep->result);
  if (rep->result != CP_AUTH_OK) {
    cs_finish(m, r->call, CS_M_REGISTER, r->start_ms,
              cp_auth_grpc_status(rep->result),
              rep->result == CP_AUTH_LIMIT ? "too many workers"
                                           : "the authority did not answer",
              NULL, 0);
    free(r);
    return;
  }
  Controlplane__V1__RegisterWorkerResponse resp =
      CONTROLPLANE__V1__REGISTER_WORKER_RESPONSE__INIT;
  Google__Protobuf__Duration stale = GOOGLE__PROTOBUF__DURATION__INIT,
                             ttl = GOOGLE__PROTOBUF__DURATION__INIT,
                             ri = GOOGLE__PROTOBUF__DURATION__INIT;
  stale.seconds = m->conf.max_stale_age_ms / 1000;
  stale.nanos = (int32_t)(m->conf.max_stale_age_ms % 1000) * 1000000;
  ttl.seconds = m->conf.session_ttl_ms / 1000;
  ttl.nanos = (int32_t)(m->conf.session_ttl_ms % 1000) * 1000000;
  ri.seconds = m->conf.runtime_interval_ms / 1000;
  ri.nanos = (int32_t)(m->conf.runtime_interval_ms % 1000) * 1000000;
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
  cs_finish(m, r->call, CS_M_REGISTER, r->start_ms, CP_GRPC_OK, NULL, buf, n);
  free(r);
}

void cs_register_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                     size_t len) {
  cs *m = arg;
  int64_t start = api->now_ms(m->ctx);
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  cp_caller c;
  int st;
  const ProtobufCMessageDescriptor *d =
      &controlplane__v1__register_worker_request__descriptor;
  Controlplane__V1__RegisterWorkerRequest *q =
      cs_request(m, call, d, req, len, peer, &c, &st, &why);
  if (!st)
    st = cp_check_register(q, &c, &why);
  reg *r = NULL;
  if (!st && !(r = calloc(1, sizeof(*r)))) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "out of memory";
  }
  if (!st && m->auth->new_session_id(r->session) != PH_OK) {
    st = CP_GRPC_UNAVAILABLE;
    why = "no random session id";
  }
  if (!st) {
    r->m = m;
    r->call = call;
    r->start_ms = start;
    snprintf(r->worker, sizeof(r->worker), "%s", q->worker_id);
    r->auth_call = m->auth->register_worker(m->auth_self, q->worker_id,
                                            q->instance_id, q->zone,
                                            r->session, reg_done, r);
    if (r->auth_call < 0) {
      st = r->auth_call == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT
                                     : CP_GRPC_UNAVAILABLE;
      why = st == CP_GRPC_INVALID_ARGUMENT ? "an identifier out of bounds"
                                           : "the authority is busy";
    }
  }
  if (q)
    controlplane__v1__register_worker_request__free_unpacked(q, NULL);
  if (st) {
    free(r);
    cs_finish(m, call, CS_M_REGISTER, start, st, why, NULL, 0);
    return;
  }
  cp_grpc_call_on_cancel(call, reg_cancel, r);
  cs_link_add(m, &r->link, reg_abandon);
}

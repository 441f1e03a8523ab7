/* SPDX-License-Identifier: BSD-2-Clause */
/* AcknowledgeSnapshot: the triple (version, epoch, reference) against what
 * was issued; the reference is HMAC(reference_key, checksum). */
#include <stdio.h>

#include "cs_unary.h"

#define api cs_api

/* The RPC and what the authority is asked, for the stream's delta base
 * (cs_watch_acked). */
typedef struct ack_call {
  cs_unary u; /* first: freed with it */
  char worker[CS_WORKER_ID_MAX + 1], session[PH_POOL_ID_MAX + 1];
  uint64_t version, epoch;
  int accepted;
} ack_call;

static void ack_done(void *arg, const cp_auth_reply *rep) {
  ack_call *a = arg;
  cs_unary *u = &a->u;
  if (cs_unary_refused(u, rep))
    return;
  cs_watch_acked(u->m, a->worker, a->session, a->version, a->epoch,
                 a->accepted);
  Controlplane__V1__AcknowledgeSnapshotResponse resp =
      CONTROLPLANE__V1__ACKNOWLEDGE_SNAPSHOT_RESPONSE__INIT;
  uint8_t buf[16];
  size_t n = controlplane__v1__acknowledge_snapshot_response__pack(&resp, buf);
  /* An empty message packs to zero bytes: give the layer a valid buffer. */
  cs_unary_end(u, CP_GRPC_OK, NULL, buf, n);
}

void cs_ack_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                size_t len) {
  cs_req r;
  Controlplane__V1__AcknowledgeSnapshotRequest *q = cs_request(
      &r, arg, call, &controlplane__v1__acknowledge_snapshot_request__descriptor,
      req, len);
  cs *m = r.m;
  if (!r.st)
    r.st = cp_check_ack(q, &r.c, &r.why);
  ack_call *a = NULL;
  if (!r.st && !(a = (ack_call *)cs_unary_new_size(m, call, CS_M_ACK,
                                                   r.start, sizeof(*a)))) {
    r.st = CP_GRPC_RESOURCE_EXHAUSTED;
    r.why = "out of memory";
  }
  if (r.st) {
    cs_request_fail(&r, CS_M_ACK, q);
    return;
  }
  /* cp_check_ack bounded the ids */
  snprintf(a->worker, sizeof(a->worker), "%s", q->worker_id);
  snprintf(a->session, sizeof(a->session), "%s", q->session_id);
  a->version = q->version;
  a->epoch = q->ownership_epoch;
  a->accepted = q->result == CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED;
  uint8_t ref[32];
  cs_reference(m, q->checksum.data, q->checksum.len, ref);
  int64_t id = m->auth->ack(
      m->auth_self, q->worker_id, q->session_id, q->version,
      q->ownership_epoch, ref,
      a->accepted, ack_done, a);
  controlplane__v1__acknowledge_snapshot_request__free_unpacked(q, NULL);
  cs_unary_started(&a->u, id);
}

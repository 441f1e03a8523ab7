/* SPDX-License-Identifier: BSD-2-Clause */
/* AcknowledgeSnapshot: the triple (version, epoch, reference) against what
 * was issued; the reference is HMAC(reference_key, checksum). */
#include "cs_unary.h"

#define api cs_api

static void ack_done(void *arg, const cp_auth_reply *rep) {
  cs_unary *u = arg;
  if (cs_unary_refused(u, rep))
    return;
  Controlplane__V1__AcknowledgeSnapshotResponse resp =
      CONTROLPLANE__V1__ACKNOWLEDGE_SNAPSHOT_RESPONSE__INIT;
  uint8_t buf[16];
  size_t n = controlplane__v1__acknowledge_snapshot_response__pack(&resp, buf);
  /* An empty message packs to zero bytes: give the layer a valid buffer. */
  cs_unary_end(u, CP_GRPC_OK, NULL, buf, n);
}

void cs_ack_rpc(void *arg, cp_grpc_call *call, const uint8_t *req,
                size_t len) {
  cs *m = arg;
  int64_t start = api->now_ms(m->ctx);
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  cp_caller c;
  int st;
  const ProtobufCMessageDescriptor *d =
      &controlplane__v1__acknowledge_snapshot_request__descriptor;
  Controlplane__V1__AcknowledgeSnapshotRequest *q =
      cs_request(m, call, d, req, len, peer, &c, &st, &why);
  if (!st)
    st = cp_check_ack(q, &c, &why);
  cs_unary *u = NULL;
  if (!st && !(u = cs_unary_new(m, call, CS_M_ACK, start))) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "out of memory";
  }
  if (st) {
    if (q)
      controlplane__v1__acknowledge_snapshot_request__free_unpacked(q, NULL);
    cs_finish(m, call, CS_M_ACK, start, st, why, NULL, 0);
    return;
  }
  uint8_t ref[32];
  cs_reference(m, q->checksum.data, q->checksum.len, ref);
  int64_t id = m->auth->ack(
      m->auth_self, q->worker_id, q->session_id, q->version,
      q->ownership_epoch, ref,
      q->result == CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED, ack_done,
      u);
  controlplane__v1__acknowledge_snapshot_request__free_unpacked(q, NULL);
  cs_unary_started(u, id);
}

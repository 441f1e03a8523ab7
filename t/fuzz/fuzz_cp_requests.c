/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the controller's request checks
 * (modules/controlplane_server/cp_requests.c) on whatever bytes a peer
 * sends, decoded by protobuf-c as the request of one RPC. It checks the
 * contract of cp_requests.h: a refusal is one of the documented status
 * codes with a non-empty, printable, static message; a pass means every
 * id is well formed and the certificate's worker is the message's; the
 * verdict is deterministic; the runtime digest does not depend on the
 * ids; messages are decoded as the controller does (cp_request_unpack:
 * a NUL inside a string field is refused). Input byte 0 picks the RPC (0 register, 1 watch, 2 ack, 3 runtime,
 * 4 outcomes), byte 1 bit 0 the caller (certificate "w1" or plaintext)
 * and its other bits max_runtime_counters; the rest is the message. */
#define FUZZ_NAME "fuzz_cp_requests"
#include "fuzz_cp_check.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 2)
    return 0;
  int rpc = data[0] % 5;
  cp_caller c = {.peer_id = (data[1] & 1) ? "w1" : NULL, .cluster_id = "c1"};
  uint32_t max_counters = data[1] >> 1;
  const uint8_t *msg = data + 2;
  size_t n = size - 2;
  const char *why = NULL, *why2 = NULL;
  int rc, rc2;
  switch (rpc) {
  case 0: {
    Controlplane__V1__RegisterWorkerRequest *r =
        unpack(&controlplane__v1__register_worker_request__descriptor, msg, n);
    if (!r)
      return 0;
    rc = cp_check_register(r, &c, &why);
    rc2 = cp_check_register(r, &c, &why2);
    CHECK(rc == rc2 && why == why2);
    check_verdict(rc, why);
    if (rc == 0) {
      check_caller_id(r->worker_id, &c);
      CHECK(strcmp(r->cluster_id, "c1") == 0);
      CHECK(cp_id_ok(r->instance_id) && cp_id_ok(r->zone));
      CHECK(r->supported_protocol_version == CP_PROTOCOL_VERSION);
    }
    controlplane__v1__register_worker_request__free_unpacked(r, NULL);
    break;
  }
  case 1: {
    Controlplane__V1__WatchSnapshotsRequest *r =
        unpack(&controlplane__v1__watch_snapshots_request__descriptor, msg, n);
    if (!r)
      return 0;
    rc = cp_check_watch(r, &c, &why);
    check_verdict(rc, why);
    if (rc == 0) {
      check_caller_id(r->worker_id, &c);
      CHECK(cp_id_ok(r->session_id));
      CHECK(r->last_checksum.len == 0 || r->last_checksum.len == 32);
    }
    controlplane__v1__watch_snapshots_request__free_unpacked(r, NULL);
    break;
  }
  case 2: {
    Controlplane__V1__AcknowledgeSnapshotRequest *r =
        unpack(&controlplane__v1__acknowledge_snapshot_request__descriptor, msg, n);
    if (!r)
      return 0;
    rc = cp_check_ack(r, &c, &why);
    check_verdict(rc, why);
    if (rc == 0) {
      check_caller_id(r->worker_id, &c);
      CHECK(r->checksum.len == 32 && r->version > 0);
      CHECK(r->result == CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED ||
            r->result == CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_REJECTED);
    }
    controlplane__v1__acknowledge_snapshot_request__free_unpacked(r, NULL);
    break;
  }
  case 3: {
    Controlplane__V1__ReportRuntimeRequest *r =
        unpack(&controlplane__v1__report_runtime_request__descriptor, msg, n);
    if (!r)
      return 0;
    rc = cp_check_runtime(r, &c, max_counters, &why);
    check_verdict(rc, why);
    if (rc == 0) {
      check_caller_id(r->worker_id, &c);
      CHECK(r->n_counters <= max_counters && r->report_sequence > 0);
      static uint8_t buf[1 << 16];
      uint8_t d1[32], d2[32];
      if (cp_runtime_digest(r, buf, sizeof buf, d1) == 0) {
        char *sid = r->session_id;
        r->session_id = (char *)"another-session";
        CHECK(cp_runtime_digest(r, buf, sizeof buf, d2) == 0);
        CHECK(memcmp(d1, d2, 32) == 0);
        r->session_id = sid;
      }
    }
    controlplane__v1__report_runtime_request__free_unpacked(r, NULL);
    break;
  }
  default: {
    Controlplane__V1__ReportOutcomesRequest *r =
        unpack(&controlplane__v1__report_outcomes_request__descriptor, msg, n);
    if (!r)
      return 0;
    uint32_t nth = (uint32_t)(data[1] % 20) + 1;
    rc = cp_check_outcomes(r, NULL, &c, max_counters, nth, &why);
    check_verdict(rc, why);
    if (rc == 0) {
      check_caller_id(r->worker_id, &c);
      CHECK(nth <= CP_OUTCOME_BATCHES_PER_CALL && r->sequence > 0);
      CHECK(r->n_outcomes <= max_counters &&
            r->n_outcomes <= CP_OUTCOMES_PER_BATCH_MAX);
      /* The same batch against itself as the stream's first passes too. */
      CHECK(cp_check_outcomes(r, r, &c, max_counters, nth, &why2) == 0);
    }
    controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
    break;
  }
  }
  return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's request checks (modules/controlplane_server/
 * cp_requests.c): identity against the certificate (CP-8-2), enum values
 * this build does not know (CP-7-3), the protocol version (CP-7-4), batch
 * bounds (CP-8-3, CP-5-8, CP-5-9), a fixed identity inside an outcome
 * stream (CP-1-29), sparse counters (CP-2-14), and the runtime digest
 * that ignores the ids (CP-2-10). */
#include <string.h>

#include "controlplane_server/cp_requests.h"
#include "contracts/cp_status.h"
#include "tap.h"

static const cp_caller MTLS = {.peer_id = "w1", .cluster_id = "c1"};
static const cp_caller PLAIN = {.peer_id = NULL, .cluster_id = "c1"};

static void test_ids(void) {
  ok(cp_id_ok("w1") && cp_id_ok("gw-01.eu_west"), "plain ids pass");
  ok(!cp_id_ok("") && !cp_id_ok(NULL), "empty and missing ids are refused");
  ok(!cp_id_ok("w 1") && !cp_id_ok("w\x01") && !cp_id_ok("w\xc3\xa9"),
     "spaces, control bytes and non-ASCII are refused");
  char id[130];
  memset(id, 'a', 128);
  id[128] = 0;
  ok(cp_id_ok(id), "128 bytes pass");
  id[128] = 'a';
  id[129] = 0;
  ok(!cp_id_ok(id), "129 bytes are refused");
}

static void test_register(void) {
  const char *why = NULL;
  Controlplane__V1__RegisterWorkerRequest r =
      CONTROLPLANE__V1__REGISTER_WORKER_REQUEST__INIT;
  r.cluster_id = "c1";
  r.worker_id = "w1";
  r.instance_id = "i-1";
  r.zone = "z1";
  r.supported_protocol_version = CP_PROTOCOL_VERSION;
  is_int(cp_check_register(&r, &MTLS, &why), 0, "CP-2-1: a good registration");
  r.worker_id = "w2";
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_PERMISSION_DENIED,
         "CP-8-2: a worker_id the certificate does not name: PERMISSION_DENIED");
  unlike(why, "w2", "the message does not echo request data");
  is_int(cp_check_register(&r, &PLAIN, &why), 0,
         "in plaintext mode (loopback fixtures) no certificate is compared");
  r.worker_id = "w1";
  r.cluster_id = "c2";
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "another cluster: INVALID_ARGUMENT");
  r.cluster_id = "c1";
  r.zone = "";
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-9-6: a zone is required");
  r.zone = "z1";
  r.instance_id = "";
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-9-5: an instance id is required");
  r.instance_id = "i-1";
  r.supported_protocol_version =
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_UNSPECIFIED;
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-7-3: UNSPECIFIED protocol version: INVALID_ARGUMENT");
  r.supported_protocol_version = (Controlplane__V1__ProtocolVersion)2;
  is_int(cp_check_register(&r, &MTLS, &why), CP_GRPC_FAILED_PRECONDITION,
         "CP-7-4: an unsupported protocol version fails the registration");
  like(why, "version 1", "and says which version this controller speaks");
}

static void test_ack(void) {
  const char *why = NULL;
  uint8_t sum[32] = {9};
  Controlplane__V1__AcknowledgeSnapshotRequest a =
      CONTROLPLANE__V1__ACKNOWLEDGE_SNAPSHOT_REQUEST__INIT;
  a.worker_id = "w1";
  a.session_id = "s1";
  a.version = 3;
  a.checksum.data = sum;
  a.checksum.len = 32;
  a.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED;
  is_int(cp_check_ack(&a, &MTLS, &why), 0, "a positive ACK passes");
  a.result = (Controlplane__V1__AckResult)7;
  is_int(cp_check_ack(&a, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-7-3: an unknown ACK result is rejected, not guessed");
  a.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_UNSPECIFIED;
  is_int(cp_check_ack(&a, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-7-3: UNSPECIFIED is rejected");
  a.result = CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_REJECTED;
  is_int(cp_check_ack(&a, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "a negative ACK needs its reason");
  a.reject_reason = CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_EXPIRED;
  is_int(cp_check_ack(&a, &MTLS, &why), 0, "a negative ACK with a reason");
  a.checksum.len = 31;
  is_int(cp_check_ack(&a, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "a checksum of another length");
  a.checksum.len = 32;
  a.session_id = "";
  is_int(cp_check_ack(&a, &MTLS, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-2-5: the session id is required");
  Controlplane__V1__WatchSnapshotsRequest w =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_REQUEST__INIT;
  w.worker_id = "w9";
  w.session_id = "s1";
  is_int(cp_check_watch(&w, &MTLS, &why), CP_GRPC_PERMISSION_DENIED,
         "CP-8-2: a watch for another worker");
}

static void test_runtime(void) {
  const char *why = NULL;
  Controlplane__V1__ProxyCounter k1 = CONTROLPLANE__V1__PROXY_COUNTER__INIT,
                                 k2 = CONTROLPLANE__V1__PROXY_COUNTER__INIT;
  Controlplane__V1__ProxyCounter *ks[2] = {&k1, &k2};
  k1.proxy_id = "p1";
  k1.active = 2;
  k2.proxy_id = "p2";
  k2.reserved = 1;
  Controlplane__V1__ReportRuntimeRequest r =
      CONTROLPLANE__V1__REPORT_RUNTIME_REQUEST__INIT;
  r.worker_id = "w1";
  r.session_id = "s1";
  r.report_sequence = 1;
  r.n_counters = 2;
  r.counters = ks;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), 0, "a sparse report passes");
  is_int(cp_check_runtime(&r, &MTLS, 1, &why), CP_GRPC_RESOURCE_EXHAUSTED,
         "CP-8-3: more counters than max_runtime_counters");
  k2.reserved = 0;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-2-14: a zero counter is left out, not sent");
  k2.draining = 1;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), 0,
         "CP-4-3: a draining proxy may be reported at zero");
  k2.proxy_id = "p1";
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), CP_GRPC_INVALID_ARGUMENT,
         "a proxy counted twice");
  k2.proxy_id = "p2";
  r.n_counters = 0;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), 0,
         "CP-1-9: an empty report is a complete replacement");
  r.report_sequence = 0;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), CP_GRPC_INVALID_ARGUMENT,
         "CP-2-9: a sequence is required");
  r.report_sequence = 1;
  Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  t.nanos = 1000000000;
  r.observed_at = &t;
  is_int(cp_check_runtime(&r, &MTLS, 100, &why), CP_GRPC_INVALID_ARGUMENT,
         "a malformed observed_at");

  /* The digest ignores the ids and changes with the content. */
  uint8_t buf[4096], d1[32], d2[32];
  r.observed_at = NULL;
  r.n_counters = 2;
  ok(cp_runtime_digest(&r, buf, sizeof buf, d1) == 0, "digest computed");
  r.session_id = "s-other";
  cp_runtime_digest(&r, buf, sizeof buf, d2);
  ok(memcmp(d1, d2, 32) == 0,
     "CP-2-10: the digest depends on the content, not the ids");
  k1.active = 3;
  cp_runtime_digest(&r, buf, sizeof buf, d2);
  ok(memcmp(d1, d2, 32) != 0,
     "CP-2-10: other content, another digest");
  is_int(cp_runtime_digest(&r, buf, 4, d2), -1,
         "a message larger than the scratch space is refused");
}

static void test_outcomes(void) {
  const char *why = NULL;
  Controlplane__V1__Outcome o = CONTROLPLANE__V1__OUTCOME__INIT;
  Controlplane__V1__Outcome *os[1] = {&o};
  o.proxy_id = "p1";
  o.stage = CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL;
  o.result = CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE;
  Controlplane__V1__ReportOutcomesRequest b =
      CONTROLPLANE__V1__REPORT_OUTCOMES_REQUEST__INIT;
  b.worker_id = "w1";
  b.session_id = "s1";
  b.sequence = 1;
  b.n_outcomes = 1;
  b.outcomes = os;
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 100, 1, &why), 0,
         "CP-5-1: a batch passes");
  Controlplane__V1__ReportOutcomesRequest c = b;
  c.session_id = "s2";
  is_int(cp_check_outcomes(&c, &b, &MTLS, 100, 2, &why),
         CP_GRPC_FAILED_PRECONDITION,
         "CP-1-29: the session may not change inside one stream");
  is_int(cp_check_outcomes(&b, &b, &MTLS, 100, 17, &why),
         CP_GRPC_RESOURCE_EXHAUSTED, "CP-5-9: a 17th batch in one call");
  is_int(cp_check_outcomes(&b, &b, &MTLS, 100, 16, &why), 0,
         "CP-5-9: the 16th is fine");
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 0, 1, &why),
         CP_GRPC_RESOURCE_EXHAUSTED,
         "CP-5-8: a batch over min(512, max_runtime_counters)");
  o.stage = CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_UNSPECIFIED;
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 100, 1, &why),
         CP_GRPC_INVALID_ARGUMENT, "CP-7-3: an UNSPECIFIED stage");
  o.stage = (Controlplane__V1__OutcomeStage)5;
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 100, 1, &why),
         CP_GRPC_INVALID_ARGUMENT, "CP-7-3: a stage from a newer peer");
  o.stage = CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL;
  o.result = CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_UNSPECIFIED;
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 100, 1, &why),
         CP_GRPC_INVALID_ARGUMENT, "CP-7-3: an UNSPECIFIED result");
  o.result = CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS;
  b.worker_id = "w3";
  is_int(cp_check_outcomes(&b, NULL, &MTLS, 100, 1, &why),
         CP_GRPC_PERMISSION_DENIED, "CP-8-2: outcomes of another worker");
}

/* Issue 22 item 12: a string field is checked on the wire, where its
 * length is, not as the C string protobuf-c makes of it. */
static void test_wire_strings(void) {
  const ProtobufCMessageDescriptor *reg =
      &controlplane__v1__register_worker_request__descriptor;
  const ProtobufCMessageDescriptor *rt =
      &controlplane__v1__report_runtime_request__descriptor;
  const char *why = NULL;
  int st = -1;
  /* worker_id (field 2) = "w1\0w2": protobuf-c alone reads "w1" */
  static const uint8_t nul[] = {0x12, 5, 'w', '1', 0, 'w', '2'};
  Controlplane__V1__RegisterWorkerRequest *q =
      controlplane__v1__register_worker_request__unpack(NULL, sizeof nul, nul);
  ok(q && strcmp(q->worker_id, "w1") == 0,
     "(protobuf-c alone hands w1<NUL>w2 over as \"w1\")");
  if (q)
    controlplane__v1__register_worker_request__free_unpacked(q, NULL);
  ok(!cp_request_unpack(reg, nul, sizeof nul, &st, &why) &&
         st == CP_GRPC_INVALID_ARGUMENT,
     "issue 22 item 12: worker_id w1<NUL>w2 is refused INVALID_ARGUMENT");
  like(why, "NUL", "... saying a string holds a NUL byte");
  /* cluster_id (field 1) = "c1\0other", after a good worker_id */
  static const uint8_t nul2[] = {0x12, 2,   'w', '1', 0x0a, 8,  'c',
                                 '1',  0,   'o', 't', 'h',  'e', 'r'};
  ok(!cp_request_unpack(reg, nul2, sizeof nul2, &st, &why),
     "issue 22 item 12: cluster_id c1<NUL>other is refused");
  /* ReportRuntimeRequest.counters (7) > ProxyCounter.proxy_id (1) */
  static const uint8_t nested[] = {0x0a, 2, 'w', '1', 0x3a, 7, 0x0a,
                                   3,    'p', '1', 0,   0x10, 1};
  ok(!cp_request_unpack(rt, nested, sizeof nested, &st, &why) &&
         st == CP_GRPC_INVALID_ARGUMENT,
     "issue 22 item 12: a nested string (a counter's proxy_id p1<NUL>) is "
     "refused");
  static const uint8_t good[] = {0x0a, 2, 'w', '1', 0x3a, 6, 0x0a,
                                 2,    'p', '1', 0x10, 1};
  Controlplane__V1__ReportRuntimeRequest *r =
      cp_request_unpack(rt, good, sizeof good, &st, &why);
  ok(r && st == 0 && r->n_counters == 1 &&
         strcmp(r->counters[0]->proxy_id, "p1") == 0,
     "the same request without the NUL unpacks");
  if (r)
    controlplane__v1__report_runtime_request__free_unpacked(r, NULL);
  /* a bytes field (WatchSnapshotsRequest.last_checksum, 4) may hold NULs,
   * and so may a field this build does not know (99, length-delimited) */
  static const uint8_t bytes[] = {0x0a, 1, 'w', 0x22, 2, 0, 0,
                                  0x9a, 6, 2, 0,    'x'};
  void *w = cp_request_unpack(
      &controlplane__v1__watch_snapshots_request__descriptor, bytes,
      sizeof bytes, &st, &why);
  ok(w && st == 0, "NUL bytes in a bytes field and in an unknown field pass");
  if (w)
    protobuf_c_message_free_unpacked(w, NULL);
  static const uint8_t cut[] = {0x12, 9, 'w', '1'};
  ok(!cp_request_unpack(reg, cut, sizeof cut, &st, &why) &&
         st == CP_GRPC_INVALID_ARGUMENT,
     "a length beyond the message: malformed, INVALID_ARGUMENT");
  like(why, "malformed", "... saying malformed");
  q = cp_request_unpack(reg, NULL, 0, &st, &why);
  ok(q && st == 0, "an empty message unpacks (its checks refuse it later)");
  if (q)
    controlplane__v1__register_worker_request__free_unpacked(q, NULL);
}

int main(void) {
  plan_lazy();
  test_ids();
  test_register();
  test_ack();
  test_runtime();
  test_outcomes();
  test_wire_strings();
  return done_testing();
}

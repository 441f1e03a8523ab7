/* SPDX-License-Identifier: BSD-2-Clause */
/* The control plane's generated protobuf-c code (CP-1-1): the proto
 * compiles at build time into the two services' descriptors with the
 * method paths the gRPC layer serves, a full snapshot packs and unpacks
 * with its times and its delta oneof, and an enum value this build does
 * not know survives decoding as a plain number, so the receiver can reject
 * it as UNSPECIFIED (CP-7-3). */
#include <stdlib.h>
#include <string.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "tap.h"

static const char *method_names[] = {"RegisterWorker", "WatchSnapshots",
                                     "AcknowledgeSnapshot", "ReportRuntime",
                                     "ReportOutcomes"};

static void test_services(void) {
  const ProtobufCServiceDescriptor *w =
      &controlplane__v1__worker_control_plane__descriptor;
  is_str(w->name, "controlplane.v1.WorkerControlPlane",
         "CP-1-1: the worker service's full name");
  is_int(w->n_methods, 5, "CP-1-2: WorkerControlPlane has five methods");
  for (unsigned i = 0; i < 5; i++)
    ok(protobuf_c_service_descriptor_get_method_by_name(w, method_names[i]),
       method_names[i]);
  const ProtobufCServiceDescriptor *c =
      &controlplane__v1__checker_control_plane__descriptor;
  is_str(c->name, "controlplane.v1.CheckerControlPlane",
         "CP-1-3: the checker service is declared");
  is_int(c->n_methods, 3, "CP-1-3: CheckerControlPlane has three methods");
}

static void test_snapshot_roundtrip(void) {
  Controlplane__V1__WorkerSnapshot s = CONTROLPLANE__V1__WORKER_SNAPSHOT__INIT;
  Google__Protobuf__Timestamp vu = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  vu.seconds = 1800000000;
  vu.nanos = 5;
  Controlplane__V1__OwnedProxy p = CONTROLPLANE__V1__OWNED_PROXY__INIT;
  Controlplane__V1__OwnedProxy *pp[1] = {&p};
  p.proxy_id = "px-1";
  p.protocol = CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5;
  p.capacity = 10;
  s.version = 42;
  s.ownership_epoch = 7;
  s.valid_until = &vu;
  s.n_proxies = 1;
  s.proxies = pp;
  uint8_t sum[32];
  memset(sum, 0xab, sizeof sum);
  s.checksum.data = sum;
  s.checksum.len = sizeof sum;

  Controlplane__V1__WatchSnapshotsResponse r =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
  r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
  r.snapshot = &s;
  size_t n = controlplane__v1__watch_snapshots_response__get_packed_size(&r);
  uint8_t *buf = malloc(n);
  ok(buf && controlplane__v1__watch_snapshots_response__pack(&r, buf) == n,
     "a full snapshot packs");
  Controlplane__V1__WatchSnapshotsResponse *u =
      controlplane__v1__watch_snapshots_response__unpack(NULL, n, buf);
  ok(u && u->payload_case ==
              CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT,
     "and unpacks as the snapshot case of the oneof");
  if (u && u->snapshot) {
    is_int(u->snapshot->version, 42, "version survives");
    ok(u->snapshot->valid_until &&
           u->snapshot->valid_until->seconds == 1800000000 &&
           u->snapshot->valid_until->nanos == 5,
       "valid_until survives as a Timestamp");
    ok(u->snapshot->n_proxies == 1 &&
           strcmp(u->snapshot->proxies[0]->proxy_id, "px-1") == 0,
       "the owned proxy survives");
    ok(u->snapshot->checksum.len == 32 &&
           memcmp(u->snapshot->checksum.data, sum, 32) == 0,
       "the checksum survives");
  }
  controlplane__v1__watch_snapshots_response__free_unpacked(u, NULL);

  /* A snapshot without valid_until decodes with the field absent: the
   * receiver sees "missing" (CP-3-7), not a zero time. */
  s.valid_until = NULL;
  n = controlplane__v1__worker_snapshot__pack(&s, buf);
  Controlplane__V1__WorkerSnapshot *m =
      controlplane__v1__worker_snapshot__unpack(NULL, n, buf);
  ok(m && m->valid_until == NULL,
     "CP-3-7: a missing valid_until is visible as absent");
  controlplane__v1__worker_snapshot__free_unpacked(m, NULL);
  free(buf);
}

static void test_unknown_enum(void) {
  /* AcknowledgeSnapshotRequest.result = 9: field 6, varint 9. */
  const uint8_t wire[] = {0x30, 0x09};
  Controlplane__V1__AcknowledgeSnapshotRequest *a =
      controlplane__v1__acknowledge_snapshot_request__unpack(NULL, sizeof wire,
                                                             wire);
  ok(a && (int)a->result == 9,
     "CP-7-3: an enum value from a newer sender decodes as its number");
  ok(a && a->result != CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED &&
         a->result != CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_REJECTED,
     "CP-7-3: and is neither value this build knows, so it is rejected");
  controlplane__v1__acknowledge_snapshot_request__free_unpacked(a, NULL);
  const uint8_t junk[] = {0x0a, 0xff, 0x01};
  ok(!controlplane__v1__worker_snapshot__unpack(NULL, sizeof junk, junk),
     "a truncated message is refused by the decoder");
}

int main(void) {
  plan_lazy();
  test_services();
  test_snapshot_roundtrip();
  test_unknown_enum();
  return done_testing();
}

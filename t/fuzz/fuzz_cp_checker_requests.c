/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the controller's CheckerControlPlane request checks
 * (modules/controlplane_server/cp_checker_requests.c, issue 26) on
 * whatever bytes a peer sends, decoded as the controller does
 * (cp_request_unpack). The contract of cp_checker_requests.h: a refusal
 * is a documented status with a static printable message; a pass means
 * the ids are well formed and the certificate's checker is the
 * message's, max_concurrency within its bound and the tier mask within
 * the known tiers (never empty), every observation's enums known and its
 * strings bounded; the verdict is deterministic. Input byte 0 picks the
 * RPC (0 RegisterChecker, 1 WatchCheckTasks, 2 ReportObservations), byte 1
 * bit 0 the caller (certificate "k1" or plaintext) and its other bits
 * max_concurrency's bound and the batch number in the call; the rest is
 * the message. */
#define FUZZ_NAME "fuzz_cp_checker_requests"
#include "fuzz_cp_check.h"
#include "controlplane_server/cp_checker_requests.h"

static void register_checker(const uint8_t *msg, size_t n, const cp_caller *c,
                             uint32_t bound) {
  Controlplane__V1__RegisterCheckerRequest *r =
      unpack(&controlplane__v1__register_checker_request__descriptor, msg, n);
  if (!r)
    return;
  uint32_t t1 = 0, t2 = 0;
  const char *why = NULL, *why2 = NULL;
  int rc = cp_check_register_checker(r, c, bound, &t1, &why);
  int rc2 = cp_check_register_checker(r, c, bound, &t2, &why2);
  CHECK(rc == rc2 && why == why2);
  check_verdict(rc, why);
  if (rc == 0) {
    check_caller_id(r->checker_id, c);
    CHECK(strcmp(r->cluster_id, "c1") == 0);
    CHECK(r->max_concurrency >= 1 && r->max_concurrency <= bound);
    CHECK(t1 == t2 && t1 && (t1 & ~CP_TIERS_ALL) == 0);
  }
  controlplane__v1__register_checker_request__free_unpacked(r, NULL);
}

static void watch(const uint8_t *msg, size_t n, const cp_caller *c) {
  Controlplane__V1__WatchCheckTasksRequest *r =
      unpack(&controlplane__v1__watch_check_tasks_request__descriptor, msg, n);
  if (!r)
    return;
  const char *why = NULL;
  int rc = cp_check_watch_tasks(r, c, &why);
  check_verdict(rc, why);
  if (rc == 0) {
    check_caller_id(r->checker_id, c);
    CHECK(cp_id_ok(r->session_id));
  }
  controlplane__v1__watch_check_tasks_request__free_unpacked(r, NULL);
}

static void observations(const uint8_t *msg, size_t n, const cp_caller *c,
                         uint32_t nth) {
  Controlplane__V1__ReportObservationsRequest *r = unpack(
      &controlplane__v1__report_observations_request__descriptor, msg, n);
  if (!r)
    return;
  const char *why = NULL, *why2 = NULL;
  int rc = cp_check_observations(r, NULL, c, nth, &why);
  int rc2 = cp_check_observations(r, r, c, nth, &why2);
  CHECK(rc == rc2 && why == why2); /* the same first: the same verdict */
  check_verdict(rc, why);
  if (rc == 0) {
    check_caller_id(r->checker_id, c);
    CHECK(r->sequence > 0 && nth <= CP_OBSERVATION_BATCHES_PER_CALL);
    CHECK(r->n_observations <= CP_OBSERVATIONS_PER_BATCH_MAX);
    for (size_t i = 0; i < r->n_observations; i++) {
      const Controlplane__V1__HealthObservation *o = r->observations[i];
      CHECK(cp_id_ok(o->task_id) && cp_id_ok(o->proxy_id));
      CHECK(o->tier >= 1 && o->tier <= 3 && o->status >= 1 && o->status <= 4);
      CHECK(strlen(o->egress_ip) <= 64 && strlen(o->reason) <= 64);
    }
  }
  controlplane__v1__report_observations_request__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 2)
    return 0;
  cp_caller c = {.peer_id = (data[1] & 1) ? "k1" : NULL, .cluster_id = "c1"};
  uint32_t v = data[1] >> 1;
  const uint8_t *msg = data + 2;
  size_t n = size - 2;
  switch (data[0] % 3) {
  case 0:
    register_checker(msg, n, &c, v ? v : 1);
    break;
  case 1:
    watch(msg, n, &c);
    break;
  default:
    observations(msg, n, &c, (v % 20) + 1);
    break;
  }
  return 0;
}

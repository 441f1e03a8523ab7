/* SPDX-License-Identifier: BSD-2-Clause */
/* The control-plane clients' common reads (cp_wire.h, issue 25): one
 * acknowledgement reader serves every response type that carries
 * acknowledged_sequence (the checker's ReportObservationsResponse, the
 * gateway's ReportOutcomesResponse), refuses bytes that are not such a
 * message and a type without the field; and the id check both clients
 * apply to what the controller hands out. */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cp_common/snapshot/cp_wire.h"
#include "tap.h"

static void test_ack(void) {
  uint8_t buf[64];
  Controlplane__V1__ReportOutcomesResponse o;
  controlplane__v1__report_outcomes_response__init(&o);
  o.acknowledged_sequence = 42;
  size_t n = controlplane__v1__report_outcomes_response__pack(&o, buf);
  uint64_t acked = 7;
  is_int(cp_wire_read_ack(&controlplane__v1__report_outcomes_response__descriptor,
                          buf, n, &acked),
         PH_OK, "an outcomes acknowledgement is read");
  ok(acked == 42, "its acknowledged_sequence (42)");

  Controlplane__V1__ReportObservationsResponse b;
  controlplane__v1__report_observations_response__init(&b);
  b.acknowledged_sequence = UINT64_MAX;
  n = controlplane__v1__report_observations_response__pack(&b, buf);
  is_int(cp_wire_read_ack(
             &controlplane__v1__report_observations_response__descriptor, buf,
             n, &acked),
         PH_OK, "an observations acknowledgement is read by the same code");
  ok(acked == UINT64_MAX, "its acknowledged_sequence (the largest)");

  is_int(cp_wire_read_ack(&controlplane__v1__report_outcomes_response__descriptor,
                          buf, 0, &acked),
         PH_OK, "no bytes: a message with every field at its default");
  ok(acked == 0, "acknowledging nothing (0)");

  static const uint8_t junk[] = {0x08, 0xff, 0xff};
  acked = 9;
  is_int(cp_wire_read_ack(&controlplane__v1__report_outcomes_response__descriptor,
                          junk, sizeof(junk), &acked),
         PH_EINVAL, "a truncated varint is refused");
  ok(acked == 0, "and leaves 0");
  acked = 9;
  is_int(cp_wire_read_ack(
             &controlplane__v1__register_worker_response__descriptor, buf, 0,
             &acked),
         PH_EINVAL, "a type without acknowledged_sequence is refused");
  ok(acked == 0, "and leaves 0");
}

static void test_printable(void) {
  ok(cp_wire_printable("s-1.a", 8), "printable ASCII is an id");
  ok(cp_wire_printable("12345678", 8), "up to max bytes");
  ok(!cp_wire_printable("123456789", 8), "not one more");
  ok(!cp_wire_printable("", 8), "not empty");
  ok(!cp_wire_printable(NULL, 8), "not NULL");
  ok(!cp_wire_printable("a b", 8), "not with a space");
  ok(!cp_wire_printable("a\x7f", 8), "not with DEL");
  ok(!cp_wire_printable("\xc3\xa9", 8), "not with a byte above 0x7e");
}

int main(void) {
  plan_lazy();
  test_ack();
  test_printable();
  return done_testing();
}

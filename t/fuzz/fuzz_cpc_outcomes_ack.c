/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the gateway's reading of a ReportOutcomesResponse from the
 * controller (modules/controlplane_client/cpc_wire.c,
 * cpc_read_outcomes_ack), the acknowledgement outcome_reporter frees its
 * batches by. The input is the message's bytes. It checks that the
 * verdict and the sequence are deterministic, that a refusal leaves 0,
 * and that an accepted answer's sequence is the one protobuf-c's own
 * reading gives, packed again and read back the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "controlplane_client/cpc_wire.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_cpc_outcomes_ack: %s\n", #c);                      \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  uint64_t a = 1, b = 2;
  int ra = cpc_read_outcomes_ack(data, size, &a);
  int rb = cpc_read_outcomes_ack(data, size, &b);
  CHECK(ra == rb && a == b);
  CHECK(ra == PH_OK || ra == PH_EINVAL);
  if (ra != PH_OK) {
    CHECK(a == 0);
    return 0;
  }
  Controlplane__V1__ReportOutcomesResponse m =
      CONTROLPLANE__V1__REPORT_OUTCOMES_RESPONSE__INIT;
  m.acknowledged_sequence = a;
  uint8_t buf[16];
  size_t n = controlplane__v1__report_outcomes_response__get_packed_size(&m);
  CHECK(n <= sizeof(buf));
  controlplane__v1__report_outcomes_response__pack(&m, buf);
  uint64_t c = 3;
  CHECK(cpc_read_outcomes_ack(buf, n, &c) == PH_OK && c == a);
  return 0;
}

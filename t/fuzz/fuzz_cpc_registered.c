/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the gateway's reading of a RegisterWorkerResponse from the
 * controller (modules/controlplane_client/cpc_wire.c,
 * cpc_read_registered). The input is the message's bytes. It checks that
 * the verdict is deterministic; that a refusal has a reason; and that an
 * accepted answer has a NUL-terminated session id of 1..PH_POOL_ID_MAX
 * visible ASCII bytes and a runtime interval and a max stale age above
 * zero (a session the supervisor can run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "controlplane_client/cpc_wire.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_cpc_registered: %s\n", #c);                        \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  cpc_registered a, b;
  const char *wa = NULL, *wb = NULL;
  int ra = cpc_read_registered(data, size, &a, &wa);
  int rb = cpc_read_registered(data, size, &b, &wb);
  CHECK(ra == rb);
  CHECK(ra == PH_OK || ra == PH_EINVAL);
  if (ra != PH_OK) {
    CHECK(wa && *wa && wa == wb);
    return 0;
  }
  CHECK(memcmp(&a, &b, sizeof(a)) == 0);
  size_t n = strnlen(a.session_id, sizeof(a.session_id));
  CHECK(n >= 1 && n <= PH_POOL_ID_MAX);
  for (size_t i = 0; i < n; i++)
    CHECK(a.session_id[i] > 0x20 && a.session_id[i] < 0x7f);
  CHECK(a.runtime_interval_ms > 0 && a.max_stale_ms > 0);
  return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the gateway's reading of revoke_proxy_ids in a
 * ReportRuntimeResponse from the controller (modules/controlplane_client/
 * cpc_wire.c, cpc_read_revokes), the drain hints it hands to the pool
 * (CP-4-7). The input is the message's bytes. It checks that the ids
 * handed on are well-formed (1..128 printable bytes), at most as many as
 * the message holds, and that the reading is deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "controlplane_client/cpc_wire.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_cpc_revokes: %s\n", #c);                           \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

typedef struct seen {
  size_t calls, n;
  unsigned long sum;
} seen;

static void take(void *arg, const char *const *ids, size_t n) {
  seen *s = arg;
  s->calls++;
  s->n += n;
  CHECK(n > 0);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(ids[i]);
    CHECK(len >= 1 && len <= 128);
    for (size_t k = 0; k < len; k++) {
      CHECK((unsigned char)ids[i][k] > 0x20 && (unsigned char)ids[i][k] < 0x7f);
      s->sum += (unsigned char)ids[i][k];
    }
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  seen a = {0}, b = {0};
  int ra = cpc_read_revokes(data, size, take, &a);
  int rb = cpc_read_revokes(data, size, take, &b);
  CHECK(ra == rb && a.calls == b.calls && a.n == b.n && a.sum == b.sum);
  CHECK(ra == PH_OK || ra == PH_EINVAL || ra == PH_ENOMEM);
  CHECK(a.calls <= 1);
  if (ra == PH_EINVAL)
    CHECK(a.calls == 0);
  Controlplane__V1__ReportRuntimeResponse *r =
      controlplane__v1__report_runtime_response__unpack(NULL, size, data);
  CHECK((r != NULL) == (ra != PH_EINVAL));
  if (r) {
    CHECK(a.n <= r->n_revoke_proxy_ids);
    controlplane__v1__report_runtime_response__free_unpacked(r, NULL);
  }
  return 0;
}

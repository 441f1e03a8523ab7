/* SPDX-License-Identifier: BSD-2-Clause */
/* What the controller's request-check fuzz targets share
 * (fuzz_cp_requests.c, fuzz_cp_checker_requests.c): CHECK (abort with
 * the target's name, FUZZ_NAME), the contract of a refusal, the caller's
 * id against its certificate, and the controller's decoding. */
#ifndef FUZZ_CP_CHECK_H
#define FUZZ_CP_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contracts/cp_status.h"
#include "controlplane_server/cp_requests.h"

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, FUZZ_NAME ": %s\n", #c);                            \
      abort();                                                            \
    }                                                                     \
  } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* A refusal is a documented code with a printable static message. */
static inline void check_verdict(int rc, const char *why) {
  if (rc == 0)
    return;
  CHECK(rc == CP_GRPC_INVALID_ARGUMENT || rc == CP_GRPC_PERMISSION_DENIED ||
        rc == CP_GRPC_FAILED_PRECONDITION || rc == CP_GRPC_RESOURCE_EXHAUSTED);
  CHECK(why && *why);
  for (const char *p = why; *p; p++)
    CHECK(*p >= 0x20 && *p < 0x7f);
}

/* A passed id is well formed and the certificate's. */
static inline void check_caller_id(const char *id, const cp_caller *c) {
  CHECK(cp_id_ok(id));
  if (c->peer_id)
    CHECK(strcmp(id, c->peer_id) == 0);
}

/* The controller's decoding: a refusal is INVALID_ARGUMENT with a static
 * message, and whatever it accepts protobuf-c accepts too. */
static inline void *unpack(const ProtobufCMessageDescriptor *d,
                           const uint8_t *msg, size_t n) {
  const char *why = NULL;
  int st = -1;
  void *q = cp_request_unpack(d, msg, n, &st, &why);
  if (!q) {
    CHECK(st == CP_GRPC_INVALID_ARGUMENT);
    check_verdict(st, why);
  } else {
    CHECK(st == 0);
  }
  return q;
}

#endif

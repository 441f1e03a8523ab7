/* SPDX-License-Identifier: BSD-2-Clause */
/* gRPC status codes by name, for the control plane's pure code and the
 * users of cp_grpc.h (the values of grpc/status.h, which only the gRPC
 * layer includes). */
#ifndef PH_CP_STATUS_H
#define PH_CP_STATUS_H

#include <string.h>

enum {
  CP_GRPC_OK = 0,
  CP_GRPC_CANCELLED = 1,
  CP_GRPC_UNKNOWN = 2,
  CP_GRPC_INVALID_ARGUMENT = 3,
  CP_GRPC_DEADLINE_EXCEEDED = 4,
  CP_GRPC_NOT_FOUND = 5,
  CP_GRPC_ALREADY_EXISTS = 6,
  CP_GRPC_PERMISSION_DENIED = 7,
  CP_GRPC_RESOURCE_EXHAUSTED = 8,
  CP_GRPC_FAILED_PRECONDITION = 9,
  CP_GRPC_ABORTED = 10,
  CP_GRPC_OUT_OF_RANGE = 11,
  CP_GRPC_UNIMPLEMENTED = 12,
  CP_GRPC_INTERNAL = 13,
  CP_GRPC_UNAVAILABLE = 14,
  CP_GRPC_DATA_LOSS = 15,
  CP_GRPC_UNAUTHENTICATED = 16
};
#define CP_GRPC_STATUS_COUNT 17

/* The codes' names in code order, lower case (the "status" label of the
 * control plane's metrics and the gRPC status of its log lines): for
 * `static const char *const names[] = {CP_GRPC_STATUS_NAMES, NULL};`. */
#define CP_GRPC_STATUS_NAMES                                                 \
  "ok", "cancelled", "unknown", "invalid_argument", "deadline_exceeded",     \
      "not_found", "already_exists", "permission_denied",                    \
      "resource_exhausted", "failed_precondition", "aborted",                \
      "out_of_range", "unimplemented", "internal", "unavailable",            \
      "data_loss", "unauthenticated"

/* The status message of the one FAILED_PRECONDITION that leaves a session
 * intact: an ACK or a runtime report whose ownership epoch is below the
 * current one (CP-2-6). Every ownership change raises the cluster's
 * epoch, so any worker may meet it until it has ACKed the snapshot the
 * controller sends it next; it waits for that snapshot instead of
 * registering again (issue 23 item 2). The controller sends exactly this
 * sentence; the gateway compares it whole. */
#define CP_STATUS_MSG_STALE_EPOCH "ownership epoch below the current one"

/* 1 when (code, msg) is that stale-epoch refusal. */
static inline int cp_status_stale_epoch(int code, const char *msg) {
  return code == CP_GRPC_FAILED_PRECONDITION && msg &&
         strcmp(msg, CP_STATUS_MSG_STALE_EPOCH) == 0;
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* gRPC status codes by name, for the control plane's pure code and the
 * users of cp_grpc.h (the values of grpc/status.h, which only the gRPC
 * layer includes). */
#ifndef PH_CP_STATUS_H
#define PH_CP_STATUS_H

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

#endif

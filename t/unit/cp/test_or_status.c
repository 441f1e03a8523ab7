/* SPDX-License-Identifier: BSD-2-Clause */
/* outcome_reporter's status classes: which ReportOutcomes answers are
 * retried in the session (CP-5-16) and which are the session fence's,
 * handed to the supervisor (CP-5-17). */
#include <stdio.h>

#include "contracts/cp_status.h"
#include "cp_common/view/or_status.h"
#include "tap.h"

static char name_[128];
#define NAMED(...) (snprintf(name_, sizeof(name_), __VA_ARGS__), name_)

int main(void) {
  plan_lazy();
  ok(or_status_classify(CP_GRPC_OK) == OR_DONE, "OK frees what is acknowledged");
  int retry[] = {CP_GRPC_UNAVAILABLE, CP_GRPC_DEADLINE_EXCEEDED,
                 CP_GRPC_RESOURCE_EXHAUSTED, CP_GRPC_CANCELLED,
                 CP_GRPC_INTERNAL, CP_GRPC_UNKNOWN};
  for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++)
    ok(or_status_classify(retry[i]) == OR_RETRY,
       NAMED("CP-5-16 status %d is transient: retried in the session",
             retry[i]));
  int fence[] = {CP_GRPC_FAILED_PRECONDITION, CP_GRPC_ABORTED,
                 CP_GRPC_ALREADY_EXISTS, CP_GRPC_INVALID_ARGUMENT,
                 CP_GRPC_PERMISSION_DENIED, CP_GRPC_UNAUTHENTICATED,
                 CP_GRPC_UNIMPLEMENTED};
  for (size_t i = 0; i < sizeof(fence) / sizeof(fence[0]); i++)
    ok(or_status_classify(fence[i]) == OR_FENCE,
       NAMED("CP-5-17 status %d is the fence's: handed to the supervisor",
             fence[i]));
  return done_testing();
}

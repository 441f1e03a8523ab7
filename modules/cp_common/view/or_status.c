/* SPDX-License-Identifier: BSD-2-Clause */
/* The status classes of a fenced report call (or_status.h): the
 * gateway's outcome batches and the checker's observation batches. */
#include "contracts/cp_status.h"
#include "cp_common/view/or_status.h"

or_status_class or_status_classify(int code) {
  switch (code) {
  case CP_GRPC_OK:
    return OR_DONE;
  case CP_GRPC_FAILED_PRECONDITION:
  case CP_GRPC_ABORTED:
  case CP_GRPC_ALREADY_EXISTS:
  case CP_GRPC_INVALID_ARGUMENT:
  case CP_GRPC_PERMISSION_DENIED:
  case CP_GRPC_UNAUTHENTICATED:
  case CP_GRPC_UNIMPLEMENTED:
    return OR_FENCE;
  default:
    return OR_RETRY;
  }
}

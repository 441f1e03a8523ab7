/* SPDX-License-Identifier: BSD-2-Clause */
/* A failed open's verdict (chk_dial.h). */
#include <proxyhost/connector.h>

#include "chk_dial.h"
#include "chk_probe.h"

static void set(int *status, int *reason, int s, int r) {
  *status = s;
  *reason = r;
}

void chk_dial_verdict(int stage, int code, int retryable, int *status,
                      int *reason) {
  if (code == PH_OPEN_INTERNAL_ERROR || stage == PH_STAGE_QUEUE) {
    set(status, reason, CHK_CHECKER_ERROR, CHK_R_NO_RESOURCES);
    return;
  }
  if (stage == PH_STAGE_DNS) {
    if (code == PH_OPEN_HOST_UNREACHABLE && !retryable)
      set(status, reason, CHK_FAILED, CHK_R_UNRESOLVED);
    else
      set(status, reason, CHK_CHECKER_ERROR, CHK_R_RESOLVER);
    return;
  }
  if (stage == PH_STAGE_POLICY || code == PH_OPEN_FORBIDDEN) {
    set(status, reason, CHK_CHECKER_ERROR, CHK_R_FORBIDDEN);
    return;
  }
  switch (code) {
  case PH_OPEN_CONNECTION_REFUSED:
    set(status, reason, CHK_FAILED, CHK_R_DIAL_REFUSED);
    break;
  case PH_OPEN_HOST_UNREACHABLE:
  case PH_OPEN_NETWORK_UNREACHABLE:
    set(status, reason, CHK_FAILED, CHK_R_DIAL_UNREACHABLE);
    break;
  case PH_OPEN_TIMEOUT:
    set(status, reason, CHK_TIMEOUT, CHK_R_DIAL_TIMEOUT);
    break;
  default:
    set(status, reason, CHK_FAILED, CHK_R_DIAL_FAILED);
    break;
  }
}

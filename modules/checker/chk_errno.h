/* SPDX-License-Identifier: BSD-2-Clause */
/* A failed connect(2) that is the checker's own (issue 26: a checker
 * under overload is never a verdict on the proxy): its host out of local
 * ports (EADDRNOTAVAIL), buffers, memory or descriptors. The probe makes
 * such a failure CHECKER_ERROR no_resources instead of FAILED dial_failed.
 * Pure; includes nothing of the checker's (chk_probe.c includes it). */
#ifndef PH_CHK_ERRNO_H
#define PH_CHK_ERRNO_H

#include <errno.h>

static inline int chk_errno_local(int err) {
  switch (err) {
  case EADDRNOTAVAIL:
  case EAGAIN:
  case ENOBUFS:
  case ENOMEM:
  case EMFILE:
  case ENFILE:
    return 1;
  default:
    return 0;
  }
}

#endif

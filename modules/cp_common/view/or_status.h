/* SPDX-License-Identifier: BSD-2-Clause */
/* What a fenced report call's final status means (CP-5-15..17): the
 * gateway's ReportOutcomes (outcome_reporter) and the checker's
 * ReportObservations (issue 26) classify it alike. Pure. */
#ifndef PH_OR_STATUS_H
#define PH_OR_STATUS_H

typedef enum or_status_class {
  OR_DONE = 0, /* OK: free what the answer acknowledges */
  OR_RETRY,    /* transient: the same batches again, after a jittered,
                  capped backoff, in the same session (CP-5-16) */
  OR_FENCE     /* the session's fence refused: handed to the supervisor
                  (CP-5-17); nothing more is sent in this session */
} or_status_class;

/* FAILED_PRECONDITION (stale or replaced session), ABORTED (a smaller
 * sequence), ALREADY_EXISTS (the same sequence with other content),
 * INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED and UNIMPLEMENTED
 * are the fence's or the protocol's refusals: resending cannot succeed.
 * Everything else (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
 * CANCELLED by the transport, INTERNAL, UNKNOWN, ...) is transient. */
or_status_class or_status_classify(int code);

#endif

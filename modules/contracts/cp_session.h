/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * "cp.session" 1.0: controlplane_client's private service for the other
 * gateway modules that speak to the controller inside its session (today
 * outcome_reporter). Not SDK: the header is in-tree only, and the service
 * is functions implemented inside controlplane_client, so no cp_grpc
 * object (channel, call, completion queue) is ever shared between
 * modules; the caller hands bytes and gets bytes' results.
 *
 * Get it at start with service_get_named(ctx, CP_SESSION_SERVICE,
 * provider, CP_SESSION_MAJOR, 0, &self). Every function: loop thread only.
 *
 * Generations: every session the controller registers gets a new
 * generation number (1, 2, ...; 0 is "no session yet"). A call or a
 * failure names the generation it belongs to; an old one is refused or
 * ignored, so nothing of a previous session can touch the current one
 * (the controller fences outcomes per session, CP-5-18).
 *
 * Running: the session is running once the controller accepted its first
 * positive snapshot ACK (CP-2-4: outcomes flow only then), until it ends
 * (a failure, the backoff, a fatal answer, the module's stop).
 */
#ifndef PH_CP_SESSION_H
#define PH_CP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#define CP_SESSION_SERVICE "cp.session"
#define CP_SESSION_MAJOR 1
#define CP_SESSION_MINOR 0

/* At most this many messages in one ReportOutcomes call (CP-5-9). */
#define CP_SESSION_OUTCOME_MSGS_MAX 16u
/* Outcome calls in flight at once, over every user. */
#define CP_SESSION_OUTCOME_CALLS_MAX 4u

typedef struct cp_session_info {
  uint64_t generation; /* 0: no session was ever registered */
  int running;         /* 1: after the first accepted ACK (CP-2-4) */
  uint32_t max_runtime_counters; /* RegisterWorkerResponse's (CP-5-8) */
  char worker_id[PH_POOL_ID_MAX + 1];
  char session_id[PH_POOL_ID_MAX + 1]; /* "" without a session */
} cp_session_info;

/* The end of one ReportOutcomes call: on the loop, never from inside
 * report_outcomes or cancel. status is the gRPC status (cp_status.h);
 * with CP_GRPC_OK, acknowledged_sequence is the response's. A call of a
 * session that ended (or of a module that stops) ends CP_GRPC_CANCELLED,
 * whatever the wire said. */
typedef void (*cp_session_outcomes_fn)(void *arg, int status,
                                       uint64_t acknowledged_sequence);

typedef struct cp_session_v1 {
  /* The current session, copied into *out. */
  void (*current)(void *self, cp_session_info *out);
  /* One client-streaming ReportOutcomes call on the client's own channel
   * for session `generation`: msgs[0..n-1] (lens[i] bytes each, packed
   * ReportOutcomesRequest messages, in order; 1..16 of them) are copied
   * and sent one after the other, then the stream is half-closed and
   * done(arg, ...) gets the answer. timeout_ms > 0 is the call's
   * deadline. A call id > 0, or: PH_ESTATE when generation is not the
   * current, running session; PH_EINVAL for a bad argument; PH_EBUSY
   * when CP_SESSION_OUTCOME_CALLS_MAX calls are in flight; PH_ENOMEM. */
  int64_t (*report_outcomes)(void *self, uint64_t generation,
                             const uint8_t *const *msgs, const size_t *lens,
                             uint32_t n, int64_t timeout_ms,
                             cp_session_outcomes_fn done, void *arg);
  /* Cancels call id without a callback (the caller is going away). An
   * unknown or finished id is ignored. */
  void (*cancel)(void *self, int64_t id);
  /* The caller saw a session-fence error (CP-5-17: FAILED_PRECONDITION,
   * ABORTED, ALREADY_EXISTS, INVALID_ARGUMENT, PERMISSION_DENIED): the
   * client hands it to its supervisor as the outcome call's failure (a
   * new session, or fatal). Ignored for a generation that is not the
   * current one (that session is over already). */
  void (*fence_failed)(void *self, uint64_t generation, int status);
} cp_session_v1;

#endif

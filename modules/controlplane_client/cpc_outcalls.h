/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's ReportOutcomes calls, made for "cp.session"'s
 * users (cp_session.h): each one a client stream of the caller's packed
 * batches on the client's own channel, its answer handed back as a
 * status and an acknowledged sequence. Bounded: at most
 * CP_SESSION_OUTCOME_CALLS_MAX in flight. Loop thread only. */
#ifndef PH_CPC_OUTCALLS_H
#define PH_CPC_OUTCALLS_H

#include <stddef.h>
#include <stdint.h>

#include "cp_common/grpc/cp_grpc.h"
#include "contracts/cp_session.h"
#include "lib/ilist.h"

typedef struct cpc_outcall cpc_outcall;

typedef struct cpc_outcalls {
  ilist calls; /* cpc_outcall, newest first; ilist_len the calls open */
  int64_t next_id;
  uint64_t live_gen; /* calls of another generation end CANCELLED */
  /* Called with each call's final status (the rpc metric). */
  void (*count)(void *arg, int status);
  void *count_arg;
} cpc_outcalls;

/* An empty set (before anything else; count and count_arg are the
 * caller's to set). */
void cpc_outcalls_init(cpc_outcalls *oc);

/* Starts one call (cp_session_v1.report_outcomes' contract, the
 * generation check excepted: the caller did it and set live_gen). */
int64_t cpc_outcalls_start(cpc_outcalls *oc, cp_grpc_channel *ch,
                           uint64_t gen, const uint8_t *const *msgs,
                           const size_t *lens, uint32_t n, int64_t timeout_ms,
                           cp_session_outcomes_fn done, void *arg);

/* No callback for id any more; the call is cancelled. */
void cpc_outcalls_cancel(cpc_outcalls *oc, int64_t id);

/* The session ended: every call is cancelled, and its callback gets
 * CANCELLED when gRPC reports the end (later, on the loop). */
void cpc_outcalls_end_session(cpc_outcalls *oc);

/* The module stops, before its channel is freed (which calls back no
 * more): every remaining callback runs now with CANCELLED and every call
 * is freed. */
void cpc_outcalls_stop(cpc_outcalls *oc);

#endif

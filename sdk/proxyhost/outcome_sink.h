/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "outcome.sink" service (ABI 1.4): where the gateway's
 * data path hands one outcome, the result of one attempt through one
 * upstream proxy at one stage, to be reported to the
 * controller. The `outcome_reporter` module provides it: a bounded queue
 * cut into batches and sent with ReportOutcomes; the pool's
 * dispatch calls it.
 *
 * Service name "outcome.sink", major 1 (PH_OUTCOME_SINK_MAJOR). Get it at
 * start with service_get_named(ctx, PH_OUTCOME_SINK_SERVICE, provider,
 * PH_OUTCOME_SINK_MAJOR, 0, &self) (provider NULL or "": the only one).
 *
 * Thread: record() on the loop thread only (the provider's queue has no
 * lock).
 *
 * Ownership: record() copies everything it keeps (the strings included)
 * before it returns; the caller's ph_outcome and its strings may be
 * reused at once. Nothing is borrowed.
 *
 * The hot path's guarantee: record() never blocks, never allocates and
 * never performs I/O; it takes constant time. A full queue drops the new
 * outcome and counts it: an outcome is an observation,
 * and losing some under overload is preferred to slowing traffic.
 *
 * What a record is not: a per-request log. Outcomes feed the controller's
 * health counters; the controller keeps no raw outcome.
 * Put no client data (host names, paths, credentials) in rule_id or
 * proxy_id: they are the snapshot's identifiers.
 */
#ifndef PROXYHOST_OUTCOME_SINK_H
#define PROXYHOST_OUTCOME_SINK_H

#include <stdint.h>

#define PH_OUTCOME_SINK_SERVICE "outcome.sink"
#define PH_OUTCOME_SINK_MAJOR 1
#define PH_OUTCOME_SINK_MINOR 0

/* The stage an attempt reached (numbered as controlplane.v1.OutcomeStage;
 * 0 is not a stage and is refused). */
typedef enum ph_outcome_stage {
  PH_OUTCOME_STAGE_DIAL = 1,             /* connecting to the proxy */
  PH_OUTCOME_STAGE_PROXY_HANDSHAKE = 2,  /* CONNECT or SOCKS */
  PH_OUTCOME_STAGE_RESPONSE_HEADERS = 3, /* before the target's
                                            headers */
  PH_OUTCOME_STAGE_TUNNEL = 4            /* after the tunnel was up */
} ph_outcome_stage;

/* How it ended (numbered as controlplane.v1.OutcomeResult; 0 refused). */
typedef enum ph_outcome_result {
  PH_OUTCOME_SUCCESS = 1,
  PH_OUTCOME_FAILURE = 2,
  PH_OUTCOME_TIMEOUT = 3
} ph_outcome_result;

/* Bounds of a record (PH_POOL_ID_MAX of pool_store.h). */
#define PH_OUTCOME_ID_MAX 128

/* One outcome. */
typedef struct ph_outcome {
  uint32_t proxy_index;   /* the proxy's index in the pool.view it was
                             picked from (the gateway's own use; not sent) */
  const char *proxy_id;   /* required: 1..PH_OUTCOME_ID_MAX bytes, the
                             view's proxy_id */
  const char *rule_id;    /* the rule that chose it: NULL or "" for none,
                             else 1..PH_OUTCOME_ID_MAX bytes */
  int stage;              /* ph_outcome_stage */
  int result;             /* ph_outcome_result */
  int64_t latency_us;     /* the stage's duration, microseconds, >= 0 */
  int64_t observed_at_ms; /* when it ended: Unix ms (UTC), > 0 */
} ph_outcome;

typedef struct ph_outcome_sink_v1 {
  /* Queues a copy of *o. Loop thread; never blocks, never allocates.
   * PH_OK: queued. PH_EFULL: the queue is full; the outcome was dropped
   * and counted (the caller carries on). PH_EINVAL: o is NULL or
   * malformed (an id out of bounds or with bytes the protocol refuses, a
   * stage or result out of range, a negative latency, observed_at_ms
   * <= 0); dropped and counted. */
  int (*record)(void *self, const ph_outcome *o);
} ph_outcome_sink_v1;

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's checks of the CheckerControlPlane requests (issue 26,
 * CP-1-3, CP-6-1, CP-6-2), as cp_requests.h does for workers: field
 * bounds, enum values this build knows, the caller's checker id against
 * its certificate, batch sizes. Pure: no I/O, no allocation. Each returns
 * 0 or a gRPC status with *why a static text that never holds data.
 */
#ifndef PH_CP_CHECKER_REQUESTS_H
#define PH_CP_CHECKER_REQUESTS_H

#include <stdint.h>

#include "cp_requests.h"

/* Observations in one ReportObservations batch, batches in one call
 * (the outcome bounds, CP-5-8, CP-5-9). */
#define CP_OBSERVATIONS_PER_BATCH_MAX 512u
#define CP_OBSERVATION_BATCHES_PER_CALL 16u
/* The tiers as a bit mask: bit t for CheckTier t (BASIC..TARGET). */
#define CP_TIER_BIT(t) (1u << (unsigned)(t))
#define CP_TIERS_ALL                                                           \
  (CP_TIER_BIT(CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC) |               \
   CP_TIER_BIT(CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_EGRESS) |              \
   CP_TIER_BIT(CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET))

/* RegisterChecker: cluster, ids, protocol version, 1 <= max_concurrency
 * <= max_concurrency_max, tiers known (none: every tier). *tiers gets the
 * mask. */
int cp_check_register_checker(const Controlplane__V1__RegisterCheckerRequest *r,
                              const cp_caller *c, uint32_t max_concurrency_max,
                              uint32_t *tiers, const char **why);
int cp_check_watch_tasks(const Controlplane__V1__WatchCheckTasksRequest *r,
                         const cp_caller *c, const char **why);
/* One batch of a ReportObservations stream; first as cp_check_outcomes. */
int cp_check_observations(const Controlplane__V1__ReportObservationsRequest *r,
                          const Controlplane__V1__ReportObservationsRequest *first,
                          const cp_caller *c, uint32_t n_in_call,
                          const char **why);

#endif

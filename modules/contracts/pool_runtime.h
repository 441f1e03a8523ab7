/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * "pool.runtime" 1.0: the pool's private service for controlplane_client
 * (in-tree only, like cp_session.h): the counts ReportRuntime carries and
 * the drain hints its answer brings back.
 *
 * - counters(): the per-proxy counts the worker owns now, as the complete
 *   sparse replacement a runtime report is (CP-2-14): every proxy whose
 *   active or reserved count is not zero, and every proxy that drains
 *   (CP-4-3: marked draining or removed by the snapshot, revoked), with
 *   draining set, even at zero, so that the controller may clear its
 *   ownership (CP-4-4).
 * - revoke(): the ids of ReportRuntimeResponse.revoke_proxy_ids (CP-4-7):
 *   no new reservation on them until the next view, which stays the
 *   authority on ownership.
 *
 * Get it at start with service_get_named(ctx, POOL_RUNTIME_SERVICE, NULL,
 * POOL_RUNTIME_MAJOR, 0, &self); NULL when no pool is loaded (the counts
 * are then all zero). Every function: loop thread only.
 */
#ifndef PH_POOL_RUNTIME_H
#define PH_POOL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#define POOL_RUNTIME_SERVICE "pool.runtime"
#define POOL_RUNTIME_MAJOR 1
#define POOL_RUNTIME_MINOR 0

typedef struct pool_runtime_counter {
  const char *proxy_id; /* valid until the next call into the pool */
  uint32_t active, reserved;
  int draining;
} pool_runtime_counter;

typedef struct pool_runtime_v1 {
  /* Writes at most max counters into out and returns how many there are
   * in all (more than max: the report cannot be complete; the caller
   * sends the first max and counts the rest as missing). */
  uint32_t (*counters)(void *self, pool_runtime_counter *out, uint32_t max,
                       int *worker_draining);
  /* revoke_proxy_ids: n ids (NUL-terminated), copied as needed. */
  void (*revoke)(void *self, const char *const *ids, size_t n);
} pool_runtime_v1;

#endif

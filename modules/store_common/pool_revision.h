/* SPDX-License-Identifier: BSD-2-Clause */
/* What a store knows of pool_revision (pool.store's revision(),
 * sdk/proxyhost/pool_store.h), kept on the loop thread, shared by both
 * stores. The same rules as the authorization revision (az_revision.h)
 * but its own state: a pool revision that cannot be vouched for makes
 * revision() answer PH_ESTATE and nothing else (the authorization side,
 * and the module's readiness, are not the pool's to decide).
 *
 * Unhealthy until the first good read, after a read that found the row
 * missing, a value that does not fit or one below what callers have
 * seen, and once reads have failed for longer than stale_ms. A later
 * good read at or above the last value heals it. */
#ifndef PH_STORE_POOL_REVISION_H
#define PH_STORE_POOL_REVISION_H

#include <stdint.h>

#include <proxyhost/host.h>

#include "az_revision.h" /* az_rev_read, az_rev_track */

/* The authorization revision's rules (az_rev_track) without its metrics
 * and readiness. */
typedef az_rev_track pool_revision;

void pool_revision_init(pool_revision *r, ph_ctx *ctx, const ph_api *api,
                        int64_t stale_ms);
/* One read's outcome; floor is pool_revision.value when it was sent (a
 * value between floor and the current one lost a race and changes
 * nothing). */
void pool_revision_observe(pool_revision *r, az_rev_read what,
                           int64_t value, uint64_t floor);
/* revision(): PH_OK with *out, PH_ESTATE, or PH_EINVAL for a NULL out. */
int pool_revision_get(const pool_revision *r, uint64_t *out);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool revision as a store knows it (pool_revision.h). */
#include "pool_revision.h"

void pool_revision_init(pool_revision *r, ph_ctx *ctx, const ph_api *api,
                        int64_t stale_ms) {
  az_rev_track_init(r, ctx, api, stale_ms);
}

void pool_revision_observe(pool_revision *r, az_rev_read what,
                           int64_t value, uint64_t floor) {
  az_rev_track_observe(r, what, value, floor);
}

int pool_revision_get(const pool_revision *r, uint64_t *out) {
  return az_rev_track_get(r, out);
}

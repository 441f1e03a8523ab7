/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool revision as a store knows it (pool_revision.h). */
#include "pool_revision.h"

#include <string.h>

void pool_revision_init(pool_revision *r, ph_ctx *ctx, const ph_api *api,
                        int64_t stale_ms) {
  memset(r, 0, sizeof(*r));
  r->api = api;
  r->ctx = ctx;
  r->stale_ms = stale_ms;
}

void pool_revision_observe(pool_revision *r, az_rev_read what,
                           int64_t value, uint64_t floor) {
  if (what == AZ_REV_READ_FAILED) {
    r->failing = 1;
    return;
  }
  r->failing = 0;
  if (what == AZ_REV_READ_OK && value > 0 && (uint64_t)value < r->value &&
      (uint64_t)value >= floor)
    return; /* stale, not wrong: a later write's answer came first */
  if (what == AZ_REV_READ_OK && value > 0 && (uint64_t)value >= r->value) {
    r->value = (uint64_t)value;
    r->healthy = 1;
    r->last_ok_ms = r->api->now_ms(r->ctx);
    return;
  }
  r->healthy = 0; /* missing, not fitting, or gone backwards */
}

int pool_revision_get(const pool_revision *r, uint64_t *out) {
  if (!out)
    return PH_EINVAL;
  if (!r->healthy ||
      (r->failing && r->api->now_ms(r->ctx) - r->last_ok_ms > r->stale_ms))
    return PH_ESTATE;
  *out = r->value;
  return PH_OK;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* What a store knows of authorization_revision (TM-P1-20, 26, 29..31),
 * kept on the loop thread, shared by both stores: the last value read,
 * whether it can be vouched for, and the two seed metrics (TM-OBS-7/8).
 *
 * The revision is unhealthy (revision() answers PH_ESTATE, the module is
 * not ready) until the first successful read (TM-P1-26), after a read that
 * found the row missing, a value lower than the last good one or a value
 * that does not fit a positive 63-bit integer (TM-P1-30), and after a
 * failed read once more than stale_ms have passed since the last good one
 * (TM-P1-31). A later read of a value at or above the last good one makes
 * it healthy again, so the value a caller sees never goes down. */
#ifndef PH_STORE_AZ_REVISION_H
#define PH_STORE_AZ_REVISION_H

#include <stdint.h>

#include <proxyhost/host.h>

typedef enum az_rev_read {
  AZ_REV_READ_OK = 0,      /* the row, an integer in 1..INT64_MAX */
  AZ_REV_READ_MISSING = 1, /* no row id = 1 */
  AZ_REV_READ_BAD = 2,     /* a value that does not fit (0, negative, not
                              an integer, overflowed) */
  AZ_REV_READ_FAILED = 3   /* the database did not answer */
} az_rev_read;

/* The rules both revisions keep (the authorization's here, the pool's in
 * pool_revision.h, which is only this): the last good value, and whether
 * it can be vouched for. Loop thread. */
typedef struct az_rev_track {
  const ph_api *api;
  ph_ctx *ctx;
  uint64_t value;    /* the last good value, 0 before the first */
  int healthy;       /* vouched for now (also needs the staleness bound) */
  int failing;       /* the last read failed */
  int64_t last_ok_ms;/* api->now_ms of the last good read */
  int64_t stale_ms;  /* the bound after failed reads */
} az_rev_track;

void az_rev_track_init(az_rev_track *t, ph_ctx *ctx, const ph_api *api,
                       int64_t stale_ms);
/* One read's outcome (floor: as az_revision_observe_at's). 1 when value
 * became the last good value. */
int az_rev_track_observe(az_rev_track *t, az_rev_read what, int64_t value,
                         uint64_t floor);
/* Healthy, and no failed reads for longer than stale_ms. */
int az_rev_track_vouched(const az_rev_track *t);
/* PH_OK with *out, PH_ESTATE when not vouched for, PH_EINVAL (NULL). */
int az_rev_track_get(const az_rev_track *t, uint64_t *out);

typedef struct az_revision {
  az_rev_track t;
  ph_series *m_rev, *m_poll_ok, *m_poll_fail;
} az_revision;

/* Init only (it registers the metrics): PH_OK or PH_EINVAL. The gauge
 * shows 0 until the first good read. */
int az_revision_init(az_revision *r, ph_ctx *ctx, const ph_api *api,
                     int64_t stale_ms);

/* Loop thread: the value to pass as floor to az_revision_observe, taken
 * when the read is sent (its submit). */
static inline uint64_t az_revision_floor(const az_revision *r) {
  return r->t.value;
}

/* Loop thread: the outcome of one read (a poll, or the revision a read
 * or write transaction saw); value is read only for AZ_REV_READ_OK. A
 * value below the last good one went backwards (TM-P1-30). Counts the
 * poll metric when poll is 1. Sets readiness when it changes. Returns 1
 * when the revision is healthy afterwards. Use it when reads are answered
 * in the order they were sent; otherwise az_revision_observe_at. */
int az_revision_observe(az_revision *r, az_rev_read what, int64_t value,
                        int poll);

/* The same for reads that may be answered out of order (several
 * connections): floor is az_revision_floor() from when the read was sent.
 * A value below floor went backwards (the database lost what callers had
 * seen), while one at or above floor but below the current value only
 * lost a race with a later write whose answer came first, and changes
 * nothing. */
int az_revision_observe_at(az_revision *r, az_rev_read what, int64_t value,
                           uint64_t floor, int poll);

/* Loop thread, no I/O: access.h's revision(). */
int az_revision_get(const az_revision *r, uint64_t *out);

#endif

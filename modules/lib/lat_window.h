/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A latency window: durations counted in power-of-two buckets of
 * microseconds, so that a short window (a second of a controller's tick)
 * can say its 95th percentile without keeping the samples. Bucket i holds
 * [2^i, 2^(i+1)) µs (0 and 1 µs in bucket 0); a percentile is answered
 * as its bucket's upper bound, so it is never below the true value and
 * at most twice it. Counts saturate; a window is reset by its owner.
 *
 * Pure, no clock, no allocation; one owner thread. Used by the agent's
 * pool controller (TM-P2-26) and the tunnel session's writer.
 */
#ifndef PH_LAT_WINDOW_H
#define PH_LAT_WINDOW_H

#include <stdint.h>
#include <string.h>

#define LAT_WINDOW_BUCKETS 40 /* up to 2^40 µs: 12 days */

typedef struct lat_window {
  uint32_t n;
  uint32_t b[LAT_WINDOW_BUCKETS];
} lat_window;

static inline void lat_window_reset(lat_window *w) { memset(w, 0, sizeof(*w)); }

static inline void lat_window_add(lat_window *w, uint64_t us) {
  unsigned i = 0;
  while (us > 1 && i < LAT_WINDOW_BUCKETS - 1) {
    us >>= 1;
    i++;
  }
  if (w->n == UINT32_MAX || w->b[i] == UINT32_MAX)
    return;
  w->n++;
  w->b[i]++;
}

/* dst += src (saturating). */
static inline void lat_window_merge(lat_window *dst, const lat_window *src) {
  for (unsigned i = 0; i < LAT_WINDOW_BUCKETS; i++) {
    uint32_t room = UINT32_MAX - dst->b[i];
    dst->b[i] += src->b[i] < room ? src->b[i] : room;
  }
  uint32_t room = UINT32_MAX - dst->n;
  dst->n += src->n < room ? src->n : room;
}

/* The pct-th percentile (1..100) as its bucket's upper bound in µs; 0 for
 * an empty window. */
static inline uint64_t lat_window_pct(const lat_window *w, unsigned pct) {
  if (!w->n)
    return 0;
  if (pct > 100)
    pct = 100;
  /* The rank that must be covered: ceil(n * pct / 100), at least 1. */
  uint64_t need = ((uint64_t)w->n * pct + 99) / 100;
  if (need == 0)
    need = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < LAT_WINDOW_BUCKETS; i++) {
    seen += w->b[i];
    if (seen >= need)
      return (uint64_t)2 << i;
  }
  return (uint64_t)2 << (LAT_WINDOW_BUCKETS - 1);
}

#endif

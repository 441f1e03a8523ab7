/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minute ring: counts of a few keys (a stage and code, a tier and
 * result: the caller numbers them 0..MINUTE_RING_KEYS-1) per minute over
 * the last MINUTE_RING_MINUTES minutes, for the status panels' "recent"
 * tables (issue 28). A slot is reused once its minute left the window;
 * counts saturate. The window is the current minute and the ones before
 * it: window_s = MINUTE_RING_MINUTES * 60 at most.
 *
 * Pure, no clock (the caller passes a monotonic ms), no allocation:
 * MINUTE_RING_MINUTES * MINUTE_RING_KEYS counters, fixed. One owner
 * thread.
 */
#ifndef PH_MINUTE_RING_H
#define PH_MINUTE_RING_H

#include <stdint.h>
#include <string.h>

#define MINUTE_RING_MINUTES 5
#define MINUTE_RING_KEYS 96
#define MINUTE_RING_WINDOW_S (MINUTE_RING_MINUTES * 60)

typedef struct minute_ring {
  int64_t minute[MINUTE_RING_MINUTES]; /* the slot's minute, -1 unused */
  uint32_t c[MINUTE_RING_MINUTES][MINUTE_RING_KEYS];
} minute_ring;

static inline void minute_ring_init(minute_ring *r) {
  memset(r, 0, sizeof(*r));
  for (int i = 0; i < MINUTE_RING_MINUTES; i++)
    r->minute[i] = -1;
}

/* Counts n for key at now_ms (a key out of range, or a time older than
 * what the slot holds now, is ignored). */
static inline void minute_ring_add(minute_ring *r, int64_t now_ms,
                                   unsigned key, uint32_t n) {
  if (key >= MINUTE_RING_KEYS || now_ms < 0)
    return;
  int64_t min = now_ms / 60000;
  int s = (int)(min % MINUTE_RING_MINUTES);
  if (r->minute[s] > min)
    return; /* older than the slot's minute: out of any window now */
  if (r->minute[s] != min) {
    memset(r->c[s], 0, sizeof(r->c[s]));
    r->minute[s] = min;
  }
  uint32_t room = UINT32_MAX - r->c[s][key];
  r->c[s][key] += n < room ? n : room;
}

/* key's count over the window ending at now_ms (saturating). */
static inline uint32_t minute_ring_sum(const minute_ring *r, int64_t now_ms,
                                       unsigned key) {
  if (key >= MINUTE_RING_KEYS || now_ms < 0)
    return 0;
  int64_t min = now_ms / 60000;
  uint64_t sum = 0;
  for (int i = 0; i < MINUTE_RING_MINUTES; i++)
    if (r->minute[i] >= 0 && r->minute[i] <= min &&
        min - r->minute[i] < MINUTE_RING_MINUTES)
      sum += r->c[i][key];
  return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

#endif

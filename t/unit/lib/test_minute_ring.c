/* SPDX-License-Identifier: BSD-2-Clause */
/* The minute ring (modules/lib/minute_ring.h, issue 28): counts per key
 * over the last minutes, old minutes leaving the window, a reused slot
 * starting from zero, keys out of range ignored, saturation. */
#include <stdint.h>

#include "lib/minute_ring.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  minute_ring r;
  minute_ring_init(&r);
  int64_t t0 = 10 * 60000; /* minute 10 */
  is_int((int)minute_ring_sum(&r, t0, 3), 0, "an empty ring: 0");
  minute_ring_add(&r, t0, 3, 2);
  minute_ring_add(&r, t0 + 59999, 3, 1);
  minute_ring_add(&r, t0 + 60000, 3, 4); /* minute 11 */
  minute_ring_add(&r, t0, 4, 7);
  is_int((int)minute_ring_sum(&r, t0 + 60000, 3), 7,
         "two minutes of key 3 add up");
  is_int((int)minute_ring_sum(&r, t0 + 60000, 4), 7, "keys apart");
  is_int((int)minute_ring_sum(&r, t0 + (MINUTE_RING_MINUTES - 1) * 60000, 3),
         7, "the window's oldest minute still counts");
  is_int((int)minute_ring_sum(&r, t0 + MINUTE_RING_MINUTES * 60000, 3), 4,
         "a minute past the window leaves it");
  /* minute 15 reuses minute 10's slot: it starts from zero */
  minute_ring_add(&r, t0 + MINUTE_RING_MINUTES * 60000, 3, 1);
  is_int((int)minute_ring_sum(&r, t0 + MINUTE_RING_MINUTES * 60000, 4), 0,
         "a reused slot drops its old minute's other keys");
  is_int((int)minute_ring_sum(&r, t0 + MINUTE_RING_MINUTES * 60000, 3), 5,
         "and counts the new minute");
  /* a late add for minute 10 (its slot now holds minute 15) */
  minute_ring_add(&r, t0, 3, 100);
  is_int((int)minute_ring_sum(&r, t0 + MINUTE_RING_MINUTES * 60000, 3), 5,
         "a time older than its slot's minute does not wipe the newer one");
  minute_ring_add(&r, t0, MINUTE_RING_KEYS, 9);
  is_int((int)minute_ring_sum(&r, t0, MINUTE_RING_KEYS), 0,
         "a key out of range is ignored");
  minute_ring_add(&r, t0 + 20 * 60000, 1, UINT32_MAX);
  minute_ring_add(&r, t0 + 20 * 60000, 1, 5);
  ok(minute_ring_sum(&r, t0 + 20 * 60000, 1) == UINT32_MAX, "saturates");
  is_int((int)minute_ring_sum(&r, t0 + 40 * 60000, 1), 0,
         "twenty minutes later: nothing");
  return done_testing();
}

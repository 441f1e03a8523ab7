/* SPDX-License-Identifier: BSD-2-Clause */
/* The latency window (modules/lib/lat_window.h): buckets, the percentile
 * as an upper bound never below the true value and at most twice it,
 * merge, saturation, reset. */
#include <stdint.h>
#include <stdio.h>

#include "lib/lat_window.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  lat_window w;
  lat_window_reset(&w);
  is_int((int)lat_window_pct(&w, 95), 0, "an empty window: 0");
  lat_window_add(&w, 0);
  lat_window_add(&w, 1);
  is_int((int)lat_window_pct(&w, 95), 2, "0 and 1 µs: bucket 0, bound 2");
  lat_window_reset(&w);
  for (int i = 0; i < 95; i++)
    lat_window_add(&w, 100); /* bucket 6: [64, 128) */
  for (int i = 0; i < 5; i++)
    lat_window_add(&w, 300000); /* bucket 18: [262144, 524288) */
  is_int((int)lat_window_pct(&w, 95), 128,
         "95 of 100 at 100 µs: p95 is their bucket's bound");
  is_int((int)lat_window_pct(&w, 96), 524288,
         "p96 reaches the slow five's bucket");
  is_int((int)lat_window_pct(&w, 100), 524288, "p100: the slowest bucket");
  lat_window_add(&w, 300000);
  /* 95 of 101 is under 95 %: p95 now needs a slow one */
  is_int((int)lat_window_pct(&w, 95), 524288,
         "one more slow sample moves p95 into the slow bucket");
  for (uint64_t v = 1; v < ((uint64_t)1 << 36); v = v * 3 + 1) {
    lat_window x;
    lat_window_reset(&x);
    lat_window_add(&x, v);
    uint64_t p = lat_window_pct(&x, 95);
    if (!(p > v && p <= 2 * v + 2)) {
      printf("# the bound for %llu is %llu\n", (unsigned long long)v,
             (unsigned long long)p);
      ok(0, "a single sample's bound is above it and at most twice it");
      return done_testing();
    }
  }
  ok(1, "a single sample's bound is above it and at most twice it");
  lat_window big;
  lat_window_reset(&big);
  lat_window_add(&big, UINT64_MAX);
  ok(lat_window_pct(&big, 50) >= ((uint64_t)1 << 39),
     "a huge value lands in the last bucket");
  lat_window a, b;
  lat_window_reset(&a);
  lat_window_reset(&b);
  for (int i = 0; i < 10; i++)
    lat_window_add(&a, 10);
  for (int i = 0; i < 90; i++)
    lat_window_add(&b, 1000);
  lat_window_merge(&a, &b);
  is_int((int)a.n, 100, "merge adds the counts");
  is_int((int)lat_window_pct(&a, 95), 1024, "and the percentile sees both");
  a.n = UINT32_MAX - 1;
  a.b[3] = UINT32_MAX;
  lat_window_add(&a, 10);
  is_int((int)a.b[3], (int)UINT32_MAX, "a full bucket saturates");
  lat_window_merge(&a, &b);
  ok(a.n == UINT32_MAX, "the count saturates in a merge");
  return done_testing();
}

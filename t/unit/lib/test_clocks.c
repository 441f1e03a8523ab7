/* SPDX-License-Identifier: BSD-2-Clause */
/* The clocks (modules/lib/clocks.h): the monotonic readings never go
 * back and agree on their unit; the wall clock is Unix milliseconds. */
#include <stdint.h>
#include <time.h>

#include "lib/clocks.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  int64_t u0 = mono_us(), m0 = mono_ms(), u0b = mono_us();
  int back = 0;
  int64_t prev = u0;
  for (int i = 0; i < 100000; i++) {
    int64_t u = mono_us();
    if (u < prev)
      back++;
    prev = u;
  }
  is_int(back, 0, "mono_us never goes back");
  int64_t m1 = mono_ms();
  ok(m1 >= m0, "mono_ms never goes back");
  ok(u0 / 1000 <= m0 && m0 <= u0b / 1000,
     "mono_ms reads the clock of mono_us, in ms (between two readings)");
  ok(mono_seconds_since(u0) >= 0.0, "seconds since an earlier reading");
  int64_t w = wall_ms();
  time_t s = time(NULL);
  ok(w / 1000 >= (int64_t)s - 1 && w / 1000 <= (int64_t)s + 1,
     "wall_ms is Unix time in milliseconds");
  return done_testing();
}

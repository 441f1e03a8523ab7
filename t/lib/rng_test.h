/* SPDX-License-Identifier: BSD-2-Clause */
/* The seeded random runs of the unit tests: xorshift64 (13, 7, 17) over
 * a state the test seeds, so one seed is one run on every machine and a
 * failure replays. */
#ifndef PH_RNG_TEST_H
#define PH_RNG_TEST_H

#include <stdint.h>

/* The next state of *s (nonzero seed), which is also the number drawn. */
static inline uint64_t rng_test_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A number in 0..n-1 (0 when n is 0). */
static inline uint32_t rng_test_below(uint64_t *s, uint32_t n) {
  uint64_t x = rng_test_next(s);
  return n ? (uint32_t)(x % n) : 0;
}

#endif

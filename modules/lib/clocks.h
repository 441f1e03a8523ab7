/* SPDX-License-Identifier: BSD-2-Clause */
/* The loop side's clocks, one copy for every module.
 *
 * mono_us / mono_ms read CLOCK_MONOTONIC: durations, deadlines and
 * histograms must not jump when an operator or NTP sets the wall clock.
 * (Not CLOCK_MONOTONIC_RAW: slewing keeps it in step with real seconds, and
 * libev's own timers use CLOCK_MONOTONIC.) Its epoch is arbitrary: compare
 * and subtract only, never show or store.
 *
 * wall_ms reads CLOCK_REALTIME as Unix milliseconds: for instants that
 * other processes share (stored timestamps, a controller's deadlines,
 * logs). It can step backwards; never measure a duration with it. */
#ifndef PH_CLOCKS_H
#define PH_CLOCKS_H

#include <stdint.h>
#include <time.h>

static inline int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Seconds (fractional) since a mono_us() reading. */
static inline double mono_seconds_since(int64_t t0_us) {
  return (double)(mono_us() - t0_us) / 1e6;
}

static inline int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Reconnect delays (backoff.h): jittered, bounded exponential backoff.
 * Pure; no computation overflows (the shift is checked first). */
#include "backoff.h"

uint32_t ph_backoff_ms(uint32_t attempt, uint32_t min_ms, uint32_t max_ms,
                       uint32_t rnd) {
  uint32_t d;
  if (min_ms > max_ms)
    min_ms = max_ms;
  /* min_ms << attempt without overflow: saturate at max_ms. */
  if (attempt >= 32 || min_ms > (max_ms >> attempt))
    d = max_ms;
  else
    d = min_ms << attempt;
  /* Uniform in [d/2, d]: the span has d - d/2 + 1 values (in 64 bits, as
   * d may be UINT32_MAX). */
  uint64_t lo = d / 2, span = (uint64_t)d - lo + 1;
  return (uint32_t)(lo + (uint64_t)rnd % span);
}

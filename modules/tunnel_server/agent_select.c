/* SPDX-License-Identifier: BSD-2-Clause */
/* Weighted least connections over an agent's connections (agent_select.h). */
#include "agent_select.h"

uint32_t sel_weight(uint32_t advertised, uint32_t server_limit) {
  uint32_t w = advertised && advertised < server_limit ? advertised
                                                       : server_limit;
  return w ? w : 1;
}

int sel_pick(const sel_cand *c, size_t n, size_t start) {
  int best = -1;
  uint64_t bs = 0, bw = 1;
  for (size_t k = 0; k < n; k++) {
    size_t i = (start + k) % n;
    if (!c[i].can_open)
      continue;
    uint64_t s = c[i].streams, w = c[i].weight ? c[i].weight : 1;
    /* s / w < bs / bw, without division: both sides fit in 64 bits. */
    if (best < 0 || s * bw < bs * w) {
      best = (int)i;
      bs = s;
      bw = w;
    }
  }
  return best;
}

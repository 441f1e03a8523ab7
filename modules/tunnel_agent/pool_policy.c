/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's connection pool controller (pool_policy.h). */
#include "pool_policy.h"

void pool_state_init(pool_state *s, int64_t now_ms) {
  s->above_since = -1;
  s->below_since = -1;
  s->last_change = now_ms;
}

static int changed(pool_state *s, int64_t now_ms, int d) {
  s->above_since = -1;
  s->below_since = -1;
  s->last_change = now_ms;
  return d;
}

int pool_decide(const pool_policy *p, pool_state *s, int64_t now_ms,
                uint32_t conns, uint64_t load) {
  if (conns == 0) {
    s->above_since = s->below_since = -1;
    return 0;
  }
  /* Compare load / conns against the watermarks without a division's
   * rounding: load > high * conns (64-bit: conns and high are bounded
   * 32-bit values, the product cannot overflow). */
  uint64_t hi = (uint64_t)p->high * conns, lo = (uint64_t)p->low * conns;
  if (load > hi) {
    s->below_since = -1;
    if (s->above_since < 0)
      s->above_since = now_ms;
    if (conns < p->max && now_ms - s->above_since >= p->eval_ms)
      return changed(s, now_ms, +1);
    return 0;
  }
  s->above_since = -1;
  if (load < lo) {
    if (s->below_since < 0)
      s->below_since = now_ms;
    if (conns > p->min && now_ms - s->below_since >= p->cooldown_ms &&
        now_ms - s->last_change >= p->cooldown_ms)
      return changed(s, now_ms, -1);
    return 0;
  }
  s->below_since = -1;
  return 0;
}

const char *pool_policy_problem(const pool_policy *p) {
  if (p->min < 1)
    return "connections.min must be at least 1";
  if (p->min > p->max)
    return "connections.min must not exceed connections.max";
  if (p->low >= p->high)
    return "connections.low_watermark must be below "
           "connections.high_watermark";
  return "";
}

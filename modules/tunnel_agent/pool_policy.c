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

uint64_t pool_worst_latency(const pool_signals *sig) {
  uint64_t v[] = {sig->dial_wait_us, sig->open_us, sig->ttfb_us,
                  sig->writer_wait_us, sig->rtt_us};
  uint64_t w = 0;
  for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    if (v[i] > w)
      w = v[i];
  return w;
}

static int failing(const pool_policy *p, const pool_signals *sig) {
  return sig->opens >= POOL_MIN_OPENS &&
         (uint64_t)sig->failed * 100 > (uint64_t)p->error_rate_max * sig->opens;
}

int pool_decide(const pool_policy *p, pool_state *s, int64_t now_ms,
                const pool_signals *sig, int *why) {
  *why = POOL_WHY_NONE;
  uint32_t conns = sig->conns;
  if (conns == 0) {
    s->above_since = s->below_since = -1;
    return 0;
  }
  /* Compare load / conns against the watermarks without a division's
   * rounding: load > high * conns (64-bit: conns and high are bounded
   * 32-bit values, the product cannot overflow). */
  uint64_t hi = (uint64_t)p->high * conns, lo = (uint64_t)p->low * conns;
  int busy = sig->load > hi;
  int slow = p->latency_high_us && sig->load > lo &&
             pool_worst_latency(sig) > p->latency_high_us;
  if (busy || slow) {
    s->below_since = -1;
    if (s->above_since < 0)
      s->above_since = now_ms;
    if (conns < p->max && now_ms - s->above_since >= p->eval_ms) {
      if (failing(p, sig)) {
        *why = POOL_WHY_ERRORS;
        return 0;
      }
      *why = busy ? POOL_WHY_LOAD : POOL_WHY_LATENCY;
      return changed(s, now_ms, +1);
    }
    return 0;
  }
  s->above_since = -1;
  if (sig->load < lo) {
    if (s->below_since < 0)
      s->below_since = now_ms;
    if (conns > p->min && now_ms - s->below_since >= p->cooldown_ms &&
        now_ms - s->last_change >= p->cooldown_ms) {
      *why = POOL_WHY_IDLE;
      return changed(s, now_ms, -1);
    }
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

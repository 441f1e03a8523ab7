/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * least_active, pure: the power of two choices. Two candidates drawn
 * uniformly (from the two halves of in->random), the one with the smaller
 * share of its capacity in use, (active + reserved) / capacity, wins (the
 * first on a tie). Two choices keep the load far more even than one
 * random choice, with O(1) work and no state: the load arrays are the
 * pool's. When neither takes the request: up to STRAT_PROBES uniform
 * draws, the first that takes; then one scan for the least loaded of
 * those that take (O(n), only when nearly none takes). Its only state is
 * the compact entries of the candidate sets (strat_rules_attach): a draw
 * reads 16 bytes and the load counters, not the proxy record.
 */
#include "strat.h"

/* 1 when the candidate at position i (proxy a) carries a strictly smaller
 * share of its capacity than the one at j (proxy b); both take: load <
 * capacity <= 2^32, so the products fit. */
static int la_lighter(const ph_strategy_pick *in, const strat_cand *cc,
                      uint32_t i, uint32_t a, uint32_t j, uint32_t b) {
  return strat_load(in, a) * strat_cap_at(in, cc, j, b) <
         strat_load(in, b) * strat_cap_at(in, cc, i, a);
}

static uint32_t la_scan(const ph_strategy_pick *in, const strat_cand *cc,
                        uint32_t start) {
  uint32_t n = in->rule->n_candidates;
  uint32_t best = PH_POOL_VIEW_NONE, best_pos = 0;
  uint32_t pos = start;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t p = strat_try_at(in, cc, pos);
    if (p != PH_POOL_VIEW_NONE &&
        (best == PH_POOL_VIEW_NONE ||
         la_lighter(in, cc, pos, p, best_pos, best))) {
      best = p;
      best_pos = pos;
    }
    if (++pos == n)
      pos = 0;
  }
  return best;
}

static uint32_t la_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  if (!strat_pick_sane(in))
    return PH_POOL_VIEW_NONE;
  const strat_cand *cc = strat_rules_cands(state, in);
  uint32_t n = in->rule->n_candidates;
  uint32_t i = strat_below((uint32_t)in->random, n);
  uint32_t j = strat_below((uint32_t)(in->random >> 32), n);
  if (j == i && n > 1) /* two different candidates */
    j = i + 1 < n ? i + 1 : 0;
  uint32_t a = strat_try_at(in, cc, i);
  uint32_t b = j == i ? PH_POOL_VIEW_NONE : strat_try_at(in, cc, j);
  if (a != PH_POOL_VIEW_NONE && b != PH_POOL_VIEW_NONE)
    return la_lighter(in, cc, j, b, i, a) ? b : a;
  if (a != PH_POOL_VIEW_NONE)
    return a;
  if (b != PH_POOL_VIEW_NONE)
    return b;
  strat_rng r = {in->random};
  for (uint32_t k = 0; k < STRAT_PROBES; k++) {
    uint32_t p =
        strat_try_at(in, cc, strat_below((uint32_t)strat_next(&r), n));
    if (p != PH_POOL_VIEW_NONE)
      return p;
  }
  return la_scan(in, cc, strat_below((uint32_t)strat_next(&r), n));
}

const ph_strategy_v1 strat_least_active_v1 = {strat_rules_attach,
                                              strat_rules_detach, la_pick};

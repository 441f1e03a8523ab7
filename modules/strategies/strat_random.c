/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * random, pure: uniform over the candidates that take the request. Up to
 * STRAT_PROBES uniform draws (the first that takes is exactly uniform
 * among those that take), then a scan forward from a random position,
 * which is uniform only when the ones that do not take are spread evenly
 * (it runs only when nearly none takes). Its only state is the compact
 * entries of the candidate sets (strat_rules_attach), so that a draw
 * among 10,000 candidates reads 16 bytes, not the proxy record.
 */
#include "strat.h"

static uint32_t rnd_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  if (!strat_pick_sane(in))
    return PH_POOL_VIEW_NONE;
  strat_rng r = {in->random};
  return strat_uniform(in, strat_rules_cands(state, in), &r, STRAT_PROBES);
}

const ph_strategy_v1 strat_random_v1 = {strat_rules_attach,
                                         strat_rules_detach, rnd_pick};

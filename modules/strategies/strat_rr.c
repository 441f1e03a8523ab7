/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * round_robin, pure: one cursor per rule (indexed by the rule's index),
 * the next candidate from the cursor on that ph_strategy_takes() accepts.
 * While every candidate takes, n picks give each exactly one; a candidate
 * that does not take is stepped over, so the pick is O(1) while most take
 * and O(n) only when nearly none does. A new view's cursors start where
 * the previous view's stood (same rule index), so frequent swaps do not
 * favour the first candidates.
 */
#include <stdlib.h>
#include <string.h>

#include "strat.h"

typedef struct rr_state {
  strat_rules rules;
  uint32_t *cursor; /* per rule: the position the next pick starts at */
} rr_state;

static void rr_detach(void *self, void *state) {
  (void)self;
  rr_state *st = state;
  if (!st)
    return;
  strat_rules_free(&st->rules);
  free(st->cursor);
  free(st);
}

static void *rr_attach(void *self, const ph_pool_view *v, const void *prev,
                       const ph_pool_view *prev_view, const uint32_t *map) {
  (void)prev_view;
  (void)map;
  rr_state *st = calloc(1, sizeof(*st));
  if (!st)
    return NULL;
  if (strat_rules_build(&st->rules, self, v) < 0) {
    free(st);
    return NULL;
  }
  uint32_t n = st->rules.n_rules;
  st->cursor = calloc(n ? n : 1, sizeof(*st->cursor));
  if (!st->cursor) {
    rr_detach(self, st);
    return NULL;
  }
  const rr_state *old = prev;
  if (old)
    for (uint32_t i = 0; i < n && i < old->rules.n_rules; i++)
      st->cursor[i] = old->cursor[i];
  return st;
}

static uint32_t rr_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  if (!strat_pick_sane(in))
    return PH_POOL_VIEW_NONE;
  rr_state *st = state;
  uint32_t s = st ? strat_rules_find(&st->rules, in) : PH_POOL_VIEW_NONE;
  if (s == PH_POOL_VIEW_NONE) {
    strat_rng r = {in->random};
    return strat_uniform(in, NULL, &r, STRAT_PROBES);
  }
  const strat_cand *cc = st->rules.sets[s].cand;
  uint32_t n = in->rule->n_candidates;
  uint32_t *cur = &st->cursor[in->rule->index];
  uint32_t pos = *cur < n ? *cur : *cur % n;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t p = strat_try_at(in, cc, pos);
    if (++pos == n)
      pos = 0;
    if (p != PH_POOL_VIEW_NONE) {
      *cur = pos;
      return p;
    }
  }
  return PH_POOL_VIEW_NONE;
}

const ph_strategy_v1 strat_round_robin_v1 = {rr_attach, rr_detach, rr_pick};

/* SPDX-License-Identifier: BSD-2-Clause */
/* What the strategies share (strat.h): the stateless fall-backs and the
 * index of a view's rules by candidate set, with each set's compact
 * entries. Pure. */
#include <stdlib.h>
#include <string.h>

#include "strat.h"

uint32_t strat_scan(const ph_strategy_pick *in, const strat_cand *cc,
                    uint32_t start) {
  uint32_t n = in->rule->n_candidates;
  uint32_t pos = start < n ? start : start % n;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t p = strat_try_at(in, cc, pos);
    if (p != PH_POOL_VIEW_NONE)
      return p;
    if (++pos == n)
      pos = 0;
  }
  return PH_POOL_VIEW_NONE;
}

uint32_t strat_uniform(const ph_strategy_pick *in, const strat_cand *cc,
                       strat_rng *r, uint32_t draws) {
  uint32_t n = in->rule->n_candidates;
  for (uint32_t k = 0; k < draws; k++) {
    uint32_t p = strat_try_at(in, cc, strat_below((uint32_t)strat_next(r), n));
    if (p != PH_POOL_VIEW_NONE)
      return p;
  }
  return strat_scan(in, cc, strat_below((uint32_t)strat_next(r), n));
}

static int named(const strat_self *self, const ph_pool_view_rule *rule) {
  if (!self || !self->name)
    return 1;
  return rule->strategy && strcmp(rule->strategy, self->name) == 0;
}

/* A pointer's bits, mixed for a power-of-two table (the low bits of an
 * address are alike). */
static uint32_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return (uint32_t)x;
}

int strat_rules_build(strat_rules *r, const strat_self *self,
                      const ph_pool_view *v) {
  memset(r, 0, sizeof(*r));
  r->view = v;
  uint32_t n = v->n_rules;
  if (n == 0 || !v->rules)
    return 0;
  size_t cap = 16;
  while (cap < 2 * (size_t)n)
    cap *= 2;
  uint32_t *rule_set = malloc(n * sizeof(*rule_set));
  strat_set *sets = malloc(n * sizeof(*sets));
  uint32_t *slot = malloc(cap * sizeof(*slot)); /* set index or NONE */
  if (!rule_set || !sets || !slot) {
    free(rule_set);
    free(sets);
    free(slot);
    return -1;
  }
  memset(slot, 0xff, cap * sizeof(*slot));
  uint32_t n_sets = 0;
  for (uint32_t i = 0; i < n; i++) {
    const ph_pool_view_rule *rule = &v->rules[i];
    rule_set[i] = PH_POOL_VIEW_NONE;
    if (!named(self, rule) || rule->n_candidates == 0 || !rule->candidates)
      continue;
    size_t j = ptr_hash(rule->candidates) & (cap - 1);
    while (slot[j] != PH_POOL_VIEW_NONE &&
           (sets[slot[j]].candidates != rule->candidates ||
            sets[slot[j]].n != rule->n_candidates))
      j = (j + 1) & (cap - 1); /* at most n of cap >= 2n are used */
    if (slot[j] == PH_POOL_VIEW_NONE) {
      slot[j] = n_sets;
      sets[n_sets].candidates = rule->candidates;
      sets[n_sets].n = rule->n_candidates;
      sets[n_sets].group = rule->target_group ? rule->target_group : "";
      sets[n_sets].cand = NULL;
      n_sets++;
    }
    rule_set[i] = slot[j];
  }
  free(slot);
  r->n_rules = n;
  r->rule_set = rule_set;
  r->sets = sets;
  r->n_sets = n_sets;
  for (uint32_t s = 0; s < n_sets; s++) {
    strat_set *set = &sets[s];
    set->cand = malloc(set->n * sizeof(*set->cand));
    if (!set->cand) {
      strat_rules_free(r);
      return -1;
    }
    for (uint32_t i = 0; i < set->n; i++)
      set->cand[i] = strat_cand_of(v, set->candidates[i]);
  }
  return 0;
}

void strat_rules_free(strat_rules *r) {
  for (uint32_t s = 0; r->sets && s < r->n_sets; s++)
    free(r->sets[s].cand);
  free(r->rule_set);
  free(r->sets);
  memset(r, 0, sizeof(*r));
}

void *strat_rules_attach(void *self, const ph_pool_view *v, const void *prev,
                         const ph_pool_view *prev_view, const uint32_t *map) {
  (void)prev;
  (void)prev_view;
  (void)map;
  strat_rules *r = malloc(sizeof(*r));
  if (!r)
    return NULL;
  if (strat_rules_build(r, self, v) < 0) {
    free(r);
    return NULL;
  }
  return r;
}

void strat_rules_detach(void *self, void *state) {
  (void)self;
  if (!state)
    return;
  strat_rules_free(state);
  free(state);
}

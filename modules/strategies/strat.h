/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The five dispatch strategies (issue 13), pure: round_robin, weighted,
 * least_active, random and sticky, each a ph_strategy_v1 (strategy.h)
 * that calls nothing of the host. The module files (round_robin.c, ...)
 * only register one of these vtables (strat_module.c); the unit tests
 * and the benchmark call them directly with views built by hand.
 *
 * self, for every vtable here, is a strat_self: the strategy's name.
 * attach() builds state only for the rules of the view whose `strategy`
 * is that name (self NULL, or a NULL name: every rule), because a sticky
 * table is not small. Rules that share one `candidates` array (one
 * target group) share one table (strat_rules below). A pick for a rule
 * the state does not know (another view's rule, one naming another
 * strategy) is answered by the stateless uniform probe: never outside the
 * rule's candidates, never a proxy ph_strategy_takes() refuses.
 *
 * Every pick, whatever the strategy, ends with ph_strategy_takes() on
 * the proxy it returns, reads only in->rule->candidates, allocates
 * nothing and returns PH_POOL_VIEW_NONE at once for a view past its
 * valid_until or stale deadline (CP-3-9, CP-3-18).
 */
#ifndef PH_STRAT_H
#define PH_STRAT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/strategy.h>

typedef struct strat_self {
  const char *name; /* rules whose strategy is this; NULL: every rule */
} strat_self;

extern const ph_strategy_v1 strat_round_robin_v1;
extern const ph_strategy_v1 strat_weighted_v1;
extern const ph_strategy_v1 strat_least_active_v1;
extern const ph_strategy_v1 strat_random_v1;
extern const ph_strategy_v1 strat_sticky_v1;

/* Random draws a strategy makes before it falls back to a scan of the
 * candidates (O(n), only when the draws found nothing that takes). */
#define STRAT_PROBES 8

/* ---- the checks every pick starts with ---------------------------------- */

/* 1 when in is whole and its view still live (CP-3-9, CP-3-18) and the
 * rule has candidates: otherwise the pick is PH_POOL_VIEW_NONE at once. */
static inline int strat_pick_sane(const ph_strategy_pick *in) {
  return in && in->size >= sizeof(*in) && in->view && in->rule &&
         in->load && in->load->active && in->load->reserved &&
         in->load->revoked && in->rule->n_candidates > 0 &&
         in->rule->candidates && ph_pool_view_live(in->view, in->now_ms);
}

/* The proxy at position pos of the rule's candidates when it takes this
 * request, else PH_POOL_VIEW_NONE. pos < in->rule->n_candidates. */
static inline uint32_t strat_try(const ph_strategy_pick *in, uint32_t pos) {
  uint32_t p = in->rule->candidates[pos];
  return ph_strategy_takes(in, p) ? p : PH_POOL_VIEW_NONE;
}

/* Requests on proxy p (active + reserved). */
static inline uint64_t strat_load(const ph_strategy_pick *in, uint32_t p) {
  return (uint64_t)in->load->active[p] + in->load->reserved[p];
}

/* 1 when proxy a has a strictly larger share of its capacity free than
 * b. Both must take the request (load < capacity <= 2^32, so the
 * products stay below 2^64). */
static inline int strat_freer(const ph_strategy_pick *in, uint32_t a,
                              uint32_t b) {
  uint64_t ca = in->view->proxies[a].capacity;
  uint64_t cb = in->view->proxies[b].capacity;
  return (ca - strat_load(in, a)) * cb > (cb - strat_load(in, b)) * ca;
}

/* ---- random numbers ------------------------------------------------------ */

/* A splitmix64 sequence seeded with the pick's 64 fresh bits: as many
 * well-mixed draws as a pick needs, from one in->random. */
typedef struct strat_rng {
  uint64_t s;
} strat_rng;

static inline uint64_t strat_next(strat_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* x (32 uniform bits) scaled into 0..n-1 (Lemire's multiply-shift: no
 * division, a bias of at most n / 2^32). */
static inline uint32_t strat_below(uint32_t x, uint32_t n) {
  return (uint32_t)(((uint64_t)x * n) >> 32);
}

/* ---- the stateless fall-backs (strat_common.c) --------------------------- */

/* The first candidate that takes, from position start forward (wrapping):
 * O(n), for when draws found nothing. */
uint32_t strat_scan(const ph_strategy_pick *in, uint32_t start);

/* Uniform over the candidates that take: up to `draws` uniform draws
 * (the first that takes is uniform among those that take), then
 * strat_scan from a random position. */
uint32_t strat_uniform(const ph_strategy_pick *in, strat_rng *r,
                       uint32_t draws);

/* ---- per-rule state: rules and their candidate sets (strat_common.c) ----- */

typedef struct strat_set {
  const uint32_t *candidates; /* the view's array (borrowed) */
  uint32_t n;
  const char *group; /* target_group of its first rule ("" for none) */
} strat_set;

typedef struct strat_rules {
  uint32_t n_rules;   /* the view's */
  uint32_t *rule_set; /* per rule: its set, or PH_POOL_VIEW_NONE */
  strat_set *sets;    /* distinct (candidates, n), n > 0 */
  uint32_t n_sets;
} strat_rules;

/* Finds the rules of v that self names and their distinct candidate sets
 * (linear in the rules: one hash on the array's address). 0, or -1 out of
 * memory (r then owns nothing). */
int strat_rules_build(strat_rules *r, const strat_self *self,
                      const ph_pool_view *v);
void strat_rules_free(strat_rules *r);

/* The index of rule's set in r, or PH_POOL_VIEW_NONE when r does not know
 * the rule (not named, no candidates, or another view's rule: its array
 * differs). */
static inline uint32_t strat_rules_find(const strat_rules *r,
                                        const ph_pool_view_rule *rule) {
  if (rule->index >= r->n_rules)
    return PH_POOL_VIEW_NONE;
  uint32_t s = r->rule_set[rule->index];
  if (s == PH_POOL_VIEW_NONE || r->sets[s].candidates != rule->candidates ||
      r->sets[s].n != rule->n_candidates)
    return PH_POOL_VIEW_NONE;
  return s;
}

/* The state attach() returns for a strategy that keeps none (a non-NULL
 * address detach() recognises). */
extern const char strat_no_state;
/* attach and detach of a strategy that keeps no state of its own (it
 * reads only the view and the pool's load): attach answers
 * &strat_no_state, detach does nothing. */
void *strat_stateless_attach(void *self, const ph_pool_view *v,
                             const void *prev, const ph_pool_view *prev_view,
                             const uint32_t *map);
void strat_stateless_detach(void *self, void *state);

#endif

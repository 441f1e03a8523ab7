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

/* ---- the compact candidate test ----------------------------------------- */

/* What ph_strategy_takes() reads of one candidate's proxy record, 16
 * bytes, built by attach() per candidate set (strat_rules_build): with
 * 10,000 proxies the records (about 100 bytes each) do not fit a core's
 * L2 and a random candidate is a cache miss there; the compact array
 * (160 KB) and the pool's load arrays (90 KB) do. */
typedef struct strat_cand {
  /* The earlier of usable_until_ms and expires_at_ms; STRAT_CAND_NEVER
   * when the proxy is draining, has capacity 0 or is not in the view
   * (index >= n_proxies). INT64_MIN rather than 0, so that "now_ms <
   * until_ms" is false for every now_ms. */
  int64_t until_ms;
  uint32_t capacity;
  uint32_t proxy; /* the candidate: an index into view->proxies */
} strat_cand;

#define STRAT_CAND_NEVER INT64_MIN

/* The compact entry of candidate p of view v. */
static inline strat_cand strat_cand_of(const ph_pool_view *v, uint32_t p) {
  strat_cand c = {STRAT_CAND_NEVER, 0, p};
  if (p >= v->n_proxies)
    return c;
  const ph_pool_view_proxy *x = &v->proxies[p];
  c.capacity = x->capacity;
  if (!x->draining && x->capacity > 0)
    c.until_ms = x->usable_until_ms < x->expires_at_ms ? x->usable_until_ms
                                                       : x->expires_at_ms;
  return c;
}

/* ph_strategy_takes(in, c->proxy) from the compact entry, exactly, for a
 * view that is live at in->now_ms: the view-wide check
 * (ph_pool_view_live) is strat_pick_sane's, once per pick. Reads the
 * entry, the pool's load arrays and the tried list, never the proxy
 * record (t/unit/connectors/test_strategies compares the two). */
static inline int strat_cand_takes(const ph_strategy_pick *in,
                                   const strat_cand *c) {
  if (!(in->now_ms < c->until_ms))
    return 0;
  uint32_t p = c->proxy;
  if (in->load->revoked[p] ||
      (uint64_t)in->load->active[p] + in->load->reserved[p] >= c->capacity)
    return 0;
  for (uint32_t i = 0; i < in->n_tried; i++)
    if (in->tried[i] == p)
      return 0;
  return 1;
}

/* The proxy at position pos of the rule's candidates when it takes this
 * request, else PH_POOL_VIEW_NONE: from cc, the rule's compact entries
 * (strat_rules_cands), or from the view when cc is NULL (a rule the
 * state does not know). */
static inline uint32_t strat_try_at(const ph_strategy_pick *in,
                                    const strat_cand *cc, uint32_t pos) {
  if (!cc)
    return strat_try(in, pos);
  return strat_cand_takes(in, &cc[pos]) ? cc[pos].proxy : PH_POOL_VIEW_NONE;
}

/* The capacity of the candidate at position pos (proxy p). */
static inline uint64_t strat_cap_at(const ph_strategy_pick *in,
                                    const strat_cand *cc, uint32_t pos,
                                    uint32_t p) {
  return cc ? cc[pos].capacity : in->view->proxies[p].capacity;
}

/* Requests on proxy p (active + reserved). */
static inline uint64_t strat_load(const ph_strategy_pick *in, uint32_t p) {
  return (uint64_t)in->load->active[p] + in->load->reserved[p];
}

/* 1 when proxy a (capacity ca) has a strictly larger share of its
 * capacity free than b (capacity cb). Both must take the request
 * (load < capacity <= 2^32, so the products stay below 2^64). */
static inline int strat_freer(const ph_strategy_pick *in, uint32_t a,
                              uint64_t ca, uint32_t b, uint64_t cb) {
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
uint32_t strat_scan(const ph_strategy_pick *in, const strat_cand *cc,
                    uint32_t start);

/* Uniform over the candidates that take: up to `draws` uniform draws
 * (the first that takes is uniform among those that take), then
 * strat_scan from a random position. cc: the rule's compact entries, or
 * NULL (read the view). */
uint32_t strat_uniform(const ph_strategy_pick *in, const strat_cand *cc,
                       strat_rng *r, uint32_t draws);

/* ---- per-rule state: rules and their candidate sets (strat_common.c) ----- */

typedef struct strat_set {
  const uint32_t *candidates; /* the view's array (borrowed) */
  uint32_t n;
  const char *group; /* target_group of its first rule ("" for none) */
  strat_cand *cand;  /* n compact entries, in the order of candidates */
} strat_set;

typedef struct strat_rules {
  const ph_pool_view *view; /* the view it was built for */
  uint32_t n_rules;   /* the view's */
  uint32_t *rule_set; /* per rule: its set, or PH_POOL_VIEW_NONE */
  strat_set *sets;    /* distinct (candidates, n), n > 0 */
  uint32_t n_sets;
} strat_rules;

/* Finds the rules of v that self names and their distinct candidate sets
 * (linear in the rules: one hash on the array's address), and builds each
 * set's compact entries (linear in its candidates). 0, or -1 out of
 * memory (r then owns nothing). */
int strat_rules_build(strat_rules *r, const strat_self *self,
                      const ph_pool_view *v);
void strat_rules_free(strat_rules *r);

/* The index of in->rule's set in r, or PH_POOL_VIEW_NONE when r does not
 * know the rule (not named, no candidates, another view's rule: its array
 * differs) or was built for another view than in->view. */
static inline uint32_t strat_rules_find(const strat_rules *r,
                                        const ph_strategy_pick *in) {
  const ph_pool_view_rule *rule = in->rule;
  if (in->view != r->view || rule->index >= r->n_rules)
    return PH_POOL_VIEW_NONE;
  uint32_t s = r->rule_set[rule->index];
  if (s == PH_POOL_VIEW_NONE || r->sets[s].candidates != rule->candidates ||
      r->sets[s].n != rule->n_candidates)
    return PH_POOL_VIEW_NONE;
  return s;
}

/* The compact entries of in->rule's candidates, or NULL when r (NULL: no
 * state) does not know the rule. */
static inline const strat_cand *strat_rules_cands(const strat_rules *r,
                                                  const ph_strategy_pick *in) {
  uint32_t s = r ? strat_rules_find(r, in) : PH_POOL_VIEW_NONE;
  return s == PH_POOL_VIEW_NONE ? NULL : r->sets[s].cand;
}

/* attach and detach of a strategy whose only state is a strat_rules (the
 * compact entries): random and least_active. */
void *strat_rules_attach(void *self, const ph_pool_view *v, const void *prev,
                         const ph_pool_view *prev_view, const uint32_t *map);
void strat_rules_detach(void *self, void *state);

#endif

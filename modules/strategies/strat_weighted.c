/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * weighted, pure: a proxy is chosen in proportion to its `weight`, and
 * among two such choices the one with more of its capacity free
 * (capacity - active - reserved, as a share of capacity) wins.
 *
 * Why not smooth weighted round-robin (ARCHITECTURE.md §7): it scans every
 * candidate per pick, O(n), and the contract wants a pick that does not
 * grow with the candidates (10,000 proxies). Instead attach() builds, per
 * candidate set, an alias table (Vose's method, in exact integer
 * arithmetic): one draw is one column chosen uniformly and one coin
 * against that column's threshold, O(1), and lands on candidate i with
 * probability weight_i / sum(weights) (to within 2^-32). A pick makes two
 * draws and keeps the one whose free share of capacity is larger (the
 * first on a tie): with equal load the choice is exactly weight-
 * proportional; under load, traffic leans towards the proxies with room,
 * like least_active's two choices, so it is proportional to weight and,
 * in tendency, to remaining capacity. When neither draw takes the request,
 * up to STRAT_PROBES further draws are tried, then one scan of the
 * candidates that picks among those that take in proportion to weight
 * (a weighted reservoir): O(n), only when nearly none takes.
 *
 * Memory: 8 bytes a candidate per distinct candidate set, and the 16 of
 * its compact entry (strat.h), which the draws test instead of the proxy
 * record.
 */
#include <stdlib.h>
#include <string.h>

#include "strat.h"

typedef struct wt_col {
  uint32_t thr;   /* the coin below thr keeps the column, else alias */
  uint32_t alias; /* a candidate position */
} wt_col;

typedef struct wt_state {
  strat_rules rules;
  wt_col *cols;  /* every set's columns, one block */
  size_t *first; /* per set: its first column in cols */
} wt_state;

/* A weight as the draws count it: the snapshot bounds weight to 1..1000;
 * in a view built otherwise a 0 counts as 1 (no candidate is left out of
 * the draws) and anything above WT_WEIGHT_MAX as that, which keeps every
 * sum below 2^48 (n < 2^32). */
#define WT_WEIGHT_MAX 65535u
static uint64_t wt_weight(const ph_pool_view *v, uint32_t proxy) {
  uint32_t w = proxy < v->n_proxies ? v->proxies[proxy].weight : 1;
  return w == 0 ? 1 : w > WT_WEIGHT_MAX ? WT_WEIGHT_MAX : w;
}

/* floor(x * 2^32 / total) for x < total < 2^48, in two 16-bit steps so
 * that no product leaves 64 bits. */
static uint32_t wt_threshold(uint64_t x, uint64_t total) {
  uint64_t hi = (x << 16) / total;
  uint64_t lo = (((x << 16) % total) << 16) / total;
  return (uint32_t)(hi << 16 | lo);
}

/* Vose's alias method for the n candidates of one set into col[0..n-1],
 * in integers: each weight scaled by n is compared with the total W, so
 * the columns hold exactly W/n each and nothing is lost to rounding but
 * the final 32-bit thresholds. 0, or -1 out of memory. */
static int wt_build(wt_col *col, const ph_pool_view *v, const uint32_t *cand,
                    uint32_t n) {
  uint64_t *p = malloc(n * sizeof(*p));
  uint32_t *small = malloc(n * sizeof(*small));
  uint32_t *large = malloc(n * sizeof(*large));
  if (!p || !small || !large) {
    free(p);
    free(small);
    free(large);
    return -1;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++)
    total += wt_weight(v, cand[i]);
  uint32_t ns = 0, nl = 0;
  for (uint32_t i = 0; i < n; i++) {
    p[i] = wt_weight(v, cand[i]) * n; /* < 2^48 */
    if (p[i] < total)
      small[ns++] = i;
    else
      large[nl++] = i;
  }
  while (ns && nl) {
    uint32_t s = small[--ns];
    uint32_t l = large[nl - 1];
    col[s].thr = wt_threshold(p[s], total);
    col[s].alias = l;
    p[l] -= total - p[s];
    if (p[l] < total) {
      nl--;
      small[ns++] = l;
    }
  }
  /* What is left holds exactly its share: it keeps its column. */
  while (nl) {
    uint32_t l = large[--nl];
    col[l].thr = UINT32_MAX;
    col[l].alias = l;
  }
  while (ns) {
    uint32_t s = small[--ns];
    col[s].thr = UINT32_MAX;
    col[s].alias = s;
  }
  free(p);
  free(small);
  free(large);
  return 0;
}

static void wt_detach(void *self, void *state) {
  (void)self;
  wt_state *st = state;
  if (!st)
    return;
  strat_rules_free(&st->rules);
  free(st->cols);
  free(st->first);
  free(st);
}

static void *wt_attach(void *self, const ph_pool_view *v, const void *prev,
                       const ph_pool_view *prev_view, const uint32_t *map) {
  (void)prev;
  (void)prev_view;
  (void)map;
  wt_state *st = calloc(1, sizeof(*st));
  if (!st)
    return NULL;
  if (strat_rules_build(&st->rules, self, v) < 0) {
    free(st);
    return NULL;
  }
  size_t total = 0;
  uint32_t ns = st->rules.n_sets;
  st->first = malloc((ns ? ns : 1) * sizeof(*st->first));
  if (!st->first) {
    wt_detach(self, st);
    return NULL;
  }
  for (uint32_t s = 0; s < ns; s++) {
    st->first[s] = total;
    total += st->rules.sets[s].n;
  }
  st->cols = malloc((total ? total : 1) * sizeof(*st->cols));
  if (!st->cols) {
    wt_detach(self, st);
    return NULL;
  }
  for (uint32_t s = 0; s < ns; s++)
    if (wt_build(st->cols + st->first[s], v, st->rules.sets[s].candidates,
                 st->rules.sets[s].n) < 0) {
      wt_detach(self, st);
      return NULL;
    }
  return st;
}

/* One weighted draw: a candidate position. */
static uint32_t wt_draw(const wt_col *col, uint32_t n, uint64_t u) {
  uint32_t j = strat_below((uint32_t)u, n);
  return (uint32_t)(u >> 32) < col[j].thr ? j : col[j].alias;
}

/* The fall-back scan: among the candidates that take, one in proportion
 * to its weight (each replaces the choice with probability w / sum so
 * far). */
static uint32_t wt_scan(const ph_strategy_pick *in, const strat_cand *cc,
                        strat_rng *r) {
  uint32_t n = in->rule->n_candidates;
  uint64_t sum = 0;
  uint32_t chosen = PH_POOL_VIEW_NONE;
  for (uint32_t pos = 0; pos < n; pos++) {
    uint32_t p = strat_try_at(in, cc, pos);
    if (p == PH_POOL_VIEW_NONE)
      continue;
    uint64_t w = wt_weight(in->view, p);
    sum += w;
    if (strat_next(r) % sum < w)
      chosen = p;
  }
  return chosen;
}

static uint32_t wt_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  if (!strat_pick_sane(in))
    return PH_POOL_VIEW_NONE;
  strat_rng r = {in->random};
  const wt_state *st = state;
  uint32_t s = st ? strat_rules_find(&st->rules, in) : PH_POOL_VIEW_NONE;
  if (s == PH_POOL_VIEW_NONE)
    return strat_uniform(in, NULL, &r, STRAT_PROBES);
  const wt_col *col = st->cols + st->first[s];
  const strat_cand *cc = st->rules.sets[s].cand;
  uint32_t n = in->rule->n_candidates;
  uint32_t i = wt_draw(col, n, strat_next(&r));
  uint32_t j = wt_draw(col, n, strat_next(&r));
  uint32_t a = strat_try_at(in, cc, i);
  uint32_t b = strat_try_at(in, cc, j);
  if (a != PH_POOL_VIEW_NONE && b != PH_POOL_VIEW_NONE)
    return strat_freer(in, b, cc[j].capacity, a, cc[i].capacity) ? b : a;
  if (a != PH_POOL_VIEW_NONE)
    return a;
  if (b != PH_POOL_VIEW_NONE)
    return b;
  for (uint32_t k = 0; k < STRAT_PROBES; k++) {
    uint32_t p = strat_try_at(in, cc, wt_draw(col, n, strat_next(&r)));
    if (p != PH_POOL_VIEW_NONE)
      return p;
  }
  return wt_scan(in, cc, &r);
}

const ph_strategy_v1 strat_weighted_v1 = {wt_attach, wt_detach, wt_pick};

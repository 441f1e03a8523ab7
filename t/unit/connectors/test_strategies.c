/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The five dispatch strategies, pure (modules/strategies/strat*.c), over
 * views built by hand: plain ph_pool_view structs and a load array, no
 * control plane. Each strategy's distribution with fixed seeds, the
 * corners every one must hold (CP-1-22, CP-1-23, CP-3-6, CP-3-9, CP-4-2)
 * and sticky's consistency across views (attach with prev + map).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strat.h"
#include "strategies/strat_hash.h"
#include "strategies/strat_slots.h"
#include "tap.h"

#define NOW INT64_C(1800000000000) /* a fixed instant, Unix ms */
#define HOUR INT64_C(3600000)
#define NONE PH_POOL_VIEW_NONE

/* ---- views built by hand --------------------------------------------------- */

typedef struct fx {
  ph_pool_view v;
  ph_pool_view_proxy *px;
  char (*ids)[16];
  ph_pool_view_rule rules[4];
  uint32_t *cand[4]; /* each rule's own array unless shared */
  uint32_t *active, *reserved;
  uint8_t *revoked;
  ph_pool_load load;
} fx;

/* n proxies with ids[i] (sorted), capacity 100, weight 1, usable for an
 * hour; one rule (index 0) whose candidates are all of them. */
static fx *fx_new_ids(uint32_t n, char (*ids)[16]) {
  fx *f = calloc(1, sizeof(*f));
  f->px = calloc(n ? n : 1, sizeof(*f->px));
  f->ids = ids;
  f->active = calloc(n ? n : 1, sizeof(uint32_t));
  f->reserved = calloc(n ? n : 1, sizeof(uint32_t));
  f->revoked = calloc(n ? n : 1, 1);
  for (uint32_t i = 0; i < n; i++) {
    ph_pool_view_proxy *x = &f->px[i];
    x->proxy_id = ids[i];
    x->index = i;
    x->host = "127.0.0.1";
    x->port = 1080;
    x->capacity = 100;
    x->weight = 1;
    x->usable_until_ms = NOW + HOUR;
    x->expires_at_ms = NOW + 2 * HOUR;
    x->zone = "z";
  }
  f->v.size = sizeof(f->v);
  f->v.version = 1;
  f->v.valid_until_ms = NOW + HOUR;
  f->v.obtained_at_ms = NOW;
  f->v.stale_deadline_ms = NOW + HOUR;
  f->v.proxies = f->px;
  f->v.n_proxies = n;
  f->v.rules = f->rules;
  f->v.n_rules = 1;
  f->cand[0] = calloc(n ? n : 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++)
    f->cand[0][i] = i;
  ph_pool_view_rule *r = &f->rules[0];
  r->rule_id = "r0";
  r->index = 0;
  r->host_kind = PH_POOL_VIEW_HOST_ANY;
  r->target_group = "g0";
  r->strategy = "any";
  r->sticky_key = "username";
  r->candidates = f->cand[0];
  r->n_candidates = n;
  f->load.active = f->active;
  f->load.reserved = f->reserved;
  f->load.revoked = f->revoked;
  return f;
}

static char (*ids_make(uint32_t n, const char *fmt))[16] {
  char (*ids)[16] = calloc(n ? n : 1, sizeof(*ids));
  for (uint32_t i = 0; i < n; i++)
    snprintf(ids[i], sizeof(ids[i]), fmt, i);
  return ids;
}

static fx *fx_new(uint32_t n) { return fx_new_ids(n, ids_make(n, "p%05u")); }

/* Adds rule i (index i) over the given candidates (copied). */
static void fx_rule(fx *f, uint32_t i, const uint32_t *cand, uint32_t n,
                    const char *group, const char *strategy) {
  f->cand[i] = calloc(n ? n : 1, sizeof(uint32_t));
  memcpy(f->cand[i], cand, n * sizeof(uint32_t));
  ph_pool_view_rule *r = &f->rules[i];
  static const char *ids[] = {"r0", "r1", "r2", "r3"};
  memset(r, 0, sizeof(*r));
  r->rule_id = ids[i];
  r->index = i;
  r->host_kind = PH_POOL_VIEW_HOST_ANY;
  r->target_group = group;
  r->strategy = strategy;
  r->sticky_key = "";
  r->candidates = f->cand[i];
  r->n_candidates = n;
  if (f->v.n_rules < i + 1)
    f->v.n_rules = i + 1;
}

static void fx_free(fx *f) {
  for (int i = 0; i < 4; i++)
    free(f->cand[i]);
  free(f->px);
  free(f->ids);
  free(f->active);
  free(f->reserved);
  free(f->revoked);
  free(f);
}

/* map[i] for each proxy of a in b, by id (cp_view_remap's contract). */
static uint32_t *remap(const fx *a, const fx *b) {
  uint32_t *map = malloc((a->v.n_proxies ? a->v.n_proxies : 1) * 4);
  for (uint32_t i = 0; i < a->v.n_proxies; i++) {
    map[i] = NONE;
    for (uint32_t j = 0; j < b->v.n_proxies; j++)
      if (strcmp(a->px[i].proxy_id, b->px[j].proxy_id) == 0)
        map[i] = j;
  }
  return map;
}

typedef struct req {
  int64_t now;
  const char *key;
  const uint32_t *tried;
  uint32_t n_tried;
  uint32_t rule;
} req;

static uint64_t seed_next(uint64_t *s) {
  strat_rng r = {*s};
  uint64_t x = strat_next(&r);
  *s = r.s;
  return x;
}

static uint32_t pick_r(const ph_strategy_v1 *vt, void *st, const fx *f,
                       uint64_t rnd, const req *q) {
  ph_strategy_pick in = {0};
  in.size = sizeof(in);
  in.view = &f->v;
  in.rule = &f->rules[q ? q->rule : 0];
  in.load = &f->load;
  in.now_ms = q && q->now ? q->now : NOW;
  in.key = q ? q->key : NULL;
  in.key_len = q && q->key ? (uint32_t)strlen(q->key) : 0;
  in.tried = q ? q->tried : NULL;
  in.n_tried = q ? q->n_tried : 0;
  in.random = rnd;
  return vt->pick(NULL, st, &in);
}

static uint32_t pick(const ph_strategy_v1 *vt, void *st, const fx *f,
                     uint64_t rnd) {
  return pick_r(vt, st, f, rnd, NULL);
}

/* vt attached to f's view: "NAME: attach" as a TAP line. */
static void *attach_ok(const ph_strategy_v1 *vt, fx *f, const char *name) {
  void *st = vt->attach(NULL, &f->v, NULL, NULL, NULL);
  char what[64];
  snprintf(what, sizeof(what), "%s: attach", name);
  ok(st != NULL, what);
  return st;
}

/* n picks on seeded draws, counted per proxy in count[0..len) (zeroed
 * first). */
static void tally(const ph_strategy_v1 *vt, void *st, const fx *f,
                  uint64_t *seed, uint32_t n, uint32_t *count, size_t len) {
  memset(count, 0, len * sizeof(*count));
  for (uint32_t i = 0; i < n; i++)
    count[pick(vt, st, f, seed_next(seed))]++;
}

typedef struct strat_case {
  const char *name;
  const ph_strategy_v1 *vt;
} strat_case;

static const strat_case all[] = {
    {"round_robin", &strat_round_robin_v1},
    {"weighted", &strat_weighted_v1},
    {"least_active", &strat_least_active_v1},
    {"random", &strat_random_v1},
    {"sticky", &strat_sticky_v1},
};
#define N_ALL (sizeof(all) / sizeof(all[0]))

/* A key for request i of a test (sticky sees many sessions). */
static const char *key_of(uint32_t i, char *buf, size_t len) {
  snprintf(buf, len, "user-%u", i);
  return buf;
}

/* ---- distributions ---------------------------------------------------------- */

static void test_round_robin(void) {
  fx *f = fx_new(5);
  void *st = attach_ok(&strat_round_robin_v1, f, "round_robin");
  uint32_t seq[7];
  for (int i = 0; i < 7; i++)
    seq[i] = pick(&strat_round_robin_v1, st, f, (uint64_t)i * 7919);
  ok(seq[0] == 0 && seq[1] == 1 && seq[2] == 2 && seq[3] == 3 &&
         seq[4] == 4 && seq[5] == 0 && seq[6] == 1,
     "CP-1-22 round_robin: each candidate in turn, whatever the random bits");
  uint32_t count[5] = {0};
  for (int i = 0; i < 4998; i++) /* 7 + 4998 = 5005 = 1001 * 5 */
    count[pick(&strat_round_robin_v1, st, f, (uint64_t)i)]++;
  count[0] += 2; /* the 7 above: 0 1 2 3 4 0 1 */
  count[1] += 2;
  count[2]++;
  count[3]++;
  count[4]++;
  int even = 1;
  for (int i = 0; i < 5; i++)
    even &= count[i] == 1001;
  ok(even, "round_robin: 5005 picks over 5 give exactly 1001 each");

  /* A full one is stepped over; the rotation goes on. */
  f->active[2] = 100;
  uint32_t a = pick(&strat_round_robin_v1, st, f, 0);
  uint32_t b = pick(&strat_round_robin_v1, st, f, 0);
  uint32_t c = pick(&strat_round_robin_v1, st, f, 0);
  uint32_t d = pick(&strat_round_robin_v1, st, f, 0);
  ok(a != 2 && b != 2 && c != 2 && d != 2 && a != b && b != c && c != d &&
         a != d && a != c && b != d,
     "round_robin: a full proxy is stepped over, the other four in turn");
  f->active[2] = 0;

  /* The next view's cursor starts where this one's stood. */
  uint32_t before = pick(&strat_round_robin_v1, st, f, 0);
  void *st2 = strat_round_robin_v1.attach(NULL, &f->v, st, &f->v, NULL);
  uint32_t after = pick(&strat_round_robin_v1, st2, f, 0);
  is_int(after, (before + 1) % 5, "round_robin: a new view goes on from the cursor");
  strat_round_robin_v1.detach(NULL, st2);
  strat_round_robin_v1.detach(NULL, st);
  fx_free(f);
}

static void test_weighted(void) {
  fx *f = fx_new(4);
  for (uint32_t i = 0; i < 4; i++)
    f->px[i].weight = i + 1; /* 1 2 3 4: 10 % 20 % 30 % 40 % */
  void *st = attach_ok(&strat_weighted_v1, f, "weighted");
  uint32_t count[4];
  uint64_t seed = 42;
  const uint32_t n = 200000;
  tally(&strat_weighted_v1, st, f, &seed, n, count, 4);
  /* Tolerance: one percentage point of the picks (the binomial's standard
   * deviation here is at most 0.11 points; the seed is fixed). */
  int prop = 1;
  for (uint32_t i = 0; i < 4; i++) {
    double share = (double)count[i] / n, want = (i + 1) / 10.0;
    if (share < want - 0.01 || share > want + 0.01)
      prop = 0;
    printf("# weighted: weight %u: %.4f of the picks (want %.2f)\n", i + 1,
           share, want);
  }
  ok(prop, "CP-1-22 weighted: weights 1:2:3:4, 200000 picks within one point of 10/20/30/40 %");
  strat_weighted_v1.detach(NULL, st);

  /* Equal weights: the one with more free capacity wins the pair. */
  for (uint32_t i = 0; i < 4; i++)
    f->px[i].weight = 1;
  f->active[0] = 90; /* 10 % free */
  f->active[1] = 90;
  st = strat_weighted_v1.attach(NULL, &f->v, NULL, NULL, NULL);
  tally(&strat_weighted_v1, st, f, &seed, 20000, count, 4);
  /* Two draws, the freer kept: 0 or 1 only when both draws are 0 or 1:
   * 1/4 of the picks (not 1/2). */
  double busy = (double)(count[0] + count[1]) / 20000;
  printf("# weighted: the two busy proxies got %.4f of the picks\n", busy);
  ok(busy > 0.22 && busy < 0.28,
     "weighted: equal weights, the two at 90 % load get a quarter of the picks, not half");
  strat_weighted_v1.detach(NULL, st);

  /* A very heavy weight on a full proxy: the others still get every pick. */
  f->active[0] = f->active[1] = 0;
  f->px[3].weight = 1000;
  f->active[3] = 100;
  st = strat_weighted_v1.attach(NULL, &f->v, NULL, NULL, NULL);
  memset(count, 0, sizeof(count));
  for (uint32_t i = 0; i < 3000; i++) {
    uint32_t p = pick(&strat_weighted_v1, st, f, seed_next(&seed));
    count[p == NONE ? 3 : p]++;
  }
  ok(count[3] == 0 && count[0] > 0 && count[1] > 0 && count[2] > 0,
     "CP-1-23 weighted: the heaviest proxy full, every pick falls back to the others");
  strat_weighted_v1.detach(NULL, st);
  fx_free(f);
}

static void test_least_active(void) {
  fx *f = fx_new(10);
  for (uint32_t i = 0; i < 10; i++)
    f->active[i] = i * 10; /* 0 % .. 90 % */
  void *st = attach_ok(&strat_least_active_v1, f, "least_active");
  uint32_t count[10];
  uint64_t seed = 7;
  tally(&strat_least_active_v1, st, f, &seed, 20000, count, 10);
  uint32_t light = count[0] + count[1] + count[2] + count[3] + count[4];
  double share = light / 20000.0;
  printf("# least_active: the five lighter got %.4f of the picks\n", share);
  /* Two distinct candidates, the lighter wins: the lighter half unless
   * both draws are in the heavier half, 1 - (5/10)(4/9) = 0.78. */
  ok(share > 0.74 && share < 0.82,
     "CP-1-22 least_active: the lighter half gets 78 % of the picks (uniform: 50 %)");
  ok(count[9] == 0, "least_active: the most loaded never wins a pair");
  ok(count[0] > count[4] && count[4] > count[8],
     "least_active: fewer picks the more loaded");

  /* Capacity is a share: 50 of 1000 is lighter than 10 of 100. */
  fx *g = fx_new(2);
  g->px[0].capacity = 100;
  g->active[0] = 10;
  g->px[1].capacity = 1000;
  g->active[1] = 50;
  uint32_t to1 = 0;
  for (uint32_t i = 0; i < 100; i++)
    to1 += pick(&strat_least_active_v1, st, g, seed_next(&seed)) == 1;
  is_int(to1, 100, "least_active: compares (active + reserved) / capacity");
  g->reserved[1] = 60; /* 110 of 1000 > 10 of 100 */
  to1 = 0;
  for (uint32_t i = 0; i < 100; i++)
    to1 += pick(&strat_least_active_v1, st, g, seed_next(&seed)) == 1;
  is_int(to1, 0, "least_active: reserved counts as load");
  fx_free(g);
  strat_least_active_v1.detach(NULL, st);
  fx_free(f);
}

static void test_random(void) {
  fx *f = fx_new(10);
  void *st = attach_ok(&strat_random_v1, f, "random");
  uint32_t count[10];
  uint64_t seed = 99;
  tally(&strat_random_v1, st, f, &seed, 100000, count, 10);
  int even = 1;
  for (int i = 0; i < 10; i++)
    even &= count[i] > 9000 && count[i] < 11000;
  ok(even, "CP-1-22 random: 100000 picks over 10, each 10 % within one point");
  /* Half of them draining: uniform over the other half. */
  for (int i = 0; i < 10; i += 2)
    f->px[i].draining = 1;
  strat_random_v1.detach(NULL, st); /* a new view (see reattach) */
  st = strat_random_v1.attach(NULL, &f->v, NULL, NULL, NULL);
  tally(&strat_random_v1, st, f, &seed, 50000, count, 10);
  even = 1;
  for (int i = 0; i < 10; i++)
    even &= i % 2 == 0 ? count[i] == 0 : count[i] > 9000 && count[i] < 11000;
  ok(even, "CP-4-2 random: five draining never picked, the other five 20 % each");
  strat_random_v1.detach(NULL, st);
  fx_free(f);
}

/* ---- what every strategy must hold ---------------------------------------- */

/* Picks `n` times for strategy c (keys vary for sticky); counts (zeroed
 * first) gets one for each result (NONE in counts[n_proxies]). */
/* A view never changes (pool_view.h): a test that edits a proxy record
 * makes a new view, so the strategy attaches to it again (attach() keeps
 * what a pick tests of each candidate, strat.h's compact entries). */
static void reattach(const strat_case *c, void **st, const fx *f) {
  c->vt->detach(NULL, *st);
  *st = c->vt->attach(NULL, &f->v, NULL, NULL, NULL);
}

static void run(const strat_case *c, void *st, const fx *f, uint32_t n,
                int64_t now, const uint32_t *tried, uint32_t n_tried,
                uint32_t rule, uint32_t *counts, uint64_t *seed) {
  char kb[32];
  memset(counts, 0, (f->v.n_proxies + 1) * sizeof(*counts));
  for (uint32_t i = 0; i < n; i++) {
    req q = {now, key_of(i, kb, sizeof(kb)), tried, n_tried, rule};
    uint32_t p = pick_r(c->vt, st, f, seed_next(seed), &q);
    counts[p == NONE ? f->v.n_proxies : p]++;
  }
}

static void test_corners(const strat_case *c) {
  char name[160];
  uint64_t seed = 1234;
  const uint32_t np = 8;
  uint32_t counts[9];
  fx *f = fx_new(np);
  void *st = c->vt->attach(NULL, &f->v, NULL, NULL, NULL);
  ok(st != NULL, c->name);

  /* All exhausted: nothing. */
  for (uint32_t i = 0; i < np; i++)
    f->active[i] = 60, f->reserved[i] = 40;
  run(c, st, f, 200, 0, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name),
           "CP-1-23 %s: every candidate full (active + reserved = capacity): NONE",
           c->name);
  is_int(counts[np], 200, name);
  /* One left: always that one. */
  f->reserved[5] = 39;
  run(c, st, f, 200, 0, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-1-23 %s: one with room left: every pick is it",
           c->name);
  is_int(counts[5], 200, name);
  for (uint32_t i = 0; i < np; i++)
    f->active[i] = f->reserved[i] = 0;

  /* Draining, revoked, tried: never. */
  f->px[1].draining = 1;
  f->revoked[2] = 1;
  reattach(c, &st, f);
  uint32_t tried[2] = {3, 6};
  run(c, st, f, 2000, 0, tried, 2, 0, counts, &seed);
  snprintf(name, sizeof(name),
           "CP-4-2 %s: draining, revoked and tried never picked, the others are",
           c->name);
  ok(counts[1] == 0 && counts[2] == 0 && counts[3] == 0 && counts[6] == 0 &&
         counts[0] && counts[4] && counts[5] && counts[7] && !counts[np],
     name);
  f->px[1].draining = 0;
  f->revoked[2] = 0;
  reattach(c, &st, f);

  /* Expiring mid-run (CP-3-6): usable until T means picked at T-1 at the
   * latest. Proxy 4 is the only one with room, so that "may" is "is". */
  int64_t T = NOW + 5000;
  f->px[4].usable_until_ms = T;
  reattach(c, &st, f);
  for (uint32_t i = 0; i < np; i++)
    if (i != 4)
      f->active[i] = 100;
  run(c, st, f, 50, T - 1, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-3-6 %s: at usable_until - 1 ms it is still picked",
           c->name);
  is_int(counts[4], 50, name);
  run(c, st, f, 50, T, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-3-6 %s: at usable_until: never (NONE)", c->name);
  ok(counts[4] == 0 && counts[np] == 50, name);
  for (uint32_t i = 0; i < np; i++)
    f->active[i] = 0;
  /* The clock running through the deadline with the others free. */
  int bad = 0, before = 0;
  char kb[32];
  for (int64_t t = T - 40; t < T + 40; t++)
    for (uint32_t k = 0; k < 8; k++) {
      req q = {t, key_of((uint32_t)(t * 8 + k), kb, sizeof(kb)), NULL, 0, 0};
      uint32_t p = pick_r(c->vt, st, f, seed_next(&seed), &q);
      if (p == NONE || (p == 4 && t >= T))
        bad++;
      if (p == 4 && t < T)
        before++;
    }
  snprintf(name, sizeof(name),
           "CP-3-6 %s: over 80 ms across usable_until: picked before (%d), never at or after",
           c->name, before);
  ok(!bad && before > 0, name);
  f->px[4].usable_until_ms = NOW + HOUR;
  f->px[4].expires_at_ms = T;
  reattach(c, &st, f);
  run(c, st, f, 400, T, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "%s: past expires_at never picked", c->name);
  ok(counts[4] == 0 && counts[np] == 0, name);
  f->px[4].expires_at_ms = NOW + 2 * HOUR;
  reattach(c, &st, f);

  /* The view's own deadlines (CP-3-9, CP-3-18). */
  run(c, st, f, 100, f->v.valid_until_ms - 1, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-3-9 %s: valid_until - 1 ms: picks", c->name);
  is_int(counts[np], 0, name);
  run(c, st, f, 100, f->v.valid_until_ms, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-3-9 %s: at the view's valid_until: NONE", c->name);
  is_int(counts[np], 100, name);
  f->v.stale_deadline_ms = NOW + 1000;
  run(c, st, f, 100, NOW + 1000, NULL, 0, 0, counts, &seed);
  snprintf(name, sizeof(name), "CP-3-18 %s: at the stale deadline: NONE", c->name);
  is_int(counts[np], 100, name);
  f->v.stale_deadline_ms = NOW + HOUR;
  c->vt->detach(NULL, st);

  /* Two rules on two groups: a full group falls back only inside itself
   * (CP-1-23), never to the other rule's proxies. Rule 1 {1, 3, 5}, rule
   * 2 {0, 2, 4, 6, 7}. */
  static const uint32_t odd[] = {1, 3, 5}, even[] = {0, 2, 4, 6, 7};
  fx_rule(f, 1, odd, 3, "odd", "any");
  fx_rule(f, 2, even, 5, "even", "any");
  st = c->vt->attach(NULL, &f->v, NULL, NULL, NULL);
  run(c, st, f, 600, 0, NULL, 0, 1, counts, &seed);
  snprintf(name, sizeof(name), "CP-1-23 %s: picks only among the rule's candidates",
           c->name);
  ok(counts[1] + counts[3] + counts[5] == 600 && counts[1] && counts[3] &&
         counts[5],
     name);
  f->active[1] = f->active[3] = 100;
  run(c, st, f, 300, 0, NULL, 0, 1, counts, &seed);
  snprintf(name, sizeof(name), "CP-1-23 %s: two of three full: the third, always",
           c->name);
  is_int(counts[5], 300, name);
  f->active[5] = 100;
  run(c, st, f, 300, 0, NULL, 0, 1, counts, &seed);
  snprintf(name, sizeof(name),
           "CP-1-23 %s: the rule's candidates all full: NONE, though the other group has room",
           c->name);
  is_int(counts[np], 300, name);
  f->active[1] = f->active[3] = f->active[5] = 0;

  /* Filling up by picking: exactly the capacities are handed out, then
   * NONE; no proxy is ever over its capacity. */
  for (uint32_t i = 0; i < np; i++)
    f->px[i].capacity = 3 + i % 2; /* 3 4 3 4 ...: 28 */
  reattach(c, &st, f);
  int over = 0;
  uint32_t granted = 0;
  for (uint32_t i = 0; i < 40; i++) {
    req q = {0, key_of(i % 3, kb, sizeof(kb)), NULL, 0, 0};
    uint32_t p = pick_r(c->vt, st, f, seed_next(&seed), &q);
    if (p == NONE)
      continue;
    granted++;
    if (++f->reserved[p] > f->px[p].capacity)
      over++;
  }
  snprintf(name, sizeof(name),
           "CP-1-23 %s: picking until full hands out exactly the 28 places, none over",
           c->name);
  ok(granted == 28 && !over, name);
  for (uint32_t i = 0; i < np; i++) {
    f->px[i].capacity = 100;
    f->reserved[i] = 0;
  }
  c->vt->detach(NULL, st);

  /* No candidates, a rule the state does not know, a short request. */
  fx_rule(f, 3, odd, 0, "empty", "any");
  st = c->vt->attach(NULL, &f->v, NULL, NULL, NULL);
  run(c, st, f, 20, 0, NULL, 0, 3, counts, &seed);
  snprintf(name, sizeof(name), "%s: a rule without candidates: NONE", c->name);
  is_int(counts[np], 20, name);
  strat_self other = {"nobody"};
  void *st_other = c->vt->attach(&other, &f->v, NULL, NULL, NULL);
  run(c, st_other, f, 300, 0, NULL, 0, 1, counts, &seed);
  snprintf(name, sizeof(name),
           "%s: a rule the state does not cover: still only its candidates",
           c->name);
  ok(st_other && counts[1] + counts[3] + counts[5] == 300, name);
  ph_strategy_pick in = {0};
  in.size = (uint32_t)offsetof(ph_strategy_pick, random);
  in.view = &f->v;
  in.rule = &f->rules[0];
  in.load = &f->load;
  in.now_ms = NOW;
  snprintf(name, sizeof(name), "%s: a request struct shorter than 1.0's: NONE",
           c->name);
  is_int(c->vt->pick(NULL, st, &in), NONE, name);
  c->vt->detach(NULL, st_other);
  c->vt->detach(NULL, st);
  c->vt->detach(NULL, NULL);

  /* An empty view attaches (not NULL: NULL is out of memory only). */
  fx *e = fx_new(0);
  e->v.n_rules = 0;
  void *se = c->vt->attach(NULL, &e->v, NULL, NULL, NULL);
  snprintf(name, sizeof(name), "%s: a view with no rules or proxies attaches",
           c->name);
  ok(se != NULL, name);
  c->vt->detach(NULL, se);
  fx_free(e);
  fx_free(f);
}

/* ---- sticky ------------------------------------------------------------------ */

#define NKEYS 20000

static void owners(void *st, const fx *f, uint32_t *out, uint64_t *seed) {
  char kb[32];
  for (uint32_t i = 0; i < NKEYS; i++) {
    req q = {0, key_of(i, kb, sizeof(kb)), NULL, 0, 0};
    out[i] = pick_r(&strat_sticky_v1, st, f, seed_next(seed), &q);
  }
}

static void test_sticky_basics(void) {
  fx *f = fx_new(10);
  void *st = strat_sticky_v1.attach(NULL, &f->v, NULL, NULL, NULL);
  uint64_t seed = 5;
  uint32_t *a = malloc(NKEYS * 4), *b = malloc(NKEYS * 4);
  owners(st, f, a, &seed);
  owners(st, f, b, &seed);
  ok(memcmp(a, b, NKEYS * 4) == 0,
     "sticky: 20000 keys, each on the same proxy again (other random bits)");
  uint32_t count[10] = {0};
  for (uint32_t i = 0; i < NKEYS; i++)
    count[a[i]]++;
  int even = 1;
  for (int i = 0; i < 10; i++)
    even &= count[i] > 1700 && count[i] < 2300;
  ok(even, "sticky: the keys spread over the 10 proxies (each 10 % +- 1.5 points)");

  /* A key whose proxy is full goes elsewhere, and comes back. */
  char kb[32];
  req q = {0, key_of(77, kb, sizeof(kb)), NULL, 0, 0};
  uint32_t home = a[77];
  f->active[home] = 100;
  uint32_t away = pick_r(&strat_sticky_v1, st, f, 1, &q);
  uint32_t away2 = pick_r(&strat_sticky_v1, st, f, 2, &q);
  f->active[home] = 0;
  uint32_t back = pick_r(&strat_sticky_v1, st, f, 3, &q);
  ok(away != home && away != NONE && away2 == away && back == home,
     "sticky: its proxy full, a key goes to one other (the same each time), then back");
  /* And the keys of a full proxy spread over the others. */
  f->active[home] = 100;
  uint32_t moved[10] = {0};
  for (uint32_t i = 0; i < NKEYS; i++)
    if (a[i] == home) {
      req r = {0, key_of(i, kb, sizeof(kb)), NULL, 0, 0};
      moved[pick_r(&strat_sticky_v1, st, f, seed_next(&seed), &r)]++;
    }
  int spread = moved[home] == 0;
  for (uint32_t i = 0; i < 10; i++)
    if (i != home)
      spread &= moved[i] > 0 && moved[i] < count[home] / 3;
  ok(spread, "sticky: a full proxy's keys spread over all the others, none taking a third");
  f->active[home] = 0;

  /* No key: uniform like random. */
  memset(count, 0, sizeof(count));
  for (uint32_t i = 0; i < 50000; i++) {
    req r = {0, NULL, NULL, 0, 0};
    count[pick_r(&strat_sticky_v1, st, f, seed_next(&seed), &r)]++;
  }
  even = 1;
  for (int i = 0; i < 10; i++)
    even &= count[i] > 4500 && count[i] < 5500;
  ok(even, "sticky: no key (NULL): uniform, as random");

  /* Two rules on one candidates array share one table; another rule's
   * array has its own. */
  f->rules[1] = f->rules[0];
  f->rules[1].index = 1;
  f->rules[1].rule_id = "r1";
  f->v.n_rules = 2;
  strat_sticky_v1.detach(NULL, st);
  st = strat_sticky_v1.attach(NULL, &f->v, NULL, NULL, NULL);
  int same = 1;
  for (uint32_t i = 0; i < 500; i++) {
    req r0 = {0, key_of(i, kb, sizeof(kb)), NULL, 0, 0};
    req r1 = {0, key_of(i, kb, sizeof(kb)), NULL, 0, 1};
    same &= pick_r(&strat_sticky_v1, st, f, 1, &r0) ==
            pick_r(&strat_sticky_v1, st, f, 2, &r1);
  }
  ok(same, "sticky: two rules of one group put a key on the same proxy");
  strat_sticky_v1.detach(NULL, st);
  free(a);
  free(b);
  fx_free(f);
}

/* A view of the given ids (a subset of some universe), all usable. */
static fx *view_of(char (*universe)[16], const uint8_t *in, uint32_t n_univ) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < n_univ; i++)
    n += in[i];
  char (*ids)[16] = calloc(n ? n : 1, sizeof(*ids));
  uint32_t k = 0;
  for (uint32_t i = 0; i < n_univ; i++)
    if (in[i])
      memcpy(ids[k++], universe[i], 16);
  return fx_new_ids(n, ids);
}

/* old -> new (attach with prev + map): returns the new state; checks
 * that every key whose proxy is still in the view kept it, counts the
 * moved keys and whether each went to a proxy new in this view. */
typedef struct moves {
  uint32_t moved, stayed, orphaned, to_new, kept_wrong;
  uint32_t bad;  /* moved from a proxy that stays to one that is not new */
  uint32_t gone; /* old proxies not in the new view */
} moves;

static void *carry(void *old_st, fx *old_f, fx *new_f, const uint32_t *old_own,
                   uint32_t *new_own, moves *mv, uint64_t *seed) {
  uint32_t *map = remap(old_f, new_f);
  void *st = strat_sticky_v1.attach(NULL, &new_f->v, old_st, &old_f->v, map);
  owners(st, new_f, new_own, seed);
  memset(mv, 0, sizeof(*mv));
  for (uint32_t i = 0; i < NKEYS; i++) {
    const char *was = old_f->px[old_own[i]].proxy_id;
    const char *now = new_f->px[new_own[i]].proxy_id;
    int survives = map[old_own[i]] != NONE;
    int moved = strcmp(was, now) != 0;
    if (survives && moved)
      mv->kept_wrong++;
    if (!survives)
      mv->orphaned++;
    if (moved) {
      mv->moved++;
      int fresh = 1; /* the proxy it went to was not in the old view */
      for (uint32_t j = 0; j < old_f->v.n_proxies; j++)
        if (strcmp(old_f->px[j].proxy_id, now) == 0)
          fresh = 0;
      mv->to_new += fresh;
      if (survives && !fresh)
        mv->bad++;
    } else {
      mv->stayed++;
    }
  }
  for (uint32_t j = 0; j < old_f->v.n_proxies; j++)
    mv->gone += map[j] == NONE;
  free(map);
  return st;
}

static void test_sticky_views(void) {
  enum { U = 48 };
  char (*univ)[16] = ids_make(U, "px%03u");
  uint8_t in[U] = {0};
  for (int i = 0; i < 10; i++)
    in[i * 2] = 1; /* px000 px002 ... px018 */
  uint64_t seed = 11;
  fx *f1 = view_of(univ, in, U);
  void *s1 = strat_sticky_v1.attach(NULL, &f1->v, NULL, NULL, NULL);
  uint32_t *o1 = malloc(NKEYS * 4), *o2 = malloc(NKEYS * 4);
  owners(s1, f1, o1, &seed);

  /* Remove px008 (index 4: the ones after it shift down). */
  in[8] = 0;
  fx *f2 = view_of(univ, in, U);
  moves mv;
  void *s2 = carry(s1, f1, f2, o1, o2, &mv, &seed);
  printf("# sticky: removing one of 10 moved %u keys, %u had been on it\n",
         mv.moved, mv.orphaned);
  ok(s2 && mv.kept_wrong == 0 && mv.moved == mv.orphaned && mv.orphaned > 0,
     "sticky: a proxy removed from the next view: exactly its keys move, every other key keeps its proxy");

  /* Add px009 (between existing ids) and px040 (after all). */
  in[9] = 1;
  in[40] = 1;
  fx *f3 = view_of(univ, in, U);
  uint32_t *o3 = malloc(NKEYS * 4);
  void *s3 = carry(s2, f2, f3, o2, o3, &mv, &seed);
  printf("# sticky: adding 2 to 9 moved %u of %u keys\n", mv.moved, NKEYS);
  ok(s3 && mv.to_new == mv.moved && mv.moved > NKEYS / 11 * 2 * 8 / 10 &&
         mv.moved < NKEYS / 11 * 2 * 12 / 10,
     "sticky: two proxies added to nine: 2/11 of the keys move (+-20 %), all onto the new two");

  /* Churn: 30 views, each removing or adding a few; every removal moves
   * only its keys, every addition only onto the new ones. */
  fx *prev_f = f3;
  void *prev_s = s3;
  uint32_t *prev_o = o3, *cur_o = o1;
  int exact = 1, onto_new = 1;
  uint64_t churn = 3;
  for (int round = 0; round < 30; round++) {
    int add = round % 2;
    for (int k = 0; k < 3; k++) {
      uint32_t i = (uint32_t)(seed_next(&churn) % U);
      uint32_t n_in = 0;
      for (int j = 0; j < U; j++)
        n_in += in[j];
      if (add)
        in[i] = 1;
      else if (n_in > 2)
        in[i] = 0;
    }
    fx *nf = view_of(univ, in, U);
    void *ns = carry(prev_s, prev_f, nf, prev_o, cur_o, &mv, &seed);
    if (!add && (mv.kept_wrong || mv.moved != mv.orphaned))
      exact = 0;
    if (add && (mv.to_new != mv.moved || mv.bad))
      onto_new = 0;
    strat_sticky_v1.detach(NULL, prev_s);
    fx_free(prev_f);
    prev_f = nf;
    prev_s = ns;
    uint32_t *t = prev_o;
    prev_o = cur_o;
    cur_o = t;
  }
  ok(exact, "sticky: 15 views removing proxies: every time exactly their keys moved");
  ok(onto_new, "sticky: 15 views adding proxies: every moved key went to a new one");

  /* Grown from 10 to 40 candidates (the table doubles twice): keys of
   * proxies that stay still stay. */
  memset(in, 0, sizeof(in));
  for (int i = 0; i < 40; i++)
    in[i] = 1;
  fx *big = view_of(univ, in, U);
  uint32_t n_before = prev_f->v.n_proxies;
  void *sb = carry(prev_s, prev_f, big, prev_o, cur_o, &mv, &seed);
  uint32_t n_new = 40 - (n_before - mv.gone);
  double bound = mv.orphaned + (double)NKEYS * n_new / 40 * 1.2;
  printf("# sticky: %u to 40 candidates (%u gone, %u new): %u keys moved, "
         "%u of them orphaned\n", n_before, mv.gone, n_new, mv.moved,
         mv.orphaned);
  ok(mv.bad == 0 && mv.moved <= bound,
     "sticky: growing to 40 candidates (the table doubles): a key of a proxy that stays moves only onto a new one, about their share");
  strat_sticky_v1.detach(NULL, sb);
  strat_sticky_v1.detach(NULL, prev_s);
  strat_sticky_v1.detach(NULL, s2);
  strat_sticky_v1.detach(NULL, s1);
  fx_free(big);
  fx_free(prev_f);
  fx_free(f2);
  fx_free(f1);
  free(o1);
  free(o2);
  free(o3);
  free(univ);
}

static void test_sticky_table(void) {
  is_int(sk_bits_for(1, 0), SK_BITS_MIN, "sticky table: 1 candidate, 128 slots");
  is_int(sk_bits_for(10, 0), 10, "sticky table: 10 candidates, 1024 slots (>= 100 each)");
  is_int(sk_bits_for(10000, 0), 20, "sticky table: 10,000 candidates, 2^20 slots");
  is_int(sk_bits_for(100000, 0), SK_BITS_MAX,
         "sticky table: 100,000 candidates, bounded at 2^21 slots");
  is_int(sk_bits_for(9, 10), 10, "sticky table: one fewer candidate keeps the size");
  is_int(sk_bits_for(11, 10), 11, "sticky table: past 100 a candidate it doubles");
  is_int(sk_bits_for(10, 14), 14, "sticky table: under 32 times too large it keeps its size");
  is_int(sk_bits_for(10, 16), 16, "sticky table: a table of 2^16 slots or fewer never shrinks");
  is_int(sk_bits_for(10, 21), 10, "sticky table: 2^21 slots for 10 candidates shrinks");
  /* Quotas of a fresh table. */
  uint32_t slot[1024];
  ok(sk_slots_fill(slot, 10, 7, NULL, 0, NULL, 0) == 0, "sticky table: fill");
  uint32_t count[7] = {0};
  int inrange = 1;
  for (int i = 0; i < 1024; i++) {
    if (slot[i] >= 7)
      inrange = 0;
    else
      count[slot[i]]++;
  }
  int quota = inrange;
  for (int i = 0; i < 7; i++)
    quota &= count[i] == 146 || count[i] == 147; /* 1024 = 7 * 146 + 2 */
  ok(quota, "sticky table: 1024 slots over 7: 146 or 147 each");

  /* Carried over with one of 7 removed: its slots go to the six left,
   * each ending within one slot of the others. */
  uint32_t trans[7] = {0, 1, 2, NONE, 3, 4, 5}, slot2[1024];
  ok(sk_slots_fill(slot2, 10, 6, slot, 10, trans, 7) == 0, "sticky table: carried");
  uint32_t c2[6] = {0};
  int kept = 1;
  for (int i = 0; i < 1024; i++) {
    c2[slot2[i]]++;
    if (slot[i] != 3 && slot2[i] != trans[slot[i]])
      kept = 0;
  }
  int bal = 1;
  for (int i = 0; i < 6; i++)
    bal &= c2[i] == 170 || c2[i] == 171; /* 1024 = 6 * 170 + 4 */
  ok(kept && bal, "sticky table: removed one's slots spread, the others' untouched, 170-171 each");

  /* 40 candidates on 4096 slots losing 1 (few orphans: remembered) and
   * losing 20 (many: found by a scan): the same result either way. */
  for (uint32_t gone = 1; gone <= 20; gone += 19) {
    uint32_t *t40 = malloc(4096 * 4), *t2 = malloc(4096 * 4), tr[40];
    sk_slots_fill(t40, 12, 40, NULL, 0, NULL, 0);
    uint32_t next = 0;
    for (uint32_t j = 0; j < 40; j++)
      tr[j] = j % 2 == 1 && j / 2 < gone ? NONE : next++;
    int rc = sk_slots_fill(t2, 12, next, t40, 12, tr, 40);
    uint32_t cnt[40] = {0};
    int keep = rc == 0, fair = 1;
    for (int i = 0; i < 4096; i++) {
      if (tr[t40[i]] != NONE && t2[i] != tr[t40[i]])
        keep = 0;
      if (t2[i] >= next)
        keep = 0;
      else
        cnt[t2[i]]++;
    }
    for (uint32_t i = 0; i < next; i++)
      fair &= cnt[i] == 4096 / next || cnt[i] == 4096 / next + 1;
    char name[128];
    snprintf(name, sizeof(name),
             "sticky table: 40 candidates, %u removed: the others keep every slot, all end at their quota",
             gone);
    ok(keep && fair, name);
    free(t40);
    free(t2);
  }

  /* The computed layout (sticky's fast path): a fresh table is the
   * formula, so nothing is marked; after carry-overs, a block is clean
   * exactly when every slot in it is base[sk_base_of(slot)] (the pick
   * then computes the same candidate the slot holds). */
  {
    uint32_t *t = malloc(8192 * 4), *t2 = malloc(8192 * 4);
    uint32_t base[40], tr[40];
    uint8_t dirty[1024];
    sk_slots_fill(t, 12, 40, NULL, 0, NULL, 0);
    int formula = 1;
    for (uint32_t i = 0; i < 4096; i++)
      formula &= t[i] == (uint32_t)(((uint64_t)i * 40) >> 12);
    ok(formula, "sticky table: a fresh table is one run a candidate, floor(s n / 2^bits)");
    for (uint32_t j = 0; j < 40; j++)
      base[j] = j;
    sk_base_dirty(dirty, t, 12, base, 40, 12);
    int none = 1;
    for (size_t i = 0; i < sk_dirty_bytes(12); i++)
      none &= dirty[i] == 0;
    ok(none, "sticky table: a fresh table's computed layout: no block marked");

    /* Remove candidate 7 of 40 (4096 slots), then grow to 44 on 8192
     * slots (the table doubles, four new candidates take slots). */
    uint32_t next = 0;
    for (uint32_t j = 0; j < 40; j++)
      tr[j] = j == 7 ? NONE : next++;
    sk_slots_fill(t2, 12, 39, t, 12, tr, 40);
    for (uint32_t j = 0; j < 40; j++)
      base[j] = tr[j];
    for (int step = 0; step < 2; step++) {
      uint32_t bits = step == 0 ? 12 : 13, m = 1u << bits;
      const uint32_t *cur = step == 0 ? t2 : t;
      if (step == 1) {
        /* 39 -> 44: positions 0..38 keep theirs, 39..43 are new. */
        uint32_t id[39];
        for (uint32_t j = 0; j < 39; j++)
          id[j] = j;
        sk_slots_fill(t, 13, 44, t2, 12, id, 39);
      }
      sk_base_dirty(dirty, cur, bits, base, 40, 12);
      int exact = 1;
      uint32_t marked = 0;
      for (uint32_t blk = 0; blk < m >> SK_BLOCK_BITS; blk++) {
        int differs = 0;
        for (uint32_t k = 0; k < 1u << SK_BLOCK_BITS; k++) {
          uint32_t sl = (blk << SK_BLOCK_BITS) + k;
          uint32_t b = base[sk_base_of(sl, bits, 40, 12)];
          differs |= b == NONE || cur[sl] != b;
        }
        exact &= sk_is_dirty(dirty, blk << SK_BLOCK_BITS) == differs;
        marked += (uint32_t)differs;
      }
      char name[160];
      snprintf(name, sizeof(name),
               "sticky table: %s: a block is marked exactly when a slot in it is not its base candidate's",
               step == 0 ? "one of 40 removed" : "then grown to 44 on twice the slots");
      ok(exact, name);
      /* Removing one marks its run (103 of 4096 slots: 13 or 14 blocks
       * of 8, two shared with its neighbours); the four new ones take
       * 4/44 of the slots, one or two from each old run. */
      uint32_t bound = step == 0 ? 15 : 4 * (8192 / 44 + 1);
      printf("# sticky table: %s: %u of %u blocks marked\n",
             step == 0 ? "40 - 1" : "39 -> 44", marked, m >> SK_BLOCK_BITS);
      snprintf(name, sizeof(name),
               "sticky table: %s: at most %u blocks marked (only where slots changed)",
               step == 0 ? "one removed" : "four added", bound);
      ok(marked > 0 && marked <= bound, name);
    }
    free(t);
    free(t2);
  }

  /* SipHash-2-4, the paper's vectors: key 00..0f, messages 00..(n-1). */
  uint8_t msg[64];
  for (int i = 0; i < 64; i++)
    msg[i] = (uint8_t)i;
  uint64_t k0 = UINT64_C(0x0706050403020100), k1 = UINT64_C(0x0f0e0d0c0b0a0908);
  ok(strat_siphash24(k0, k1, msg, 0) == UINT64_C(0x726fdb47dd0e0e31),
     "SipHash-2-4: the empty message's vector");
  ok(strat_siphash24(k0, k1, msg, 15) == UINT64_C(0xa129ca6149be45e5),
     "SipHash-2-4: the paper's 15-byte example");
  ok(strat_key_hash("alice", 5) != strat_key_hash("alicf", 5) &&
         strat_key_hash("alice", 5) == strat_key_hash("alice", 5),
     "the key hash: deterministic, one byte changes it");
}

/* ---- the compact candidate test ------------------------------------------ */

/* strat_cand_takes() on the compact entries attach() builds
 * (strat_rules_build) says exactly what ph_strategy_takes() says, for
 * every candidate of random views (deadlines a few ms either side of now,
 * draining, capacity 0, full and one-below-full loads, revoked, tried,
 * candidates out of the view's range) at every ms across the deadlines,
 * while the view is live (CP-3-6, CP-4-2, CP-1-23). */
static void test_compact_takes(void) {
  uint64_t seed = 4242;
  uint64_t checks = 0, takes = 0, mismatches = 0, edge_yes = 0, edge_no = 0;
  int build_failed = 0;
  for (uint32_t iter = 0; iter < 600; iter++) {
    uint32_t n = 1 + (uint32_t)(seed_next(&seed) % 24);
    fx *f = fx_new(n);
    for (uint32_t i = 0; i < n; i++) {
      ph_pool_view_proxy *x = &f->px[i];
      static const uint32_t caps[] = {0, 1, 2, 3, 100, UINT32_MAX};
      x->capacity = caps[seed_next(&seed) % 6];
      x->draining = seed_next(&seed) % 6 == 0;
      x->usable_until_ms = NOW + (int64_t)(seed_next(&seed) % 9) - 4;
      x->expires_at_ms = NOW + (int64_t)(seed_next(&seed) % 9) - 4;
      if (seed_next(&seed) % 5 == 0) /* far away: only the other counts */
        x->expires_at_ms = NOW + HOUR;
      uint64_t c = x->capacity;
      uint64_t load = c == UINT32_MAX ? c - 1 + seed_next(&seed) % 2
                                      : seed_next(&seed) % (c + 2);
      f->active[i] = (uint32_t)(load / 2);
      f->reserved[i] = (uint32_t)(load - load / 2);
      f->revoked[i] = seed_next(&seed) % 7 == 0;
    }
    /* Candidates: the proxies in random order, and now and then an
     * index past the view's proxies. */
    for (uint32_t i = 0; i < n; i++) {
      uint32_t j = (uint32_t)(seed_next(&seed) % (i + 1));
      f->cand[0][i] = f->cand[0][j];
      f->cand[0][j] = i;
    }
    if (seed_next(&seed) % 4 == 0)
      f->cand[0][seed_next(&seed) % n] = n + (uint32_t)(seed_next(&seed) % 3);
    strat_rules r;
    if (strat_rules_build(&r, NULL, &f->v) < 0 || r.n_sets != 1) {
      build_failed = 1;
      fx_free(f);
      break;
    }
    uint32_t tried[PH_STRATEGY_TRIED_MAX];
    for (int64_t now = NOW - 5; now <= NOW + 5; now++) {
      uint32_t n_tried = (uint32_t)(seed_next(&seed) % 4);
      for (uint32_t k = 0; k < n_tried; k++)
        tried[k] = (uint32_t)(seed_next(&seed) % (n + 1));
      ph_strategy_pick in = {0};
      in.size = sizeof(in);
      in.view = &f->v;
      in.rule = &f->rules[0];
      in.load = &f->load;
      in.now_ms = now;
      in.tried = tried;
      in.n_tried = n_tried;
      for (uint32_t pos = 0; pos < n; pos++) {
        uint32_t p = f->cand[0][pos];
        int want = ph_strategy_takes(&in, p);
        int got = strat_cand_takes(&in, &r.sets[0].cand[pos]) &&
                  r.sets[0].cand[pos].proxy == p;
        checks++;
        takes += want;
        mismatches += want != got;
        if (p < n) { /* the usable_until boundary, to the ms */
          const ph_pool_view_proxy *x = &f->px[p];
          if (x->usable_until_ms < x->expires_at_ms) {
            edge_yes += want && now == x->usable_until_ms - 1;
            edge_no += !want && now == x->usable_until_ms &&
                       !x->draining && !f->revoked[p] && x->capacity &&
                       (uint64_t)f->active[p] + f->reserved[p] < x->capacity;
          }
        }
      }
    }
    strat_rules_free(&r);
    fx_free(f);
  }
  printf("# compact test: %" PRIu64 " checks, %" PRIu64 " take, %" PRIu64
         " taken at usable_until - 1, %" PRIu64 " refused only for reaching it\n",
         checks, takes, edge_yes, edge_no);
  ok(!build_failed && checks > 50000 && takes > checks / 20 &&
         takes < checks / 2 && edge_yes > 100 && edge_no > 100 &&
         mismatches == 0,
     "CP-3-6 CP-4-2 CP-1-23 the compact entries take exactly what ph_strategy_takes() takes");
}

int main(void) {
  plan_lazy();
  test_round_robin();
  test_weighted();
  test_least_active();
  test_random();
  test_compact_takes();
  for (size_t i = 0; i < N_ALL; i++)
    test_corners(&all[i]);
  test_sticky_basics();
  test_sticky_views();
  test_sticky_table();
  return done_testing();
}

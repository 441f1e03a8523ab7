/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stratsel: what one pick costs each dispatch strategy
 * (modules/strategies, issue 13) with 10 and with 10,000 proxies in the
 * view, all usable and under some load, and the ratio 10,000 / 10 (the
 * contract's "does not grow with the candidates"; the goal is <= 1.2x).
 * Wall and CPU nanoseconds per pick, the median of interleaved runs, then
 * wall ns over a ladder of sizes (10 .. 100,000); and what attach() costs (a fresh view, and sticky's carried
 * over from a previous view with one proxy more).
 *
 *   stratsel [--picks N] [--repeats R] [--only STRATEGY]
 *
 * --only measures one strategy (its two tables' rows; sticky's carry-over
 * only when it is sticky), for comparing one change quickly.
 *
 * The pure strategies are linked in (no host): the figures are the
 * selection alone, with its random bits made by the same splitmix64 the
 * strategies use. Markdown on stdout. Not part of make check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strategies/strat.h"

#define NOW INT64_C(1800000000000)
#define N_KEYS 4096

typedef struct bview {
  ph_pool_view v;
  ph_pool_view_proxy *px;
  char (*ids)[16];
  ph_pool_view_rule rule;
  uint32_t *cand, *active, *reserved;
  uint8_t *revoked;
  ph_pool_load load;
} bview;

static uint64_t mix(uint64_t *s) {
  strat_rng r = {*s};
  uint64_t x = strat_next(&r);
  *s = r.s;
  return x;
}

/* n proxies, capacity 100, weights 1..100, 0..49 active, 0..9 reserved;
 * skip (if < n) is left out (the "previous view" of a carry-over). */
static bview *bview_new(uint32_t n, uint32_t skip) {
  bview *b = calloc(1, sizeof(*b));
  b->px = calloc(n, sizeof(*b->px));
  b->ids = calloc(n, sizeof(*b->ids));
  b->cand = calloc(n, sizeof(uint32_t));
  b->active = calloc(n, sizeof(uint32_t));
  b->reserved = calloc(n, sizeof(uint32_t));
  b->revoked = calloc(n, 1);
  if (!b->px || !b->ids || !b->cand || !b->active || !b->reserved ||
      !b->revoked) {
    fprintf(stderr, "stratsel: out of memory\n");
    exit(1);
  }
  uint64_t seed = 2026;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (i == skip)
      continue;
    snprintf(b->ids[k], sizeof(b->ids[k]), "p%07u", i);
    ph_pool_view_proxy *x = &b->px[k];
    x->proxy_id = b->ids[k];
    x->index = k;
    x->host = "127.0.0.1";
    x->port = 1080;
    x->capacity = 100;
    x->weight = 1 + (uint32_t)(mix(&seed) % 100);
    x->usable_until_ms = NOW + 3600000;
    x->expires_at_ms = NOW + 7200000;
    b->active[k] = (uint32_t)(mix(&seed) % 50);
    b->reserved[k] = (uint32_t)(mix(&seed) % 10);
    b->cand[k] = k;
    k++;
  }
  b->v.size = sizeof(b->v);
  b->v.valid_until_ms = NOW + 3600000;
  b->v.stale_deadline_ms = NOW + 3600000;
  b->v.proxies = b->px;
  b->v.n_proxies = k;
  b->rule.rule_id = "r0";
  b->rule.target_group = "g";
  b->rule.strategy = "any";
  b->rule.candidates = b->cand;
  b->rule.n_candidates = k;
  b->v.rules = &b->rule;
  b->v.n_rules = 1;
  b->load.active = b->active;
  b->load.reserved = b->reserved;
  b->load.revoked = b->revoked;
  return b;
}

static void bview_free(bview *b) {
  free(b->px);
  free(b->ids);
  free(b->cand);
  free(b->active);
  free(b->reserved);
  free(b->revoked);
  free(b);
}

static double ns_of(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static char keys[N_KEYS][24];
static uint32_t key_len[N_KEYS];
static volatile uint64_t sink;

/* One timed run: wall and CPU ns per pick. */
static void run(const ph_strategy_v1 *vt, void *st, bview *b, uint64_t picks,
                double *wall, double *cpu) {
  ph_strategy_pick in = {0};
  in.size = sizeof(in);
  in.view = &b->v;
  in.rule = &b->rule;
  in.load = &b->load;
  in.now_ms = NOW;
  uint64_t seed = 77, acc = 0;
  double w0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
  for (uint64_t i = 0; i < picks; i++) {
    uint32_t k = (uint32_t)i & (N_KEYS - 1);
    in.key = keys[k];
    in.key_len = key_len[k];
    in.random = mix(&seed);
    acc += vt->pick(NULL, st, &in);
  }
  double w1 = ns_of(CLOCK_MONOTONIC), c1 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
  sink += acc;
  *wall = (w1 - w0) / (double)picks;
  *cpu = (c1 - c0) / (double)picks;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof(*x), cmp_d);
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

#define MAX_REPEATS 101

int main(int argc, char **argv) {
  uint64_t picks = 2000000;
  int repeats = 7;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--picks") == 0 && i + 1 < argc)
      picks = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr,
              "usage: stratsel [--picks N] [--repeats R] [--only STRATEGY]\n");
      return 2;
    }
  }
  if (picks < 1000 || picks > 1000000000 || repeats < 1 ||
      repeats > MAX_REPEATS) {
    fprintf(stderr, "stratsel: --picks 1000..1e9, --repeats 1..%d\n",
            MAX_REPEATS);
    return 2;
  }
  for (uint32_t k = 0; k < N_KEYS; k++)
    key_len[k] = (uint32_t)snprintf(keys[k], sizeof(keys[k]), "session-%u", k);

  static const struct {
    const char *name;
    const ph_strategy_v1 *vt;
  } s[] = {{"round_robin", &strat_round_robin_v1},
           {"weighted", &strat_weighted_v1},
           {"least_active", &strat_least_active_v1},
           {"random", &strat_random_v1},
           {"sticky", &strat_sticky_v1}};
  enum { N_S = sizeof(s) / sizeof(s[0]) };
  int known = only == NULL;
  for (int i = 0; i < N_S && !known; i++)
    known = strcmp(s[i].name, only) == 0;
  if (!known) {
    fprintf(stderr, "stratsel: --only: no strategy %s\n", only);
    return 2;
  }
#define SKIP(i) (only && strcmp(s[i].name, only) != 0)
  const uint32_t sizes[2] = {10, 10000};
  bview *views[2] = {bview_new(sizes[0], UINT32_MAX),
                     bview_new(sizes[1], UINT32_MAX)};

  printf("picks per run: %llu, runs: %d (median; the two sizes interleaved)\n\n",
         (unsigned long long)picks, repeats);
  printf("| strategy | ns/pick, 10 | ns/pick, 10,000 | ratio | CPU ns/pick, 10 "
         "| CPU ns/pick, 10,000 | CPU ratio | attach, 10,000 |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < N_S; i++) {
    if (SKIP(i))
      continue;
    void *st[2];
    double attach_ms = 0;
    for (int z = 0; z < 2; z++) {
      double t0 = ns_of(CLOCK_MONOTONIC);
      st[z] = s[i].vt->attach(NULL, &views[z]->v, NULL, NULL, NULL);
      double t1 = ns_of(CLOCK_MONOTONIC);
      if (!st[z]) {
        fprintf(stderr, "stratsel: attach failed\n");
        return 1;
      }
      if (z == 1)
        attach_ms = (t1 - t0) / 1e6;
    }
    double wall[2][MAX_REPEATS], cpu[2][MAX_REPEATS];
    for (int z = 0; z < 2; z++) /* warm-up */
      run(s[i].vt, st[z], views[z], picks / 4, &wall[z][0], &cpu[z][0]);
    for (int r = 0; r < repeats; r++)
      for (int z = 0; z < 2; z++)
        run(s[i].vt, st[z], views[z], picks, &wall[z][r], &cpu[z][r]);
    double w10 = median(wall[0], repeats), w10k = median(wall[1], repeats);
    double c10 = median(cpu[0], repeats), c10k = median(cpu[1], repeats);
    printf("| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.2f ms |\n",
           s[i].name, w10, w10k, w10k / w10, c10, c10k, c10k / c10, attach_ms);
    for (int z = 0; z < 2; z++)
      s[i].vt->detach(NULL, st[z]);
  }

  /* The same picks over a ladder of sizes (wall ns, median): where the
   * cost steps up is where the view's arrays leave a cache level, not
   * where the work grows. */
  const uint32_t ladder[] = {10, 100, 1000, 10000, 100000};
  enum { N_LADDER = sizeof(ladder) / sizeof(ladder[0]) };
  double m[N_S][N_LADDER];
  for (int z = 0; z < N_LADDER; z++) {
    /* One size at a time: only its view is in memory. */
    bview *lv = bview_new(ladder[z], UINT32_MAX);
    for (int i = 0; i < N_S; i++) {
      if (SKIP(i))
        continue;
      void *st = s[i].vt->attach(NULL, &lv->v, NULL, NULL, NULL);
      if (!st) {
        fprintf(stderr, "stratsel: attach failed\n");
        return 1;
      }
      double wall[MAX_REPEATS], cpu;
      run(s[i].vt, st, lv, picks / 4, &wall[0], &cpu);
      for (int r = 0; r < repeats; r++)
        run(s[i].vt, st, lv, picks, &wall[r], &cpu);
      m[i][z] = median(wall, repeats);
      s[i].vt->detach(NULL, st);
    }
    bview_free(lv);
  }
  printf("\nwall ns/pick by proxies in the view (one view in memory at a time):\n\n");
  printf("| strategy | 10 | 100 | 1,000 | 10,000 | 100,000 |\n");
  printf("|---|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < N_S; i++) {
    if (SKIP(i))
      continue;
    printf("| %s", s[i].name);
    for (int z = 0; z < N_LADDER; z++)
      printf(" | %.1f", m[i][z]);
    printf(" |\n");
  }

  /* sticky's carry-over: the table of a view of 10,001 proxies carried
   * into the 10,000 (the last one gone). */
  if (!only || strcmp(only, "sticky") == 0) {
    bview *before = bview_new(10001, UINT32_MAX);
    bview *after = views[1];
    void *old = strat_sticky_v1.attach(NULL, &before->v, NULL, NULL, NULL);
    uint32_t *map = malloc(before->v.n_proxies * sizeof(uint32_t));
    for (uint32_t i = 0, j = 0; i < before->v.n_proxies; i++) {
      while (j < after->v.n_proxies &&
             strcmp(after->px[j].proxy_id, before->px[i].proxy_id) < 0)
        j++;
      map[i] = j < after->v.n_proxies &&
                       strcmp(after->px[j].proxy_id, before->px[i].proxy_id) == 0
                   ? j
                   : PH_POOL_VIEW_NONE;
    }
    double t0 = ns_of(CLOCK_MONOTONIC);
    void *carried =
        strat_sticky_v1.attach(NULL, &after->v, old, &before->v, map);
    double t1 = ns_of(CLOCK_MONOTONIC);
    printf("\nsticky attach carried over (10,001 proxies, one gone): %.2f ms\n",
           (t1 - t0) / 1e6);
    strat_sticky_v1.detach(NULL, carried);
    strat_sticky_v1.detach(NULL, old);
    free(map);
    bview_free(before);
  }
  bview_free(views[0]);
  bview_free(views[1]);
  return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The five strategy modules as built (modules/NAME/.libs/NAME.so), loaded
 * into the mock host with the sample drop-in and a second instance: each
 * provides "dispatch.strategy" 1.0 under its instance name, as the pool
 * finds them (service_get_named), and the vtable it registered works
 * through the host (CP-1-22). The selection itself is test_strategies'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/strategy.h>

#include "mock_test.h"
#include "tap.h"

static const char *const names[] = {"round_robin", "weighted", "least_active",
                                    "random", "sticky", "sticky.second"};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

/* ---- a fake pool: the consumer ------------------------------------------ */

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  const ph_strategy_v1 *vt[N_NAMES];
  void *self[N_NAMES];
  int declared[N_NAMES]; /* service_provider_loaded */
  const ph_strategy_v1 *newer;  /* asking for minor 1: none */
  const ph_strategy_v1 *ghost;  /* a name nobody loaded */
} P;

MOCK_TEST_INIT(pool_init, P);

static int pool_start(void *state) {
  (void)state;
  void *other;
  for (size_t i = 0; i < N_NAMES; i++) {
    P.declared[i] =
        P.api->service_provider_loaded(P.ctx, PH_STRATEGY_SERVICE, names[i]);
    P.vt[i] = P.api->service_get_named(P.ctx, PH_STRATEGY_SERVICE, names[i],
                                       PH_STRATEGY_MAJOR, 0, &P.self[i]);
  }
  P.newer = P.api->service_get_named(P.ctx, PH_STRATEGY_SERVICE, "random",
                                     PH_STRATEGY_MAJOR, PH_STRATEGY_MINOR + 1,
                                     &other);
  P.ghost = P.api->service_get_named(P.ctx, PH_STRATEGY_SERVICE, "fastest",
                                     PH_STRATEGY_MAJOR, 0, &other);
  return PH_OK;
}

MOCK_TEST_MODULE(pool_mod, "fakepool", "1.0",
                 .requires = MOCK_TEST_NAMES(PH_STRATEGY_SERVICE),
                 .init = pool_init, .start = pool_start);

/* ---- a view by hand -------------------------------------------------------- */

#define NOW INT64_C(1800000000000)
enum { NP = 4 };
static ph_pool_view_proxy px[NP];
static uint32_t cand[NP] = {0, 1, 2, 3};
static ph_pool_view_rule rules[2];
static ph_pool_view view;
static uint32_t active[NP], reserved[NP];
static uint8_t revoked[NP];
static const ph_pool_load load = {active, reserved, revoked};

static void view_init(void) {
  static const char *ids[NP] = {"a", "b", "c", "d"};
  for (uint32_t i = 0; i < NP; i++) {
    px[i].proxy_id = ids[i];
    px[i].index = i;
    px[i].capacity = 10;
    px[i].weight = 1;
    px[i].usable_until_ms = NOW + 60000;
    px[i].expires_at_ms = NOW + 120000;
  }
  for (uint32_t r = 0; r < 2; r++) {
    rules[r].rule_id = r ? "r1" : "r0";
    rules[r].index = r;
    rules[r].target_group = "g";
    rules[r].strategy = r ? "sticky" : "round_robin";
    rules[r].candidates = cand;
    rules[r].n_candidates = NP;
  }
  view.size = sizeof(view);
  view.valid_until_ms = NOW + 60000;
  view.stale_deadline_ms = NOW + 60000;
  view.rules = rules;
  view.n_rules = 2;
  view.proxies = px;
  view.n_proxies = NP;
}

static uint32_t pick(size_t i, void *st, uint32_t rule, const char *key,
                     uint64_t rnd) {
  ph_strategy_pick in = {0};
  in.size = sizeof(in);
  in.view = &view;
  in.rule = &rules[rule];
  in.load = &load;
  in.now_ms = NOW;
  in.key = key;
  in.key_len = key ? (uint32_t)strlen(key) : 0;
  in.random = rnd;
  return P.vt[i]->pick(P.self[i], st, &in);
}

static ph_mock *start(const char *text, char *err, size_t errlen) {
  err[0] = '\0';
  return mock_test_start(text, &pool_mod, err, errlen);
}

int main(void) {
  plan_lazy();
  view_init();
  char err[8192] = "";

  static char sample[4096];
  FILE *f = fopen(PH_TEST_LIBDIR
                  "/../../modules/strategies/strategies.ini.sample", "r");
  size_t n = f ? fread(sample, 1, sizeof(sample) - 1, f) : 0;
  if (f)
    fclose(f);
  sample[n] = '\0';
  ok(n > 0, "the sample is read");
  /* The sample as a drop-in: it loads the five. */
  static char text[8192];
  snprintf(text, sizeof(text), "[proxyhost]\nmodule_path = %s\n%s",
           PH_BUILD_MODULES, sample);
  ph_mock *m = start(text, err, sizeof err);
  ok(m != NULL, "the sample's five modules start in the mock host");
  int five = m != NULL;
  for (size_t i = 0; i < 5; i++)
    five &= P.declared[i] && P.vt[i] != NULL;
  ok(five && !P.vt[5], "the sample: the five strategies found by name");
  if (m)
    ph_mock_stop(m);
  ph_mock_free(m);

  /* Named instances: a second sticky is a strategy of its own name. */
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodule_path = %s\nmodules = round_robin, weighted, "
           "least_active, random, sticky, sticky.second\n",
           PH_BUILD_MODULES);
  m = start(text, err, sizeof err);
  if (!ok(m != NULL, "the five and sticky.second start in the mock host")) {
    return done_testing();
  }

  for (size_t i = 0; i < N_NAMES; i++) {
    char name[128];
    snprintf(name, sizeof(name),
             "CP-1-22 %s: provides dispatch.strategy 1.0 under its instance name",
             names[i]);
    ok(P.declared[i] && P.vt[i] && P.vt[i]->attach && P.vt[i]->detach &&
           P.vt[i]->pick,
       name);
  }
  ok(P.newer == NULL, "no provider of dispatch.strategy 1.1 (the modules are 1.0)");
  ok(P.ghost == NULL, "a strategy nobody loaded is not found");

  /* Through each vtable: a pick that takes, NONE when nothing does. */
  for (size_t i = 0; i < N_NAMES; i++) {
    if (!P.vt[i])
      continue;
    void *st = P.vt[i]->attach(P.self[i], &view, NULL, NULL, NULL);
    char name[128];
    uint32_t p = pick(i, st, i >= 4 ? 1 : 0, "alice", 12345);
    snprintf(name, sizeof(name), "%s: attach and pick through the host", names[i]);
    ok(st && p < NP, name);
    for (uint32_t k = 0; k < NP; k++)
      active[k] = 10;
    snprintf(name, sizeof(name), "%s: every proxy full: NONE", names[i]);
    is_int(pick(i, st, i >= 4 ? 1 : 0, "alice", 12345), PH_POOL_VIEW_NONE, name);
    memset(active, 0, sizeof(active));
    P.vt[i]->detach(P.self[i], st);
  }

  /* round_robin's state covers the rule naming it: strict rotation. */
  void *rr = P.vt[0]->attach(P.self[0], &view, NULL, NULL, NULL);
  uint32_t a = pick(0, rr, 0, NULL, 1), b = pick(0, rr, 0, NULL, 1),
           c = pick(0, rr, 0, NULL, 1);
  ok(a == 0 && b == 1 && c == 2, "round_robin (module): 0, 1, 2 in turn");
  P.vt[0]->detach(P.self[0], rr);
  /* sticky's state covers rule r1 (strategy "sticky"): the same key on the
   * same proxy. */
  void *sk = P.vt[4]->attach(P.self[4], &view, NULL, NULL, NULL);
  int same = 1;
  uint32_t first = pick(4, sk, 1, "bob", 1);
  for (uint64_t r = 2; r < 50; r++)
    same &= pick(4, sk, 1, "bob", r) == first;
  ok(same && first < NP, "sticky (module): one key, one proxy");
  P.vt[4]->detach(P.self[4], sk);

  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The reducer's pure rules (modules/controlplane_server/cs_hyst.c,
 * CP-6-7): down after fall failures, up after rise successes, SUSPECT
 * between; the counters are non-consecutive, so a proxy failing one check
 * in three never changes state (no flap) while one failing two in three
 * goes down; weighted (passive) results count as part of one; the panic
 * guard keeps a group's UNHEALTHY proxies SUSPECT when more than the
 * threshold of the group would be ejected at once. */
#include "controlplane_server/cs_hyst.h"
#include "tap.h"

static const cs_hyst_rules R = {.rise = 2, .fall = 3};
#define U CS_HYST_UNIT

/* Pushes a pattern ("1" success, "0" failure) and counts the changes. */
static int run(cs_hyst *h, const char *pat, int times) {
  int changes = 0;
  for (int t = 0; t < times; t++)
    for (const char *c = pat; *c; c++)
      changes += cs_hyst_push(h, &R, *c == '1', U);
  return changes;
}

static void test_rise_fall(void) {
  cs_hyst h = {0};
  is_int(cs_hyst_push(&h, &R, 1, U), 0, "CP-6-7: one success: no verdict yet");
  is_int(h.verdict, CS_H_NONE, "CP-6-7: UNSPECIFIED before rise successes");
  is_int(cs_hyst_push(&h, &R, 1, U), 1, "CP-6-7: the second success changes");
  is_int(h.verdict, CS_H_AVAILABLE, "CP-6-7: AVAILABLE after rise (2)");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_AVAILABLE, "CP-6-7: one failure keeps AVAILABLE");
  ok(cs_hyst_changing(&h, &R), "CP-6-7: ... but the item is changing");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_SUSPECT, "CP-6-7: fall - 1 failures: SUSPECT");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_UNHEALTHY, "CP-6-7: fall (3) failures: UNHEALTHY");
  ok(!cs_hyst_changing(&h, &R), "CP-6-7: settled UNHEALTHY is not changing");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_UNHEALTHY, "CP-6-7: more failures: still UNHEALTHY");
  cs_hyst_push(&h, &R, 1, U);
  is_int(h.verdict, CS_H_UNHEALTHY, "CP-6-7: one success is not rise");
  cs_hyst_push(&h, &R, 1, U);
  is_int(h.verdict, CS_H_AVAILABLE, "CP-6-7: rise successes: AVAILABLE again");
  is_int((int)h.down, 0, "CP-6-7: coming up clears the failures");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_AVAILABLE,
         "CP-6-7: one failure after coming up is not SUSPECT");
}

static void test_no_flap(void) {
  cs_hyst h = {0};
  run(&h, "11", 1);
  is_int(run(&h, "110", 200), 0,
         "CP-6-7: failing one check in three: no change in 600 checks");
  is_int(h.verdict, CS_H_AVAILABLE, "CP-6-7: ... and it stays AVAILABLE");
  is_int(run(&h, "10", 200), 0,
         "CP-6-7: failing one in two: no change in 400 checks either");
  cs_hyst d = {0};
  run(&d, "11", 1);
  run(&d, "100", 3);
  is_int(d.verdict, CS_H_UNHEALTHY, "CP-6-7: failing two in three: down");
  is_int(run(&d, "100", 100), 0,
         "CP-6-7: ... and it stays down (no flap the other way)");
  cs_hyst s = {0};
  run(&s, "11", 1);
  is_int(run(&s, "00", 1), 1, "CP-6-7: two failures: one change");
  is_int(s.verdict, CS_H_SUSPECT, "CP-6-7: ... SUSPECT, between the two");
  is_int(run(&s, "10", 100), 0,
         "CP-6-7: then failing one in two: stays SUSPECT (no flap)");
}

static void test_fall_small(void) {
  cs_hyst_rules r1 = {.rise = 1, .fall = 1};
  cs_hyst h = {0};
  cs_hyst_push(&h, &r1, 0, U);
  is_int(h.verdict, CS_H_UNHEALTHY, "CP-6-7: fall 1: the first failure");
  cs_hyst_push(&h, &r1, 1, U);
  is_int(h.verdict, CS_H_AVAILABLE, "CP-6-7: rise 1: the first success");
  cs_hyst_rules r2 = {.rise = 2, .fall = 2};
  cs_hyst g = {.verdict = CS_H_AVAILABLE};
  cs_hyst_push(&g, &r2, 0, U);
  is_int(g.verdict, CS_H_AVAILABLE, "CP-6-7: fall 2: no SUSPECT step");
  cs_hyst_push(&g, &r2, 0, U);
  is_int(g.verdict, CS_H_UNHEALTHY, "CP-6-7: fall 2: down at the second");
}

static void test_weights(void) {
  cs_hyst h = {.verdict = CS_H_AVAILABLE};
  is_int(cs_hyst_push(&h, &R, 0, 0), 0, "CP-6-7: weight 0 counts nothing");
  is_int((int)h.down, 0, "CP-6-7: ... not even a part");
  for (int i = 0; i < 7; i++)
    cs_hyst_push(&h, &R, 0, 25);
  is_int(h.verdict, CS_H_AVAILABLE,
         "CP-6-7: seven quarter failures (1.75) keep AVAILABLE");
  cs_hyst_push(&h, &R, 0, 25);
  is_int(h.verdict, CS_H_SUSPECT, "CP-6-7: the eighth (2 whole): SUSPECT");
  cs_hyst_push(&h, &R, 0, U);
  is_int(h.verdict, CS_H_UNHEALTHY, "CP-6-7: a whole failure more: down");
}

static void test_guard(void) {
  ok(!cs_hyst_panic(4, 2, 50), "CP-6-7: 2 of 4 at 50 %: no panic");
  ok(cs_hyst_panic(4, 3, 50), "CP-6-7: 3 of 4 at 50 %: panic");
  ok(!cs_hyst_panic(0, 0, 50), "CP-6-7: an empty group never panics");
  ok(cs_hyst_panic(1, 1, 50), "CP-6-7: 1 of 1: panic (all would go)");
  ok(!cs_hyst_panic(1, 1, 100), "CP-6-7: threshold 100 %: never");
  /* proxies 0..4; group 0 = {0,1,2,3}, group 1 = {3,4} */
  uint8_t v[5] = {CS_H_UNHEALTHY, CS_H_UNHEALTHY, CS_H_UNHEALTHY,
                  CS_H_AVAILABLE, CS_H_UNHEALTHY};
  uint32_t px[] = {0, 1, 2, 3, 3, 4}, gr[] = {0, 0, 0, 0, 1, 1};
  uint32_t scratch[4];
  uint8_t out[5];
  is_int((int)cs_hyst_guard(v, 5, px, gr, 6, 2, 50, scratch, out), 1,
         "CP-6-7: one group of two panics (3 of 4 would go)");
  is_int(out[0], CS_H_SUSPECT, "CP-6-7: panic: UNHEALTHY published SUSPECT");
  is_int(out[2], CS_H_SUSPECT, "CP-6-7: ... every one of that group");
  is_int(out[3], CS_H_AVAILABLE, "CP-6-7: AVAILABLE stays AVAILABLE");
  is_int(out[4], CS_H_UNHEALTHY,
         "CP-6-7: group 1 (1 of 2, 50 %) ejects its UNHEALTHY one");
  is_int((int)cs_hyst_guard(v, 5, px, gr, 6, 2, 80, scratch, out), 0,
         "CP-6-7: at 80 % nothing panics");
  is_int(out[0], CS_H_UNHEALTHY, "CP-6-7: ... and UNHEALTHY is published");
}

int main(void) {
  plan_lazy();
  test_rise_fall();
  test_no_flap();
  test_fall_small();
  test_weights();
  test_guard();
  return done_testing();
}

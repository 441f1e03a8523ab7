/* SPDX-License-Identifier: BSD-2-Clause */
/* The checkers' scheduler, its pure parts (modules/controlplane_server/
 * cs_sched_plan.c, issue 26 "Scheduling", CP-6-2): the jittered interval
 * stays inside its spread; the choice of a checker is the least loaded
 * with room that supports the tier, never one at its max_concurrency,
 * another than the one that missed the item unless it is the only one;
 * target_probes parse and refuse; TARGET tasks to one host are spaced
 * over every group that names it; under overload the due items are
 * offered oldest due first, so every item is checked in turn. */
#include <string.h>

#include "controlplane_server/cs_sched_plan.h"
#include "tap.h"

static void test_jitter(void) {
  int inside = 1, moved = 0;
  for (uint32_t r = 0; r < 5000; r += 7) {
    int64_t v = cs_sched_jitter(2000, 20, r * 2654435761u);
    inside &= v >= 1600 && v <= 2400;
    moved |= v != 2000;
  }
  ok(inside, "spread 20 %: every next check within 1.6-2.4 s of 2 s");
  ok(moved, "... and the checks do spread");
  is_int(cs_sched_jitter(2000, 0, 12345), 2000, "spread 0: exactly the interval");
  ok(cs_sched_jitter(1, 50, 0) >= 1, "never below 1 ms");
}

/* The next check counts from the one answered's due time, not from its
 * answer's arrival (the checker's batch flush and the report would add
 * to every interval: 12-26 % fewer checks than scheduled, issue 26
 * benchmark), and is never in the past. */
static void test_next_due(void) {
  is_int(cs_sched_next_due(10000, 10400, 2000, 0, 1), 12000,
         "answered 400 ms late: the next check is still due + interval");
  is_int(cs_sched_next_due(10000, 13000, 2000, 0, 1), 13000,
         "answered after the next due time: now, never in the past");
  int inside = 1;
  for (uint32_t r = 0; r < 5000; r += 7) {
    int64_t v = cs_sched_next_due(10000, 10100, 2000, 20, r * 2654435761u);
    inside &= v >= 11600 && v <= 12400;
  }
  ok(inside, "the spread applies around due + interval");
}

static void test_pick(void) {
  cs_sched_load l[3] = {
      {.outstanding = 2, .max = 2, .tiers = 2, .usable = 1, .serial = 1},
      {.outstanding = 1, .max = 4, .tiers = 2, .usable = 1, .serial = 2},
      {.outstanding = 1, .max = 2, .tiers = 2, .usable = 1, .serial = 3}};
  is_int(cs_sched_pick(l, 3, 2, 0), 1,
         "CP-6-1 the least loaded with room (1/4 before 1/2; 2/2 is full)");
  is_int(cs_sched_pick(l, 3, 4, 0), -1, "no checker supports the tier: none");
  is_int(cs_sched_pick(l, 3, 2, 2), 2,
         "CP-6-2 another checker than the one that missed the item");
  l[2].outstanding = 2;
  is_int(cs_sched_pick(l, 3, 2, 2), 1, "... unless it is the only one with room");
  l[1].outstanding = 4;
  is_int(cs_sched_pick(l, 3, 2, 0), -1,
         "CP-6-1 every checker at its max_concurrency: none");
  l[1].outstanding = 0;
  l[1].usable = 0;
  is_int(cs_sched_pick(l, 3, 2, 0), -1, "an unusable checker is never chosen");
}

static void test_probes(void) {
  cs_probe p[CS_PROBES_MAX];
  size_t n = 9;
  const char *why = NULL;
  ok(cs_probe_parse("", p, &n, &why) == 0 && n == 0, "empty: no probe");
  ok(cs_probe_parse("web=example.com:443,mail=example.com:25,v6=[::1]:80", p,
                    &n, &why) == 0 && n == 3,
     "three probes, an IPv6 host in brackets");
  is_str(cs_probe_of(p, n, "mail")->target, "example.com:25", "a group's target");
  ok(!cs_probe_of(p, n, "none"), "a group without a probe");
  static const char *const bad[] = {"web", "web=", "web=host", "web=host:0",
                                    "web=host:70000", "=host:1",
                                    "web=h:1,web=h:2", "web=h:1,", "web=::1:80",
                                    "w b=h:1", "web=a/b:80"};
  int refused = 1;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    refused &= cs_probe_parse(bad[i], p, &n, &why) == -1 && why != NULL;
  ok(refused, "malformed target_probes are refused with a reason");
  char many[2048] = "";
  for (int i = 0; i < 33; i++) {
    char e[32];
    snprintf(e, sizeof(e), "%sg%d=h:1", i ? "," : "", i);
    strcat(many, e);
  }
  ok(cs_probe_parse(many, p, &n, &why) == -1, "more than 32 probes are refused");
}

static void test_spacing(void) {
  cs_probe p[CS_PROBES_MAX];
  size_t n;
  const char *why;
  cs_probe_parse("a=site.test:443,b=site.test:80,c=other.test:443", p, &n, &why);
  ok(cs_probe_take(p, n, &p[0], 1000, 500), "the first TARGET task to a host goes out");
  ok(!cs_probe_take(p, n, &p[1], 1200, 500),
     "another group's task to the same host waits for the spacing");
  ok(cs_probe_take(p, n, &p[2], 1200, 500), "another host does not wait");
  ok(cs_probe_take(p, n, &p[1], 1500, 500), "after the spacing it goes out");
}

/* Under overload the tick offers its due items oldest due first
 * (cs_sched_order), ties to the lower index (issue 26, checks starved). */
static void test_order(void) {
  cs_sched_due v[5] = {{5000, 0}, {1000, 1}, {3000, 2}, {1000, 3}, {2000, 4}};
  cs_sched_order(v, 5);
  int order = v[0].idx == 1 && v[1].idx == 3 && v[2].idx == 4 &&
              v[3].idx == 2 && v[4].idx == 0;
  ok(order, "the due items oldest first, ties by index");
  cs_sched_order(v, 0); /* nothing to sort */
}

/* A tick as cs_sched.c runs it, simulated: 200 items due every 1000 ms,
 * room for 8 tasks a tick of 250 ms (answered by the next tick): 32 checks
 * a second for 200 due, 16 % of the schedule. Every item must be checked
 * in turn, none never: each within a bounded gap, the counts even. */
#define SIM_N 200
static void test_overload(void) {
  int64_t due[SIM_N], last[SIM_N], gap = 0;
  int checks[SIM_N], never = 0, lo = 1 << 30, hi = 0;
  cs_sched_due v[SIM_N];
  for (int i = 0; i < SIM_N; i++) {
    due[i] = (int64_t)(i * 7919 % 1000); /* spread within one interval */
    last[i] = -1;
    checks[i] = 0;
  }
  for (int64_t now = 0; now < 120000; now += 250) {
    size_t n = 0;
    for (int i = 0; i < SIM_N; i++)
      if (due[i] <= now)
        v[n++] = (cs_sched_due){due[i], (size_t)i};
    cs_sched_order(v, n);
    for (size_t j = 0; j < n && j < 8; j++) { /* answered next tick */
      size_t i = v[j].idx;
      due[i] = cs_sched_next_due(due[i], now + 250, 1000, 20,
                                 (uint32_t)(now * 31 + (int64_t)i));
      if (last[i] >= 0 && now - last[i] > gap)
        gap = now - last[i];
      last[i] = now;
      checks[i]++;
    }
  }
  for (int i = 0; i < SIM_N; i++) {
    never += !checks[i];
    lo = checks[i] < lo ? checks[i] : lo;
    hi = checks[i] > hi ? checks[i] : hi;
  }
  diag("longest gap %lld ms, checks per item %d..%d", (long long)gap, lo, hi);
  is_int(never, 0, "CP-6-1 overload (16 % of the schedule): no item never checked");
  ok(gap <= 7000, "... each checked again within 7 s (200 at 32 a second, "
                  "and a tick)");
  ok(hi - lo <= 1, "... all at the same lower rate (counts within one)");
}

int main(void) {
  plan_lazy();
  test_order();
  test_overload();
  test_jitter();
  test_next_due();
  test_pick();
  test_probes();
  test_spacing();
  { /* the task id table's key (lib/idtab.h), not a scan */
    int64_t k = 7;
    ok(cs_task_key("00000000000000ff", &k) && k == 255,
       "task key: the id's 16 hex digits as 64 bits");
    ok(cs_task_key("ffffffffffffffff", &k) && k == -1,
       "task key: all 64 bits (the table takes any int64)");
    k = 7;
    ok(!cs_task_key("00000000000000FF", &k) && !cs_task_key("0000", &k) &&
           !cs_task_key("00000000000000ff0", &k) &&
           !cs_task_key("0000000000000g00", &k) && !cs_task_key("", &k) &&
           k == 7,
       "task key: no key for an id we could not have made (upper case, "
       "short, long, not hex)");
  }
  /* ---- rendezvous hashing over the controllers (issue 26 "Several
   * controllers") ---- */
  {
    const char *two[] = {"ctl-a", "ctl-b"}, *one[] = {"ctl-a"},
               *swapped[] = {"ctl-b", "ctl-a"};
    int per[2] = {0, 0}, moved = 0, stable = 1, order = 1;
    for (int i = 0; i < 200; i++) {
      char key[16];
      snprintf(key, sizeof(key), "p%d", i);
      int w = cs_hrw_pick(two, 2, key);
      per[w]++;
      stable &= cs_hrw_pick(two, 2, key) == w;
      order &= strcmp(swapped[cs_hrw_pick(swapped, 2, key)], two[w]) == 0;
      if (w == 1) /* ctl-b leaves: only its keys move */
        moved += cs_hrw_pick(one, 1, key) == 0;
      else
        stable &= cs_hrw_pick(one, 1, key) == 0;
    }
    is_int(cs_hrw_pick(two, 0, "p1"), -1, "hrw: no member, no pick");
    ok(stable, "hrw: the same pick every time; a key stays when another "
               "member leaves");
    ok(order, "hrw: the pick does not depend on the members' order");
    ok(per[0] > 50 && per[1] > 50, "hrw: 200 keys split between two members");
    is_int(moved, per[1], "hrw: the leaving member's keys all move");
  }
  return done_testing();
}

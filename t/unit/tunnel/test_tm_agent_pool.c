/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's connection pool controller, pure (pool_policy.c,
 * TM-P2-23..28). The token file reader is tunnel_common's tm_token.c,
 * tested by test_tm_token and fuzz_tm_token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tunnel_agent/pool_policy.h"

static pool_policy lowlat(void) {
  /* TM-P2-24's recommended low-latency settings. */
  pool_policy p = {2, 4, 16, 2, 10000, 30000, 0, 50};
  return p;
}

/* A decision on the load alone (no latency, no opens). */
static int dec(const pool_policy *p, pool_state *s, int64_t t, uint32_t conns,
               uint64_t load) {
  pool_signals g = {.conns = conns, .load = load};
  int why;
  return pool_decide(p, s, t, &g, &why);
}

/* TM-P2-26: the other inputs. */
static void signals(void) {
  pool_policy p = lowlat();
  p.latency_high_us = 200000;
  p.error_rate_max = 50;
  const char *names[] = {"pending dial wait", "open p95", "TTFB p95",
                         "writer queue wait", "heartbeat RTT"};
  for (int i = 0; i < 5; i++) {
    pool_state s;
    pool_state_init(&s, 0);
    /* 2 connections, load 5: above low (4), below high (32). */
    pool_signals g = {.conns = 2, .load = 5};
    uint64_t *f[] = {&g.dial_wait_us, &g.open_us, &g.ttfb_us, &g.writer_wait_us,
                     &g.rtt_us};
    *f[i] = 300000;
    int why;
    pool_decide(&p, &s, 0, &g, &why);
    int d = pool_decide(&p, &s, 10000, &g, &why);
    char msg[200];
    snprintf(msg, sizeof(msg),
             "TM-P2-26: %s above latency_high for an interval, loaded above "
             "low: one more connection, for latency",
             names[i]);
    ok(d == 1 && why == POOL_WHY_LATENCY, msg);
    *f[i] = 200000;
    pool_state_init(&s, 0);
    pool_decide(&p, &s, 0, &g, &why);
    snprintf(msg, sizeof(msg), "TM-P2-26: %s at latency_high is not above it",
             names[i]);
    is_int(pool_decide(&p, &s, 10000, &g, &why), 0, msg);
  }
  pool_state s;
  pool_signals g = {.conns = 2, .load = 4, .writer_wait_us = 900000};
  int why;
  pool_state_init(&s, 0);
  pool_decide(&p, &s, 0, &g, &why);
  is_int(pool_decide(&p, &s, 20000, &g, &why), 0,
         "slow but not loaded above low: no growth (one slow target is not "
         "a reason for connections)");
  pool_policy off = lowlat();
  g.load = 5;
  pool_state_init(&s, 0);
  pool_decide(&off, &s, 0, &g, &why);
  is_int(pool_decide(&off, &s, 20000, &g, &why), 0,
         "latency_high 0: latency never grows the pool");
  /* Failures are not load. */
  pool_signals busy = {.conns = 2, .load = 40, .opens = 20, .failed = 11};
  pool_state_init(&s, 0);
  pool_decide(&p, &s, 0, &busy, &why);
  int d = pool_decide(&p, &s, 10000, &busy, &why);
  ok(d == 0 && why == POOL_WHY_ERRORS,
     "TM-P2-26: busy but more than error_rate_max of the opens failed: the "
     "growth is held, and said");
  busy.failed = 10;
  d = pool_decide(&p, &s, 11000, &busy, &why);
  ok(d == 1 && why == POOL_WHY_LOAD,
     "at the rate exactly (10 of 20) it grows, the interval already served");
  busy = (pool_signals){.conns = 2, .load = 40, .opens = 9, .failed = 9};
  pool_state_init(&s, 0);
  pool_decide(&p, &s, 0, &busy, &why);
  d = pool_decide(&p, &s, 10000, &busy, &why);
  ok(d == 1 && why == POOL_WHY_LOAD,
     "fewer than POOL_MIN_OPENS opens say nothing of a rate");
  pool_signals idle = {.conns = 3, .load = 0};
  pool_state_init(&s, 0);
  pool_decide(&p, &s, 0, &idle, &why);
  d = pool_decide(&p, &s, 30000, &idle, &why);
  ok(d == -1 && why == POOL_WHY_IDLE, "idle for a cooldown: drained, idle");
  pool_signals w = {.rtt_us = 5, .ttfb_us = 9, .open_us = 7};
  is_int((int)pool_worst_latency(&w), 9, "the worst of the latencies");
}

int main(void) {
  plan_lazy();

  /* ---- pool ---- */
  pool_policy def = {1, 1, 16, 2, 10000, 30000, 0, 50};
  pool_state s;
  pool_state_init(&s, 0);
  int changes = 0;
  for (int64_t t = 0; t <= 600000; t += 1000)
    changes += dec(&def, &s, t, 1, 10000) != 0;
  is_int(changes, 0,
         "TM-P2-23/25: min = max = 1 never grows, whatever the "
         "load");
  pool_state_init(&s, 0);
  changes = 0;
  for (int64_t t = 0; t <= 600000; t += 1000)
    changes += dec(&def, &s, t, 1, 0) != 0;
  is_int(changes, 0, "TM-P2-23: and never shrinks below min");

  pool_policy p = lowlat();
  pool_state_init(&s, 0);
  /* 2 connections, load 33 > 16*2: above for a whole interval. */
  is_int(dec(&p, &s, 1000, 2, 33), 0,
         "TM-P2-24: above the high "
         "watermark: not at once");
  is_int(dec(&p, &s, 10999, 2, 33), 0,
         "TM-P2-24: not before evaluation_interval passed");
  is_int(dec(&p, &s, 11000, 2, 33), 1,
         "TM-P2-24: one more after evaluation_interval above high");
  is_int(dec(&p, &s, 12000, 3, 100), 0, "the timer restarts after a change");
  is_int(dec(&p, &s, 22000, 3, 100), 1,
         "and grows again after "
         "another interval");
  is_int(dec(&p, &s, 23000, 4, 1000), 0, "never above max");
  is_int(dec(&p, &s, 60000, 4, 1000), 0,
         "never above max, later "
         "either");
  /* Exactly at the watermark is not above it. */
  pool_state_init(&s, 0);
  dec(&p, &s, 0, 2, 32);
  is_int(dec(&p, &s, 20000, 2, 32), 0,
         "load per connection equal to high is not above it");
  /* A dip resets the timer. */
  pool_state_init(&s, 0);
  dec(&p, &s, 0, 2, 40);
  dec(&p, &s, 5000, 2, 10);
  is_int(dec(&p, &s, 10000, 2, 40), 0,
         "a dip below high restarts the evaluation interval");
  is_int(dec(&p, &s, 20000, 2, 40), 1, "then a whole interval above grows it");
  /* Shrinking: below low for a cooldown, and a cooldown since the last
   * change. */
  pool_state_init(&s, 0);
  is_int(dec(&p, &s, 1000, 4, 3), 0, "below low: not at once");
  is_int(dec(&p, &s, 30999, 4, 3), 0, "not before the cooldown");
  is_int(dec(&p, &s, 31000, 4, 3), -1,
         "TM-P2-24: one fewer after a cooldown below low");
  is_int(dec(&p, &s, 32000, 3, 0), 0, "the cooldown restarts");
  is_int(dec(&p, &s, 62000, 3, 0), -1, "and shrinks again after it");
  is_int(dec(&p, &s, 200000, 2, 0), 0, "never below min");
  pool_state_init(&s, 0);
  dec(&p, &s, 0, 3, 0);
  dec(&p, &s, 20000, 3, 7); /* 7 >= 2*3: not below */
  is_int(dec(&p, &s, 40000, 3, 0), 0, "a rise above low restarts the cooldown");
  /* No flapping: a growth is not undone before a cooldown. */
  pool_state_init(&s, 0);
  dec(&p, &s, 0, 2, 40);
  is_int(dec(&p, &s, 10000, 2, 40), 1, "grown");
  dec(&p, &s, 11000, 3, 0);
  is_int(dec(&p, &s, 39000, 3, 0), 0,
         "not shrunk within a cooldown of the last change");
  is_int(dec(&p, &s, 41000, 3, 0), -1, "shrunk after it");
  is_int(dec(&p, &s, 50000, 0, 0), 0, "no connection: no decision");
  /* Large values do not overflow. */
  pool_policy big = {1, 64, 65536, 65535, 100, 100, 0, 50};
  pool_state_init(&s, 0);
  dec(&big, &s, 0, 64, UINT64_MAX);
  is_int(dec(&big, &s, 1000, 64, UINT64_MAX), 0,
         "TM-CFG-25: the largest watermark times connections does not "
         "overflow (and max holds)");
  ok(*pool_policy_problem(&def) == '\0' && *pool_policy_problem(&p) == '\0',
     "the default and the recommended policies are valid");
  pool_policy bad1 = {3, 2, 16, 2, 1, 1, 0, 50},
              bad2 = {1, 2, 4, 4, 1, 1, 0, 50};
  ok(*pool_policy_problem(&bad1) && *pool_policy_problem(&bad2),
     "min > max and low >= high are refused");

  signals();
  return done_testing();
}

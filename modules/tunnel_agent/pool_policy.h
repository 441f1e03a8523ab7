/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's connection pool controller, pure (no I/O, no clock): given
 * the time and what the connections measured over the last tick, whether
 * to open one more WebSocket connection to the server, drain one, or do
 * nothing (TM-P2-23..28).
 *
 * Its inputs are the seed's (TM-P2-26), measured per tick over the
 * connections that take new streams: the load (pending dials plus active
 * streams, ARCHITECTURE §7), the pending dials' queue wait, the streams'
 * open time and time to first byte, the writer's queue wait (p95 each),
 * the heartbeat RTT, and the opens and failed opens. The rule:
 *
 *   busy     load per connection above high_watermark;
 *   slow     latency_high set, load per connection above low_watermark,
 *            and the worst of the five latencies above latency_high;
 *   failing  at least POOL_MIN_OPENS opens and more than error_rate_max %
 *            of them failed: failures are not load, another connection
 *            would not help, so a growth waits while it lasts;
 *   idle     load per connection below low_watermark and not slow.
 *
 * The pool grows by one when it stayed busy or slow for a whole
 * evaluation_interval, is below max and is not failing; it shrinks by one
 * when it stayed idle for a whole cooldown, is above min, and the last
 * change is at least a cooldown old (no flapping). With min = max (the
 * default 1/1) it never changes (TM-P2-25). Which connection a new
 * stream takes is the server's weighted least-connections choice;
 * established streams never move (TM-P2-27): a drained connection
 * finishes its streams (GOAWAY) first.
 */
#ifndef TM_POOL_POLICY_H
#define TM_POOL_POLICY_H

#include <stdint.h>

/* Fewer opens in a tick say nothing about an error rate. */
#define POOL_MIN_OPENS 10

typedef struct pool_policy {
  uint32_t min, max;        /* connections.min / .max, 1 <= min <= max */
  uint32_t high, low;       /* watermarks per connection, low < high */
  int64_t eval_ms;          /* connections.evaluation_interval */
  int64_t cooldown_ms;      /* connections.cooldown */
  uint64_t latency_high_us; /* connections.latency_high, 0: off */
  uint32_t error_rate_max;  /* connections.error_rate_max, percent */
} pool_policy;

/* What the connections measured over the last tick. */
typedef struct pool_signals {
  uint32_t conns;          /* established and not draining */
  uint64_t load;           /* pending dials + active streams on them */
  uint64_t dial_wait_us;   /* p95 of the pending dials' queue wait */
  uint64_t open_us;        /* p95 of OPEN_STREAM to the answer */
  uint64_t ttfb_us;        /* p95 of OPEN_STREAM to the target's first byte */
  uint64_t writer_wait_us; /* p95 of the writer's queue wait */
  uint64_t rtt_us;         /* the largest heartbeat RTT */
  uint32_t opens, failed;  /* opens answered, and of them failures */
} pool_signals;

/* Why a decision was taken (for its log line and metric). */
enum pool_why {
  POOL_WHY_NONE = 0,
  POOL_WHY_LOAD,    /* grown: busy */
  POOL_WHY_LATENCY, /* grown: slow */
  POOL_WHY_ERRORS,  /* a growth held back: failing */
  POOL_WHY_IDLE,    /* drained one: idle */
};

/* The controller's memory; pool_state_init before the first decision. */
typedef struct pool_state {
  int64_t above_since; /* -1: not busy or slow now */
  int64_t below_since; /* -1: not idle now */
  int64_t last_change; /* the last +1/-1 (or the start) */
} pool_state;

void pool_state_init(pool_state *s, int64_t now_ms);
/* +1 (open one), -1 (drain one) or 0, with *why (POOL_WHY_ERRORS with 0:
 * a growth was due and held back). sig->conns 0: nothing to judge (the
 * pool's minimum is kept by reconnecting, not here). A +1 or -1 restarts
 * both timers. */
int pool_decide(const pool_policy *p, pool_state *s, int64_t now_ms,
                const pool_signals *sig, int *why);
/* The worst of the five latencies. */
uint64_t pool_worst_latency(const pool_signals *sig);
/* Why a policy is refused ("" when fine): min > max, low >= high. */
const char *pool_policy_problem(const pool_policy *p);

#endif

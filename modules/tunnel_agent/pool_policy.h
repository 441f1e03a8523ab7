/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's connection pool controller, pure (no I/O, no clock): given
 * the time, the connections in use and their load, whether to open one
 * more WebSocket connection to the server, close one, or do nothing
 * (TM-P2-23..28).
 *
 * Load is what ARCHITECTURE §7 names: pending dials plus active streams,
 * summed over the connections that take new streams. The pool grows by
 * one when the load per connection has stayed above high_watermark for a
 * whole evaluation_interval and it is below max; it shrinks by one when
 * the load per connection has stayed below low_watermark for a whole
 * cooldown, it is above min, and the last change is at least a cooldown
 * old (no flapping). With min = max (the default 1/1) it never changes
 * (TM-P2-25). Which connection a new stream takes is the server's
 * weighted least-connections choice; established streams never move
 * (TM-P2-27): a closed connection drains (GOAWAY) first.
 */
#ifndef TM_POOL_POLICY_H
#define TM_POOL_POLICY_H

#include <stdint.h>

typedef struct pool_policy {
  uint32_t min, max;           /* connections.min / .max, 1 <= min <= max */
  uint32_t high, low;          /* watermarks per connection, low < high */
  int64_t eval_ms;             /* connections.evaluation_interval */
  int64_t cooldown_ms;         /* connections.cooldown */
} pool_policy;

/* The controller's memory; pool_state_init before the first decision. */
typedef struct pool_state {
  int64_t above_since; /* -1: not above high now */
  int64_t below_since; /* -1: not below low now */
  int64_t last_change; /* the last +1/-1 (or the start) */
} pool_state;

void pool_state_init(pool_state *s, int64_t now_ms);
/* +1 (open one), -1 (drain one) or 0. conns: connections established
 * and not draining (0: nothing to judge; the pool's minimum is kept by
 * reconnecting, not here). load: pending dials + active streams on them.
 * A +1 or -1 restarts both timers. */
int pool_decide(const pool_policy *p, pool_state *s, int64_t now_ms,
                uint32_t conns, uint64_t load);
/* Why a policy is refused ("" when fine): min > max, low >= high. */
const char *pool_policy_problem(const pool_policy *p);

#endif

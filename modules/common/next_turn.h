/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * "Run this on the next loop turn": one FIFO of intrusive items and one
 * timer armed with after = 0, repeat = 1 ms (libev runs a zero timer on
 * the loop's next iteration; 0/0 would stop it). A reader that must only
 * enqueue (seed 001: "中央 reader 只做 Frame 校验、状态查询和有界入队")
 * posts the work and returns; the work runs later, from the loop, on a
 * stack of its own, in the order it was posted.
 *
 * A turn runs only what was queued when it began: what its callbacks post
 * waits for the next turn, so a callback that posts again cannot starve
 * the loop. Posting an item already queued changes nothing (it keeps its
 * place); cancelling one that is not queued is a no-op. A callback may
 * post, cancel, or finish the queue itself (next_turn_fini) — the turn
 * then stops.
 *
 * Ownership: the queue owns its timer; the items are the caller's, linked
 * in place (no allocation per post). Loop thread only.
 */
#ifndef PH_NEXT_TURN_H
#define PH_NEXT_TURN_H

#include <proxyhost/host.h>

typedef struct nt_item nt_item;
typedef void (*nt_fn)(nt_item *it);

struct nt_item {
  nt_item *next, *prev;
  nt_fn fn;
  int queued;
};

typedef struct next_turn {
  const ph_api *api;
  ph_timer *timer;
  nt_item *first, *last;
  nt_item *end;  /* the running turn's last item */
  int *alive;    /* the running turn's: cleared by fini */
} next_turn;

/* PH_OK, or PH_ENOMEM (no timer). */
int next_turn_init(next_turn *q, const ph_api *api, ph_ctx *ctx);
/* Unlinks every queued item (their fn never runs) and frees the timer.
 * Safe from inside an item's fn. A zeroed queue is ignored. */
void next_turn_fini(next_turn *q);
/* fn(it) on the next loop turn, after the items posted before it. */
void next_turn_post(next_turn *q, nt_item *it, nt_fn fn);
void next_turn_cancel(next_turn *q, nt_item *it);
static inline int next_turn_queued(const nt_item *it) { return it->queued; }

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Calls for the loop's next turn (defer.h).
 *
 * Which libev watcher runs them. The call must come after the callback
 * that posted it returned (never inside it), without waiting for a clock
 * tick, and it must not starve when the loop is busy:
 *  - ev_timer: libev has no zero-delay timer that is not "stopped"
 *    through the host's timer_set (0/0 stops), and the modules' 1 ms
 *    timers made an answer already known wait a millisecond. A timer also
 *    goes through the heap for what is a queue.
 *  - ev_idle alone: idle watchers run only when nothing else of their
 *    priority is pending, so under steady I/O they would never run.
 *  - ev_prepare: runs before the loop computes how long to block; a call
 *    posted by a deferred call would then wait for the next poll's I/O or
 *    timeout.
 *  - ev_check (chosen): runs on every iteration, after the poll and the
 *    callbacks it made pending, whatever the load. At EV_MINPRI it is
 *    invoked after every other callback of the iteration, so a call
 *    posted by an I/O callback runs at the end of that same iteration,
 *    before the loop polls again. An ev_idle watcher with an empty
 *    callback is active while anything is queued: libev then polls with
 *    a zero timeout, so a call posted from outside a callback (or by a
 *    deferred call) never waits for I/O or a timer either. This is
 *    libuv's setImmediate (a check handle plus an idle handle).
 * A turn runs only what was queued when it began: what its calls post
 * runs on the next turn, after one more poll, so a call that posts itself
 * again cannot keep the loop from its I/O. */
#include "defer.h"

#include <ev.h>
#include <stdlib.h>

struct ph_defers {
  struct ev_loop *loop;
  ev_check run;
  ev_idle spin;
  ph_defer *first, *last;
  ph_defer *end; /* the running turn's last call */
};

static void unlink_one(ph_defers *q, ph_defer *d) {
  if (d->prev)
    d->prev->next = d->next;
  else
    q->first = d->next;
  if (d->next)
    d->next->prev = d->prev;
  else
    q->last = d->prev;
  d->next = d->prev = NULL;
  d->queued = 0;
}

static void watch(ph_defers *q, int on) {
  if (on) {
    ev_check_start(q->loop, &q->run);
    ev_idle_start(q->loop, &q->spin);
  } else {
    ev_check_stop(q->loop, &q->run);
    ev_idle_stop(q->loop, &q->spin);
  }
}

static void on_spin(struct ev_loop *loop, ev_idle *w, int revents) {
  (void)loop;
  (void)w;
  (void)revents; /* only keeps the loop from blocking */
}

static void on_run(struct ev_loop *loop, ev_check *w, int revents) {
  (void)loop;
  (void)revents;
  ph_defers *q = w->data;
  q->end = q->last;
  while (q->end && q->first) {
    ph_defer *d = q->first;
    if (d == q->end)
      q->end = NULL;
    unlink_one(q, d);
    d->fn(d, d->arg); /* may post, cancel or free any handle */
  }
  q->end = NULL;
  if (!q->first)
    watch(q, 0);
}

ph_defers *defers_new(struct ev_loop *loop) {
  ph_defers *q = calloc(1, sizeof(*q));
  if (!q)
    return NULL;
  q->loop = loop;
  ev_check_init(&q->run, on_run);
  ev_set_priority(&q->run, EV_MINPRI);
  q->run.data = q;
  ev_idle_init(&q->spin, on_spin);
  ev_set_priority(&q->spin, EV_MINPRI);
  return q;
}

void defers_free(ph_defers *q) {
  if (!q)
    return;
  while (q->first)
    unlink_one(q, q->first);
  watch(q, 0);
  free(q);
}

ph_defer *defer_new(ph_defers *q, ph_ctx *ctx, ph_defer_fn fn, void *arg) {
  ph_defer *d = calloc(1, sizeof(*d));
  if (!d)
    return NULL;
  d->q = q;
  d->ctx = ctx;
  d->fn = fn;
  d->arg = arg;
  return d;
}

void defer_post(ph_defer *d) {
  if (d->queued)
    return;
  ph_defers *q = d->q;
  d->next = NULL;
  d->prev = q->last;
  if (q->last)
    q->last->next = d;
  else
    q->first = d;
  q->last = d;
  d->queued = 1;
  if (!ev_is_active(&q->run))
    watch(q, 1);
}

int defer_cancel(ph_defer *d) {
  if (!d->queued)
    return PH_ENOENT;
  ph_defers *q = d->q;
  if (d == q->end)
    q->end = d->prev; /* NULL: everything before it has run */
  unlink_one(q, d);
  return PH_OK;
}

void defer_free(ph_defer *d) {
  if (!d)
    return;
  defer_cancel(d);
  free(d);
}

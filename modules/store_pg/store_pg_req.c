/* SPDX-License-Identifier: BSD-2-Clause */
/* Requests in flight (store_pg_int.h): ids, the live list, cancellation,
 * and the answer queue. An answer known without the database (a full
 * queue, a malformed bearer, an unhealthy revision) waits in that queue
 * for a timer, so that no callback runs inside the call that started it.
 * The timer takes the whole queue as one batch: an answer queued from
 * inside a callback waits for the next batch, and a steady stream of
 * calls cannot starve it (the timer is armed once, never pushed back). */
#include <stdlib.h>

#include "store_pg_int.h"

void req_add(spg *s, sreq *r) {
  r->s = s;
  r->id = ++s->next_id;
  ilist_push_front(&s->live, &r->live);
}

static void unlink_live(sreq *r) {
  if (ilist_of(&r->live))
    ilist_remove(&r->live);
}

static void release(sreq *r) {
  if (r->task > 0) {
    r->task = 0;
    r->s->n_tasks--;
  }
}

void req_finish(sreq *r) {
  spg *s = r->s;
  release(r);
  unlink_live(r);
  if (!r->cancelled)
    r->answer(r);
  r->free_fn(r);
  spg_maybe_stopped(s);
}

static void on_answers(ph_defer *t, void *arg) {
  (void)t;
  spg *s = arg;
  /* The batch: what is queued now; an answer queued from a callback
   * joins the next one. A request cancelled meanwhile leaves the batch. */
  ilist batch;
  ilist_init(&batch);
  ilist_node *it;
  while ((it = ilist_first(&s->later))) {
    ilist_remove(it);
    ilist_push(&batch, it);
  }
  while ((it = ilist_first(&batch))) {
    sreq *r = ILIST_ENTRY(it, sreq, lnode);
    ilist_remove(it);
    r->later = 0;
    req_finish(r);
  }
}

void req_later(sreq *r) {
  spg *s = r->s;
  r->later = 1;
  ilist_push(&s->later, &r->lnode);
  s->api->defer_post(s->lturn); /* the next loop turn, no clock tick */
}

int req_timer_init(spg *s) {
  ilist_init(&s->live);
  ilist_init(&s->later);
  s->lturn = s->api->defer_new(s->ctx, on_answers, s);
  return s->lturn ? PH_OK : PH_ENOMEM;
}

/* The store's bound: max_pending calls in flight (running or waiting
 * for a connection), as the contract counts them; the pool's own queue
 * bound is the same number, for what waits. */
int req_submit(sreq *r, const pg_task_ops *ops) {
  spg *s = r->s;
  if (s->n_tasks >= s->max_pending) {
    pg_pool_count_queue_full(s->pool);
    return PH_EFULL;
  }
  int64_t t = pg_pool_submit(s->pool, ops, r);
  if (t <= 0)
    return (int)t;
  r->task = t;
  s->n_tasks++;
  return PH_OK;
}

int req_cancel(spg *s, int64_t id) {
  sreq *r = NULL;
  ILIST_FOREACH_SAFE(&s->live, it, nx) {
    sreq *x = ILIST_ENTRY(it, sreq, live);
    if (x->id == id) {
      r = x;
      break;
    }
  }
  if (!r || r->cancelled)
    return PH_ENOENT;
  if (r->later) {
    ilist_remove(&r->lnode);
    unlink_live(r);
    r->free_fn(r);
    return PH_OK;
  }
  if (r->task > 0 && pg_pool_cancel(s->pool, r->task) == PH_OK) {
    release(r); /* was waiting: the pool forgot it */
    unlink_live(r);
    r->free_fn(r);
    return PH_OK;
  }
  /* Running: it ends normally, without a call (a write may commit). */
  r->cancelled = 1;
  return PH_OK;
}

void req_drop_all(spg *s) {
  ilist_node *it;
  while ((it = ilist_first(&s->live))) {
    sreq *r = ILIST_ENTRY(it, sreq, live);
    unlink_live(r);
    if (ilist_of(&r->lnode))
      ilist_remove(&r->lnode);
    r->free_fn(r);
  }
}

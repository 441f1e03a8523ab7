/* SPDX-License-Identifier: BSD-2-Clause */
/* Work for the next loop turn (next_turn.h). */
#include "next_turn.h"

static void unlink_item(next_turn *q, nt_item *it) {
  if (it->prev)
    it->prev->next = it->next;
  else
    q->first = it->next;
  if (it->next)
    it->next->prev = it->prev;
  else
    q->last = it->prev;
  it->next = it->prev = NULL;
  it->queued = 0;
}

static void arm(next_turn *q) {
  /* after 0 with a repeat: the next loop iteration (0/0 would stop it). */
  q->api->timer_set(q->timer, 0, 1);
}

static void on_turn(ph_timer *t, void *arg) {
  next_turn *q = arg;
  q->api->timer_set(t, 0, 0);
  int alive = 1;
  q->alive = &alive;
  q->end = q->last;
  while (q->end && q->first) {
    nt_item *it = q->first;
    if (it == q->end)
      q->end = NULL;
    unlink_item(q, it);
    it->fn(it);
    if (!alive)
      return; /* fn finished the queue */
  }
  q->end = NULL;
  q->alive = NULL;
  if (q->first)
    arm(q);
}

int next_turn_init(next_turn *q, const ph_api *api, ph_ctx *ctx) {
  q->api = api;
  q->first = q->last = q->end = NULL;
  q->alive = NULL;
  q->timer = api->timer_new(ctx, on_turn, q);
  return q->timer ? PH_OK : PH_ENOMEM;
}

void next_turn_fini(next_turn *q) {
  if (!q->api)
    return;
  while (q->first)
    unlink_item(q, q->first);
  if (q->alive)
    *q->alive = 0;
  q->alive = NULL;
  q->end = NULL;
  if (q->timer)
    q->api->timer_free(q->timer);
  q->timer = NULL;
  q->api = NULL;
}

void next_turn_post(next_turn *q, nt_item *it, nt_fn fn) {
  if (it->queued)
    return;
  it->fn = fn;
  it->next = NULL;
  it->prev = q->last;
  if (q->last)
    q->last->next = it;
  else
    q->first = it;
  q->last = it;
  it->queued = 1;
  arm(q);
}

void next_turn_cancel(next_turn *q, nt_item *it) {
  if (!it->queued)
    return;
  if (it == q->end)
    q->end = it->prev; /* NULL: everything before it has run */
  unlink_item(q, it);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Deficit round-robin over an intrusive ring (tm_drr.h). The head is the
 * stream whose turn it is; a turn begins (deficit = quantum) when the
 * head is picked with no credit left, and ends when the credit is spent
 * (the head moves on) or the stream has nothing more (it leaves).
 */
#include "tm_drr.h"

#include <stddef.h>

#include "tm_proto.h"

void tm_drr_init(tm_drr *d, uint32_t quantum) {
  /* The bounds are the configuration's job; clamped here so that the
   * budget is never 0 or absurd whatever the caller passes. */
  if (quantum < 1)
    quantum = 1;
  if (quantum > TM_WINDOW_MAX)
    quantum = TM_WINDOW_MAX;
  d->head = NULL;
  d->quantum = quantum;
  d->count = 0;
}

void tm_drr_activate(tm_drr *d, tm_drr_node *n) {
  if (n->linked)
    return;
  n->deficit = 0;
  n->linked = 1;
  if (d->head == NULL) {
    n->next = n->prev = n;
    d->head = n;
  } else { /* the tail is just before the head */
    tm_drr_node *tail = d->head->prev;
    n->prev = tail;
    n->next = d->head;
    tail->next = n;
    d->head->prev = n;
  }
  d->count++;
}

void tm_drr_remove(tm_drr *d, tm_drr_node *n) {
  if (!n->linked)
    return;
  if (n->next == n) {
    d->head = NULL;
  } else {
    if (d->head == n)
      d->head = n->next; /* its turn ends; the next one's begins */
    n->prev->next = n->next;
    n->next->prev = n->prev;
  }
  n->next = n->prev = NULL;
  n->deficit = 0;
  n->linked = 0;
  d->count--;
}

tm_drr_node *tm_drr_pick(tm_drr *d, uint32_t *budget) {
  tm_drr_node *n = d->head;
  if (n == NULL)
    return NULL;
  if (n->deficit == 0 || n->deficit > d->quantum)
    n->deficit = d->quantum;
  *budget = n->deficit;
  return n;
}

void tm_drr_sent(tm_drr *d, tm_drr_node *n, uint32_t sent, int more) {
  if (!n->linked)
    return;
  n->deficit = sent < n->deficit ? n->deficit - sent : 0;
  if (!more) {
    tm_drr_remove(d, n);
    return;
  }
  /* Credit spent: the turn passes on; n keeps its place at the tail and
   * gets a fresh quantum when its turn comes round again. */
  if (n->deficit == 0 && d->head == n)
    d->head = n->next;
}

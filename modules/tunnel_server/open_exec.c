/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's bounded, fair open executor (open_exec.h). */
#include <stddef.h>

#include "open_exec.h"

static uint32_t at_least_1(uint32_t v) { return v ? v : 1; }

void oexec_set_limits(oexec *x, uint32_t max_running, uint32_t max_pending,
                      uint32_t per_group) {
  x->max_running = at_least_1(max_running);
  x->max_pending = at_least_1(max_pending);
  x->per_group = at_least_1(per_group);
}

void oexec_init(oexec *x, uint32_t max_running, uint32_t max_pending,
                uint32_t per_group) {
  x->running = x->pending = 0;
  x->ring = NULL;
  oexec_set_limits(x, max_running, max_pending, per_group);
}

void oexec_group_init(oexec_group *g) {
  g->head = g->tail = NULL;
  g->running = g->pending = 0;
  g->rnext = g->rprev = NULL;
  g->in_ring = 0;
}

static void ring_add(oexec *x, oexec_group *g) {
  if (g->in_ring)
    return;
  g->in_ring = 1;
  if (!x->ring) {
    g->rnext = g->rprev = g;
    x->ring = g;
    return;
  }
  /* Behind the cursor: the newest group gets its turn last. */
  oexec_group *c = x->ring;
  g->rnext = c;
  g->rprev = c->rprev;
  c->rprev->rnext = g;
  c->rprev = g;
}

static void ring_del(oexec *x, oexec_group *g) {
  if (!g->in_ring)
    return;
  g->in_ring = 0;
  if (g->rnext == g) {
    x->ring = NULL;
  } else {
    g->rprev->rnext = g->rnext;
    g->rnext->rprev = g->rprev;
    if (x->ring == g)
      x->ring = g->rnext;
  }
  g->rnext = g->rprev = NULL;
}

static void list_del(oexec_group *g, oexec_job *j) {
  if (j->prev)
    j->prev->next = j->next;
  else
    g->head = j->next;
  if (j->next)
    j->next->prev = j->prev;
  else
    g->tail = j->prev;
  j->next = j->prev = NULL;
}

int oexec_submit(oexec *x, oexec_group *g, oexec_job *j) {
  j->group = g;
  j->next = j->prev = NULL;
  /* Run at once when the group is below its cap, a global slot is free
   * and none of the group's older jobs waits (no overtaking within a
   * group). Other groups' waiting jobs are at their own cap then: a free
   * slot with a runnable waiting job does not last, next() gives it out
   * as soon as the slot frees. */
  if (g->running < x->per_group && x->running < x->max_running &&
      g->pending == 0) {
    j->state = OEXEC_RUNNING;
    g->running++;
    x->running++;
    return OEXEC_RUN;
  }
  if (x->pending >= x->max_pending) {
    j->group = NULL;
    j->state = OEXEC_IDLE;
    return OEXEC_FULL;
  }
  j->state = OEXEC_PENDING;
  j->prev = g->tail;
  if (g->tail)
    g->tail->next = j;
  else
    g->head = j;
  g->tail = j;
  g->pending++;
  x->pending++;
  ring_add(x, g);
  return OEXEC_QUEUED;
}

void oexec_remove(oexec *x, oexec_job *j) {
  oexec_group *g = j->group;
  if (!g || j->state == OEXEC_IDLE)
    return;
  if (j->state == OEXEC_RUNNING) {
    g->running--;
    x->running--;
  } else {
    list_del(g, j);
    g->pending--;
    x->pending--;
    if (!g->head)
      ring_del(x, g);
  }
  j->state = OEXEC_IDLE;
  j->group = NULL;
}

oexec_job *oexec_next(oexec *x) {
  if (x->running >= x->max_running || !x->ring)
    return NULL;
  oexec_group *start = x->ring, *g = start;
  do {
    if (g->running < x->per_group) {
      oexec_job *j = g->head;
      list_del(g, j);
      g->pending--;
      x->pending--;
      g->running++;
      x->running++;
      j->state = OEXEC_RUNNING;
      /* The turn passes to the group after this one. */
      x->ring = g->rnext;
      if (!g->head)
        ring_del(x, g);
      return j;
    }
    g = g->rnext;
  } while (g != start);
  return NULL;
}

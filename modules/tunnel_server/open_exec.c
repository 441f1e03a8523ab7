/* SPDX-License-Identifier: BSD-2-Clause */
/* The server's bounded, fair open executor (open_exec.h). */
#include <stddef.h>

#include "open_exec.h"

static uint32_t at_least_1(uint32_t v) { return v ? v : 1; }

void oexec_set_limits(oexec *x, const oexec_limits *lim) {
  x->lim.max_running = at_least_1(lim->max_running);
  x->lim.max_pending = at_least_1(lim->max_pending);
  x->lim.per_principal = at_least_1(lim->per_principal);
  x->lim.pending_per_principal = at_least_1(lim->pending_per_principal);
  x->lim.per_group = at_least_1(lim->per_group);
  x->lim.pending_per_group = at_least_1(lim->pending_per_group);
}

void oexec_init(oexec *x, const oexec_limits *lim) {
  x->running = x->pending = 0;
  x->principals = NULL;
  oexec_set_limits(x, lim);
}

static void ring_node_init(oexec_ring *n) {
  n->next = n->prev = NULL;
  n->in = 0;
}

void oexec_principal_init(oexec_principal *p) {
  ring_node_init(&p->node);
  p->groups = NULL;
  p->running = p->pending = 0;
}

void oexec_group_init(oexec_group *g, oexec_principal *p) {
  ring_node_init(&g->node);
  g->principal = p;
  ilist_init(&g->waiting);
  g->running = g->pending = 0;
}

/* Adds n to the ring whose turn is *cur, behind the cursor: the newest
 * member gets its turn last. */
static void ring_add(oexec_ring **cur, oexec_ring *n) {
  if (n->in)
    return;
  n->in = 1;
  if (!*cur) {
    n->next = n->prev = n;
    *cur = n;
    return;
  }
  oexec_ring *c = *cur;
  n->next = c;
  n->prev = c->prev;
  c->prev->next = n;
  c->prev = n;
}

static void ring_del(oexec_ring **cur, oexec_ring *n) {
  if (!n->in)
    return;
  n->in = 0;
  if (n->next == n) {
    *cur = NULL;
  } else {
    n->prev->next = n->next;
    n->next->prev = n->prev;
    if (*cur == n)
      *cur = n->next;
  }
  n->next = n->prev = NULL;
}

/* One waiting job fewer in g (its list already updated). */
static void unqueued(oexec *x, oexec_group *g) {
  oexec_principal *p = g->principal;
  g->pending--;
  p->pending--;
  x->pending--;
  if (ilist_empty(&g->waiting))
    ring_del(&p->groups, &g->node);
  if (!p->groups)
    ring_del(&x->principals, &p->node);
}

static void running(oexec *x, oexec_group *g, oexec_job *j) {
  j->state = OEXEC_RUNNING;
  g->running++;
  g->principal->running++;
  x->running++;
}

int oexec_submit(oexec *x, oexec_group *g, oexec_job *j) {
  oexec_principal *p = g->principal;
  j->group = g;
  ilist_node_init(&j->link);
  /* Run at once when every cap allows it and none of the session's older
   * jobs waits (no overtaking within a session). Other waiting jobs are
   * then held by their own caps: a free slot with a runnable waiting job
   * does not last, next() gives it out as soon as the slot frees. */
  if (g->running < x->lim.per_group && p->running < x->lim.per_principal &&
      x->running < x->lim.max_running && g->pending == 0) {
    running(x, g, j);
    return OEXEC_RUN;
  }
  int full = x->pending >= x->lim.max_pending ? OEXEC_FULL
             : p->pending >= x->lim.pending_per_principal
                 ? OEXEC_FULL_PRINCIPAL
             : g->pending >= x->lim.pending_per_group ? OEXEC_FULL_GROUP
                                                      : 0;
  if (full) {
    j->group = NULL;
    j->state = OEXEC_IDLE;
    return full;
  }
  j->state = OEXEC_PENDING;
  ilist_push(&g->waiting, &j->link);
  g->pending++;
  p->pending++;
  x->pending++;
  ring_add(&p->groups, &g->node);
  ring_add(&x->principals, &p->node);
  return OEXEC_QUEUED;
}

void oexec_remove(oexec *x, oexec_job *j) {
  oexec_group *g = j->group;
  if (!g || j->state == OEXEC_IDLE)
    return;
  if (j->state == OEXEC_RUNNING) {
    g->running--;
    g->principal->running--;
    x->running--;
  } else {
    ilist_remove(&j->link);
    unqueued(x, g);
  }
  j->state = OEXEC_IDLE;
  j->group = NULL;
}

/* The group of p whose turn it is and whose head may run, or NULL. */
static oexec_group *runnable_group(const oexec *x, oexec_principal *p) {
  if (p->running >= x->lim.per_principal || !p->groups)
    return NULL;
  oexec_ring *start = p->groups, *n = start;
  do {
    oexec_group *g = ILIST_ENTRY(n, oexec_group, node);
    if (g->running < x->lim.per_group)
      return g;
    n = n->next;
  } while (n != start);
  return NULL;
}

oexec_job *oexec_next(oexec *x) {
  if (x->running >= x->lim.max_running || !x->principals)
    return NULL;
  oexec_ring *start = x->principals, *n = start;
  do {
    oexec_principal *p = ILIST_ENTRY(n, oexec_principal, node);
    oexec_group *g = runnable_group(x, p);
    if (g) {
      oexec_job *j = ILIST_ENTRY(ilist_first(&g->waiting), oexec_job, link);
      /* The turns pass to the next session of p and the next principal
       * (before unqueued may take g or p out of their rings). */
      p->groups = g->node.next;
      x->principals = p->node.next;
      ilist_remove(&j->link);
      unqueued(x, g);
      running(x, g, j);
      return j;
    }
    n = n->next;
  } while (n != start);
  return NULL;
}

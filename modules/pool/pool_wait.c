/* SPDX-License-Identifier: BSD-2-Clause */
/* No candidate takes a request now: the rule's on_unavailable says what
 * follows (CP-1-24, CP-1-25): WAIT (a bounded local wait in the pool's
 * wait queue, max_waiters long, until the rule's wait_timeout, woken in
 * order when capacity frees or a new view comes), DIRECT (the direct
 * connector, whose target policy applies: pool_dial.c), or REJECT. The
 * wait queue and its wake-up are here. Loop thread. */
#include "pool_int.h"

void pool_wait_leave(pool_attempt *a) {
  pool *p = a->p;
  if (a->state != AT_WAITING)
    return;
  ilist_remove(&a->qlink);
  p->n_waiting--;
  pool_api->gauge_add(p->m_waiting, -1);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  a->state = AT_NEW;
}

static void enqueue(pool_attempt *a, const ph_pool_view_rule *rule) {
  pool *p = a->p;
  if (a->state == AT_WAITING)
    return; /* woken, and nothing for it yet: keeps its place */
  if (a->wait_deadline_ms == 0) {
    if (p->n_waiting >= p->conf.max_waiters) {
      pool_fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
      return;
    }
    a->wait_deadline_ms = pool_mono_ms(p) + rule->wait_timeout_ms;
  } else if (pool_mono_ms(p) >= a->wait_deadline_ms) {
    pool_fail(a, PR_WAIT_TIMEOUT, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, 1);
    return;
  } else if (p->n_waiting >= p->conf.max_waiters) {
    pool_fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
    return;
  }
  if (!pool_attempt_timer(a)) {
    pool_fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
    return;
  }
  a->state = AT_WAITING;
  ilist_push(&p->wq, &a->qlink);
  p->n_waiting++;
  pool_api->gauge_add(p->m_waiting, 1);
  pool_arm_deadline(a, a->wait_deadline_ms, 0);
}

void pool_wait_on_timer(pool_attempt *a) {
  if (pool_mono_ms(a->p) >= a->wait_deadline_ms) {
    pool_fail(a, PR_WAIT_TIMEOUT, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, 1);
    return;
  }
  pool_arm_deadline(a, a->wait_deadline_ms, 0);
}

void pool_unavailable(pool_attempt *a, const ph_pool_view_rule *rule) {
  switch (rule->on_unavailable) {
  case PH_POOL_ON_UNAVAILABLE_WAIT:
    enqueue(a, rule);
    return;
  case PH_POOL_ON_UNAVAILABLE_DIRECT:
    pool_wait_leave(a);
    pool_go_direct(a);
    return;
  default:
    if (a->n_tried)
      pool_fail(a, PR_UPSTREAM, a->fail_stage, a->fail_code, 1);
    else
      pool_fail(a, PR_NO_CAPACITY, PH_STAGE_SELECTION, PH_OPEN_QUEUE_FULL, 1);
  }
}

void pool_wake(pool *p, uint32_t idx) {
  if (p->waking) { /* a view installed while waking: one more round */
    p->wake_again = 1;
    return;
  }
  p->waking = 1;
  /* answers from here wait for the deliver timer */
  guard_enter(&p->entered);
  for (;;) {
    ilist_node *n = ilist_first(&p->wq);
    while (n) {
      ilist_node *next = ilist_next(n);
      pool_attempt *w = ILIST_ENTRY(n, pool_attempt, qlink);
      int eligible = idx == PH_POOL_VIEW_NONE || w->gen != p->cur ||
                     pool_rule_has(&w->gen->view->rules[w->rule], idx);
      if (eligible) {
        pool_select(w, NULL);
        if (idx != PH_POOL_VIEW_NONE && w->state != AT_WAITING)
          break; /* one freed unit, to the first waiter it serves */
      }
      /* pool_select(w) changes only w's place in the queue: next is
       * still in it (a recursive wake only sets wake_again). */
      n = next;
    }
    if (!p->wake_again)
      break;
    p->wake_again = 0;
    idx = PH_POOL_VIEW_NONE;
  }
  guard_leave(&p->entered);
  p->waking = 0;
}

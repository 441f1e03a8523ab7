/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool's "traffic.gate" (traffic_gate.h, issue 23 item 9, CP-3-18):
 * closed while the current view is past its valid_until or stale
 * deadline, so that the frontends in front of the pool stop accepting new
 * connections while the streams in flight drain (pool_drain.c). No view
 * yet (a gateway starting) leaves it open: those requests are answered
 * "no candidates" as before. pool_drain_scan updates it: after each
 * install and at each view deadline. */
#include "pool_int.h"

static int gate_is_open(void *self) { return !((pool *)self)->gate_closed; }

static void gate_watch(void *self, traffic_gate_watch *w) {
  pool *p = self;
  w->next = p->gate_watchers;
  p->gate_watchers = w;
}

static void gate_unwatch(void *self, traffic_gate_watch *w) {
  pool *p = self;
  for (traffic_gate_watch **pp = &p->gate_watchers; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      w->next = NULL;
      return;
    }
}

const traffic_gate_v1 pool_gate_service = {gate_is_open, gate_watch,
                                           gate_unwatch};

void pool_gate_set(pool *p, int open) {
  if (open == !p->gate_closed)
    return;
  p->gate_closed = !open;
  pool_api->gauge_set(p->m_accepting, open);
  if (open)
    PH_LOG(pool_api, p->ctx, PH_LOG_INFO,
           "a live view again: the frontends accept new connections");
  else
    PH_LOG(pool_api, p->ctx, PH_LOG_WARN,
           "the view is past its valid_until or max_stale_age: the "
           "frontends stop accepting new connections, the streams in "
           "flight drain (drain_timeout) (CP-3-18)",
           PH_INT("drain_timeout_ms", p->conf.drain_timeout_ms));
  for (traffic_gate_watch *w = p->gate_watchers, *next; w; w = next) {
    next = w->next; /* a watcher may unwatch itself */
    w->changed(w->arg, open);
  }
}

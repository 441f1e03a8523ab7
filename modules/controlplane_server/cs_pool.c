/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pool's rows, read through pool.store and cached by revision: a
 * stream or the assign asks; when the store's revision (no I/O) is the
 * cached one the cache answers at once, otherwise one snapshot() read
 * serves every waiter. Bounded by the store (PH_POOL_*_MAX rows).
 */
#include <stdlib.h>
#include <string.h>

#include "cs.h"

#define api cs_api

void cs_pool_ref(cs_pool *p) { p->refs++; }

void cs_pool_unref(cs_pool *p) {
  if (!p || --p->refs > 0)
    return;
  free(p->routes);
  free(p->proxies);
  free(p);
}

static void answer_all(cs *m, cs_pool *p) {
  /* Those waiting now: a callback may add (or forget) others. */
  ilist now;
  ilist_init(&now);
  for (ilist_node *n; (n = ilist_pop(&m->waiters));)
    ilist_push(&now, n);
  for (ilist_node *n; (n = ilist_pop(&now));) {
    cs_pool_waiter *w = ILIST_ENTRY(n, cs_pool_waiter, node);
    w->cb(w->arg, p);
    free(w);
  }
}

static void on_snapshot(void *arg, const ph_pool_snapshot *res) {
  cs *m = arg;
  m->pool_read = 0;
  cs_pool *p = NULL;
  if (res->status == PH_OK) {
    p = calloc(1, sizeof(*p));
    if (p) {
      p->refs = 1;
      p->revision = res->revision;
      p->n_routes = res->n_routes;
      p->n_proxies = res->n_proxies;
      p->routes = malloc((res->n_routes ? res->n_routes : 1) *
                         sizeof(*p->routes));
      p->proxies = malloc((res->n_proxies ? res->n_proxies : 1) *
                          sizeof(*p->proxies));
      if (!p->routes || !p->proxies) {
        p->refs = 0;
        free(p->routes);
        free(p->proxies);
        free(p);
        p = NULL;
      } else {
        if (res->n_routes)
          memcpy(p->routes, res->routes, res->n_routes * sizeof(*p->routes));
        if (res->n_proxies)
          memcpy(p->proxies, res->proxies,
                 res->n_proxies * sizeof(*p->proxies));
      }
    }
  } else {
    PH_LOG_RL(api, m->ctx, PH_LOG_WARN, "pool store read failed",
              PH_INT("rc", res->status));
  }
  m->store_up = p != NULL;
  if (p) {
    cs_pool_unref(m->pool);
    m->pool = p; /* the cache's reference */
  }
  cs_update_ready(m);
  answer_all(m, p);
}

int cs_pool_get(cs *m, cs_pool_cb cb, void *arg) {
  uint64_t rev;
  if (m->stopping)
    return -1;
  if (m->pool && m->store->revision(m->store_self, &rev) == PH_OK &&
      rev == m->pool->revision && !m->pool_read) {
    cb(arg, m->pool);
    return 0;
  }
  cs_pool_waiter *w = calloc(1, sizeof(*w));
  if (!w)
    return -1;
  w->cb = cb;
  w->arg = arg;
  if (!m->pool_read) {
    int64_t id = m->store->snapshot(m->store_self, on_snapshot, m);
    if (id < 0) {
      free(w);
      return -1;
    }
    m->pool_read = id;
  }
  ilist_push_front(&m->waiters, &w->node);
  return 0;
}

void cs_pool_forget(cs *m, void *arg) {
  ILIST_FOREACH_SAFE(&m->waiters, it, nx) {
    cs_pool_waiter *w = ILIST_ENTRY(it, cs_pool_waiter, node);
    if (w->arg == arg) {
      ilist_remove(&w->node);
      free(w);
    }
  }
}

void cs_pool_stop(cs *m) {
  if (m->pool_read > 0)
    m->store->cancel(m->store_self, m->pool_read);
  m->pool_read = 0;
  for (ilist_node *n; (n = ilist_pop(&m->waiters));)
    free(ILIST_ENTRY(n, cs_pool_waiter, node));
  cs_pool_unref(m->pool);
  m->pool = NULL;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The drain (issue 22 item 14; seed 000 §3 "停止接收新流量并排空已有请求",
 * §4 "避免双主"; CP-3-18, CP-4-2, CP-4-6, CP-4-7): a stream leased
 * through a proxy the gateway may no longer use must not outlive that.
 * New opens stop at once elsewhere (no strategy picks such a proxy:
 * usable() and the revoked array); the streams already open get
 * drain_timeout to finish, then the pool cuts them through the cut each
 * caller gave with its lease (connector.h on_cut): the client sees its
 * connection closed, and the proxy's active count reaches zero, which is
 * what the controller waits for before the proxy changes hands (CP-4-4).
 *
 * Which proxies: one that left the view (removed: extracted, deleted,
 * given to another worker), one the view marks draining or that
 * revoke_proxy_ids named, one past its expires_at (the ownership's
 * lease), and every proxy of a view past its valid_until or its stale
 * deadline (the controller gone, CP-3-9, CP-3-18). A proxy back in good
 * standing before its cut (a reclaim withdrawn, a fresh view) keeps its
 * streams. No drain runs past the proxy's expires_at as the last view
 * that had it says: from then on the controller may give it to another
 * worker (CP-4-6), and usable_until, a safety margin before it, stopped
 * new streams already (CP-3-5): a proxy past it is cut at once.
 *
 * One timer for the pool, at the earliest of: the next cut of a proxy
 * that carries streams, the next instant a deadline of the view or of a
 * proxy passes (wall clock, looked at again when it fires). Each cut
 * stream is counted (proxyhost_pool_streams_cut_total{reason}); each
 * proxy whose streams are cut is logged once, with how many. */
#include <stdint.h>

#include "pool_int.h"

static const char *const cut_names[] = {POOL_CUT_NAMES};
_Static_assert(sizeof(cut_names) / sizeof(cut_names[0]) == N_PC,
               "one name per cut reason");

/* ---- when ---------------------------------------------------------------- */

static void earlier(int64_t *t, int64_t at) {
  if (at > 0 && (*t == 0 || at < *t))
    *t = at;
}

/* Why proxy j of g may carry no stream (a pool_cut_reason), or -1; the
 * next instant its expiry would make it so goes to *next_wall. */
static int reason_in_view(const pool_gen *g, uint32_t j, int64_t wall,
                          int64_t *next_wall) {
  const ph_pool_view_proxy *x = &g->view->proxies[j];
  if (g->revoked[j])
    return PC_REVOKED;
  if (x->draining)
    return PC_DRAINING;
  if (wall >= x->expires_at_ms)
    return PC_EXPIRED;
  earlier(next_wall, x->expires_at_ms);
  return -1;
}

/* Gives x its cut time (reason >= 0: now + drain_timeout the first time,
 * the first reason stays; never later than its expires_at) or takes it
 * away (-1: in good standing again). */
static void mark(pool *p, pool_px *x, int reason, int64_t now,
                 int64_t wall) {
  if (reason < 0) {
    x->cut_at_ms = 0;
    return;
  }
  int first = !x->cut_at_ms;
  int64_t at = first ? now + (int64_t)p->conf.drain_timeout_ms : x->cut_at_ms;
  if (x->expires_at_ms > 0 && now + (x->expires_at_ms - wall) < at)
    at = now + (x->expires_at_ms - wall);
  x->cut_at_ms = at > 0 ? at : 1;
  if (!first)
    return;
  x->cut_reason = reason;
  if (!ilist_empty(&x->streams))
    PH_LOG_RL(pool_api, p->ctx, PH_LOG_INFO,
              "a proxy may carry no more streams: they drain, then are cut",
              PH_STR("proxy_id", x->id), PH_STR("reason", cut_names[reason]),
              PH_UINT("drain_timeout_ms", p->conf.drain_timeout_ms));
}

/* When the timer has work for x: its cut time while it carries streams,
 * but once that passed only while one of them can be cut (a stream whose
 * caller gave no cut must not make the timer spin). 0: none. */
static int64_t due(const pool_px *x, int64_t now) {
  if (!x->cut_at_ms || ilist_empty(&x->streams))
    return 0;
  if (x->cut_at_ms > now)
    return x->cut_at_ms;
  ILIST_FOREACH_SAFE(&x->streams, n, nx) {
    if (ILIST_ENTRY(n, pool_attempt, slink)->cut)
      return x->cut_at_ms;
  }
  return 0;
}

/* Arms the timer: the earliest due(), or wall-clock instant next_wall
 * (0: none). */
static void arm(pool *p, int64_t now, int64_t next_wall) {
  int64_t at = 0;
  pool_gen *g = p->cur;
  if (g)
    for (uint32_t j = 0; j < g->n; j++)
      earlier(&at, due(g->px[j], now));
  for (pool_px *x = p->left; x; x = x->lnext)
    earlier(&at, due(x, now));
  uint64_t after = 0;
  if (at)
    after = at > now ? (uint64_t)(at - now) : 1;
  if (next_wall) {
    int64_t w = next_wall - wall_ms();
    uint64_t wa = w > 0 ? (uint64_t)w + 1 : 1;
    if (!after || wa < after)
      after = wa;
  }
  pool_api->timer_set(p->drain_timer, after, 0);
}

void pool_drain_scan(pool *p) {
  if (!p->drain_timer)
    return;
  int64_t now = pool_mono_ms(p), wall = wall_ms(), next_wall = 0;
  pool_gen *g = p->cur;
  if (g) {
    int live = p->view->live(g->view, wall);
    if (live) {
      earlier(&next_wall, g->view->valid_until_ms);
      earlier(&next_wall, g->view->stale_deadline_ms);
    }
    for (uint32_t j = 0; j < g->n; j++) {
      g->px[j]->expires_at_ms = g->view->proxies[j].expires_at_ms;
      mark(p, g->px[j],
           live ? reason_in_view(g, j, wall, &next_wall) : PC_STALE, now,
           wall);
    }
  }
  for (pool_px *x = p->left; x; x = x->lnext)
    mark(p, x, PC_REMOVED, now, wall);
  arm(p, now, next_wall);
  /* A stale view: no new connections either (issue 23 item 9). */
  pool_gate_set(p, !g || p->view->live(g->view, wall));
}

/* ---- the cut ---------------------------------------------------------------- */

/* Moves x's streams that can be cut to p->cutq, counted and logged. */
static void take_streams(pool *p, pool_px *x) {
  uint64_t n = 0, uncut = 0;
  ILIST_FOREACH_SAFE(&x->streams, it, nx) {
    if (ILIST_ENTRY(it, pool_attempt, slink)->cut) {
      ilist_push_front(&p->cutq, it); /* moves it */
      n++;
    } else {
      uncut++; /* a caller that gave no cut (not yet, or never) */
    }
  }
  if (!n)
    return;
  pool_api->inc(p->m_cut[x->cut_reason], n);
  PH_LOG_RL(pool_api, p->ctx, PH_LOG_WARN, "drained streams of a proxy cut",
            PH_STR("proxy_id", x->id),
            PH_STR("reason", cut_names[x->cut_reason]), PH_UINT("streams", n),
            PH_UINT("not_cuttable", uncut),
            PH_UINT("drain_timeout_ms", p->conf.drain_timeout_ms));
}

void pool_on_drain_timer(ph_timer *t, void *arg) {
  pool *p = arg;
  pool_api->timer_set(t, 0, 0);
  /* answers that a cut frees wait for the deliver timer */
  guard_enter(&p->entered);
  pool_gen_current(p); /* a newer view first: it may take a proxy back */
  pool_drain_scan(p);
  int64_t now = pool_mono_ms(p);
  pool_gen *g = p->cur;
  if (g)
    for (uint32_t j = 0; j < g->n; j++)
      if (g->px[j]->cut_at_ms && g->px[j]->cut_at_ms <= now)
        take_streams(p, g->px[j]);
  for (pool_px *x = p->left; x; x = x->lnext)
    if (x->cut_at_ms && x->cut_at_ms <= now)
      take_streams(p, x);
  /* Each cut may end its lease inside (and free the proxy's record once
   * it carries nothing): take one at a time from the queue. */
  ilist_node *c;
  while ((c = ilist_pop(&p->cutq))) {
    pool_attempt *a = ILIST_ENTRY(c, pool_attempt, slink);
    void (*cut)(void *) = a->cut;
    a->cut = NULL; /* once */
    cut(a->cut_arg);
  }
  guard_leave(&p->entered);
  pool_drain_scan(p); /* re-arm for what is left */
}

/* ---- the leases ------------------------------------------------------------- */

void pool_drain_add(pool_attempt *a) {
  ilist_push_front(&a->px->streams, &a->slink);
}

void pool_drain_remove(pool_attempt *a) {
  ilist_remove(&a->slink);
  a->cut = NULL;
}

void pool_drain_on_cut(pool_attempt *a, void (*cut)(void *), void *arg) {
  pool *p = a->p;
  a->cut = cut;
  a->cut_arg = arg;
  /* Leased through a proxy that already drains (a handshake that was
   * under way when it left the view): the timer may not be armed for it
   * (it carried nothing then), or its cut time passed: arm it again. */
  if (cut && a->px && a->px->cut_at_ms)
    pool_drain_scan(p);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "dispatch.strategy" service (ABI 1.4): how the
 * gateway's dispatch (the `pool` connector) picks one upstream proxy for a
 * request among the candidates of the routing rule that matched it.
 * The five in-tree strategies (round_robin, weighted,
 * least_active, random, sticky) are modules against this header; a third
 * party writes a sixth the same way, against the installed SDK.
 *
 * Service name "dispatch.strategy", major 1 (PH_STRATEGY_MAJOR). A
 * strategy module registers it in init; its provider name, the module
 * instance's name, is the strategy's name: the string a routing rule
 * carries in `strategy` (ph_pool_view_rule.strategy) and the name the
 * pool lists in its `strategies` key. The pool gets each one at start with
 * service_get_named(ctx, PH_STRATEGY_SERVICE, name, PH_STRATEGY_MAJOR, 0,
 * &self).
 *
 * State per view: a view (pool_view.h) never changes, but a strategy keeps
 * a little state beside it (a round-robin cursor, a consistent-hash
 * table). When the pool installs a new view it calls attach() once per
 * strategy that any rule of the view names; every pick() from that view
 * gets the state attach() returned; when no request uses the view any
 * more the pool calls detach(). attach() and detach() are not the hot
 * path: they may allocate and take time linear in the view (a host job is
 * not needed for 10,000 proxies; keep it under a few milliseconds).
 *
 * The hot path: pick() allocates nothing, performs no I/O, takes no lock,
 * and answers in time that does not grow with the number of candidates
 * while most of them can take a request (an O(n) scan is acceptable only
 * when nearly all are full or unusable). It may change only its own state.
 *
 * What a strategy must never pick: a
 * proxy for which ph_strategy_takes() is 0: past its usable_until or
 * expires_at, in a view past its valid_until or stale deadline, draining,
 * revoked, already tried by this request, or without free capacity
 * (active + reserved >= capacity). It picks only among
 * in->rule->candidates, so a fall-back after a full proxy stays inside
 * the same view's candidates. Nothing to pick: PH_POOL_VIEW_NONE; the
 * pool then applies the rule's on_unavailable (WAIT, DIRECT or reject).
 *
 * Threads: every call on the loop thread.
 */
#ifndef PROXYHOST_STRATEGY_H
#define PROXYHOST_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_view.h>

#define PH_STRATEGY_SERVICE "dispatch.strategy"
#define PH_STRATEGY_MAJOR 1
#define PH_STRATEGY_MINOR 0

/* A request retries on another candidate at most this many times, so a
 * pick never has more proxies to avoid than this. */
#define PH_STRATEGY_TRIED_MAX 8

/* The load the pool keeps beside a view: per proxy, indexed like
 * view->proxies (0..n_proxies-1). Owned by the pool; read-only here. */
typedef struct ph_pool_load {
  const uint32_t *active;   /* requests whose upstream is up */
  const uint32_t *reserved; /* reservations still dialing or handshaking */
  const uint8_t *revoked;   /* 1: named in revoke_proxy_ids or
                               draining locally: no new reservation */
} ph_pool_load;

/* One selection. Everything is borrowed for the call. */
typedef struct ph_strategy_pick {
  uint32_t size;                 /* sizeof(ph_strategy_pick) of the pool */
  const ph_pool_view *view;      /* live (the pool checked it) */
  const ph_pool_view_rule *rule; /* the rule that matched: candidates */
  const ph_pool_load *load;
  int64_t now_ms;                /* Unix ms, the loop's time */
  /* The session key the rule's sticky_key names (the client's user name
   * for "username", a request header's value for "header:<Name>"); NULL
   * (key_len 0) when the rule has none or the request did not carry it. */
  const char *key;
  uint32_t key_len;
  /* Proxies this request already tried (indexes; at most
   * PH_STRATEGY_TRIED_MAX). */
  const uint32_t *tried;
  uint32_t n_tried;
  uint64_t random;               /* 64 fresh random bits for this pick */
  void *reserved[4];             /* zero */
} ph_strategy_pick;

/* 1 when proxy p (an index into in->view->proxies) may take this request
 * now, else 0: the one test every strategy applies before it answers. */
static inline int ph_strategy_takes(const ph_strategy_pick *in, uint32_t p) {
  const ph_pool_view *v = in->view;
  if (p >= v->n_proxies)
    return 0;
  const ph_pool_view_proxy *x = &v->proxies[p];
  if (!ph_pool_view_proxy_usable(v, x, in->now_ms) || in->load->revoked[p] ||
      (uint64_t)in->load->active[p] + in->load->reserved[p] >= x->capacity)
    return 0;
  for (uint32_t i = 0; i < in->n_tried; i++)
    if (in->tried[i] == p)
      return 0;
  return 1;
}

typedef struct ph_strategy_v1 {
  /* The strategy's state for view v, installed now; NULL when it cannot
   * be built (memory): the rules naming this strategy then have no
   * candidates in v (fail closed). prev: the state this strategy returned
   * for the view installed before (NULL for the first), still attached;
   * map[i], for each proxy i of prev_view, is its index in v or
   * PH_POOL_VIEW_NONE when v no longer has it (cp_view_remap's map), so
   * state that must survive a swap (a sticky table) follows the proxies.
   * Loop thread; may allocate. */
  void *(*attach)(void *self, const ph_pool_view *v, const void *prev,
                  const ph_pool_view *prev_view, const uint32_t *map);
  /* Frees what attach() returned (NULL is a no-op). Loop thread. */
  void (*detach)(void *self, void *state);
  /* The index (into in->view->proxies) of the candidate of in->rule to
   * use, one for which ph_strategy_takes() is 1, or PH_POOL_VIEW_NONE.
   * state is what attach() returned for in->view. Loop thread; no
   * allocation, no I/O (see "The hot path" above). */
  uint32_t (*pick)(void *self, void *state, const ph_strategy_pick *in);
} ph_strategy_v1;

#endif

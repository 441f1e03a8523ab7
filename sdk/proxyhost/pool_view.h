/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "pool.view" service (ABI 1.4): the gateway's
 * immutable view of one accepted control-plane snapshot:
 * its routing compiled for first-match, and the proxies this worker owns
 * with their capacity, deadlines and in-memory credentials. The gateway's
 * dispatch (the `pool` connector and the strategy modules) reads it; the
 * `controlplane_client` module provides it.
 *
 * Service name "pool.view", major 1 (PH_POOL_VIEW_MAJOR). Get it at start
 * with service_get_named(ctx, PH_POOL_VIEW_SERVICE, provider,
 * PH_POOL_VIEW_MAJOR, 0, &self), provider being the controlplane_client
 * instance the operator named.
 *
 * Life of a view: the provider compiles a view from one
 * validated WorkerSnapshot off the loop (a host job), then publishes it on
 * the loop thread with one atomic pointer swap. Nothing in a published
 * view ever changes. Readers:
 *  - current(self): ONE atomic load, no lock, no allocation. The view is
 *    borrowed: valid until the loop callback that called current()
 *    returns (a swap happens only in a later loop callback), so a
 *    selection that finishes inside one callback needs nothing else.
 *  - acquire(self) / release(self, v): current() plus a reference, for a
 *    request that keeps using the view across callbacks (a dial, a WAIT).
 *    An old view stays whole while anyone holds it and is freed by its
 *    last release.
 * current() and acquire() on the loop thread only (the thread that
 * publishes); release() from any thread. Both return NULL while no view
 * was ever accepted: no candidates.
 *
 * State beside a view (minor 1): a reader that
 * keeps per-view state of its own (the pool's counter arrays and remap)
 * subscribes once; the provider then calls its prepare() where it
 * compiles the view, off the loop, and its install() on the loop right
 * after the swap that publishes the view, before any other callback. So
 * no request ever builds that state: the hot path loads one pointer and
 * finds the state already there.
 *
 * Time: all times are Unix milliseconds (UTC).
 * usable(v, proxy, now_ms) is the one question a strategy asks before it
 * picks a proxy: false at or after the proxy's usable_until (the last
 * allocatable instant) or its expires_at, while it drains
 * or has capacity 0, and for EVERY proxy once now reaches the view's valid_until
 * or its stale deadline (obtained_at + max_stale_age):
 * an expired view has no candidates, and nothing asks Redis or SQL
 * instead. A deadline the snapshot did not carry is 0: never
 * usable (fail closed). live(v, now_ms) is the view-wide half of it.
 *
 * Mutable state is not here: per-proxy active and reserved counts, WAIT
 * queues and revocations (ReportRuntimeResponse.revoke_proxy_ids) belong
 * to the gateway. Each proxy has a stable small index,
 * 0..n_proxies-1, its position in proxies[] (sorted by proxy_id), so that
 * such state can live in an array beside the view. Indexes are per view:
 * across a swap, state follows the proxy_id (find(), or cp_view_remap in
 * modules/cp_common/view/cp_view.h), never the index; docs/user-guide/gateway.md
 * "The snapshot view" says how a counter array survives a swap.
 *
 * Credentials: username and password live only in the
 * view's own memory, are wiped (OPENSSL_cleanse) when the view is freed,
 * and are never logged, counted or written anywhere. Copy them only onto
 * the wire of the upstream handshake.
 *
 * Every string is NUL-terminated and lives as long as the view.
 */
#ifndef PROXYHOST_POOL_VIEW_H
#define PROXYHOST_POOL_VIEW_H

#include <stddef.h>
#include <stdint.h>

#define PH_POOL_VIEW_SERVICE "pool.view"
#define PH_POOL_VIEW_MAJOR 1
#define PH_POOL_VIEW_MINOR 2

/* "No rule" from match(), "no proxy" from find(). */
#define PH_POOL_VIEW_NONE UINT32_MAX

/* How a rule's host_pattern was compiled. */
typedef enum ph_pool_view_host_kind {
  PH_POOL_VIEW_HOST_ANY = 1,    /* "*" or empty */
  PH_POOL_VIEW_HOST_EXACT = 2,  /* a name or an address literal, in the
                                   normal form of access.h */
  PH_POOL_VIEW_HOST_SUFFIX = 3, /* "*.example.com": names strictly below
                                   it (host holds ".example.com") */
  PH_POOL_VIEW_HOST_NEVER = 4   /* a pattern that cannot be read: the
                                   rule matches nothing (fail closed) */
} ph_pool_view_host_kind;

/* Credential material of one (secret_ref, credential_version), shared by
 * every proxy that names it (deduplicated). */
typedef struct ph_pool_view_credential {
  const char *secret_ref;
  uint64_t credential_version;
  const char *username;
  uint32_t username_len;
  const char *password;
  uint32_t password_len;
} ph_pool_view_credential;

typedef struct ph_pool_view_proxy {
  const char *proxy_id;
  uint32_t index;        /* its position in view->proxies */
  int protocol;          /* ph_pool_upstream_protocol (pool_store.h) */
  const char *host;
  uint16_t port;
  uint32_t capacity;     /* concurrent reservations, > 0 */
  uint32_t weight;       /* 1..1000 */
  int64_t usable_until_ms; /* the last allocatable instant is before it */
  int64_t expires_at_ms;   /* the lease's hard expiry */
  int draining;            /* 1: no new reservation */
  const char *zone;
  const ph_pool_view_credential *credential; /* NULL: none */
} ph_pool_view_proxy;

typedef struct ph_pool_view_rule {
  const char *rule_id;
  uint32_t index;        /* its position in view->rules: the order */
  /* Match (every non-empty field must match). */
  int host_kind;         /* ph_pool_view_host_kind */
  const char *host;      /* EXACT: the name; SUFFIX: ".example.com" */
  uint32_t host_len;
  uint16_t port_min, port_max; /* inclusive; 0 0 = any */
  const char *client_identity; /* NULL = any */
  const char *listener;        /* NULL = any */
  /* Action. */
  const char *target_group;
  const char *strategy;  /* a strategy module's name */
  int on_unavailable;    /* ph_pool_on_unavailable (pool_store.h) */
  uint32_t wait_timeout_ms; /* with WAIT */
  const char *sticky_key;   /* "" when none */
  /* The proxies whose groups contain target_group, as indexes into
   * view->proxies, ascending. Rules naming one group share one array. */
  const uint32_t *candidates;
  uint32_t n_candidates;
} ph_pool_view_rule;

typedef struct ph_pool_view {
  uint32_t size;               /* sizeof(ph_pool_view) of the provider */
  uint64_t version;            /* the snapshot's version */
  uint64_t epoch;              /* its ownership_epoch */
  int64_t generated_at_ms;
  int64_t valid_until_ms;      /* no proxy usable from then on */
  int64_t obtained_at_ms;      /* when this worker accepted it */
  int64_t stale_deadline_ms;   /* obtained_at + max_stale_age */
  uint8_t checksum[32];        /* the snapshot's checksum (raw SHA-256) */
  const char *cluster_id;
  const char *worker_id;
  const ph_pool_view_rule *rules;   /* in configured order */
  uint32_t n_rules;
  const ph_pool_view_proxy *proxies; /* sorted by proxy_id */
  uint32_t n_proxies;
  /* Minor 2: the controller's health verdict of each proxy (CP-6-7),
   * indexed like proxies: ph_pool_view_health. NULL (a provider of minor
   * 1, whose reserved[0] was zero) means no verdict for any. The gateway
   * never picks an UNHEALTHY proxy and a SUSPECT one only when no other
   * candidate can take the request (the pool applies it; a strategy
   * needs nothing). */
  const uint8_t *health;
  void *reserved[3];
} ph_pool_view;

/* A proxy's health in a view (minor 2): the snapshot's OwnedProxy.health.
 * NONE (no verdict yet) is chosen like AVAILABLE. */
typedef enum ph_pool_view_health {
  PH_POOL_HEALTH_NONE = 0,
  PH_POOL_HEALTH_AVAILABLE = 1,
  PH_POOL_HEALTH_SUSPECT = 2,
  PH_POOL_HEALTH_UNHEALTHY = 3
} ph_pool_view_health;

/* The view-wide half of usable(): 1 while now_ms is before both the
 * view's valid_until and its stale deadline. Inline, so
 * that a strategy asks it with no call (strategy.h). */
static inline int ph_pool_view_live(const ph_pool_view *v, int64_t now_ms) {
  return v && now_ms < v->valid_until_ms && now_ms < v->stale_deadline_ms;
}

/* usable() for a proxy of v given by pointer (&v->proxies[i]). */
static inline int ph_pool_view_proxy_usable(const ph_pool_view *v,
                                            const ph_pool_view_proxy *p,
                                            int64_t now_ms) {
  return ph_pool_view_live(v, now_ms) && !p->draining && p->capacity > 0 &&
         now_ms < p->usable_until_ms && now_ms < p->expires_at_ms;
}

/* A subscriber (subscribe() below). */
typedef struct ph_pool_view_sub {
  /* Builds what arg keeps beside v, v to be published after base (the
   * view current when the build started, NULL for none): any thread (the
   * provider's build job), so it may read v, base and arg's immutable
   * configuration only. Returns ONE malloc'd block (the provider free()s
   * it if it is never installed) or NULL (install then gets NULL). */
  void *(*prepare)(void *arg, const ph_pool_view *v,
                   const ph_pool_view *base);
  /* v was just published: takes over prepared (NULL when prepare failed
   * or ran for another base: build on the loop then). Loop thread. v NULL:
   * the slot was emptied (prepared NULL). */
  void (*install)(void *arg, const ph_pool_view *v, void *prepared);
} ph_pool_view_sub;

typedef struct ph_pool_view_v1 {
  /* The current view, borrowed (see above), or NULL. One atomic load.
   * Loop thread. */
  const ph_pool_view *(*current)(void *self);
  /* The current view with a reference the caller gives back with
   * release(), or NULL. Loop thread; no allocation. */
  const ph_pool_view *(*acquire)(void *self);
  /* Drops a reference acquire() gave; the last one frees the view (and
   * wipes its credentials). Any thread. NULL is a no-op. */
  void (*release)(void *self, const ph_pool_view *v);
  /* The first rule (in order) that matches a request to host:port from
   * the client `identity` (NULL: none authenticated) on `listener` (its
   * name, NULL: none), as its index in v->rules, or PH_POOL_VIEW_NONE.
   * host in the normal form of access.h (modules/lib/host_norm.h):
   * lower case, no trailing dot, addresses as inet_ntop prints them; a
   * SUFFIX pattern never matches an address. Pure; any thread that holds
   * v; no allocation. Time plays no part: usable() says that. */
  uint32_t (*match)(const ph_pool_view *v, const char *host, uint16_t port,
                    const char *identity, const char *listener);
  /* 1 when proxy (an index into v->proxies) may take a new reservation at
   * now_ms as far as the view knows (see "Time" above), else 0 (also for
   * an index out of range). Pure; no allocation. */
  int (*usable)(const ph_pool_view *v, uint32_t proxy, int64_t now_ms);
  /* 1 while now_ms is before both the view's valid_until and its stale
   * deadline, else 0: not ready, no new traffic. */
  int (*live)(const ph_pool_view *v, int64_t now_ms);
  /* The index of proxy_id in v->proxies (binary search), or
   * PH_POOL_VIEW_NONE. */
  uint32_t (*find)(const ph_pool_view *v, const char *proxy_id);
  /* Minor 1. Makes sub (with arg) the one subscriber, replacing any;
   * NULL unsubscribes, and returns only once no prepare() of it runs.
   * PH_OK, PH_EBUSY (another subscriber already). Loop thread, start and
   * stop. */
  int (*subscribe)(void *self, const ph_pool_view_sub *sub, void *arg);
} ph_pool_view_v1;

#endif

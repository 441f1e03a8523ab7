/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's immutable snapshot view (<proxyhost/pool_view.h>, CP-1-20,
 * CP-3-8, CP-3-17): compiled from one WorkerSnapshot into one block of
 * memory, published by one atomic pointer swap, read with one atomic load,
 * held by reference count. The controlplane_client module puts these
 * functions behind its "pool.view" service; tests call them directly.
 *
 * The snapshot given to cp_view_compile must have passed the snapshot
 * validation (cp_snapshot_check: times present and in the future, ids and
 * fields within their bounds, the checksum verified). Compile re-checks
 * only what would make the view itself unsafe (a proxy naming credentials
 * the snapshot lacks, a duplicate proxy id, counts above the pool's
 * bounds) and fails closed on those. */
#ifndef PH_CP_VIEW_H
#define PH_CP_VIEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_view.h>

#include "controlplane/v1/controlplane.pb-c.h"

/* What the snapshot does not carry. */
typedef struct cp_view_opts {
  int64_t obtained_at_ms;   /* when the worker accepted the snapshot */
  int64_t max_stale_age_ms; /* RegisterWorkerResponse.max_stale_age; <= 0
                               makes a view with no candidates */
} cp_view_opts;

/* Compiles s into a new view with one reference (the caller's), in *out.
 * Pure: any thread (a host job), allocates one block. PH_OK, PH_EINVAL
 * (*why says what: a static text, never data), PH_ENOMEM. */
int cp_view_compile(const Controlplane__V1__WorkerSnapshot *s,
                    const cp_view_opts *o, ph_pool_view **out,
                    const char **why);

/* One more reference to v (v may be NULL). Any thread. */
void cp_view_hold(const ph_pool_view *v);
/* Drops one reference; the last frees v after wiping its credentials.
 * Any thread; NULL is a no-op. */
void cp_view_release(const ph_pool_view *v);
/* The number of references v has now (for tests and a debug gauge). */
uint32_t cp_view_refs(const ph_pool_view *v);

/* Where the current view is published: one atomic pointer holding one
 * reference, and the one subscriber that keeps state beside each view
 * (ph_pool_view_sub: the pool). cp_view_slot_init before any use. */
typedef struct cp_view_slot {
  _Atomic(ph_pool_view *) cur;
  pthread_mutex_t mu; /* sub and arg, held while a prepare() runs */
  const ph_pool_view_sub *sub;
  void *sub_arg;
} cp_view_slot;

void cp_view_slot_init(cp_view_slot *slot);
/* After the slot was emptied (cp_view_publish NULL). */
void cp_view_slot_destroy(cp_view_slot *slot);
/* ph_pool_view_v1.subscribe (pool_view.h). */
int cp_view_subscribe(cp_view_slot *slot, const ph_pool_view_sub *sub,
                      void *arg);
/* The subscriber's state for v, to be published after base (the view
 * current when the build started): its prepare(), or NULL when there is
 * no subscriber. Any thread: the job that compiled v (CP-3-17). */
void *cp_view_prepare(cp_view_slot *slot, const ph_pool_view *v,
                      const ph_pool_view *base);
/* Publishes v (taking over the caller's reference) with one atomic swap,
 * releases the previous view's slot reference, then gives the subscriber
 * v with prepared (cp_view_prepare's; NULL: none, it builds its state
 * now). Without a subscriber prepared is freed. v NULL empties the slot.
 * Loop thread. */
void cp_view_publish_prepared(cp_view_slot *slot, ph_pool_view *v,
                              void *prepared);
/* cp_view_publish_prepared with nothing prepared. */
void cp_view_publish(cp_view_slot *slot, ph_pool_view *v);
/* One atomic load: the current view, borrowed for this loop callback. */
const ph_pool_view *cp_view_current(cp_view_slot *slot);
/* The current view with a reference (cp_view_release), or NULL. Loop
 * thread (the publisher's), so no swap interleaves the load and the
 * increment. */
const ph_pool_view *cp_view_acquire(cp_view_slot *slot);

/* The questions of ph_pool_view_v1 (pool_view.h documents them). */
uint32_t cp_view_match(const ph_pool_view *v, const char *host,
                       uint16_t port, const char *identity,
                       const char *listener);
int cp_view_usable(const ph_pool_view *v, uint32_t proxy, int64_t now_ms);
int cp_view_live(const ph_pool_view *v, int64_t now_ms);
uint32_t cp_view_find(const ph_pool_view *v, const char *proxy_id);

/* For state kept beside a view across a swap (per-proxy counters): fills
 * map[i], for each proxy i of old_v, with its index in new_v or
 * PH_POOL_VIEW_NONE when new_v no longer has it (it left this worker:
 * drain what it still carries). map has old_v->n_proxies entries. Both
 * views are sorted by id, so this is one merge, O(old + new). */
void cp_view_remap(const ph_pool_view *old_v, const ph_pool_view *new_v,
                   uint32_t *map);

/* The "pool.view" vtable over a slot: register it with the slot as self,
 * api->service_register(ctx, PH_POOL_VIEW_SERVICE, PH_POOL_VIEW_MAJOR,
 * PH_POOL_VIEW_MINOR, &cp_view_service, &slot). */
extern const ph_pool_view_v1 cp_view_service;

/* Wipes the credential material inside an unpacked snapshot message (the
 * copy protobuf-c made) before the caller frees it: the view then holds
 * the only copy (CP-1-18). */
void cp_view_wipe_message(Controlplane__V1__WorkerSnapshot *s);

/* Test hook: when set, called with the view's block after its
 * credentials were wiped and before it is freed (t/unit/cp/test_cp_view.c
 * looks for the password in it). Never set outside tests. */
extern void (*cp_view_free_hook)(const void *block, size_t len);

#endif

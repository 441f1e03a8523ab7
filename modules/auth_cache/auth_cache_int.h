/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_cache's state, shared by its parts:
 *   auth_cache.c      the module: keys, check, lifecycle, metrics
 *   revision_watch.c  the store's revision: readiness, generations, the
 *                     chunked freeing of retired ones
 *   store_check.c     checks waiting for the store, one store call per key
 *                     (TM-P1-8), and answers delivered on the next loop
 *                     turn: lib/sflight
 *   access_cache.c    the "access" vtable auth_cache provides
 * Loop thread only. */
#ifndef PH_AUTH_CACHE_INT_H
#define PH_AUTH_CACHE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/access.h>
#include <proxyhost/module.h>

#include "cache_gen.h"
#include "cache_key.h"
#include "lib/sflight.h"
#include "lib/idtab.h"
#include "lib/ilist.h"

typedef struct acache acache;
typedef struct acflight acflight; /* store_check.c */

typedef struct retired retired;
struct retired {
  cache_gen *g;
  retired *next;
};

enum ac_req { AC_HIT, AC_MISS, AC_SHARED, AC_BYPASS, AC_N_REQ };

struct acache {
  ph_ctx *ctx;
  const ph_api *api;
  const ph_access_v1 *store;
  void *store_self;

  /* configuration */
  int enabled;
  size_t max_entries;
  int64_t max_pending, max_waiters;
  uint32_t max_positive_ttl, max_negative_ttl;
  int64_t interval;

  /* the revision (revision_watch.c) */
  int have_rev; /* a revision was read since start */
  int healthy;  /* the last read succeeded and did not go backwards */
  int suspect;  /* the last read failed or went back: the next good one
                   starts a fresh generation */
  uint64_t last_rev;
  uint64_t gen_id; /* flights started under it may be joined; bumped with
                      every generation and when the revision goes bad */
  cache_gen *cur;  /* NULL: nothing is cached (not ready, no memory) */
  retired *retired;
  int started;

  /* flights and waiters (store_check.c) */
  sflight *sf;
  acflight *starting; /* the flight whose store check_open runs now */

  ph_timer *tick_t, *reap_t;
  ph_series *m_req[AC_N_REQ];
  ph_series *m_entries, *m_evictions, *m_generations;
};

/* revision_watch.c */
/* Reads the store's revision and acts on it: readiness, a new generation
 * when it rose, a cleared cache when it went back or could not be read
 * (TM-P1-26/28/30). Cheap (no I/O): called on every check and by the tick
 * timer. */
void rw_refresh(acache *s);
/* Whether cached allows may be served now (TM-SEC-4). */
int rw_allows_ok(const acache *s);
/* Replaces the current generation with an empty one for revision (the
 * old one is retired and freed in chunks). */
void rw_new_generation(acache *s, uint64_t revision);
/* Frees every retired generation now (destroy only). */
void rw_free_all(acache *s);
void rw_reap(ph_timer *t, void *arg);
void rw_tick(ph_timer *t, void *arg);
/* Readiness as the cache's state says. */
void rw_update_ready(acache *s);

/* store_check.c */
int sc_init(acache *s);
/* Starts or joins the flight for key (bypass: a flight of its own, not
 * shared, not stored). Returns the waiter's id, or a negative ph_status
 * (the store refused the request), and then no callback. */
int64_t sc_check(acache *s, const ph_access_request *r,
                 const unsigned char *key, size_t len, uint64_t hash,
                 int bypass, ph_access_cb cb, void *arg);
/* Queues an answer for the next loop turn (slot: holds one of
 * max_waiters); the id, PH_EFULL (no slot) or PH_ENOMEM. */
int64_t sc_answer_later(acache *s, const ph_access_result *res, int slot,
                        ph_access_cb cb, void *arg);
int sc_cancel(acache *s, int64_t id);
/* Drops everything without calling anyone; cancels the store's checks. */
void sc_free_all(acache *s);

/* access_cache.c */
extern const ph_access_v1 access_cache_vt;
void ac_unavailable(ph_access_result *res, int code);

#endif

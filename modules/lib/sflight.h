/* SPDX-License-Identifier: BSD-2-Clause */
/* Singleflight with answers on the next loop turn: the other half of
 * "one bounded cache with singleflight" (kcache.h is the map). Loop
 * thread only.
 *
 *   flight    one lookup (a store check, an HTTP request, a hash job) for
 *             a key under a generation; a later asker of the same key and
 *             generation joins it (sf_find + sf_join) instead of starting
 *             another. An unshared flight (shared = 0) is never found.
 *   waiter    one asker: a callback and its argument, known by an id > 0
 *             (sf_cancel). At most max_waiters waiters hold a slot in
 *             total and max_per_key wait on one flight; at most
 *             max_flights flights run at once (bounds validated by the
 *             caller's configuration); beyond, PH_EFULL and the caller
 *             answers as its contract says.
 *   later     an answer known now (a hit, a refusal) is queued and handed
 *             out through the host's defer (SDK 1.6) on the next loop
 *             turn: never from inside the call that asked, never after a
 *             timer. The whole queue goes as one batch, so an answer
 *             queued by a callback waits for the turn after.
 *   complete  the owner's lookup answered: every waiter of the flight
 *             gets it now, oldest first (a callback may cancel the
 *             others or ask again). Between sf_hold and sf_unhold (the
 *             owner's entry point) an answer goes to the queue instead:
 *             a lookup that answered inside the call that started it.
 *   cancel    removes one waiter, never the others. When the last one
 *             leaves, conf.orphan (when set) is called and the flight is
 *             dropped (the owner cancels its lookup there); without it the
 *             lookup goes on, and its sf_complete still reaches the
 *             owner, who fills the cache for the next asker.
 *
 * An answer is answer_size bytes, copied. Callbacks are stored as
 * sf_fn and handed back through conf.call, which casts them to the
 * owner's type (a cast there and back is well defined in C). */
#ifndef PH_LIB_SFLIGHT_H
#define PH_LIB_SFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>

#define SF_ANSWER_MAX 256 /* the largest answer_size */

typedef struct sflight sflight;
typedef struct sf_flight sf_flight;

typedef void (*sf_fn)(void);
/* Hands answer to one waiter's cb(arg, ...). */
typedef void (*sf_call_fn)(void *owner, sf_fn cb, void *arg,
                           const void *answer);
/* The last waiter of f left; the flight is dropped after the call. */
typedef void (*sf_orphan_fn)(void *owner, sf_flight *f);

typedef struct sf_conf {
  size_t answer_size;
  int64_t max_flights;  /* >= 1 */
  int64_t max_waiters;  /* waiters holding a slot, in total; >= 1 */
  int64_t max_per_key;  /* waiters on one flight; >= 1 */
  size_t key_max;       /* longest key */
  sf_call_fn call;
  sf_orphan_fn orphan;  /* NULL: a lookup outlives its waiters */
  void *owner;
} sf_conf;

/* Makes the deferred call (api->defer_new): NULL when it cannot (or
 * answer_size > SF_ANSWER_MAX). */
sflight *sf_new(const ph_api *api, ph_ctx *ctx, const sf_conf *c);
/* Drops every waiter without a call and every flight (the owner ended
 * its lookups first: see sf_first_flight), frees; NULL ignored. */
void sf_free(sflight *s);
/* New bounds (a reload): waiters and flights above them stay. */
void sf_set_limits(sflight *s, int64_t max_flights, int64_t max_waiters,
                   int64_t max_per_key);

/* The shared flight of key under gen, or NULL. */
sf_flight *sf_find(sflight *s, const void *key, size_t len, uint64_t hash,
                   uint64_t gen);
/* Joins f: the waiter's id, PH_EFULL (max_waiters, max_per_key) or
 * PH_ENOMEM. */
int64_t sf_join(sflight *s, sf_flight *f, sf_fn cb, void *arg);
/* A new flight for key under gen with cb as its first waiter: the
 * waiter's id and *out, or PH_EFULL (max_flights, max_waiters),
 * PH_EINVAL (key longer than key_max) or PH_ENOMEM, and nothing made.
 * The owner then starts its lookup and calls sf_complete (or
 * sf_discard) exactly once. */
int64_t sf_start(sflight *s, const void *key, size_t len, uint64_t hash,
                 uint64_t gen, int shared, sf_fn cb, void *arg,
                 sf_flight **out);
/* Queues answer for cb on the next loop turn. slot: it holds one of
 * max_waiters until then (PH_EFULL when none is free). The id, or
 * PH_EFULL, PH_ENOMEM. */
int64_t sf_later(sflight *s, const void *answer, int slot, sf_fn cb,
                 void *arg);
/* The lookup's answer to every waiter of f (see above); frees f. */
void sf_complete(sflight *s, sf_flight *f, const void *answer);
/* A lookup that did not start: its waiters go without a call; frees f. */
void sf_discard(sflight *s, sf_flight *f);
/* Removes the waiter id; PH_ENOENT when it is not waiting. */
int sf_cancel(sflight *s, int64_t id);
void sf_hold(sflight *s);
void sf_unhold(sflight *s);

int64_t sf_flights(const sflight *s);
int64_t sf_waiters(const sflight *s); /* holding a slot */
/* Any flight (for teardown), or NULL. */
sf_flight *sf_first_flight(const sflight *s);

/* The owner's own per-lookup state. */
void sf_flight_set_data(sf_flight *f, void *data);
void *sf_flight_data(const sf_flight *f);
const unsigned char *sf_flight_key(const sf_flight *f, size_t *len);
uint64_t sf_flight_gen(const sf_flight *f);
size_t sf_flight_waiters(const sf_flight *f);

#endif

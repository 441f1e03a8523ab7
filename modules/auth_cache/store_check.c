/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks waiting for the store, and answers waiting for a loop turn
 * (auth_cache_int.h), on lib/sflight.
 *
 * A miss starts a flight: one store check_open for its key, which every
 * later miss of the same key in the same generation joins (TM-P1-8,
 * counted "shared"); all its waiters get the store's verdict. A waiter's
 * cancel removes only it; the last one's cancels the store's check (the
 * flight's orphan call). A flight is looked up by key and generation:
 * once the revision moves, a new miss starts a new flight, as the old
 * one's verdict was computed under the old revision (it still answers
 * its own waiters).
 *
 * Bounds: at most max_pending flights and max_waiters waiters (joined or
 * holding a hit); beyond either the answer is UNAVAILABLE/queue_full, a
 * denial that is never cached.
 *
 * Answers that are known when check_open is called (hits, bounds, a store
 * that answered inside its own check_open: check_open holds the flights)
 * are handed out by sflight through the host's defer on the loop's next
 * turn, never from inside check_open, and never after a timer (issue 25:
 * a cached allow waited for a 1 ms timer). */
#include "auth_cache_int.h"

#include <stdlib.h>
#include <string.h>

/* The owner's part of a flight: the store's check. */
struct acflight {
  acache *s;
  sf_flight *f;
  int64_t store_id; /* > 0 while the store's check runs */
  int bypass;       /* the cache is off: never shared, never stored */
};

static void call(void *owner, sf_fn cb, void *arg, const void *answer) {
  (void)owner;
  ((ph_access_cb)cb)(arg, answer);
}

/* The last waiter went: nobody wants the store's answer. */
static void orphan(void *owner, sf_flight *f) {
  acache *s = owner;
  acflight *af = sf_flight_data(f);
  if (af->store_id > 0)
    s->store->cancel(s->store_self, af->store_id);
  free(af);
}

int sc_init(acache *s) {
  sf_conf c = {.answer_size = sizeof(ph_access_result),
               .max_flights = s->max_pending,
               .max_waiters = s->max_waiters,
               .max_per_key = s->max_waiters,
               .key_max = CACHE_KEY_MAX,
               .call = call,
               .orphan = orphan,
               .owner = s};
  s->sf = sf_new(s->api, s->ctx, &c);
  return s->sf ? PH_OK : PH_ENOMEM;
}

int64_t sc_answer_later(acache *s, const ph_access_result *res, int slot,
                        ph_access_cb cb, void *arg) {
  return sf_later(s->sf, res, slot, (sf_fn)cb, arg);
}

static int64_t queue_full(acache *s, ph_access_cb cb, void *arg) {
  ph_access_result res;
  ac_unavailable(&res, PH_OPEN_QUEUE_FULL);
  return sc_answer_later(s, &res, 0, cb, arg);
}

/* ---- the store's answer ------------------------------------------------ */

static uint32_t cap_ttl(const acache *s, const ph_access_result *r) {
  uint32_t cap =
      r->verdict == PH_ACCESS_ALLOW ? s->max_positive_ttl : s->max_negative_ttl;
  return r->ttl_ms < cap ? r->ttl_ms : cap;
}

/* What the caller gets from the store's result: a verdict this header
 * knows with its reason, the TTL cut to the cap; anything else (a result
 * too short, an unknown verdict) is UNAVAILABLE/internal_error. */
static void sanitize(const acache *s, const ph_access_result *in,
                     ph_access_result *out) {
  memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
  if (!in || !PH_ACCESS_HAS(ph_access_result, in->size, revision)) {
    ac_unavailable(out, PH_OPEN_INTERNAL_ERROR);
    return;
  }
  if (in->verdict == PH_ACCESS_ALLOW || in->verdict == PH_ACCESS_DENY) {
    out->verdict = in->verdict;
    out->code = in->verdict == PH_ACCESS_ALLOW ? PH_OPEN_OK : PH_OPEN_FORBIDDEN;
    out->ttl_ms = cap_ttl(s, in);
    out->revision = in->revision;
    return;
  }
  int code =
      in->verdict == PH_ACCESS_UNAVAILABLE &&
              (in->code == PH_OPEN_QUEUE_FULL || in->code == PH_OPEN_TIMEOUT)
          ? in->code
          : PH_OPEN_INTERNAL_ERROR;
  ac_unavailable(out, code);
  if (in->verdict == PH_ACCESS_UNAVAILABLE &&
      PH_ACCESS_HAS(ph_access_result, in->size, retry_after_ms))
    out->retry_after_ms = in->retry_after_ms;
}

/* Keeps a fresh verdict only under the revision in force now, healthy,
 * cache on (TM-P1-28: one computed before the revision moved is stale;
 * TM-P1-32: UNAVAILABLE never). */
static void maybe_store(acache *s, const sf_flight *f,
                        const ph_access_result *res) {
  if (!s->enabled || !rw_allows_ok(s) || res->ttl_ms == 0 ||
      (res->verdict != PH_ACCESS_ALLOW && res->verdict != PH_ACCESS_DENY) ||
      res->revision != cache_gen_revision(s->cur))
    return;
  int64_t now = s->api->now_ms(s->ctx);
  cache_verdict v = {res->verdict, res->code, now + (int64_t)res->ttl_ms};
  size_t len;
  const unsigned char *key = sf_flight_key(f, &len);
  int rc = cache_gen_put(s->cur, key, len, cache_key_hash(key, len), &v, now);
  if (rc == 1)
    s->api->inc(s->m_evictions, 1);
  s->api->gauge_set(s->m_entries, (double)cache_gen_count(s->cur));
}

/* Hands the answer to every waiter, oldest first. Each is taken off the
 * flight before its callback, which may cancel the others (they are then
 * skipped) or start checks (a new flight: this one is out of the map). */
static void on_store(void *arg, const ph_access_result *in) {
  acflight *af = arg;
  acache *s = af->s;
  af->store_id = 0;
  if (s->starting == af)
    s->starting = NULL; /* answered inside its check_open */
  ph_access_result res;
  sanitize(s, in, &res);
  if (!af->bypass) {
    rw_refresh(s); /* a rise since the check started makes it stale */
    maybe_store(s, af->f, &res);
  }
  /* Oldest first; each callback may cancel the others or start checks
   * (a new flight: this one is out of the map). */
  sf_complete(s->sf, af->f, &res);
  free(af);
}

int64_t sc_check(acache *s, const ph_access_request *r,
                 const unsigned char *key, size_t len, uint64_t hash,
                 int bypass, ph_access_cb cb, void *arg) {
  sf_flight *f = bypass ? NULL : sf_find(s->sf, key, len, hash, s->gen_id);
  if (f) {
    int64_t id = sf_join(s->sf, f, (sf_fn)cb, arg);
    if (id == PH_EFULL)
      return queue_full(s, cb, arg);
    if (id > 0)
      s->api->inc(s->m_req[AC_SHARED], 1);
    return id;
  }
  s->api->inc(s->m_req[bypass ? AC_BYPASS : AC_MISS], 1);
  int64_t id = sf_start(s->sf, key, len, hash, s->gen_id, !bypass,
                        (sf_fn)cb, arg, &f);
  if (id == PH_EFULL)
    return queue_full(s, cb, arg);
  if (id < 0)
    return id;
  acflight *af = calloc(1, sizeof(*af));
  if (!af) {
    sf_discard(s->sf, f);
    return PH_ENOMEM;
  }
  af->s = s;
  af->f = f;
  af->bypass = bypass;
  sf_flight_set_data(f, af);
  s->starting = af;
  int64_t sid = s->store->check_open(s->store_self, r, on_store, af);
  if (!s->starting)
    return id; /* answered (queued) and freed already */
  s->starting = NULL;
  if (sid < 0) {
    /* The store refused what we accepted: its status, and no callback,
     * as for a malformed request. */
    sf_discard(s->sf, f);
    free(af);
    return sid;
  }
  af->store_id = sid;
  return id;
}

int sc_cancel(acache *s, int64_t id) { return sf_cancel(s->sf, id); }

void sc_free_all(acache *s) {
  if (!s->sf)
    return;
  sf_flight *f;
  while ((f = sf_first_flight(s->sf))) {
    orphan(s, f); /* cancels the store's check */
    sf_discard(s->sf, f);
  }
  sf_free(s->sf);
  s->sf = NULL;
}

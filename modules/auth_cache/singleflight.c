/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks waiting for the store, and answers waiting for a loop turn
 * (auth_cache_int.h).
 *
 * A miss starts a flight: one store check_open for its key, which every
 * later miss of the same key in the same generation joins (TM-P1-8,
 * counted "shared"); all its waiters get the store's verdict. A waiter's
 * cancel removes only it; the last one's cancels the store's check. A
 * flight is looked up by key and generation: once the revision moves, a
 * new miss starts a new flight, as the old one's verdict was computed
 * under the old revision (it still answers its own waiters).
 *
 * Bounds: at most max_pending flights and max_waiters waiters (joined or
 * holding a hit); beyond either the answer is UNAVAILABLE/queue_full, a
 * denial that is never cached.
 *
 * Answers that are known when check_open is called (hits, bounds) go
 * into a FIFO queue that a deferred call (api->defer_post) hands out on
 * the loop's next turn (the contract: never from inside check_open), as
 * auth_local's access service does: no clock tick in between (issue 25:
 * a cached allow waited for a 1 ms timer), the whole queue taken as one
 * batch. */
#include "auth_cache_int.h"

#include <stdlib.h>
#include <string.h>

static size_t pow2_at_least(int64_t n) {
  size_t b = 16;
  while ((int64_t)b < n && b < ((size_t)1 << 24))
    b <<= 1;
  return b;
}

int sf_init(acache *s) {
  size_t nf = pow2_at_least(s->max_pending);
  s->fbuckets = calloc(nf, sizeof(*s->fbuckets));
  ilist_init(&s->queue);
  ilist_init(&s->batch);
  if (!s->fbuckets || idtab_init(&s->wids, (size_t)s->max_waiters / 4) < 0)
    return PH_ENOMEM;
  s->fmask = nf - 1;
  return PH_OK;
}

/* ---- lists and maps --------------------------------------------------- */

static waiter *first(const ilist *l) {
  ilist_node *n = ilist_first(l);
  return n ? ILIST_ENTRY(n, waiter, link) : NULL;
}

static waiter *id_take(acache *s, int64_t id) {
  idtab_node *n = idtab_find(&s->wids, id);
  if (!n)
    return NULL;
  idtab_del(&s->wids, n);
  return IDTAB_ENTRY(n, waiter, hn);
}

static flight *flight_find(acache *s, const unsigned char *key, size_t len,
                           uint64_t hash) {
  for (flight *f = s->fbuckets[hash & s->fmask]; f; f = f->hnext)
    if (f->hash == hash && f->gen_id == s->gen_id && f->len == len &&
        memcmp(f->key, key, len) == 0)
      return f;
  return NULL;
}

static void flight_unmap(acache *s, flight *f) {
  if (!f->mapped)
    return;
  for (flight **pp = &s->fbuckets[f->hash & s->fmask]; *pp; pp = &(*pp)->hnext)
    if (*pp == f) {
      *pp = f->hnext;
      break;
    }
  f->mapped = 0;
}

static void waiter_free(acache *s, waiter *w) {
  if (w->slot)
    s->n_slots--;
  free(w);
}

static waiter *waiter_new(acache *s, ph_access_cb cb, void *arg, int slot) {
  waiter *w = calloc(1, sizeof(*w));
  if (!w)
    return NULL;
  w->id = ++s->next_id;
  w->cb = cb;
  w->arg = arg;
  w->slot = slot;
  if (slot)
    s->n_slots++;
  idtab_put(&s->wids, &w->hn, w->id);
  return w;
}

/* ---- answers on the next loop turn -------------------------------------- */

void sf_deliver(ph_defer *d, void *arg) {
  (void)d;
  acache *s = arg;
  waiter *w;
  while ((w = first(&s->queue))) /* later answers wait for the next turn */
    ilist_push(&s->batch, &w->link); /* moves it */
  while ((w = first(&s->batch))) {
    ilist_remove(&w->link); /* before the callback: it may cancel others */
    id_take(s, w->id);
    ph_access_cb cb = w->cb;
    void *cb_arg = w->arg;
    ph_access_result res = w->res;
    waiter_free(s, w);
    cb(cb_arg, &res);
  }
}

static void queue_answer(acache *s, waiter *w, const ph_access_result *res) {
  w->res = *res;
  w->f = NULL;
  ilist_push(&s->queue, &w->link);
  s->api->defer_post(s->deliver); /* nothing when already pending */
}

int64_t sf_answer_later(acache *s, const ph_access_result *res, int slot,
                        ph_access_cb cb, void *arg) {
  waiter *w = waiter_new(s, cb, arg, slot);
  if (!w)
    return PH_ENOMEM;
  queue_answer(s, w, res);
  return w->id;
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
static void maybe_store(acache *s, const flight *f,
                        const ph_access_result *res) {
  if (!s->enabled || !rw_allows_ok(s) || res->ttl_ms == 0 ||
      (res->verdict != PH_ACCESS_ALLOW && res->verdict != PH_ACCESS_DENY) ||
      res->revision != cache_gen_revision(s->cur))
    return;
  int64_t now = s->api->now_ms(s->ctx);
  cache_verdict v = {res->verdict, res->code, now + (int64_t)res->ttl_ms};
  int rc = cache_gen_put(s->cur, f->key, f->len, f->hash, &v, now);
  if (rc == 1)
    s->api->inc(s->m_evictions, 1);
  s->api->gauge_set(s->m_entries, (double)cache_gen_count(s->cur));
}

/* Hands the answer to every waiter, oldest first. Each is taken off the
 * flight before its callback, which may cancel the others (they are then
 * skipped) or start checks (a new flight: this one is out of the map). */
static void deliver_flight(acache *s, flight *f, const ph_access_result *res) {
  f->delivering = 1;
  waiter *w;
  while ((w = first(&f->waiters))) {
    ilist_remove(&w->link);
    if (s->in_check) {
      /* A store that answered inside its check_open, called from ours:
       * the answer waits for a later turn, as the contract says. */
      queue_answer(s, w, res);
      continue;
    }
    id_take(s, w->id);
    ph_access_cb cb = w->cb;
    void *cb_arg = w->arg;
    waiter_free(s, w);
    cb(cb_arg, res);
  }
  s->n_flights--;
  free(f);
}

static void on_store(void *arg, const ph_access_result *in) {
  flight *f = arg;
  acache *s = f->s;
  f->store_id = 0;
  flight_unmap(s, f);
  if (s->starting == f)
    s->starting = NULL; /* answered inside its check_open */
  ph_access_result res;
  sanitize(s, in, &res);
  if (!f->bypass) {
    rw_refresh(s); /* a rise since the check started makes it stale */
    maybe_store(s, f, &res);
  }
  deliver_flight(s, f, &res);
}

static int64_t join(acache *s, flight *f, ph_access_cb cb, void *arg) {
  waiter *w = waiter_new(s, cb, arg, 1);
  if (!w)
    return PH_ENOMEM;
  w->f = f;
  ilist_push(&f->waiters, &w->link);
  return w->id;
}

int64_t sf_check(acache *s, const ph_access_request *r,
                 const unsigned char *key, size_t len, uint64_t hash,
                 int bypass, ph_access_cb cb, void *arg) {
  flight *f = bypass ? NULL : flight_find(s, key, len, hash);
  if (f) {
    if (s->n_slots >= s->max_waiters) {
      ph_access_result res;
      ac_unavailable(&res, PH_OPEN_QUEUE_FULL);
      return sf_answer_later(s, &res, 0, cb, arg);
    }
    s->api->inc(s->m_req[AC_SHARED], 1);
    return join(s, f, cb, arg);
  }
  s->api->inc(s->m_req[bypass ? AC_BYPASS : AC_MISS], 1);
  if (s->n_flights >= s->max_pending || s->n_slots >= s->max_waiters) {
    ph_access_result res;
    ac_unavailable(&res, PH_OPEN_QUEUE_FULL);
    return sf_answer_later(s, &res, 0, cb, arg);
  }
  f = calloc(1, sizeof(*f) + len);
  if (!f)
    return PH_ENOMEM;
  f->s = s;
  ilist_init(&f->waiters);
  f->hash = hash;
  f->gen_id = s->gen_id;
  f->bypass = bypass;
  f->len = len;
  memcpy(f->key, key, len);
  int64_t id = join(s, f, cb, arg);
  if (id < 0) {
    free(f);
    return id;
  }
  s->n_flights++;
  if (!bypass) {
    f->hnext = s->fbuckets[hash & s->fmask];
    s->fbuckets[hash & s->fmask] = f;
    f->mapped = 1;
  }
  s->starting = f;
  int64_t sid = s->store->check_open(s->store_self, r, on_store, f);
  if (!s->starting)
    return id; /* answered (queued) and freed already */
  s->starting = NULL;
  if (sid < 0) {
    /* The store refused what we accepted: its status, and no callback,
     * as for a malformed request. */
    waiter *w = id_take(s, id);
    ilist_remove(&w->link);
    waiter_free(s, w);
    flight_unmap(s, f);
    s->n_flights--;
    free(f);
    return sid;
  }
  f->store_id = sid;
  return id;
}

int sf_cancel(acache *s, int64_t id) {
  waiter *w = id_take(s, id);
  if (!w)
    return PH_ENOENT;
  flight *f = w->f; /* NULL for a queued answer */
  ilist_remove(&w->link);
  waiter_free(s, w);
  if (f && ilist_empty(&f->waiters) && !f->delivering) {
    /* The last waiter went: nobody wants the store's answer. */
    flight_unmap(s, f);
    if (f->store_id > 0)
      s->store->cancel(s->store_self, f->store_id);
    s->n_flights--;
    free(f);
  }
  return PH_OK;
}

void sf_free_all(acache *s) {
  /* Flights are reached through their waiters' ids: every waiter is in
   * the id map, every live flight has at least one waiter. */
  idtab_node *n;
  while ((n = idtab_any(&s->wids)))
    sf_cancel(s, n->id);
  free(s->fbuckets);
  s->fbuckets = NULL;
  idtab_free(&s->wids);
}

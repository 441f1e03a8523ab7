/* SPDX-License-Identifier: BSD-2-Clause */
/* Singleflight with answers on the next loop turn (sflight.h). */
#include "sflight.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "idtab.h"
#include "ilist.h"

typedef struct waiter waiter;
struct waiter {
  sf_fn cb;
  void *arg;
  sf_flight *f;    /* the flight it waits on; NULL once queued */
  ilist_node link; /* on a flight's waiters, the queue or the batch */
  idtab_node hn;   /* in the id map */
  int slot;        /* holds one of max_waiters */
  alignas(max_align_t) unsigned char answer[]; /* a queued answer */
};

struct sf_flight {
  sf_flight *hnext; /* chain in the flight map */
  ilist_node link;  /* on s->flights */
  uint64_t hash, gen;
  int mapped, delivering;
  void *data;
  ilist waiters;
  size_t len;
  unsigned char key[];
};

struct sflight {
  const ph_api *api;
  sf_conf c;
  sf_flight **buckets;
  size_t mask;
  ilist flights;
  idtab ids;
  int64_t n_slots, next_id;
  ilist queue, batch; /* for the next turn, and being handed out now */
  int hold;
  ph_defer *turn;
};

static void deliver(ph_defer *d, void *arg);

sflight *sf_new(const ph_api *api, ph_ctx *ctx, const sf_conf *c) {
  if (c->answer_size > SF_ANSWER_MAX)
    return NULL;
  sflight *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->api = api;
  s->c = *c;
  size_t nb = 16;
  while ((int64_t)nb < c->max_flights && nb < ((size_t)1 << 20))
    nb <<= 1;
  s->buckets = calloc(nb, sizeof(*s->buckets));
  s->mask = nb - 1;
  ilist_init(&s->flights);
  ilist_init(&s->queue);
  ilist_init(&s->batch);
  s->turn = api->defer_new(ctx, deliver, s);
  if (!s->buckets || !s->turn ||
      idtab_init(&s->ids, (size_t)c->max_waiters / 4) < 0) {
    sf_free(s);
    return NULL;
  }
  return s;
}

void sf_set_limits(sflight *s, int64_t max_flights, int64_t max_waiters,
                   int64_t max_per_key) {
  s->c.max_flights = max_flights;
  s->c.max_waiters = max_waiters;
  s->c.max_per_key = max_per_key;
}

/* ---- waiters ---------------------------------------------------------- */

static waiter *first(const ilist *l) {
  ilist_node *n = ilist_first(l);
  return n ? ILIST_ENTRY(n, waiter, link) : NULL;
}

static waiter *waiter_new(sflight *s, sf_fn cb, void *arg, int slot) {
  waiter *w = calloc(1, sizeof(*w) + s->c.answer_size);
  if (!w)
    return NULL;
  w->cb = cb;
  w->arg = arg;
  w->slot = slot;
  if (slot)
    s->n_slots++;
  idtab_put(&s->ids, &w->hn, ++s->next_id);
  return w;
}

/* Out of every list and map, and freed. */
static void waiter_free(sflight *s, waiter *w) {
  ilist_remove(&w->link);
  if (w->hn.linked)
    idtab_del(&s->ids, &w->hn);
  if (w->slot)
    s->n_slots--;
  free(w);
}

/* Frees w, then calls it. */
static void answer(sflight *s, waiter *w, const void *ans) {
  sf_fn cb = w->cb;
  void *arg = w->arg;
  waiter_free(s, w);
  s->c.call(s->c.owner, cb, arg, ans);
}

static void queue(sflight *s, waiter *w, const void *ans) {
  memcpy(w->answer, ans, s->c.answer_size);
  w->f = NULL;
  ilist_push(&s->queue, &w->link);
  s->api->defer_post(s->turn); /* nothing when already pending */
}

static void deliver(ph_defer *d, void *arg) {
  (void)d;
  sflight *s = arg;
  waiter *w;
  while ((w = first(&s->queue))) /* later answers wait for the next turn */
    ilist_push(&s->batch, &w->link);
  while ((w = first(&s->batch))) {
    /* A copy: the callback may cancel w's neighbours, not w (gone). */
    unsigned char buf[SF_ANSWER_MAX];
    memcpy(buf, w->answer, s->c.answer_size);
    answer(s, w, buf);
  }
}

int64_t sf_later(sflight *s, const void *ans, int slot, sf_fn cb,
                 void *arg) {
  if (slot && s->n_slots >= s->c.max_waiters)
    return PH_EFULL;
  waiter *w = waiter_new(s, cb, arg, slot);
  if (!w)
    return PH_ENOMEM;
  queue(s, w, ans);
  return w->hn.id;
}

/* ---- flights ---------------------------------------------------------- */

static void unmap(sflight *s, sf_flight *f) {
  if (!f->mapped)
    return;
  for (sf_flight **pp = &s->buckets[f->hash & s->mask]; *pp;
       pp = &(*pp)->hnext)
    if (*pp == f) {
      *pp = f->hnext;
      break;
    }
  f->mapped = 0;
}

static void flight_free(sflight *s, sf_flight *f) {
  unmap(s, f);
  ilist_remove(&f->link);
  explicit_bzero(f->key, f->len); /* a digest of credentials, maybe */
  free(f);
}

sf_flight *sf_find(sflight *s, const void *key, size_t len, uint64_t hash,
                   uint64_t gen) {
  for (sf_flight *f = s->buckets[hash & s->mask]; f; f = f->hnext)
    if (f->hash == hash && f->gen == gen && f->len == len &&
        memcmp(f->key, key, len) == 0)
      return f;
  return NULL;
}

int64_t sf_join(sflight *s, sf_flight *f, sf_fn cb, void *arg) {
  if (s->n_slots >= s->c.max_waiters ||
      (int64_t)ilist_len(&f->waiters) >= s->c.max_per_key)
    return PH_EFULL;
  waiter *w = waiter_new(s, cb, arg, 1);
  if (!w)
    return PH_ENOMEM;
  w->f = f;
  ilist_push(&f->waiters, &w->link);
  return w->hn.id;
}

int64_t sf_start(sflight *s, const void *key, size_t len, uint64_t hash,
                 uint64_t gen, int shared, sf_fn cb, void *arg,
                 sf_flight **out) {
  *out = NULL;
  if (len > s->c.key_max)
    return PH_EINVAL;
  if ((int64_t)ilist_len(&s->flights) >= s->c.max_flights ||
      s->n_slots >= s->c.max_waiters)
    return PH_EFULL;
  sf_flight *f = calloc(1, sizeof(*f) + len);
  if (!f)
    return PH_ENOMEM;
  ilist_init(&f->waiters);
  f->hash = hash;
  f->gen = gen;
  f->len = len;
  memcpy(f->key, key, len);
  ilist_push(&s->flights, &f->link);
  int64_t id = sf_join(s, f, cb, arg);
  if (id < 0) {
    flight_free(s, f);
    return id;
  }
  if (shared) {
    f->hnext = s->buckets[hash & s->mask];
    s->buckets[hash & s->mask] = f;
    f->mapped = 1;
  }
  *out = f;
  return id;
}

void sf_complete(sflight *s, sf_flight *f, const void *ans) {
  unmap(s, f); /* an asker from a callback starts a new lookup */
  f->delivering = 1;
  waiter *w;
  while ((w = first(&f->waiters))) {
    if (s->hold)
      queue(s, w, ans); /* moves it off the flight */
    else
      answer(s, w, ans);
  }
  flight_free(s, f);
}

void sf_discard(sflight *s, sf_flight *f) {
  waiter *w;
  while ((w = first(&f->waiters)))
    waiter_free(s, w);
  flight_free(s, f);
}

int sf_cancel(sflight *s, int64_t id) {
  idtab_node *n = id > 0 ? idtab_find(&s->ids, id) : NULL;
  if (!n)
    return PH_ENOENT;
  waiter *w = IDTAB_ENTRY(n, waiter, hn);
  sf_flight *f = w->f; /* NULL for a queued answer */
  waiter_free(s, w);
  if (f && ilist_empty(&f->waiters) && !f->delivering && s->c.orphan) {
    unmap(s, f);
    s->c.orphan(s->c.owner, f);
    flight_free(s, f);
  }
  return PH_OK;
}

void sf_hold(sflight *s) { s->hold++; }
void sf_unhold(sflight *s) { s->hold--; }

void sf_free(sflight *s) {
  if (!s)
    return;
  sf_flight *f;
  while ((f = sf_first_flight(s)))
    sf_discard(s, f);
  waiter *w;
  while ((w = first(&s->queue)))
    waiter_free(s, w);
  while ((w = first(&s->batch)))
    waiter_free(s, w);
  if (s->turn)
    s->api->defer_free(s->turn);
  idtab_free(&s->ids);
  free(s->buckets);
  free(s);
}

int64_t sf_flights(const sflight *s) { return (int64_t)ilist_len(&s->flights); }
int64_t sf_waiters(const sflight *s) { return s->n_slots; }

sf_flight *sf_first_flight(const sflight *s) {
  ilist_node *n = ilist_first(&s->flights);
  return n ? ILIST_ENTRY(n, sf_flight, link) : NULL;
}

void sf_flight_set_data(sf_flight *f, void *data) { f->data = data; }
void *sf_flight_data(const sf_flight *f) { return f->data; }
const unsigned char *sf_flight_key(const sf_flight *f, size_t *len) {
  *len = f->len;
  return f->key;
}
uint64_t sf_flight_gen(const sf_flight *f) { return f->gen; }
size_t sf_flight_waiters(const sf_flight *f) { return ilist_len(&f->waiters); }

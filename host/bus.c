/* SPDX-License-Identifier: BSD-2-Clause */
/* The message bus. Topics live in a bounded table; each topic keeps its
 * subscriptions in an array in subscription order. Delivery walks that
 * array by index (a handler may subscribe and so grow it), skipping
 * subscriptions marked dead; dead entries are removed only when no
 * delivery on the topic is in progress, so indices stay stable under the
 * walkers.
 *
 * Cross-thread posts travel through the mailbox in a small envelope. An
 * envelope holds a reference on the bus, so bus_free and mailbox_free may
 * happen in either order: a closed bus drops late envelopes (freeing their
 * payloads), and the bus memory goes away with the last reference. */
#include "bus.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define BUS_MAX_TOPICS 1024
#define BUS_MAX_NAME 128
#define BUS_MAX_TYPE 128
#define BUS_MAX_DEPTH 16

typedef struct bus_sub {
  int id;
  int dead;
  ph_bus_fn fn;
  void *arg;
  void *owner;
} bus_sub;

struct ph_topic {
  char *name;
  char *type;
  bus_sub *subs;
  size_t n_subs, cap_subs;
  int delivering; /* deliveries in progress on this topic (nesting) */
  int has_dead;   /* some subs are dead and await compaction */
};

struct ph_bus {
  ph_mailbox *mb;
  ph_series *dropped;
  ph_series *delivered;
  ph_topic *topics[BUS_MAX_TOPICS];
  size_t n_topics;
  int next_sub_id;
  int depth;  /* publish nesting on the loop thread */
  int closed; /* bus_free ran; only envelopes keep the memory alive */
  _Atomic long refs; /* 1 for the owner + 1 per envelope in flight */
};

typedef struct bus_envelope {
  ph_bus *bus;
  ph_topic *topic;
  void *payload;
  ph_free_fn free_fn;
} bus_envelope;

/* ---- lifetime ---------------------------------------------------------- */

ph_bus *bus_new(ph_mailbox *mb, ph_series *dropped_counter,
                ph_series *delivered_counter) {
  ph_bus *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->mb = mb;
  b->dropped = dropped_counter;
  b->delivered = delivered_counter;
  b->next_sub_id = 1;
  atomic_init(&b->refs, 1);
  return b;
}

static void bus_unref(ph_bus *b) {
  if (atomic_fetch_sub(&b->refs, 1) == 1)
    free(b);
}

static void topic_free(ph_topic *t) {
  free(t->name);
  free(t->type);
  free(t->subs);
  free(t);
}

void bus_free(ph_bus *b) {
  if (!b)
    return;
  for (size_t i = 0; i < b->n_topics; i++)
    topic_free(b->topics[i]);
  b->n_topics = 0;
  b->closed = 1;
  bus_unref(b);
}

/* ---- topics ------------------------------------------------------------ */

static int bus_name_ok(const char *s, size_t max) {
  if (!s)
    return 0;
  size_t n = strnlen(s, max + 1);
  return n >= 1 && n <= max;
}

ph_topic *bus_find(ph_bus *b, const char *name) {
  if (!b || !name)
    return NULL;
  for (size_t i = 0; i < b->n_topics; i++)
    if (strcmp(b->topics[i]->name, name) == 0)
      return b->topics[i];
  return NULL;
}

ph_topic *bus_topic(ph_bus *b, const char *name, const char *type) {
  if (!b || b->closed || !bus_name_ok(name, BUS_MAX_NAME) ||
      !bus_name_ok(type, BUS_MAX_TYPE))
    return NULL;
  ph_topic *t = bus_find(b, name);
  if (t)
    return strcmp(t->type, type) == 0 ? t : NULL;
  if (b->n_topics >= BUS_MAX_TOPICS)
    return NULL;
  t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->name = strdup(name);
  t->type = strdup(type);
  if (!t->name || !t->type) {
    topic_free(t);
    return NULL;
  }
  b->topics[b->n_topics++] = t;
  return t;
}

const char *bus_topic_name(const ph_topic *t) { return t ? t->name : NULL; }

const char *bus_topic_type(const ph_topic *t) { return t ? t->type : NULL; }

/* ---- subscriptions ----------------------------------------------------- */

int bus_subscribe(ph_bus *b, ph_topic *t, ph_bus_fn fn, void *arg,
                  void *owner) {
  if (!b || b->closed || !t || !fn)
    return PH_EINVAL;
  if (b->next_sub_id == INT_MAX)
    return PH_ELIMIT;
  if (t->n_subs == t->cap_subs) {
    size_t cap = t->cap_subs ? t->cap_subs * 2 : 4;
    bus_sub *subs = realloc(t->subs, cap * sizeof(*subs));
    if (!subs)
      return PH_ENOMEM;
    t->subs = subs;
    t->cap_subs = cap;
  }
  int id = b->next_sub_id++;
  t->subs[t->n_subs++] = (bus_sub){id, 0, fn, arg, owner};
  return id;
}

/* Drops dead subscriptions, keeping the order of the live ones. */
static void topic_compact(ph_topic *t) {
  size_t w = 0;
  for (size_t r = 0; r < t->n_subs; r++)
    if (!t->subs[r].dead)
      t->subs[w++] = t->subs[r];
  t->n_subs = w;
  t->has_dead = 0;
}

static void topic_kill_sub(ph_topic *t, size_t i) {
  t->subs[i].dead = 1;
  t->has_dead = 1;
}

static void topic_maybe_compact(ph_topic *t) {
  if (t->has_dead && t->delivering == 0)
    topic_compact(t);
}

int bus_unsubscribe(ph_bus *b, int id, const void *owner) {
  if (!b || b->closed || id <= 0)
    return PH_ENOENT;
  for (size_t i = 0; i < b->n_topics; i++) {
    ph_topic *t = b->topics[i];
    for (size_t k = 0; k < t->n_subs; k++) {
      if (t->subs[k].id != id || t->subs[k].dead)
        continue;
      if (t->subs[k].owner != owner)
        return BUS_EFOREIGN;
      topic_kill_sub(t, k);
      topic_maybe_compact(t);
      return PH_OK;
    }
  }
  return PH_ENOENT;
}

void bus_unsubscribe_all(ph_bus *b, void *owner) {
  if (!b || b->closed)
    return;
  for (size_t i = 0; i < b->n_topics; i++) {
    ph_topic *t = b->topics[i];
    for (size_t k = 0; k < t->n_subs; k++)
      if (!t->subs[k].dead && t->subs[k].owner == owner)
        topic_kill_sub(t, k);
    topic_maybe_compact(t);
  }
}

/* ---- delivery ---------------------------------------------------------- */

static void topic_deliver(ph_bus *b, ph_topic *t, const void *payload) {
  t->delivering++;
  /* Subscriptions added by a handler start with the next message. */
  size_t n = t->n_subs;
  for (size_t i = 0; i < n; i++) {
    /* Copy before the call: a handler may subscribe and move t->subs. */
    bus_sub s = t->subs[i];
    if (s.dead)
      continue;
    s.fn(t, payload, s.arg);
    if (b->delivered)
      metrics_inc(b->delivered, 1);
  }
  t->delivering--;
  topic_maybe_compact(t);
}

int bus_publish(ph_bus *b, ph_topic *t, void *payload, ph_free_fn free_fn) {
  int rc = PH_OK;
  if (!b || b->closed || !t)
    rc = PH_EINVAL;
  else if (b->depth >= BUS_MAX_DEPTH)
    rc = PH_ELIMIT;
  if (rc == PH_OK) {
    b->depth++;
    topic_deliver(b, t, payload);
    b->depth--;
  }
  /* The bus owns the payload from the call on, whatever the result. */
  if (free_fn)
    free_fn(payload);
  return rc;
}

/* ---- cross-thread posts ------------------------------------------------ */

/* Mailbox call, on the loop thread. After it the payload is consumed. */
static void envelope_deliver(void *arg) {
  bus_envelope *e = arg;
  void *payload = e->payload;
  ph_free_fn free_fn = e->free_fn;
  e->payload = NULL;
  e->free_fn = NULL;
  if (!e->bus->closed) {
    bus_publish(e->bus, e->topic, payload, free_fn);
  } else if (free_fn) {
    free_fn(payload);
  }
}

/* Mailbox free_arg: after envelope_deliver, or alone when the mailbox went
 * away first, in which case the payload is still ours to free. */
static void envelope_free(void *arg) {
  bus_envelope *e = arg;
  if (e->free_fn)
    e->free_fn(e->payload);
  bus_unref(e->bus);
  free(e);
}

int bus_post(ph_bus *b, ph_topic *t, void *payload, ph_free_fn free_fn) {
  /* Only PH_OK takes the payload; on any error the caller keeps it. */
  if (!b || !t || !b->mb)
    return PH_EINVAL;
  bus_envelope *e = malloc(sizeof(*e));
  if (!e)
    return PH_ENOMEM;
  *e = (bus_envelope){b, t, payload, free_fn};
  atomic_fetch_add(&b->refs, 1);
  int rc = mailbox_post(b->mb, envelope_deliver, e, envelope_free);
  if (rc != PH_OK) {
    if (rc == PH_EFULL && b->dropped)
      metrics_inc(b->dropped, 1);
    free(e);
    bus_unref(b);
  }
  return rc;
}

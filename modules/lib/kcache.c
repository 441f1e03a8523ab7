/* SPDX-License-Identifier: BSD-2-Clause */
/* The bounded map (kcache.h): a chained hash table whose bucket array is
 * sized once (next power of two >= max_entries / 2, so no put rehashes)
 * and one intrusive list in eviction order, oldest first. */
#include "kcache.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "ilist.h"

typedef struct kent kent;
struct kent {
  ilist_node order; /* on m->order, oldest first */
  kent *hnext;      /* bucket chain */
  uint64_t hash;
  uint64_t epoch; /* the map's epoch when put (kcache_invalidate) */
  int64_t expires_ms;
  size_t len;
  alignas(max_align_t) unsigned char data[]; /* value, then key */
};

struct kcache {
  kcache_conf c;
  kent **buckets;
  size_t mask;
  ilist order;
  size_t bytes;
  uint64_t epoch;
};

static size_t ent_bytes(const kcache *m, size_t len) {
  return sizeof(kent) + m->c.value_size + len;
}

static unsigned char *key_of(const kcache *m, kent *e) {
  return e->data + m->c.value_size;
}

kcache *kcache_new(const kcache_conf *c) {
  kcache *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->c = *c;
  size_t nb = 16;
  while (nb < c->max_entries / 2 && nb < ((size_t)1 << 24))
    nb <<= 1;
  m->buckets = calloc(nb, sizeof(*m->buckets));
  if (!m->buckets) {
    free(m);
    return NULL;
  }
  m->mask = nb - 1;
  ilist_init(&m->order);
  return m;
}

/* Equal keys, in constant time for KCACHE_SECRET. */
static int same_key(const kcache *m, kent *e, const void *key, size_t len,
                    uint64_t hash) {
  if (e->hash != hash || e->len != len)
    return 0;
  if (!(m->c.flags & KCACHE_SECRET))
    return memcmp(key_of(m, e), key, len) == 0;
  const unsigned char *a = key_of(m, e), *b = key;
  volatile unsigned char d = 0;
  for (size_t i = 0; i < len; i++)
    d |= a[i] ^ b[i];
  return d == 0;
}

static void ent_free(kcache *m, kent *e) {
  m->bytes -= ent_bytes(m, e->len);
  if (m->c.flags & KCACHE_SECRET)
    explicit_bzero(e, ent_bytes(m, e->len));
  free(e);
}

/* Takes e out of its chain and the order, and frees it. */
static void drop(kcache *m, kent *e) {
  kent **pp = &m->buckets[e->hash & m->mask];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  ilist_remove(&e->order);
  ent_free(m, e);
}

static int dead(const kcache *m, const kent *e, int64_t now_ms) {
  return e->epoch != m->epoch || e->expires_ms <= now_ms;
}

static kent *find(kcache *m, const void *key, size_t len, uint64_t hash) {
  for (kent *e = m->buckets[hash & m->mask]; e; e = e->hnext)
    if (same_key(m, e, key, len, hash))
      return e;
  return NULL;
}

void kcache_free(kcache *m) {
  if (!m)
    return;
  ilist_node *n;
  while ((n = ilist_pop(&m->order)))
    ent_free(m, ILIST_ENTRY(n, kent, order));
  free(m->buckets);
  free(m);
}

/* The chains are not unlinked: nobody looks a retired map up. */
int kcache_free_some(kcache *m, size_t budget) {
  ilist_node *n;
  while (budget > 0 && (n = ilist_pop(&m->order))) {
    ent_free(m, ILIST_ENTRY(n, kent, order));
    budget--;
  }
  if (!ilist_empty(&m->order))
    return 0;
  free(m->buckets);
  free(m);
  return 1;
}

int kcache_get(kcache *m, const void *key, size_t len, uint64_t hash,
               int64_t now_ms, void *value, int64_t *expires_ms) {
  kent *e = find(m, key, len, hash);
  if (!e)
    return 0;
  if (dead(m, e, now_ms)) {
    drop(m, e);
    return 0;
  }
  if (m->c.policy == KCACHE_LRU)
    ilist_push(&m->order, &e->order); /* the newest now */
  memcpy(value, e->data, m->c.value_size);
  if (expires_ms)
    *expires_ms = e->expires_ms;
  return 1;
}

static int full(const kcache *m, size_t need) {
  return ilist_len(&m->order) >= m->c.max_entries ||
         (m->c.max_bytes && m->bytes + need > m->c.max_bytes);
}

/* Room for an entry of need bytes: the dead among the KCACHE_SCAN oldest
 * first, then the oldest. 1 when something went. */
static int make_room(kcache *m, size_t need, int64_t now_ms) {
  int went = 0, i = 0;
  ILIST_FOREACH_SAFE(&m->order, n, nx) {
    if (i++ >= KCACHE_SCAN || !full(m, need))
      break;
    kent *e = ILIST_ENTRY(n, kent, order);
    if (dead(m, e, now_ms)) {
      drop(m, e);
      went = 1;
    }
  }
  ilist_node *n;
  while (full(m, need) && (n = ilist_first(&m->order))) {
    drop(m, ILIST_ENTRY(n, kent, order));
    went = 1;
  }
  return went;
}

int kcache_put(kcache *m, const void *key, size_t len, uint64_t hash,
               const void *value, int64_t expires_ms, int64_t now_ms) {
  kent *e = find(m, key, len, hash);
  if (expires_ms <= now_ms || m->c.max_entries == 0) {
    if (e)
      drop(m, e);
    return 2;
  }
  if (e && e->epoch == m->epoch) {
    memcpy(e->data, value, m->c.value_size);
    e->expires_ms = expires_ms;
    if (m->c.policy == KCACHE_LRU)
      ilist_push(&m->order, &e->order);
    return 0;
  }
  if (e)
    drop(m, e); /* invalidated: a new entry in a new place */
  size_t need = ent_bytes(m, len);
  if (m->c.max_bytes && need > m->c.max_bytes)
    return 2;
  e = malloc(need);
  if (!e)
    return PH_ENOMEM;
  int evicted = make_room(m, need, now_ms);
  memset(e, 0, sizeof(*e));
  e->hash = hash;
  e->epoch = m->epoch;
  e->expires_ms = expires_ms;
  e->len = len;
  memcpy(e->data, value, m->c.value_size);
  memcpy(key_of(m, e), key, len);
  kent **head = &m->buckets[hash & m->mask];
  e->hnext = *head;
  *head = e;
  ilist_push(&m->order, &e->order);
  m->bytes += need;
  return evicted;
}

int kcache_del(kcache *m, const void *key, size_t len, uint64_t hash) {
  kent *e = find(m, key, len, hash);
  if (!e)
    return 0;
  drop(m, e);
  return 1;
}

void kcache_invalidate(kcache *m) { m->epoch++; }

size_t kcache_count(const kcache *m) { return ilist_len(&m->order); }
size_t kcache_bytes(const kcache *m) { return m->bytes; }

/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the verdict cache (rv_cache.h): a chained hash table
 * over the digests (which are uniformly random, so their first bytes are
 * the hash), and one list in insertion order for eviction. */
#include "rv_cache.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "lib/ilist.h"

typedef struct entry {
  unsigned char key[RV_KEY_LEN];
  int verdict;
  int64_t expires_ms;
  struct entry *hnext;        /* bucket chain */
  ilist_node age;             /* on c->age */
} entry;

struct rv_cache {
  entry **buckets;
  size_t mask; /* buckets - 1, a power of two */
  size_t max;
  ilist age; /* insertion order, oldest first */
};

static entry *oldest(const rv_cache *c) {
  ilist_node *n = ilist_first(&c->age);
  return n ? ILIST_ENTRY(n, entry, age) : NULL;
}

static size_t bucket_of(const rv_cache *c, const unsigned char *key) {
  size_t h;
  memcpy(&h, key, sizeof(h));
  return h & c->mask;
}

rv_cache *rv_cache_new(size_t max_entries) {
  if (max_entries < 1)
    return NULL;
  rv_cache *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  size_t nb = 16;
  while (nb < max_entries && nb < ((size_t)1 << 20))
    nb <<= 1;
  c->buckets = calloc(nb, sizeof(*c->buckets));
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  c->mask = nb - 1;
  c->max = max_entries;
  ilist_init(&c->age);
  return c;
}

static void unlink_entry(rv_cache *c, entry *e) {
  entry **pp = &c->buckets[bucket_of(c, e->key)];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  ilist_remove(&e->age);
  free(e);
}

void rv_cache_free(rv_cache *c) {
  if (!c)
    return;
  entry *e;
  while ((e = oldest(c)))
    unlink_entry(c, e);
  free(c->buckets);
  free(c);
}

static entry *find(rv_cache *c, const unsigned char *key) {
  for (entry *e = c->buckets[bucket_of(c, key)]; e; e = e->hnext)
    if (memcmp(e->key, key, RV_KEY_LEN) == 0)
      return e;
  return NULL;
}

int rv_cache_get(rv_cache *c, const unsigned char key[RV_KEY_LEN],
                 int64_t now_ms) {
  entry *e = find(c, key);
  if (!e)
    return 0;
  if (now_ms >= e->expires_ms) {
    unlink_entry(c, e);
    return 0;
  }
  return e->verdict;
}

/* Room for one more: the expired among the 64 oldest first (expiries
 * are roughly in insertion order), then the oldest. */
static void make_room(rv_cache *c, int64_t now_ms) {
  int i = 0;
  ILIST_FOREACH_SAFE(&c->age, n, nx) {
    if (i++ >= 64 || ilist_len(&c->age) < c->max)
      break;
    entry *e = ILIST_ENTRY(n, entry, age);
    if (e->expires_ms <= now_ms)
      unlink_entry(c, e);
  }
  entry *e;
  while (ilist_len(&c->age) >= c->max && (e = oldest(c)))
    unlink_entry(c, e);
}

int rv_cache_put(rv_cache *c, const unsigned char key[RV_KEY_LEN],
                 int verdict, int64_t now_ms, int64_t ttl_ms) {
  entry *e = find(c, key);
  if (e)
    unlink_entry(c, e);
  if (ttl_ms <= 0)
    return PH_OK;
  make_room(c, now_ms);
  e = calloc(1, sizeof(*e));
  if (!e)
    return PH_ENOMEM;
  memcpy(e->key, key, RV_KEY_LEN);
  e->verdict = verdict;
  e->expires_ms = now_ms + ttl_ms;
  size_t b = bucket_of(c, key);
  e->hnext = c->buckets[b];
  c->buckets[b] = e;
  ilist_push(&c->age, &e->age);
  return PH_OK;
}

size_t rv_cache_size(const rv_cache *c) { return ilist_len(&c->age); }

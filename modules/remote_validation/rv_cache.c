/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the verdict cache (rv_cache.h): a chained hash table
 * over the digests (which are uniformly random, so their first bytes are
 * the hash), and one list in insertion order for eviction. */
#include "rv_cache.h"

#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

typedef struct entry {
  unsigned char key[RV_KEY_LEN];
  int verdict;
  int64_t expires_ms;
  struct entry *hnext;        /* bucket chain */
  struct entry *older, *newer; /* insertion order */
} entry;

struct rv_cache {
  entry **buckets;
  size_t mask; /* buckets - 1, a power of two */
  size_t n, max;
  entry *oldest, *newest;
};

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
  return c;
}

static void unlink_entry(rv_cache *c, entry *e) {
  entry **pp = &c->buckets[bucket_of(c, e->key)];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  if (e->older)
    e->older->newer = e->newer;
  else
    c->oldest = e->newer;
  if (e->newer)
    e->newer->older = e->older;
  else
    c->newest = e->older;
  c->n--;
  free(e);
}

void rv_cache_free(rv_cache *c) {
  if (!c)
    return;
  while (c->oldest)
    unlink_entry(c, c->oldest);
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
  entry *e = c->oldest;
  for (int i = 0; i < 64 && e && c->n >= c->max; i++) {
    entry *next = e->newer;
    if (e->expires_ms <= now_ms)
      unlink_entry(c, e);
    e = next;
  }
  while (c->n >= c->max && c->oldest)
    unlink_entry(c, c->oldest);
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
  e->older = c->newest;
  if (c->newest)
    c->newest->newer = e;
  else
    c->oldest = e;
  c->newest = e;
  c->n++;
  return PH_OK;
}

size_t rv_cache_size(const rv_cache *c) { return c->n; }

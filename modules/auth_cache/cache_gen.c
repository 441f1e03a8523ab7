/* SPDX-License-Identifier: BSD-2-Clause */
/* A cache generation (cache_gen.h). */
#include "cache_gen.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry entry;
struct entry {
  entry *next; /* hash chain */
  uint64_t hash;
  cache_verdict v;
  size_t slot;       /* index in the ring */
  unsigned char ref; /* CLOCK reference bit */
  uint16_t len;
  unsigned char key[];
};

struct cache_gen {
  uint64_t revision;
  size_t cap;  /* max entries */
  size_t mask; /* buckets - 1 */
  entry **buckets;
  entry **ring; /* count live entries, densely packed */
  size_t count;
  size_t hand; /* CLOCK hand, an index into ring */
};

cache_gen *cache_gen_new(uint64_t revision, size_t max_entries) {
  if (max_entries == 0)
    return NULL;
  cache_gen *g = calloc(1, sizeof(*g));
  if (!g)
    return NULL;
  size_t nb = 16;
  while (nb < max_entries / 2 && nb < ((size_t)1 << 30))
    nb <<= 1;
  g->revision = revision;
  g->cap = max_entries;
  g->mask = nb - 1;
  g->buckets = calloc(nb, sizeof(*g->buckets));
  g->ring = malloc(max_entries * sizeof(*g->ring));
  if (!g->buckets || !g->ring) {
    free(g->buckets);
    free(g->ring);
    free(g);
    return NULL;
  }
  return g;
}

uint64_t cache_gen_revision(const cache_gen *g) { return g->revision; }
size_t cache_gen_count(const cache_gen *g) { return g->count; }

static entry **find(cache_gen *g, const unsigned char *key, size_t len,
                    uint64_t hash) {
  entry **pp = &g->buckets[hash & g->mask];
  for (; *pp; pp = &(*pp)->next)
    if ((*pp)->hash == hash && (*pp)->len == len &&
        memcmp((*pp)->key, key, len) == 0)
      return pp;
  return pp;
}

/* Unlinks e (found at *pp in its chain) from the chain and the ring (the
 * last ring entry takes its slot) and frees it. */
static void drop(cache_gen *g, entry **pp) {
  entry *e = *pp;
  *pp = e->next;
  entry *last = g->ring[--g->count];
  g->ring[e->slot] = last;
  last->slot = e->slot;
  if (g->hand >= g->count)
    g->hand = 0;
  free(e);
}

static void drop_entry(cache_gen *g, entry *e) {
  entry **pp = &g->buckets[e->hash & g->mask];
  while (*pp != e)
    pp = &(*pp)->next;
  drop(g, pp);
}

int cache_gen_get(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, int64_t now_ms, cache_verdict *out) {
  entry **pp = find(g, key, len, hash);
  if (!*pp)
    return 0;
  if ((*pp)->v.expires_ms <= now_ms) {
    drop(g, pp);
    return 0;
  }
  (*pp)->ref = 1;
  *out = (*pp)->v;
  return 1;
}

/* Bounded second chance: the hand passes over at most
 * CACHE_GEN_CLOCK_STEPS recently used entries (clearing their bits); the
 * entry it stops on goes, expired or not. */
static void evict_one(cache_gen *g, int64_t now_ms) {
  for (int i = 0; i < CACHE_GEN_CLOCK_STEPS; i++) {
    entry *e = g->ring[g->hand];
    if (!e->ref || e->v.expires_ms <= now_ms)
      break;
    e->ref = 0;
    g->hand = (g->hand + 1) % g->count;
  }
  drop_entry(g, g->ring[g->hand]);
  /* The ring's last entry (the newest) took the freed slot: move on, so
   * that it is not the next one considered, before it could earn its
   * bit. */
  if (g->count > 0)
    g->hand = (g->hand + 1) % g->count;
}

int cache_gen_put(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, const cache_verdict *v, int64_t now_ms) {
  entry **pp = find(g, key, len, hash);
  if (*pp) {
    (*pp)->v = *v;
    (*pp)->ref = 1;
    return 0;
  }
  entry *e = malloc(sizeof(*e) + len);
  if (!e)
    return -1;
  int evicted = g->count == g->cap;
  if (evicted)
    evict_one(g, now_ms);
  e->hash = hash;
  e->v = *v;
  e->ref = 0; /* a new entry earns its bit by a hit */
  e->len = (uint16_t)len;
  memcpy(e->key, key, len);
  pp = &g->buckets[hash & g->mask]; /* the eviction may have moved it */
  e->next = *pp;
  *pp = e;
  e->slot = g->count;
  g->ring[g->count++] = e;
  return evicted;
}

/* The chains are not unlinked: nobody looks a retired generation up. */
int cache_gen_free_some(cache_gen *g, size_t budget) {
  while (g->count > 0 && budget-- > 0)
    free(g->ring[--g->count]);
  if (g->count > 0)
    return 0;
  free(g->buckets);
  free(g->ring);
  free(g);
  return 1;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The cache of verified passwords (see cache.h).
 *
 * Entries live in a ring of `capacity` slots filled in order, so the slot
 * to reuse next always holds the oldest entry: eviction is FIFO and costs
 * nothing to track. A table of power-of-two size >= capacity heads one
 * chain per bucket (linked through the slots by index), so a lookup walks
 * about one entry instead of the whole ring.
 *
 * The bucket comes straight from the key's first bytes: auth_local's keys
 * are SHA-256 outputs, already uniform, and only verified credentials are
 * put, so no client can aim entries at one bucket. Which bucket a lookup
 * walks tells nothing a hit or miss would not tell anyway. */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define NONE UINT32_MAX

typedef struct slot {
  unsigned char key[AUTH_CACHE_KEY_LEN];
  int64_t expires_ms;
  uint32_t next; /* next slot in the same bucket, or NONE */
  int used;
} slot;

struct auth_cache {
  slot *slots;
  size_t capacity;
  size_t oldest;    /* the slot the next put reuses */
  uint32_t *bucket; /* n_buckets chain heads, NONE when empty */
  uint32_t mask;    /* n_buckets - 1 */
};

auth_cache *auth_cache_new(size_t capacity) {
  if (capacity > AUTH_CACHE_MAX)
    return NULL;
  size_t n_buckets = 1;
  while (n_buckets < capacity)
    n_buckets *= 2;
  auth_cache *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->slots = calloc(capacity ? capacity : 1, sizeof(slot));
  c->bucket = malloc(n_buckets * sizeof(uint32_t));
  if (!c->slots || !c->bucket) {
    auth_cache_free(c);
    return NULL;
  }
  for (size_t i = 0; i < n_buckets; i++)
    c->bucket[i] = NONE;
  c->capacity = capacity;
  c->mask = (uint32_t)(n_buckets - 1);
  return c;
}

void auth_cache_free(auth_cache *c) {
  if (!c)
    return;
  if (c->slots)
    OPENSSL_cleanse(c->slots, (c->capacity ? c->capacity : 1) * sizeof(slot));
  free(c->slots);
  free(c->bucket);
  free(c);
}

static uint32_t *head_of(const auth_cache *c, const unsigned char *key) {
  uint32_t h = (uint32_t)key[0] | (uint32_t)key[1] << 8 |
               (uint32_t)key[2] << 16 | (uint32_t)key[3] << 24;
  return &c->bucket[h & c->mask];
}

/* The slot holding key, or NONE. */
static uint32_t find(const auth_cache *c, const unsigned char *key) {
  for (uint32_t i = *head_of(c, key); i != NONE; i = c->slots[i].next)
    if (CRYPTO_memcmp(c->slots[i].key, key, AUTH_CACHE_KEY_LEN) == 0)
      return i;
  return NONE;
}

/* Takes slot i out of its bucket's chain and marks it free. */
static void drop(auth_cache *c, uint32_t i) {
  slot *s = &c->slots[i];
  uint32_t *p = head_of(c, s->key);
  while (*p != i)
    p = &c->slots[*p].next;
  *p = s->next;
  OPENSSL_cleanse(s, sizeof(*s));
}

int auth_cache_hit(const auth_cache *c, const unsigned char *key,
                   int64_t now_ms) {
  if (!c || c->capacity == 0)
    return 0;
  uint32_t i = find(c, key);
  return i != NONE && c->slots[i].expires_ms > now_ms;
}

void auth_cache_put(auth_cache *c, const unsigned char *key,
                    int64_t expires_ms) {
  if (!c || c->capacity == 0)
    return;
  /* Put again (several checks of the same credentials were in flight):
   * one slot, with the new expiry; evicting another entry for a copy
   * would only shrink the cache. */
  uint32_t old = find(c, key);
  if (old != NONE) {
    c->slots[old].expires_ms = expires_ms;
    return;
  }
  uint32_t i = (uint32_t)c->oldest;
  c->oldest = (c->oldest + 1) % c->capacity;
  if (c->slots[i].used)
    drop(c, i);
  slot *s = &c->slots[i];
  memcpy(s->key, key, AUTH_CACHE_KEY_LEN);
  s->expires_ms = expires_ms;
  s->used = 1;
  uint32_t *head = head_of(c, key);
  s->next = *head;
  *head = i;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* A bounded map from byte-string keys to fixed-size values with an
 * expiry each: the cache half of "one bounded cache with singleflight"
 * (the other half is sflight.h). Loop thread only; no clock of its own
 * (every call takes now_ms from the caller).
 *
 *   bounds      max_entries and max_bytes (0: no byte bound), validated
 *               by the caller's configuration; max_entries 0 is a map
 *               that remembers nothing
 *   eviction    KCACHE_LRU (a hit makes the entry the newest) or
 *               KCACHE_FIFO (insertion order; a key put again keeps its
 *               place); a full map first drops the expired or
 *               invalidated among its KCACHE_SCAN oldest entries, then
 *               the oldest: O(1), nothing scans the whole map
 *   TTL         each put gives the entry's expiry; an entry is found
 *               while now_ms < its expiry (the caller picks a positive
 *               or negative TTL per answer); a put whose expiry is not
 *               after now_ms removes the key and keeps nothing
 *   invalidate  kcache_del (one key), kcache_invalidate (every entry
 *               held now, in O(1): they are dropped when met), a new
 *               map per generation freed in chunks (kcache_free_some)
 *   secrets     KCACHE_SECRET: keys compared in constant time, keys and
 *               values wiped when dropped; callers still store digests,
 *               never a credential itself
 *
 * The hash is the caller's (a keyed hash or the first bytes of a
 * digest), so a client cannot aim keys at one chain. */
#ifndef PH_LIB_KCACHE_H
#define PH_LIB_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#define KCACHE_SCAN 64 /* oldest entries a full map looks at for dead ones */

enum { KCACHE_LRU = 0, KCACHE_FIFO = 1 };
#define KCACHE_SECRET 1 /* flags */

typedef struct kcache kcache;

typedef struct kcache_conf {
  size_t max_entries; /* 0: nothing is kept */
  size_t max_bytes;   /* keys + values + per-entry overhead; 0: no bound */
  size_t value_size;  /* bytes of every value */
  int policy;         /* KCACHE_LRU or KCACHE_FIFO */
  unsigned flags;     /* KCACHE_SECRET */
} kcache_conf;

/* NULL when out of memory. */
kcache *kcache_new(const kcache_conf *c);
/* Drops (and wipes, KCACHE_SECRET) every entry and frees; NULL ignored. */
void kcache_free(kcache *m);
/* Frees at most budget entries; once none is left frees the map and
 * returns 1 (m is then invalid), else 0. For a retired map: no lookup
 * or put on it any more. */
int kcache_free_some(kcache *m, size_t budget);

/* 1 and the value (and expiry, when expires_ms) copied out when key is
 * held, valid and now_ms < its expiry; else 0 (a dead entry met is
 * dropped). LRU: the entry becomes the newest. */
int kcache_get(kcache *m, const void *key, size_t len, uint64_t hash,
               int64_t now_ms, void *value, int64_t *expires_ms);
/* Keeps value for key until expires_ms (replacing the key's entry),
 * evicting to stay in bounds. 0 kept, 1 kept after evicting (counted
 * once however many went), 2 nothing kept (expiry not after now_ms, an
 * entry larger than max_bytes, max_entries 0), PH_ENOMEM. */
int kcache_put(kcache *m, const void *key, size_t len, uint64_t hash,
               const void *value, int64_t expires_ms, int64_t now_ms);
/* Removes key; 1 when it was held. */
int kcache_del(kcache *m, const void *key, size_t len, uint64_t hash);
/* Every entry held now is invalid from now on (a new revision). */
void kcache_invalidate(kcache *m);

/* Entries and bytes held (invalidated or expired ones included until
 * they are met). */
size_t kcache_count(const kcache *m);
size_t kcache_bytes(const kcache *m);

#endif

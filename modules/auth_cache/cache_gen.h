/* SPDX-License-Identifier: BSD-2-Clause */
/* One generation of the authorization cache: the verdicts computed under
 * one policy revision (TM-P1-28), in a lib/kcache map of at most
 * max_entries entries with LRU eviction (TM-P1-9; the expired among the
 * oldest go first). Every operation is O(1): nothing scans the table on
 * the authorization path (TM-P1-10), and a retired generation is freed
 * in bounded chunks (cache_gen_free_some) from a timer, never in one go.
 * Loop thread only. */
#ifndef PH_AUTH_CACHE_GEN_H
#define PH_AUTH_CACHE_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct cache_gen cache_gen;

typedef struct cache_verdict {
  int verdict; /* PH_ACCESS_ALLOW or PH_ACCESS_DENY */
  int code;
  int64_t expires_ms;
} cache_verdict;

/* An empty generation for revision, NULL when out of memory. */
cache_gen *cache_gen_new(uint64_t revision, size_t max_entries);
uint64_t cache_gen_revision(const cache_gen *g);
size_t cache_gen_count(const cache_gen *g);

/* Looks key up. An entry whose expiry is not after now_ms is removed and
 * not found. A found entry is marked recently used and copied to *out.
 * 1 found, 0 not. */
int cache_gen_get(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, int64_t now_ms, cache_verdict *out);
/* Stores v under key (replacing an entry with that key), evicting one
 * entry when the table is full. 0 stored, 1 stored after an eviction,
 * -1 out of memory (nothing stored). */
int cache_gen_put(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, const cache_verdict *v, int64_t now_ms);

/* Frees at most budget entries of a retired generation; once they are
 * all gone, frees the generation itself and returns 1 (g is then
 * invalid), else 0. Lookups and inserts are no longer allowed on g. */
int cache_gen_free_some(cache_gen *g, size_t budget);

#endif

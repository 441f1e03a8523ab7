/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_validation: the verdict cache (TM-P1-43: a component of its own,
 * apart from the HTTP client and from the coalescing of calls in flight).
 * Keys are rv_key digests; each entry holds a verdict until its expiry
 * (api->now_ms). At most max_entries entries: inserting into a full cache
 * drops the expired ones first, then the oldest. No I/O, no clock of its
 * own; loop thread only. */
#ifndef PH_RV_CACHE_H
#define PH_RV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "rv_key.h"

typedef struct rv_cache rv_cache;

/* NULL when out of memory. max_entries >= 1. */
rv_cache *rv_cache_new(size_t max_entries);
/* Drops every entry and frees the cache. NULL is ignored. */
void rv_cache_free(rv_cache *c);
/* The verdict of key if it is there and now < its expiry, else 0 (an
 * expired entry found is dropped). */
int rv_cache_get(rv_cache *c, const unsigned char key[RV_KEY_LEN],
                 int64_t now_ms);
/* Keeps verdict for ttl_ms from now (replacing an entry of the same
 * key); ttl_ms 0 keeps nothing. PH_OK or PH_ENOMEM. */
int rv_cache_put(rv_cache *c, const unsigned char key[RV_KEY_LEN],
                 int verdict, int64_t now_ms, int64_t ttl_ms);
/* Entries held now (expired ones included until they are met). */
size_t rv_cache_size(const rv_cache *c);

#endif

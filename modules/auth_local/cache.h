/* SPDX-License-Identifier: BSD-2-Clause */
/* The cache of verified passwords: a fixed-capacity hash map from a
 * credential key (auth_local uses SHA-256 of user NUL password) to the
 * time the entry expires. Entries are evicted oldest-first (FIFO by the
 * time they were first put). Keys are compared in constant time. Not
 * thread-safe: the loop thread owns it. */
#ifndef PH_AUTH_CACHE_H
#define PH_AUTH_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_CACHE_KEY_LEN 32
#define AUTH_CACHE_MAX 100000 /* the largest [auth_local] cache_size */

typedef struct auth_cache auth_cache;

/* A cache of at most capacity entries (0: one that remembers nothing).
 * NULL when out of memory or capacity > AUTH_CACHE_MAX. */
auth_cache *auth_cache_new(size_t capacity);
/* Wipes the keys and frees; NULL is ignored. */
void auth_cache_free(auth_cache *c);
/* 1 when key is present and expires after now_ms, else 0. */
int auth_cache_hit(const auth_cache *c, const unsigned char *key,
                   int64_t now_ms);
/* Remembers key until expires_ms. A new key is the newest entry, and
 * when the cache is full the oldest makes room; a key already present
 * takes the new expiry and keeps its place. */
void auth_cache_put(auth_cache *c, const unsigned char *key,
                    int64_t expires_ms);

#endif

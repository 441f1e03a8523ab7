/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization cache's key (TM-P1-3): the request's principal (a
 * token id), agent, protocol, host and port, in one byte string with a
 * length before each name, so that no two requests share a key unless
 * every field is equal (NULL and a name differ, and "ab"+"c" is not
 * "a"+"bc"). The revision is not in the bytes: each generation is the
 * table of one revision. Nothing else of a request goes in, and the
 * contract forbids a secret in any field (TM-P1-5, TM-SEC-3).
 *
 * The hash is SipHash-2-4 under a random key drawn once per process, so a
 * client that picks hosts cannot aim them at one hash chain. */
#ifndef PH_AUTH_CACHE_KEY_H
#define PH_AUTH_CACHE_KEY_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/access.h>

/* protocol, port (2), presence flags, then three length-prefixed names of
 * at most 255 bytes each. */
#define CACHE_KEY_MAX (4 + 3 * 256)

/* Encodes a request already validated (names 1..255 bytes or NULL) into
 * out (CACHE_KEY_MAX bytes); returns the length. */
size_t cache_key_encode(const ph_access_request *r, unsigned char *out);

/* Draws the process's hash key; 0, or -1 when no randomness could be
 * read (then the cache must not be used). Loop thread, at init. */
int cache_key_seed(void);

/* SipHash-2-4 of the key bytes under the process's key. */
uint64_t cache_key_hash(const unsigned char *key, size_t len);

#endif

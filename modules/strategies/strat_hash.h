/* SPDX-License-Identifier: BSD-2-Clause */
/* The 64-bit hash of a sticky key (strat_sticky.c): SipHash-2-4
 * (Aumasson and Bernstein, 2012), written from the paper's description.
 * Pure. */
#ifndef PH_STRAT_HASH_H
#define PH_STRAT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of len bytes at data under the 128-bit key (k0, k1), each
 * half read little-endian as the paper's test vectors do. */
uint64_t strat_siphash24(uint64_t k0, uint64_t k1, const void *data,
                         size_t len);

/* The sticky key's hash: SipHash-2-4 under this module's fixed key, so
 * that placements are reproducible (a fresh table over the same
 * candidates puts every key where it was). Choosing keys that land
 * together only steers one's own sessions, and capacity bounds what any
 * proxy takes. */
uint64_t strat_key_hash(const char *key, size_t len);

#endif

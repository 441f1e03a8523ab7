/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sticky's lookup table (strat_sticky.c), pure: 2^bits slots, each a
 * candidate position of one candidate set. A key's slot is the top `bits`
 * bits of its 64-bit hash, so the table splits the hash space into equal
 * intervals; doubling the table splits each interval in two and keeps
 * every key on its owner, which is why the size is a power of two (not
 * Maglev's prime): a set that grows past its table moves no key for the
 * growth itself.
 *
 * Each candidate owns its quota of slots (2^bits / n, the first
 * 2^bits mod n positions one more). When a table carries over to a new
 * view (sk_slots_fill with the old table), every slot keeps its owner if
 * that proxy is still a candidate; the slots of removed proxies are given
 * out round-robin to the candidates below their quota, new candidates
 * first; and new candidates that the orphans cannot fill take slots from
 * the most-filled (water-filling down to their quota), never more than
 * they need. So removing a proxy moves exactly the keys that were on it,
 * and adding one moves about 1/n of the keys, all onto the new one.
 */
#ifndef PH_STRAT_SLOTS_H
#define PH_STRAT_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#define SK_BITS_MIN 7  /* 128 slots */
#define SK_BITS_MAX 21 /* 2^21 slots, 8 MiB: the bound of one table */
/* Slots per candidate a table is sized for (while under SK_BITS_MAX):
 * each candidate's share of the keys is then within 1 % of even. */
#define SK_PER_CANDIDATE 100u
/* A table is kept at its size while it has at least SK_PER_CANDIDATE
 * slots a candidate, and until it has 2^SK_SHRINK_BITS times what it
 * needs (and more than 2^16 slots): only then does it shrink, and that is
 * the one change that moves keys of proxies that stay (half of the keys
 * of each pair of merged slots). */
#define SK_SHRINK_BITS 5

/* The smallest size (bits) with SK_PER_CANDIDATE slots a candidate, in
 * SK_BITS_MIN..SK_BITS_MAX. */
uint32_t sk_bits_wanted(uint32_t n);
/* The smallest size (bits) with a slot for each candidate, in
 * SK_BITS_MIN..SK_BITS_MAX. */
uint32_t sk_bits_least(uint32_t n);
/* The size for n candidates when the table had old_bits (0: a new
 * table): the old size while it fits (see SK_SHRINK_BITS), else
 * sk_bits_wanted(n). */
uint32_t sk_bits_for(uint32_t n, uint32_t old_bits);

/* Fills slot[0 .. 2^bits - 1] with candidate positions 0..n-1 (n > 0).
 * Without an old table (old NULL) candidate i owns the slots s with
 * s mod n == i (that is exactly the quotas). With one
 * (old_bits, 2^old_bits slots of old positions 0..n_old-1), trans[j] is
 * old position j's new position or UINT32_MAX when that proxy is no
 * longer a candidate. 0, or -1 out of memory (slot then undefined). */
int sk_slots_fill(uint32_t *slot, uint32_t bits, uint32_t n,
                  const uint32_t *old, uint32_t old_bits,
                  const uint32_t *trans, uint32_t n_old);

#endif

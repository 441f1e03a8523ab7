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
 * Each candidate owns its quota of slots (2^bits / n or one more: the
 * slots s with floor(s * n / 2^bits) == its position, which is how a
 * fresh table lays them out, one run each). When a table carries over to a new
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

/* ---- the computed layout (sticky's fast path) ----------------------------
 *
 * A fresh table of n0 candidates at 2^bits0 slots is a formula: slot s
 * holds floor(s * n0 / 2^bits0). A table keeps that "base" while it is
 * carried over at the same or a larger size: base[j] is base candidate
 * j's position now (UINT32_MAX: removed), and a bitmap marks the blocks
 * of 2^SK_BLOCK_BITS slots where some slot is not base[its base
 * candidate] (the slots a removed proxy left, the ones new candidates
 * took). A pick whose slot's block is clean computes its candidate from
 * the hash and reads no slot: the same answer as the slot, without a
 * random read of a table of megabytes. */
#define SK_BLOCK_BITS 3
/* A base is kept only while it has this many slots a candidate or more
 * (its per-candidate arrays stay small next to the table). */
#define SK_BASE_MIN_SLOTS 8u

/* Base candidate of slot s of a table of 2^bits slots, bits >= bits0. */
static inline uint32_t sk_base_of(uint32_t s, uint32_t bits, uint32_t n0,
                                  uint32_t bits0) {
  return (uint32_t)(((uint64_t)(s >> (bits - bits0)) * n0) >> bits0);
}

/* Bytes of the bitmap of a table of 2^bits slots. */
static inline size_t sk_dirty_bytes(uint32_t bits) {
  size_t blocks = (size_t)1 << (bits > SK_BLOCK_BITS ? bits - SK_BLOCK_BITS : 0);
  return (blocks + 7) / 8;
}

/* 1 when slot s's block is marked in dirty. */
static inline int sk_is_dirty(const uint8_t *dirty, uint32_t s) {
  return (dirty[s >> (SK_BLOCK_BITS + 3)] >> ((s >> SK_BLOCK_BITS) & 7)) & 1;
}

/* Marks (sk_dirty_bytes(bits) bytes at dirty) every block with a slot s
 * where slot[s] != base[sk_base_of(s, ...)] or that is UINT32_MAX.
 * bits >= bits0, n0 <= 2^bits0, base: n0 entries. O(2^bits). */
void sk_base_dirty(uint8_t *dirty, const uint32_t *slot, uint32_t bits,
                   const uint32_t *base, uint32_t n0, uint32_t bits0);

#endif

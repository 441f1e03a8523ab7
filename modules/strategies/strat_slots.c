/* SPDX-License-Identifier: BSD-2-Clause */
/* sticky's table: its size and how a new view's table is filled from the
 * old one (strat_slots.h). Pure. */
#include <stdlib.h>
#include <string.h>

#include "strat_slots.h"

#define NONE UINT32_MAX

static uint32_t bits_at_least(uint64_t slots) {
  uint32_t b = SK_BITS_MIN;
  while (b < SK_BITS_MAX && ((uint64_t)1 << b) < slots)
    b++;
  return b;
}

uint32_t sk_bits_wanted(uint32_t n) {
  return bits_at_least((uint64_t)n * SK_PER_CANDIDATE);
}

uint32_t sk_bits_least(uint32_t n) { return bits_at_least(n); }

uint32_t sk_bits_for(uint32_t n, uint32_t old_bits) {
  uint32_t want = sk_bits_wanted(n);
  if (old_bits < SK_BITS_MIN || old_bits > SK_BITS_MAX || old_bits < want)
    return want;
  if (old_bits - want >= SK_SHRINK_BITS && old_bits > 16)
    return want;
  return old_bits;
}

/* Candidate i's quota of m slots: the slots s with floor(s * n / m) == i,
 * which is what a fresh table gives it (sk_slots_fill); m / n or one
 * more. */
static size_t quota(size_t m, uint32_t n, uint32_t i) {
  uint64_t lo = ((uint64_t)i * m + n - 1) / n;
  uint64_t hi = ((uint64_t)(i + 1) * m + n - 1) / n;
  return (size_t)(hi - lo);
}

/* The slots left without an owner (NONE), remembered while there are few
 * (the usual carry-over: one proxy of thousands gone), so that filling
 * them does not scan the whole table again. */
typedef struct holes {
  uint32_t *at;
  size_t n, cap;
  int overflow; /* more than cap: find them by a scan */
} holes;

static void hole_add(holes *h, size_t s) {
  if (h->n < h->cap)
    h->at[h->n++] = (uint32_t)s;
  else
    h->overflow = 1;
}

/* Slots candidate i would give up to come down to max(level, its
 * quota). */
static size_t excess(const uint32_t *count, size_t m, uint32_t n, uint32_t i,
                     size_t level) {
  size_t keep = quota(m, n, i);
  if (level > keep)
    keep = level;
  return count[i] > keep ? count[i] - keep : 0;
}

static size_t excess_sum(const uint32_t *count, size_t m, uint32_t n,
                         size_t level) {
  size_t sum = 0;
  for (uint32_t i = 0; i < n; i++)
    sum += excess(count, m, n, i, level);
  return sum;
}

/* Frees `need` slots (need <= the total excess over the quotas) from the
 * most-filled candidates: the highest level L that still frees enough,
 * each candidate down to L + 1, then one more from as many at L + 1 as
 * it takes. Lowers count; marks the freed slots NONE. take: n entries
 * of scratch, left zero. */
static void release(uint32_t *slot, size_t m, uint32_t n, uint32_t *count,
                    uint32_t *take, size_t need, holes *h) {
  size_t lo = 0, hi = m; /* excess_sum(lo) >= need */
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (excess_sum(count, m, n, mid) >= need)
      lo = mid;
    else
      hi = mid - 1;
  }
  size_t got = 0;
  for (uint32_t i = 0; i < n; i++) {
    take[i] = (uint32_t)excess(count, m, n, i, lo + 1);
    got += take[i];
  }
  for (uint32_t i = 0; i < n && got < need; i++)
    if (excess(count, m, n, i, lo) > take[i]) {
      take[i]++;
      got++;
    }
  for (size_t s = 0; s < m && got; s++) {
    uint32_t o = slot[s];
    if (o != NONE && take[o]) {
      take[o]--;
      count[o]--;
      slot[s] = NONE;
      hole_add(h, s);
      got--;
    }
  }
}

/* The candidates still owed slots, served one slot each in turn. */
typedef struct owed {
  uint32_t *list;
  uint32_t *need;
  uint32_t len, cur;
} owed;

static uint32_t owed_next(owed *o) {
  uint32_t i = o->list[o->cur];
  if (--o->need[i] == 0)
    o->list[o->cur] = o->list[--o->len]; /* the next one moves in here */
  else
    o->cur++;
  if (o->cur >= o->len)
    o->cur = 0;
  return i;
}

/* Gives slot s its owner: the new candidates first, until each has its
 * quota; then the candidates that stayed, below their quota (the removed
 * proxies' slots go to them). */
static void give(uint32_t *slot, size_t s, size_t m, uint32_t n,
                 uint32_t *count, owed *o, int *survivors) {
  if (o->len == 0 && !*survivors) {
    *survivors = 1;
    o->len = o->cur = 0;
    for (uint32_t i = 0; i < n; i++) {
      size_t q = quota(m, n, i);
      if (count[i] < q) {
        o->need[i] = (uint32_t)(q - count[i]);
        o->list[o->len++] = i;
      }
    }
  }
  uint32_t i = o->len ? owed_next(o) : (uint32_t)(s % n);
  slot[s] = i;
  count[i]++;
}

int sk_slots_fill(uint32_t *slot, uint32_t bits, uint32_t n,
                  const uint32_t *old, uint32_t old_bits,
                  const uint32_t *trans, uint32_t n_old) {
  size_t m = (size_t)1 << bits;
  if (!old) {
    /* Candidate i owns the run of slots s with floor(s * n / m) == i:
     * exactly the quotas, in one pass, and a layout a pick can compute
     * (sk_base_of) instead of reading the slot. */
    for (size_t s = 0; s < m; s++)
      slot[s] = (uint32_t)(((uint64_t)s * n) >> bits);
    return 0;
  }
  uint32_t *count = calloc(n, sizeof(*count));
  uint32_t *need = calloc(n, sizeof(*need));
  uint32_t *list = malloc(n * sizeof(*list));
  holes h = {NULL, 0, m / 16 + 1, 0};
  h.at = malloc(h.cap * sizeof(*h.at));
  if (!count || !need || !list || !h.at) {
    free(count);
    free(need);
    free(list);
    free(h.at);
    return -1;
  }
  /* Every slot keeps the owner of the old slot covering it (a table
   * twice as large splits each old slot in two; half as large takes the
   * first of each pair), translated to its new position. */
  unsigned up = bits > old_bits ? bits - old_bits : 0;
  unsigned down = old_bits > bits ? old_bits - bits : 0;
  for (size_t s = 0; s < m; s++) {
    uint32_t j = old[(s >> up) << down];
    uint32_t o = j < n_old && trans[j] < n ? trans[j] : NONE;
    slot[s] = o;
    if (o == NONE)
      hole_add(&h, s);
    else
      count[o]++;
  }
  size_t orphans = m;
  for (uint32_t i = 0; i < n; i++)
    orphans -= count[i];
  /* The new candidates (no slot yet) are owed their whole quota. */
  size_t owed_new = 0;
  uint32_t n_new = 0;
  for (uint32_t i = 0; i < n; i++)
    if (count[i] == 0) {
      owed_new += quota(m, n, i);
      list[n_new++] = i;
    }
  if (owed_new > orphans) {
    /* need[] doubles as release()'s per-candidate count to free. */
    release(slot, m, n, count, need, owed_new - orphans, &h);
    orphans = owed_new;
  }
  owed o = {list, need, n_new, 0};
  for (uint32_t k = 0; k < n_new; k++)
    need[list[k]] = (uint32_t)quota(m, n, list[k]);
  int survivors = 0;
  if (!h.overflow) {
    for (size_t k = 0; k < h.n; k++)
      give(slot, h.at[k], m, n, count, &o, &survivors);
  } else {
    for (size_t s = 0; s < m && orphans; s++)
      if (slot[s] == NONE) {
        give(slot, s, m, n, count, &o, &survivors);
        orphans--;
      }
  }
  free(count);
  free(need);
  free(list);
  free(h.at);
  return 0;
}

void sk_base_dirty(uint8_t *dirty, const uint32_t *slot, uint32_t bits,
                   const uint32_t *base, uint32_t n0, uint32_t bits0) {
  memset(dirty, 0, sk_dirty_bytes(bits));
  unsigned d = bits - bits0;
  uint64_t m0 = (uint64_t)1 << bits0;
  /* Base candidate j's run: the base slots [ceil(j m0 / n0),
   * ceil((j + 1) m0 / n0)), each 2^d slots of this table. */
  size_t lo = 0;
  for (uint32_t j = 0; j < n0; j++) {
    size_t hi = (size_t)((((uint64_t)(j + 1) * m0 + n0 - 1) / n0) << d);
    uint32_t b = base[j], diff = b == NONE;
    for (size_t s = lo; s < hi; s++) /* most runs are whole: one pass */
      diff |= slot[s] ^ b;
    for (size_t s = lo; diff && s < hi; s++)
      if (b == NONE || slot[s] != b)
        dirty[s >> (SK_BLOCK_BITS + 3)] |=
            (uint8_t)(1u << ((s >> SK_BLOCK_BITS) & 7));
    lo = hi;
  }
}

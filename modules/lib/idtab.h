/* SPDX-License-Identifier: BSD-2-Clause */
/* An id table: int64 id -> element, a chained hash whose node lives in the
 * element (like ilist.h), for the requests a module tracks by the id it
 * handed out (opens, dials, attempts, streams).
 *
 * Limits: the bucket count is fixed at idtab_init time to the power of
 * two at or above the expected number of live entries, clamped to
 * [IDTAB_MIN_BUCKETS, IDTAB_MAX_BUCKETS]; the table never rehashes, so
 * its memory is that one array (at most 1 Mi pointers, 8 MiB, for a
 * million expected entries) and nothing per entry. Beyond the expected
 * count lookups get slower (longer chains), never fail: insertion cannot
 * fail. Ids must be unique among the live entries (the caller's counter
 * gives them); the table does not check. A multiplicative hash spreads
 * sequential ids.
 *
 * Loop thread only: no locking. */
#ifndef PH_IDTAB_H
#define PH_IDTAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define IDTAB_MIN_BUCKETS 16u
#define IDTAB_MAX_BUCKETS (1u << 20)

typedef struct idtab_node {
  int64_t id;
  struct idtab_node *hnext;
  unsigned char linked;
} idtab_node;

typedef struct idtab {
  idtab_node **buckets;
  uint32_t n_buckets; /* a power of two */
  size_t n;           /* live entries */
} idtab;

/* The element that holds node `n` as its member `member`. */
#define IDTAB_ENTRY(n, type, member)                                           \
  ((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Sizes the table for about `expected` live entries; 0 or -1 (ENOMEM). */
static inline int idtab_init(idtab *t, size_t expected) {
  uint32_t nb = IDTAB_MIN_BUCKETS;
  while (nb < expected && nb < IDTAB_MAX_BUCKETS)
    nb *= 2;
  t->buckets = calloc(nb, sizeof(*t->buckets));
  t->n_buckets = t->buckets ? nb : 0;
  t->n = 0;
  return t->buckets ? 0 : -1;
}

/* Frees the buckets (not the elements: walk idtab_any first). */
static inline void idtab_free(idtab *t) {
  free(t->buckets);
  t->buckets = NULL;
  t->n_buckets = 0;
  t->n = 0;
}

static inline uint32_t idtab_bucket_(const idtab *t, int64_t id) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32) & (t->n_buckets - 1);
}

/* Adds `n` under `id` (unique among live entries). */
static inline void idtab_put(idtab *t, idtab_node *n, int64_t id) {
  uint32_t b = idtab_bucket_(t, id);
  n->id = id;
  n->hnext = t->buckets[b];
  n->linked = 1;
  t->buckets[b] = n;
  t->n++;
}

static inline idtab_node *idtab_find(const idtab *t, int64_t id) {
  if (!t->n_buckets)
    return NULL;
  for (idtab_node *n = t->buckets[idtab_bucket_(t, id)]; n; n = n->hnext)
    if (n->id == id)
      return n;
  return NULL;
}

/* Removes `n`; nothing when it is not in the table. */
static inline void idtab_del(idtab *t, idtab_node *n) {
  if (!n->linked)
    return;
  for (idtab_node **pp = &t->buckets[idtab_bucket_(t, n->id)]; *pp;
       pp = &(*pp)->hnext)
    if (*pp == n) {
      *pp = n->hnext;
      break;
    }
  n->hnext = NULL;
  n->linked = 0;
  t->n--;
}

/* Some live entry, or NULL: `while ((n = idtab_any(t))) { idtab_del; free }`
 * empties the table. */
static inline idtab_node *idtab_any(const idtab *t) {
  if (!t->n)
    return NULL;
  for (uint32_t b = 0; b < t->n_buckets; b++)
    if (t->buckets[b])
      return t->buckets[b];
  return NULL;
}

#endif

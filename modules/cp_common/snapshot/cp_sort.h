/* SPDX-License-Identifier: BSD-2-Clause */
/* qsort with a fast path for input already in order. A snapshot's lists
 * mostly are: the builder emits proxies by id and credentials by
 * reference, a store lists rows by key, and the checksum, the check and
 * the view compiler each sort them again. One pass of n - 1 comparisons
 * then replaces n log n of them (t/bench/cpsnap: the sorts were the
 * largest part of a 10,000-proxy snapshot's cost). Equal neighbours count
 * as in order, so the result is always one qsort could have returned. */
#ifndef PH_CP_SORT_H
#define PH_CP_SORT_H

#include <stddef.h>
#include <stdlib.h>

/* 1 when base[0..n-1] is in cmp's order (ties allowed). */
static inline int cp_is_sorted(const void *base, size_t n, size_t size,
                               int (*cmp)(const void *, const void *)) {
  const char *p = base;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0)
      return 0;
  return 1;
}

static inline void cp_sort(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *)) {
  if (n > 1 && !cp_is_sorted(base, n, size, cmp))
    qsort(base, n, size, cmp);
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* "Did you mean": the declared key nearest to an unknown one, for the
 * unknown-key error of conf_finalize. */
#include "conf_int.h"

#include <string.h>

#define SUGGEST_MAX_LEN 64 /* longer names are not compared */

/* Edit distance with adjacent transpositions (optimal string alignment):
 * "lisetn" is one edit from "listen". Both lengths <= SUGGEST_MAX_LEN. */
static size_t osa_distance(const char *a, size_t n, const char *b, size_t m) {
  size_t d[3][SUGGEST_MAX_LEN + 1]; /* rows i-2, i-1, i, rolling */
  for (size_t j = 0; j <= m; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
    cur[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t v = prev[j] + 1;
      if (cur[j - 1] + 1 < v)
        v = cur[j - 1] + 1;
      if (prev[j - 1] + cost < v)
        v = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          prev2[j - 2] + 1 < v)
        v = prev2[j - 2] + 1;
      cur[j] = v;
    }
  }
  return d[n % 3][m];
}

const char *conf_nearest_key(const conf_section *s, const char *key) {
  size_t n = strlen(key);
  if (!s->keys || n == 0 || n > SUGGEST_MAX_LEN)
    return NULL;
  /* Two edits turn most short words into others ("nope" into "mode"):
   * short keys get one. */
  size_t limit = n < CONF_SUGGEST_SHORT ? 1 : CONF_SUGGEST_DISTANCE;
  const char *best = NULL;
  size_t best_d = limit + 1;
  for (size_t i = 0; i < s->n_keys; i++) {
    const char *k = s->keys[i].name;
    size_t m = strlen(k);
    if (m > SUGGEST_MAX_LEN || (m > n ? m - n : n - m) >= best_d)
      continue;
    size_t d = osa_distance(key, n, k, m);
    if (d < best_d && d < n) { /* never "x" for "y": keep some of it */
      best = k;
      best_d = d;
    }
  }
  return best;
}

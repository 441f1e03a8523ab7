/* SPDX-License-Identifier: BSD-2-Clause */
/* status_parse (status.h): a status reader's path and query string, which
 * come from the network: strict, bounded, nothing allocated. Fuzzed by
 * t/fuzz/fuzz_status_query.c. */
#include "status.h"

#include <string.h>

#include "ui_parse.h"

/* A path segment: [a-z0-9_], and '.' when dot (an instance's name). */
static int seg_ok(const char *s, size_t n, size_t max, int dot) {
  if (n == 0 || n > max)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || (dot && s[i] == '.')))
      return 0;
  return 1;
}

/* A decimal number of at most 10 digits, no sign, within max. */
static int number(const char *s, size_t n, uint32_t lo, uint32_t hi,
                  uint32_t *out) {
  if (n == 0 || n > 10)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_query(const char *qs, size_t qn, uint32_t rows,
                       status_query *q, char *store, size_t cap) {
  int have_offset = 0, have_limit = 0;
  for (size_t i = 0; i < qn;) {
    size_t end = i;
    while (end < qn && qs[end] != '&')
      end++;
    const char *eq = memchr(qs + i, '=', end - i);
    if (!eq)
      return 400;
    size_t nlen = (size_t)(eq - (qs + i));
    const char *v = eq + 1;
    size_t vlen = (size_t)(qs + end - v);
    if (nlen == 6 && memcmp(qs + i, "offset", 6) == 0) {
      if (have_offset++ ||
          number(v, vlen, 0, STATUS_OFFSET_MAX, &q->offset) < 0)
        return 400;
    } else if (nlen == 5 && memcmp(qs + i, "limit", 5) == 0) {
      if (have_limit++ || number(v, vlen, 1, rows, &q->limit) < 0)
        return 400;
    } else if (nlen == 3 && memcmp(qs + i, "key", 3) == 0) {
      if (q->key || cap < 1)
        return 400;
      size_t max = cap - 1 < PH_STATUS_VALUE_MAX ? cap - 1
                                                 : PH_STATUS_VALUE_MAX;
      long k = ui_form_decode(v, vlen, store, max);
      if (k < 0 || memchr(store, '\0', (size_t)k))
        return 400;
      store[k] = '\0';
      q->key = store;
      q->key_len = (size_t)k;
    } else {
      return 400; /* unknown: also "token", which never goes in a URL */
    }
    i = end + (end < qn);
    if (end < qn && i == qn)
      return 400; /* a trailing '&' */
  }
  return 0;
}

int status_parse(const char *rest, size_t rest_len, const char *query,
                 size_t query_len, uint32_t rows, status_query *q,
                 char *store, size_t cap) {
  memset(q, 0, sizeof(*q));
  if (rows < 1 || rows > STATUS_ROWS_MAX)
    rows = STATUS_ROWS_MAX;
  q->limit = rows;
  if (rest_len == 1 && rest[0] == '/')
    rest_len = 0; /* "/v1/status/" as "/v1/status" */
  const char *seg[3];
  size_t segn[3], n = 0;
  for (size_t i = 0; i < rest_len;) {
    if (rest[i] != '/' || n == 3)
      return 404;
    size_t j = i + 1;
    while (j < rest_len && rest[j] != '/')
      j++;
    seg[n] = rest + i + 1;
    segn[n] = j - i - 1;
    if (!seg_ok(seg[n], segn[n], n == 0 ? 97 : PH_STATUS_NAME_MAX, n == 0))
      return 404;
    n++;
    i = j;
  }
  /* The names first, then the key: 97 + 48 + 48 + 3 bytes. */
  size_t need = 0;
  for (size_t i = 0; i < n; i++)
    need += segn[i] + 1;
  if (need >= cap)
    return 404;
  char *w = store;
  const char **dst[3] = {&q->instance, &q->panel, &q->table};
  for (size_t i = 0; i < n; i++) {
    memcpy(w, seg[i], segn[i]);
    w[segn[i]] = '\0';
    *dst[i] = w;
    w += segn[i] + 1;
  }
  if (query_len > 0 && n < 3)
    return 400; /* paging is for one table */
  return query_len ? parse_query(query, query_len, rows, q, w,
                                 cap - (size_t)(w - store))
                   : 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the admin request-head parser (host/admin_parse.c).
 *
 * Besides memory safety it checks the parser's contract: results point
 * inside the input, a finished head never reaches past the bytes given
 * or past max, and feeding the same bytes in a growing prefix never
 * turns a verdict around (what the server sees with short reads). The
 * fields the routes read (ABI 1.3: query, Authorization, Content-Type,
 * Content-Length) lie inside the head, and the body framing verdict is
 * one of the four the listener knows. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin_parse.h"

#define HEAD_MAX 8192

static void check(int cond) {
  if (!cond)
    abort();
}

static void check_result(const char *p, size_t len, size_t max,
                         enum admin_parse_result r, const admin_request *q) {
  if (r == ADMIN_PARSE_DONE) {
    check(q->head_len > 0 && q->head_len <= len && q->head_len <= max);
    check(q->method >= p && q->method + q->method_len <= p + q->head_len);
    check(q->path >= p && q->path + q->path_len <= p + q->head_len);
    check(q->method_len > 0 && q->path_len > 0 && q->path[0] == '/');
    check(memchr(q->path, '?', q->path_len) == NULL);
    check(q->minor >= 0 && q->minor <= 9);
    if (q->query)
      check(q->query >= q->path + q->path_len &&
            q->query + q->query_len <= p + q->head_len);
    if (q->authorization)
      check(q->authorization >= p &&
            q->authorization + q->authorization_len <= p + q->head_len);
    if (q->content_type)
      check(q->content_type >= p &&
            q->content_type + q->content_type_len <= p + q->head_len);
    check(q->content_length >= -1);
    int f = admin_body_framing(q, 65536);
    check(f == 0 || f == 400 || f == 411 || f == 413);
    check(f != 0 || q->content_length <= 65536);
  }
  if (r == ADMIN_PARSE_INCOMPLETE)
    check(len < max);
  if (r == ADMIN_PARSE_TOO_LARGE)
    check(len >= max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private copy, so reads past size are caught by ASan exactly. */
  char *p = malloc(size ? size : 1);
  if (!p)
    return 0;
  if (size)
    memcpy(p, data, size);

  admin_request whole;
  size_t max = size > 0 ? (size_t)(data[0] % 64) + 1 : HEAD_MAX;
  enum admin_parse_result rw = admin_parse_head(p, size, HEAD_MAX, &whole);
  check_result(p, size, HEAD_MAX, rw, &whole);
  admin_request small;
  check_result(p, size, max, admin_parse_head(p, size, max, &small), &small);

  /* Prefixes: INCOMPLETE until a verdict, then the same verdict. */
  enum admin_parse_result first = ADMIN_PARSE_INCOMPLETE;
  size_t first_len = 0;
  for (size_t n = 0; n <= size && n <= HEAD_MAX; n++) {
    admin_request q;
    enum admin_parse_result r = admin_parse_head(p, n, HEAD_MAX, &q);
    check_result(p, n, HEAD_MAX, r, &q);
    if (first == ADMIN_PARSE_INCOMPLETE && r != ADMIN_PARSE_INCOMPLETE) {
      first = r;
      first_len = n;
    }
    if (first != ADMIN_PARSE_INCOMPLETE && r != ADMIN_PARSE_TOO_LARGE)
      check(r == first);
    if (first == ADMIN_PARSE_DONE) {
      check(q.head_len == first_len);
      break; /* the rest is the same head again */
    }
  }
  if (size <= HEAD_MAX)
    check(rw == first || (first == ADMIN_PARSE_INCOMPLETE &&
                          rw == ADMIN_PARSE_INCOMPLETE));
  free(p);
  return 0;
}

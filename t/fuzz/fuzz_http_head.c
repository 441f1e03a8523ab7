/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the http_proxy module's head handling
 * (modules/http_proxy/http_head.c, over libhttp-parser).
 *
 * Input: byte 0 picks the message kind (request, response, response to
 * HEAD), byte 1 the read size the bytes arrive in, byte 2 the limits; the
 * rest is what a peer sent. Besides memory safety it checks the contract:
 *  - whether a head is complete, incomplete or refused does not depend
 *    on how the bytes were split, and the buffer may move between reads
 *    (offsets, not pointers);
 *  - a finished head respects every limit and its spans lie inside it;
 *    an unfinished one is still within the limits; an error is one of the
 *    documented statuses;
 *  - what the rewrite produces fits hp_head_write_max, parses again as one
 *    whole head, and carries no hop-by-hop field but our own Connection,
 *    and exactly the framing the proxy chose (none of the peer's);
 *  - hp_head_framing's verdict is one of the documented ones;
 *  - Basic decoding stays inside its buffer.
 * Bodies are fuzz_http_body's; the response path as a whole is
 * fuzz_http_response's. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_proxy/http_body.h"
#include "http_proxy/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts (a finding) naming the broken promise's line. */
#define check(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "fuzz_http_head: check failed at line %d: %s\n",      \
              __LINE__, #cond);                                             \
      abort();                                                              \
    }                                                                       \
  } while (0)

static const hp_head_limits limits[] = {
    {8192, 16384, 100}, {64, 128, 4}, {256, 1024, 1}, {16384, 65536, 1000}};
static const hp_head_limits roomy = {65536, 262144, 4000};

/* Feeds text in steps into an exactly sized buffer that moves each time. */
static int feed(http_head *h, const char *text, size_t n, size_t step,
                char **out, size_t *fed) {
  char *buf = NULL;
  size_t len = 0;
  int r = HH_MORE;
  while (len < n && r == HH_MORE) {
    size_t k = n - len < step ? n - len : step;
    char *nb = malloc(len + k);
    check(nb != NULL);
    if (len)
      memcpy(nb, buf, len);
    memcpy(nb + len, text + len, k);
    free(buf);
    buf = nb;
    len += k;
    r = hp_head_parse(h, buf, len);
  }
  *out = buf;
  *fed = len;
  return r;
}

static void check_span(hp_head_span s, size_t end) {
  check((size_t)s.off + s.len <= end);
}

static void check_head(const http_head *h, int r, size_t len,
                       const hp_head_limits *lim, const char *buf) {
  if (r == HH_ERROR) {
    check(h->status == 400 || h->status == 414 || h->status == 431 ||
          h->status == 505 || h->status == 503);
    return;
  }
  if (r == HH_MORE) {
    check(len < lim->max_line + lim->max_header_bytes);
    return;
  }
  check(h->head_len > 0 && h->head_len <= len);
  check(buf[h->head_len - 1] == '\n');
  check(h->line_len > 0 && h->line_len <= lim->max_line);
  check(h->head_len - h->line_len <= lim->max_header_bytes);
  check(h->n_fields <= lim->max_headers);
  check_span(h->url, h->head_len);
  for (size_t i = 0; i < h->n_fields; i++) {
    check_span(h->fields[i].name, h->head_len);
    check_span(h->fields[i].value, h->head_len);
    check(h->fields[i].name.len > 0);
  }
}

/* The rewritten head parses again, whole, with only our Connection and
 * the framing fr says. */
static void reparse(const char *out, size_t n, enum http_parser_type kind,
                    int no_body, const hp_head_frame *fr) {
  http_head g;
  hp_head_init(&g, kind, &roomy);
  if (no_body)
    hp_head_expect_no_body(&g);
  char *copy = malloc(n);
  check(copy != NULL);
  memcpy(copy, out, n);
  check(hp_head_parse(&g, copy, n) == HH_DONE);
  check(g.head_len == n);
  for (size_t i = 0; i < g.n_fields; i++) {
    if (!hp_head_hop_by_hop(&g, i))
      continue;
    /* Ours, or a field called "close" that our "Connection: close"
     * happens to name. */
    const hp_head_field *f = &g.fields[i];
    check((f->name.len == 10 &&
           memcmp(copy + f->name.off, "Connection", 10) == 0) ||
          (f->name.len == 5 && strncasecmp(copy + f->name.off, "close", 5) == 0));
  }
  size_t te = 0, cl = 0;
  for (size_t i = 0; i < g.n_fields; i++) {
    te += (g.flags[i] & HH_F_TE) != 0;
    cl += (g.flags[i] & HH_F_CL) != 0;
  }
  check(te == (fr->kind == HB_CHUNKED));
  check(cl == (fr->kind == HB_LENGTH));
  int k, has;
  uint64_t len;
  if (fr->kind == HB_LENGTH) {
    check(hp_head_framing(&g, copy, &k, &len, &has) == 0);
    check(has && len == fr->length);
  }
  hp_head_free(&g);
  free(copy);
}

/* hp_head_framing answers with a kind, or the documented status. */
static void framing(const http_head *h, const char *buf, hp_head_frame *fr) {
  int kind, has;
  uint64_t len;
  int st = hp_head_framing(h, buf, &kind, &len, &has);
  if (h->kind == HTTP_REQUEST)
    check(st == 0 || st == 400 || st == 501);
  else
    check(st == 0 || st == 502);
  fr->kind = HB_NONE;
  fr->length = 0;
  if (st == 0) {
    check(kind >= HB_NONE && kind <= HB_CLOSE);
    check(h->kind == HTTP_RESPONSE || kind != HB_CLOSE);
    check(kind != HB_LENGTH || has);
    fr->kind = kind == HB_CLOSE ? HB_CHUNKED : kind;
    fr->length = len;
  }
}

static void basic(const char *p, size_t n) {
  char out[512];
  const char *u, *pw;
  size_t ul, pl;
  if (hp_head_basic_decode(p, n > 1024 ? 1024 : n, out, sizeof(out), &u, &ul,
                           &pw, &pl) == 0) {
    check(u == out && ul > 0 && ul <= 255 && pl <= 255);
    check(pw > u && pw + pl < out + sizeof(out));
    check(u[ul] == '\0' && pw[pl] == '\0');
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  int mode = data[0] % 3;
  size_t step = (size_t)(data[1] % 32) + 1;
  const hp_head_limits *lim = &limits[data[2] % 4];
  const char *text = (const char *)data + 3;
  size_t n = size - 3;
  enum http_parser_type kind = mode == 0 ? HTTP_REQUEST : HTTP_RESPONSE;

  http_head a, b;
  hp_head_init(&a, kind, lim);
  hp_head_init(&b, kind, lim);
  if (mode == 2) {
    hp_head_expect_no_body(&a);
    hp_head_expect_no_body(&b);
  }
  char *ba, *bb;
  size_t la, lb;
  int ra = feed(&a, text, n, step, &ba, &la);
  int rb = feed(&b, text, n, n ? n : 1, &bb, &lb);
  check_head(&a, ra, la, lim, ba);
  check_head(&b, rb, lb, lim, bb);
  check(ra == rb);
  /* Which of two faults is reported may depend on where a read ended
   * (a long line with a bad byte in it: 414 or 400); that it fails may
   * not. */
  if (ra == HH_DONE) {
    check(a.head_len == b.head_len && a.n_fields == b.n_fields);
    size_t max = hp_head_write_max(&a);
    char *out = malloc(max);
    check(out != NULL);
    hp_head_frame fr;
    framing(&a, ba, &fr);
    if (kind == HTTP_REQUEST) {
      hp_head_target t;
      if (hp_head_target_parse(&a, ba, &t) == 0) {
        check(t.host[0] != '\0' && t.port > 0);
        if (t.form == HH_FORM_ABSOLUTE) {
          ssize_t w = hp_head_write_request(&a, ba, &t, &fr, out, max);
          check(w > 0 && (size_t)w <= max);
          reparse(out, (size_t)w, HTTP_REQUEST, 0, &fr);
        }
      }
    } else {
      for (int close = 0; close <= 1; close++) {
        ssize_t w = hp_head_write_response(&a, ba, &fr, close, close, out, max);
        check(w > 0 && (size_t)w <= max);
        reparse(out, (size_t)w, HTTP_RESPONSE, mode == 2, &fr);
      }
    }
    free(out);
  }
  hp_head_free(&a);
  hp_head_free(&b);
  free(ba);
  free(bb);
  basic(text, n);
  return 0;
}

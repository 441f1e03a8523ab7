/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the strict HTTP/1 head scanner (modules/lib/http1_head.c,
 * issue 25 item 2). Byte 0: bit 0 a request or a response, bits 1-4 the
 * options (H1_LF, H1_SKIP_EMPTY, H1_CODE_ONLY, H1_PAUSE_START); byte 1
 * the read size (1..256); byte 2 one of four limit sets; the rest is the
 * peer's bytes.
 *
 * The promises checked: the verdict, its reason, the bytes used and
 * every span do not depend on how the bytes arrived (compared with the
 * whole input in one call); MORE uses every byte; DONE ends right after
 * a LF, within every limit, and every recorded span lies inside the
 * head; names are tokens, values have no CR, LF, control byte (but HTAB)
 * or surrounding white space; Content-Length is the value the fields
 * carry; after DONE or ERROR nothing more is taken. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/http1_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_http1_head: %s\n", #c);                            \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#define MAXF 64

static const h1_limits limit_sets[4] = {
    {0, 0, 0, MAXF},
    {64, 128, 0, 8},
    {0, 0, 96, 4},
    {8192, 16384, 0, MAXF},
};

typedef struct outcome {
  int res, error;
  size_t used;
  h1_head h;
  h1_field f[MAXF];
} outcome;

/* Feeds data in reads of step bytes (a fresh exact-size copy each). */
static void scan(const uint8_t *data, size_t n, size_t step, int kind,
                 unsigned opts, const h1_limits *lim, outcome *o) {
  memset(o, 0, sizeof(*o));
  h1_init(&o->h, kind, opts, lim, o->f);
  size_t at = 0;
  int res = H1_MORE;
  for (;;) {
    size_t k = n - at < step ? n - at : step;
    char *piece = malloc(k ? k : 1);
    CHECK(piece);
    memcpy(piece, data + at, k);
    size_t used = 0;
    res = h1_feed(&o->h, piece, k, &used);
    free(piece);
    CHECK(used <= k);
    if (res == H1_MORE)
      CHECK(used == k);
    at += used;
    if (res == H1_START)
      continue;
    if (res != H1_MORE || at >= n)
      break;
  }
  o->res = res;
  o->used = at;
  o->error = o->h.error;
}

static int is_tchar(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void check_done(const uint8_t *d, const outcome *o,
                       const h1_limits *lim) {
  const h1_head *h = &o->h;
  CHECK(h->head_len == o->used && h->head_len >= 2);
  CHECK(d[h->head_len - 1] == '\n');
  CHECK(h->start_len > 0 && h->start_len < h->head_len);
  if (lim->max_head)
    CHECK(h->head_len <= lim->max_head);
  if (lim->max_start)
    CHECK(h->start_len <= lim->max_start);
  if (lim->max_fields_bytes)
    CHECK(h->head_len - h->start_len <= lim->max_fields_bytes);
  CHECK(h->n_fields <= lim->max_fields);
  uint32_t cl_fields = 0;
  for (uint32_t i = 0; i < h->n_fields; i++) {
    const h1_field *f = &o->f[i];
    CHECK(f->name.len > 0 && f->name.off >= h->start_len &&
          f->name.off + f->name.len < h->head_len);
    CHECK(f->value.off + f->value.len <= h->head_len);
    for (uint32_t k = 0; k < f->name.len; k++)
      CHECK(is_tchar(d[f->name.off + k]));
    CHECK(d[f->name.off + f->name.len] == ':');
    for (uint32_t k = 0; k < f->value.len; k++) {
      uint8_t c = d[f->value.off + k];
      CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
    }
    if (f->value.len) {
      uint8_t a = d[f->value.off], z = d[f->value.off + f->value.len - 1];
      CHECK(a != ' ' && a != '\t' && z != ' ' && z != '\t');
    }
    if (h1_name_is(h, (const char *)d, i, "content-length") &&
        !memchr(d + f->value.off, ',', f->value.len)) {
      cl_fields++;
      uint64_t v = 0;
      CHECK(f->value.len > 0 && f->value.len <= H1_CONTENT_LENGTH_DIGITS);
      for (uint32_t k = 0; k < f->value.len; k++) {
        uint8_t c = d[f->value.off + k];
        CHECK(c >= '0' && c <= '9');
        v = v * 10 + (uint64_t)(c - '0');
      }
      CHECK((int64_t)v == h->content_length);
    }
  }
  CHECK(cl_fields <= h->cl_fields);
  CHECK((h->cl_fields == 0) == (h->content_length < 0));
  if (h->kind == H1_REQUEST) {
    CHECK(h->method.len > 0 && h->target.len > 0);
    CHECK(h->target.off + h->target.len < h->start_len);
  } else {
    CHECK(h->status >= 100 && h->status <= 599);
    CHECK(h->reason.off + h->reason.len < h->start_len);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  int kind = (data[0] & 1) ? H1_RESPONSE : H1_REQUEST;
  unsigned opts = (data[0] >> 1) & 0x1fu;
  size_t step = (size_t)data[1] + 1;
  const h1_limits *lim = &limit_sets[data[2] & 3];
  const uint8_t *d = data + 3;
  size_t n = size - 3;

  static outcome whole, split;
  scan(d, n, n ? n : 1, kind, opts, lim, &whole);
  scan(d, n, step, kind, opts, lim, &split);
  CHECK(whole.res == split.res && whole.error == split.error &&
        whole.used == split.used);
  CHECK(whole.h.n_fields == split.h.n_fields &&
        whole.h.head_len == split.h.head_len &&
        whole.h.content_length == split.h.content_length &&
        whole.h.status == split.h.status &&
        !memcmp(&whole.h.method, &split.h.method, sizeof(h1_span)) &&
        !memcmp(&whole.h.target, &split.h.target, sizeof(h1_span)) &&
        !memcmp(&whole.h.reason, &split.h.reason, sizeof(h1_span)));
  CHECK(!memcmp(whole.f, split.f, sizeof(h1_field) * whole.h.n_fields));
  CHECK(whole.res == H1_MORE || whole.res == H1_DONE ||
        whole.res == H1_ERROR);
  if (whole.res == H1_ERROR) {
    CHECK(whole.error != H1_E_NONE && whole.used > 0);
    CHECK(strcmp(h1_error_name(whole.error), "unknown") != 0);
  } else {
    CHECK(whole.error == H1_E_NONE);
  }
  if (whole.res == H1_MORE)
    CHECK(whole.used == n);
  if (whole.res == H1_DONE)
    check_done(d, &whole, lim);
  if (whole.res != H1_MORE) {
    size_t used = 1;
    int again = h1_feed(&whole.h, "x", 1, &used);
    CHECK(again == whole.res && used == 0);
  }
  return 0;
}

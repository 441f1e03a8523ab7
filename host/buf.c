/* SPDX-License-Identifier: BSD-2-Clause */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_DEFAULT_LIMIT ((size_t)64 << 20)

void buf_init(ph_buf *b, size_t limit) {
  memset(b, 0, sizeof(*b));
  b->limit = limit ? limit : BUF_DEFAULT_LIMIT;
}

void buf_free(ph_buf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void buf_reset(ph_buf *b) {
  b->len = 0;
  b->overflow = 0;
  if (b->data)
    b->data[0] = '\0';
}

static int buf_reserve(ph_buf *b, size_t extra) {
  if (b->overflow || extra > b->limit - b->len) {
    b->overflow = 1;
    return -1;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->overflow = 1;
    return -1;
  }
  b->data = p;
  b->cap = cap;
  return 0;
}

int buf_append(ph_buf *b, const void *p, size_t n) {
  if (buf_reserve(b, n) < 0)
    return -1;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int buf_puts(ph_buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_vprintf(ph_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || buf_reserve(b, (size_t)n) < 0)
    return -1;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int buf_printf(ph_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = buf_vprintf(b, fmt, ap);
  va_end(ap);
  return r;
}

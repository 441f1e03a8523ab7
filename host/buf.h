/* SPDX-License-Identifier: BSD-2-Clause */
/* A growable byte buffer with a hard limit, for building text output. */
#ifndef PH_BUF_H
#define PH_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ph_buf {
  char *data;   /* NUL-terminated while len < cap */
  size_t len;
  size_t cap;
  size_t limit; /* appends that would pass it fail and set overflow */
  int overflow;
} ph_buf;

/* limit 0 means 64 MiB. */
void buf_init(ph_buf *b, size_t limit);
void buf_free(ph_buf *b);
void buf_reset(ph_buf *b);
int buf_append(ph_buf *b, const void *p, size_t n); /* 0 or -1 */
int buf_puts(ph_buf *b, const char *s);
int buf_printf(ph_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int buf_vprintf(ph_buf *b, const char *fmt, va_list ap);

#endif

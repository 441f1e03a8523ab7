/* SPDX-License-Identifier: BSD-2-Clause */
/* The bounded writer (bw.h). */
#include "bw.h"

#include <stdio.h>
#include <string.h>

void ph_bw_init(ph_bw *w, void *buf, size_t cap, int mode) {
  w->p = buf;
  w->len = 0;
  w->cap = buf ? cap : 0;
  w->text = mode == PH_BW_TEXT;
  w->over = w->text && w->cap == 0;
  if (w->text && !w->over)
    w->p[0] = '\0';
}

int ph_bw_put(ph_bw *w, const void *p, size_t n) {
  if (w->over || n > ph_bw_room(w)) {
    w->over = 1;
    return -1;
  }
  if (n)
    memcpy(w->p + w->len, p, n);
  w->len += n;
  if (w->text)
    w->p[w->len] = '\0';
  return 0;
}

int ph_bw_wrote(ph_bw *w, size_t n) {
  if (w->over || n > ph_bw_room(w)) {
    w->over = 1;
    return -1;
  }
  w->len += n;
  if (w->text)
    w->p[w->len] = '\0';
  return 0;
}

int ph_bw_puts(ph_bw *w, const char *s) { return ph_bw_put(w, s, strlen(s)); }

int ph_bw_putc(ph_bw *w, int c) {
  char b = (char)c;
  return ph_bw_put(w, &b, 1);
}

int ph_bw_vprintf(ph_bw *w, const char *fmt, va_list ap) {
  if (w->over)
    return -1;
  /* vsnprintf always terminates, so it gets the whole tail; whatever it
   * writes past the room is taken back below. */
  size_t tail = w->cap - w->len;
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(tail ? w->p + w->len : NULL, tail, fmt, ap);
  int rc = 0;
  if (n >= 0 && !w->text && (size_t)n == tail && n > 0) {
    /* Bytes mode, exactly full: the terminator took the last byte. */
    char tmp[PH_BW_PRINTF_EXACT];
    if ((size_t)n < sizeof(tmp) && vsnprintf(tmp, sizeof(tmp), fmt, again) == n)
      w->p[w->len + (size_t)n - 1] = tmp[n - 1];
    else
      n = -1;
  }
  va_end(again);
  if (n < 0 || (size_t)n > ph_bw_room(w)) {
    w->over = 1;
    if (w->text && tail)
      w->p[w->len] = '\0';
    rc = -1;
  } else {
    w->len += (size_t)n;
  }
  return rc;
}

int ph_bw_printf(ph_bw *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = ph_bw_vprintf(w, fmt, ap);
  va_end(ap);
  return rc;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bounded writer: text or bytes appended into the caller's fixed
 * array, never allocating, with an overflow flag that sticks. One append
 * is all or nothing: one that does not fit adds nothing, sets the flag,
 * and every later append fails too, so a chain of appends is checked once
 * at the end (ph_bw_over) instead of after every step.
 *
 *   char line[128];
 *   ph_bw w;
 *   ph_bw_init(&w, line, sizeof(line), PH_BW_TEXT);
 *   ph_bw_puts(&w, "GET ");
 *   ph_bw_printf(&w, "%s:%u", host, port);
 *   if (ph_bw_over(&w)) ...too long...;  else use line, ph_bw_len(&w)
 *
 * Modes: PH_BW_BYTES uses every byte of the array and writes no
 * terminator (wire output); PH_BW_TEXT keeps the array NUL-terminated
 * after every append, so it holds at most cap - 1 bytes of text, and a
 * writer over an empty array (cap 0) starts overflowed.
 *
 * The growable-with-a-limit mode is the host's ph_buf (host/buf.h); this
 * one is for the loop's hot paths, where nothing may allocate.
 *
 * Ownership: the array is the caller's, and must outlive the writer; the
 * writer holds no other resource (nothing to free). Thread: any; a writer
 * is used by one thread at a time. Return values: the appends return 0
 * when the bytes were written, -1 when they did not fit or the writer had
 * already overflowed.
 */
#ifndef PH_BW_H
#define PH_BW_H

#include <stdarg.h>
#include <stddef.h>

enum { PH_BW_BYTES = 0, PH_BW_TEXT = 1 };

typedef struct ph_bw {
  char *p;    /* the caller's array */
  size_t len; /* bytes written */
  size_t cap; /* bytes of p */
  int text;   /* PH_BW_TEXT: p[len] is '\0' */
  int over;   /* an append did not fit; sticks until ph_bw_init */
} ph_bw;

/* Starts an empty writer over buf[0..cap) (buf may be NULL when cap is
 * 0). mode is PH_BW_BYTES or PH_BW_TEXT. */
void ph_bw_init(ph_bw *w, void *buf, size_t cap, int mode);
int ph_bw_put(ph_bw *w, const void *p, size_t n);
int ph_bw_puts(ph_bw *w, const char *s);
int ph_bw_putc(ph_bw *w, int c);
/* Formats with vsnprintf; output that would not fit whole leaves len as it was
 * (in text mode the terminator stays at len) and sets the flag. In bytes
 * mode, output that fills the array exactly is formatted twice (vsnprintf
 * keeps the last byte for its NUL), and must then be shorter than
 * PH_BW_PRINTF_EXACT bytes, else it overflows. */
#define PH_BW_PRINTF_EXACT 256
int ph_bw_printf(ph_bw *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ph_bw_vprintf(ph_bw *w, const char *fmt, va_list ap);

static inline size_t ph_bw_len(const ph_bw *w) { return w->len; }
static inline int ph_bw_over(const ph_bw *w) { return w->over; }
/* Room left for the next append (text mode keeps one byte for the NUL). */
static inline size_t ph_bw_room(const ph_bw *w) {
  size_t keep = w->text ? 1 : 0;
  return w->over || w->cap - w->len < keep ? 0 : w->cap - w->len - keep;
}

/* For an encoder that writes in place: ph_bw_tail is where the next byte
 * goes (ph_bw_room bytes there are free), ph_bw_wrote then counts the n
 * bytes written there (-1 and the flag when n is more than the room), and
 * ph_bw_fail sets the flag (an encoder that found no room). */
static inline char *ph_bw_tail(const ph_bw *w) { return w->p + w->len; }
int ph_bw_wrote(ph_bw *w, size_t n);
static inline void ph_bw_fail(ph_bw *w) { w->over = 1; }

#endif

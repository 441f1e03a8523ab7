/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the tunnel's WebSocket client end (tm_wsc.c): the check of
 * the server's 101 and the decoder of the server's frames. Byte 0 picks
 * the part (bit 0: 0 the answer, 1 the frames) and byte 1 the read size
 * (1..256) the bytes arrive in; the rest is what the server sent.
 *
 * The promises checked: an answer's verdict does not depend on how the
 * bytes arrived (MORE until the head is whole, then the same length or
 * error), a valid head ends with CRLF CRLF within TM_WSC_RESP_MAX; the
 * decoder uses only bytes it was given, never reports a data piece
 * outside them or a control payload over 125 bytes, makes progress (an
 * event or all bytes used) on every call, and gives the same message
 * bytes and the same error for any read size (compared with whole-input
 * decoding). Memory safety under ASan, of course. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm_wsc.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_tm_wsc: %s\n", #c);                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void answer(const uint8_t *in, size_t n, size_t step) {
  tm_wsc_answer a;
  const char *why;
  int whole = tm_wsc_response(in, n, KEY, &a, &why);
  if (whole > 0) {
    CHECK((size_t)whole <= n && (size_t)whole <= TM_WSC_RESP_MAX);
    CHECK(whole >= 4 && !memcmp(in + whole - 4, "\r\n\r\n", 4));
    CHECK(strlen(a.subproto) < sizeof(a.subproto));
  } else if (whole < 0) {
    CHECK(why != NULL);
  }
  /* Arriving in pieces: MORE until the verdict, then the same one. */
  for (size_t have = step; have < n + step; have += step) {
    size_t h = have < n ? have : n;
    int rc = tm_wsc_response(in, h, KEY, &a, &why);
    if (rc == TM_WSC_HS_MORE) {
      CHECK(h < n || whole == TM_WSC_HS_MORE);
      continue;
    }
    CHECK(rc == whole);
    break;
  }
}

/* Decodes in[0..n) arriving `step` bytes at a time; the message bytes
 * (data pieces joined, with a marker per message end and per control)
 * go to out. Returns whether it ended in an error. */
static int frames(const uint8_t *in, size_t n, size_t step, uint8_t *out,
                  size_t *olen) {
  tm_wsc_rx rx;
  tm_wsc_rx_init(&rx);
  size_t o = 0;
  for (size_t at = 0; at < n;) {
    size_t piece = n - at < step ? n - at : step, off = 0;
    for (;;) {
      tm_wsc_ev ev;
      size_t used;
      enum tm_wsc_event k =
          tm_wsc_rx_next(&rx, in + at + off, piece - off, &used, &ev);
      CHECK(used <= piece - off);
      off += used;
      if (k == TM_WSC_EV_NEED) {
        CHECK(off == piece);
        break;
      }
      if (k == TM_WSC_EV_ERROR) {
        CHECK(ev.why != NULL);
        *olen = o;
        return 1;
      }
      if (k == TM_WSC_EV_DATA) {
        CHECK(ev.data >= in + at && ev.data + ev.len <= in + at + piece);
        CHECK(!ev.last || ev.frame_left == 0);
        memcpy(out + o, ev.data, ev.len);
        o += ev.len;
        if (ev.last)
          out[o++] = 0xFF;
      } else {
        CHECK(ev.len <= TM_WSC_CONTROL_MAX);
        out[o++] = 0xFE;
        out[o++] = (uint8_t)ev.opcode;
        memcpy(out + o, ev.data, ev.len);
        o += ev.len;
      }
    }
    at += piece;
  }
  *olen = o;
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 2)
    return 0;
  size_t step = (size_t)data[1] + 1;
  const uint8_t *in = data + 2;
  size_t n = size - 2;
  if (!(data[0] & 1)) {
    answer(in, n, step);
    return 0;
  }
  /* Every input byte yields at most three output bytes (a marker and an
   * opcode per control frame of two or more bytes). */
  uint8_t *a = malloc(3 * n + 3), *b = malloc(3 * n + 3);
  CHECK(a && b);
  size_t la = 0, lb = 0;
  int ea = frames(in, n, n ? n : 1, a, &la);
  int eb = frames(in, n, step, b, &lb);
  CHECK(ea == eb);
  CHECK(la == lb && !memcmp(a, b, la));
  free(a);
  free(b);
  return 0;
}

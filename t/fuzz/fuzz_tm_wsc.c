/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzz target: the tunnel's WebSocket ends (tm_wsc.c): the client's check
 * of the server's 101 and the server's reading of an upgrade request, and
 * the decoder of received frames in both roles. Byte 0 picks the part
 * (bit 0: 0 a head, 1 frames; bit 1: 0 the client's side, 1 the
 * server's: the request, the client's frames, which must be masked) and
 * byte 1 the read size (1..256) the bytes arrive in; the rest is what the
 * peer sent.
 *
 * The promises checked: an answer's verdict does not depend on how the
 * bytes arrived (MORE until the head is whole, then the same length or
 * error), a valid head ends with CRLF CRLF within TM_WSC_RESP_MAX; the
 * decoder uses only bytes it was given, never reports a data piece
 * outside them or a control payload over 125 bytes, makes progress (an
 * event or all bytes used) on every call, and gives the same message
 * bytes and the same error for any read size (compared with whole-input
 * decoding); the server role never reports a piece of an unmasked frame.
 * Memory safety under ASan, of course. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/session/tm_wsc.h"

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

static const char *const names[] = {"tunnelmesh.v1.full", "tunnelmesh.v1",
                                    NULL};

static void request(const uint8_t *in, size_t n, size_t step) {
  tm_wsc_upgrade u, v;
  const char *why;
  int whole = tm_wsc_upgrade_parse(in, n, "/tunnel", names, &u, &why);
  if (whole > 0) {
    CHECK((size_t)whole <= n && (size_t)whole <= TM_WSC_REQ_MAX);
    CHECK(whole >= 4 && !memcmp(in + whole - 4, "\r\n\r\n", 4));
    CHECK(u.status != 0 || why == NULL);
    if (u.status == 0) {
      CHECK(u.chosen >= 0 && u.chosen < 2);
      CHECK(strlen(u.key) == TM_WSC_KEY_LEN);
    }
    CHECK(u.auth_off + u.auth_len <= (size_t)whole);
  } else if (whole < 0) {
    CHECK(why != NULL && u.status >= 400);
  }
  for (size_t have = step; have < n + step; have += step) {
    size_t h = have < n ? have : n;
    int rc = tm_wsc_upgrade_parse(in, h, "/tunnel", names, &v, &why);
    if (rc == TM_WSC_HS_MORE) {
      CHECK(h < n || whole == TM_WSC_HS_MORE);
      continue;
    }
    CHECK(rc == whole && v.status == u.status && v.chosen == u.chosen);
    break;
  }
}

/* Decodes in[0..n) arriving `step` bytes at a time; the message bytes
 * (data pieces joined, with a marker per message end and per control)
 * go to out. Returns whether it ended in an error. */
static int frames(int role, const uint8_t *orig, size_t n, size_t step,
                  uint8_t *out, size_t *olen) {
  tm_wsc_rx rx;
  tm_wsc_rx_init(&rx, role);
  /* The server role unmasks in place: a copy of its own each time. */
  uint8_t *in = malloc(n ? n : 1);
  CHECK(in);
  memcpy(in, orig, n);
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
        free(in);
        return 1;
      }
      if (k == TM_WSC_EV_DATA) {
        /* A server reports only masked frames' bytes: the current
         * frame's header has the mask bit. */
        CHECK(role != TM_WSC_SERVER || (rx.hdr[1] & 0x80));
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
  free(in);
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 2)
    return 0;
  size_t step = (size_t)data[1] + 1;
  const uint8_t *in = data + 2;
  size_t n = size - 2;
  int server = (data[0] & 2) != 0;
  if (!(data[0] & 1)) {
    if (server)
      request(in, n, step);
    else
      answer(in, n, step);
    return 0;
  }
  /* Every input byte yields at most three output bytes (a marker and an
   * opcode per control frame of two or more bytes). */
  uint8_t *a = malloc(3 * n + 3), *b = malloc(3 * n + 3);
  CHECK(a && b);
  size_t la = 0, lb = 0;
  int role = server ? TM_WSC_SERVER : TM_WSC_CLIENT;
  int ea = frames(role, in, n, n ? n : 1, a, &la);
  int eb = frames(role, in, n, step, b, &lb);
  CHECK(ea == eb);
  CHECK(la == lb && !memcmp(a, b, la));
  free(a);
  free(b);
  return 0;
}

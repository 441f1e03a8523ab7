/* SPDX-License-Identifier: BSD-2-Clause */
/* SOCKS5 (RFC 1928) with username/password (RFC 1929) for the upstream
 * handshake (up_hs.h), one message at a time: the greeting, the method
 * selection, the RFC 1929 request and its status, the CONNECT request
 * and its reply. Each answer is read byte by byte as it arrives, never
 * beyond its end: want() is exactly what it still needs once its length
 * is known. */
#include "up_hs.h"

#include <string.h>

#include "lib/bw.h"

#define S5_VERSION 0x05
#define S5_AUTH_VERSION 0x01
#define S5_METHOD_NONE 0x00
#define S5_METHOD_PASSWORD 0x02
#define S5_METHOD_UNACCEPTABLE 0xFF
#define S5_CMD_CONNECT 0x01
#define S5_ATYP_IPV4 0x01
#define S5_ATYP_DOMAIN 0x03
#define S5_ATYP_IPV6 0x04

/* The reply's fixed part (VER REP RSV ATYP) and the domain's length
 * byte: every reply has at least 7 bytes (a domain of length 0 and the
 * port), so the first 5 are asked for before the length is known. */
#define S5_REPLY_FIXED 4u
#define S5_REPLY_FIRST 5u

_Static_assert(3 + 2 * 255 <= UP_HS_OUT_MAX, "the RFC 1929 request fits");
_Static_assert(4 + 1 + 255 + 2 <= UP_HS_OUT_MAX, "the CONNECT request fits");

/* The next answer to read: need bytes (or at least that many). */
static void expect(up_hs *h, uint32_t need) {
  memset(&h->rx.s5, 0, sizeof(h->rx.s5));
  h->rx.s5.need = need;
}

/* A request is written into h->out through a bounded writer; the static
 * asserts above prove each fits; msg_end records its length. */
static void msg_begin(up_hs *h, ph_bw *w) {
  h->out_len = h->out_off = 0;
  ph_bw_init(w, h->out, UP_HS_OUT_MAX, PH_BW_BYTES);
}

static void msg_end(up_hs *h, const ph_bw *w) { h->out_len = ph_bw_len(w); }

void up_socks5_greeting(up_hs *h) {
  ph_bw w;
  msg_begin(h, &w);
  ph_bw_putc(&w, S5_VERSION);
  ph_bw_putc(&w, 1); /* one method offered: see up_hs.h */
  ph_bw_putc(&w, h->with_auth ? S5_METHOD_PASSWORD : S5_METHOD_NONE);
  msg_end(h, &w);
  expect(h, 2);
}

static void auth_request(up_hs *h) {
  ph_bw w;
  msg_begin(h, &w);
  ph_bw_putc(&w, S5_AUTH_VERSION);
  ph_bw_putc(&w, (uint8_t)h->user_len);
  ph_bw_put(&w, h->user, h->user_len);
  ph_bw_putc(&w, (uint8_t)h->pass_len);
  ph_bw_put(&w, h->pass, h->pass_len);
  msg_end(h, &w);
  /* Copied: the borrowed pointers are not needed any more. */
  h->user = h->pass = NULL;
  h->user_len = h->pass_len = 0;
  h->phase = UP_HS_P_S5_SEND_AUTH;
  expect(h, 2);
}

static void connect_request(up_hs *h) {
  ph_bw w;
  msg_begin(h, &w);
  ph_bw_putc(&w, S5_VERSION);
  ph_bw_putc(&w, S5_CMD_CONNECT);
  ph_bw_putc(&w, 0); /* RSV */
  switch (h->host_kind) {
  case UP_HS_HOST_IPV4:
    ph_bw_putc(&w, S5_ATYP_IPV4);
    ph_bw_put(&w, h->addr, 4);
    break;
  case UP_HS_HOST_IPV6:
    ph_bw_putc(&w, S5_ATYP_IPV6);
    ph_bw_put(&w, h->addr, 16);
    break;
  default: {
    size_t len = strlen(h->host); /* 1..255: up_hs_init */
    ph_bw_putc(&w, S5_ATYP_DOMAIN);
    ph_bw_putc(&w, (uint8_t)len);
    ph_bw_put(&w, h->host, len);
    break;
  }
  }
  ph_bw_putc(&w, (uint8_t)(h->port >> 8));
  ph_bw_putc(&w, (uint8_t)(h->port & 0xFF));
  msg_end(h, &w);
  h->phase = UP_HS_P_S5_SEND_CONNECT;
  expect(h, S5_REPLY_FIRST);
}

/* The method selection is whole. */
static void method_done(up_hs *h) {
  const uint8_t *m = h->rx.s5.hdr;
  uint8_t offered = h->with_auth ? S5_METHOD_PASSWORD : S5_METHOD_NONE;
  if (m[0] != S5_VERSION)
    up_hs_end(h, UP_HS_MALFORMED);
  else if (m[1] == S5_METHOD_UNACCEPTABLE)
    up_hs_end(h, UP_HS_AUTH);
  else if (m[1] != offered)
    up_hs_end(h, UP_HS_MALFORMED); /* chose what we did not offer */
  else if (offered == S5_METHOD_PASSWORD && h->user)
    auth_request(h);
  else if (offered == S5_METHOD_PASSWORD)
    up_hs_end(h, UP_HS_AUTH); /* credentials gone (never: wipe ends) */
  else
    connect_request(h);
}

/* The RFC 1929 status is whole. */
static void auth_done(up_hs *h) {
  const uint8_t *m = h->rx.s5.hdr;
  if (m[0] != S5_AUTH_VERSION)
    up_hs_end(h, UP_HS_MALFORMED);
  else if (m[1] != 0)
    up_hs_end(h, UP_HS_AUTH);
  else
    connect_request(h);
}

/* The reply's first have bytes arrived: decide, or learn its length. */
static void reply_progress(up_hs *h) {
  up_hs_s5_rx *rx = &h->rx.s5;
  const uint8_t *m = rx->hdr;
  if (rx->have == S5_REPLY_FIXED) {
    if (m[0] != S5_VERSION || m[2] != 0)
      goto malformed;
    if (m[3] == S5_ATYP_IPV4)
      rx->need = S5_REPLY_FIXED + 4 + 2;
    else if (m[3] == S5_ATYP_IPV6)
      rx->need = S5_REPLY_FIXED + 16 + 2;
    else if (m[3] != S5_ATYP_DOMAIN)
      goto malformed;
    if (m[1] != 0) {
      h->status = m[1];
      up_hs_end(h, UP_HS_REFUSED);
      return;
    }
  } else if (rx->have == S5_REPLY_FIRST && m[3] == S5_ATYP_DOMAIN) {
    rx->need = S5_REPLY_FIRST + m[4] + 2;
  }
  if (rx->have == rx->need) {
    h->status = 0;
    up_hs_end(h, UP_HS_DONE);
  }
  return;
malformed:
  up_hs_end(h, UP_HS_MALFORMED);
}

size_t up_socks5_want(const up_hs *h) {
  switch (h->phase) {
  case UP_HS_P_S5_METHOD:
  case UP_HS_P_S5_AUTH:
  case UP_HS_P_S5_REPLY:
    return h->rx.s5.need - h->rx.s5.have;
  default:
    return 0;
  }
}

size_t up_socks5_read(up_hs *h, const uint8_t *in, size_t n) {
  up_hs_s5_rx *rx = &h->rx.s5;
  int phase = h->phase;
  size_t used = 0;
  while (used < n && h->phase == phase && rx->have < rx->need) {
    if (rx->have < sizeof(rx->hdr))
      rx->hdr[rx->have] = in[used];
    used++;
    rx->have++;
    if (phase == UP_HS_P_S5_REPLY)
      reply_progress(h);
    else if (rx->have == rx->need && phase == UP_HS_P_S5_METHOD)
      method_done(h);
    else if (rx->have == rx->need && phase == UP_HS_P_S5_AUTH)
      auth_done(h);
  }
  return used;
}

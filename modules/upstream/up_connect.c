/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP CONNECT (RFC 9110 section 9.3.6, RFC 9112) for the upstream
 * handshake (up_hs.h): the request, with Basic Proxy-Authorization (RFC
 * 7617), and the answer's head read by the shared strict scanner
 * (lib/http1_head.h), which keeps no byte: a head split anywhere is
 * consumed as it arrives and ends exactly at its empty line. */
#include "up_hs.h"

#include "lib/bw.h"

#include <string.h>

#include <proxyhost/abi.h>

/* The worst case of the request fits the buffer: a 255-byte name with
 * ":65535", and base64 of a 255-byte user, ':', a 255-byte password. */
#define UP_CONNECT_WORST                                                       \
  (sizeof("CONNECT ") - 1 + 261 + sizeof(" HTTP/1.1\r\n") - 1 +                \
   sizeof("Host: ") - 1 + 261 + 2 + sizeof("Proxy-Authorization: Basic ") -    \
   1 + 4 * ((511 + 2) / 3) + 2 + 2)
_Static_assert(UP_CONNECT_WORST <= UP_HS_OUT_MAX,
               "UP_HS_OUT_MAX holds the longest CONNECT request");
_Static_assert(UP_HS_BASIC_MAX == 4 * ((2 * UP_HS_FIELD_MAX + 1 + 2) / 3),
               "UP_HS_BASIC_MAX is the longest Basic token");

static void head_init(up_hs *h);

#define PUT_LIT(w, s) ph_bw_put((w), (s), sizeof(s) - 1)

/* host:port, an IPv6 literal in brackets (RFC 9112 section 3.2.3);
 * written without printf (twice per request, a request per check). */
static void put_authority(ph_bw *w, const up_hs *h, size_t host_len) {
  int v6 = h->host_kind == UP_HS_HOST_IPV6;
  char port[6];
  size_t n = sizeof(port);
  unsigned v = h->port;
  do {
    port[--n] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n);
  if (v6)
    ph_bw_putc(w, '[');
  ph_bw_put(w, h->host, host_len);
  if (v6)
    ph_bw_putc(w, ']');
  ph_bw_putc(w, ':');
  ph_bw_put(w, port + n, sizeof(port) - n);
}

/* Byte k of user ':' pass, read where it lies: the credentials are never
 * joined in a buffer of their own, only encoded where they go. */
static uint8_t cred_byte(const char *user, size_t user_len, const char *pass,
                         size_t k) {
  if (k < user_len)
    return (uint8_t)user[k];
  if (k == user_len)
    return ':';
  return (uint8_t)pass[k - user_len - 1];
}

size_t up_hs_basic(const char *user, uint32_t user_len, const char *pass,
                   uint32_t pass_len, char *out, size_t cap) {
  static const char b64[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (!out || user_len > UP_HS_FIELD_MAX || pass_len > UP_HS_FIELD_MAX ||
      (user_len && !user) || (pass_len && !pass) ||
      (user_len && memchr(user, ':', user_len))) /* RFC 7617 */
    return 0;
  size_t n = (size_t)user_len + 1 + pass_len;
  size_t len = 4 * ((n + 2) / 3);
  if (len > cap)
    return 0;
  char *o = out;
  for (size_t k = 0; k < n; k += 3) {
    uint32_t v = (uint32_t)cred_byte(user, user_len, pass, k) << 16;
    if (k + 1 < n)
      v |= (uint32_t)cred_byte(user, user_len, pass, k + 1) << 8;
    if (k + 2 < n)
      v |= cred_byte(user, user_len, pass, k + 2);
    *o++ = b64[(v >> 18) & 63];
    *o++ = b64[(v >> 12) & 63];
    *o++ = k + 1 < n ? b64[(v >> 6) & 63] : '=';
    *o++ = k + 2 < n ? b64[v & 63] : '=';
  }
  return len;
}

size_t up_hs_proxy_auth(const char *user, uint32_t user_len, const char *pass,
                        uint32_t pass_len, char *out, size_t cap) {
  static const char scheme[] = "Basic ";
  const size_t sl = sizeof(scheme) - 1;
  if (!out || cap < sl + 1)
    return 0;
  memcpy(out, scheme, sl);
  size_t n = up_hs_basic(user, user_len, pass, pass_len, out + sl,
                         cap - sl - 1);
  if (!n)
    return 0;
  out[sl + n] = '\0';
  return sl + n;
}

/* The token, encoded straight into h->out. */
static void put_basic(ph_bw *w, const up_hs *h) {
  size_t n = up_hs_basic(h->user, h->user_len, h->pass, h->pass_len,
                         ph_bw_tail(w), ph_bw_room(w));
  if (!n)
    ph_bw_fail(w);
  else
    ph_bw_wrote(w, n);
}

int up_connect_request(up_hs *h) {
  ph_bw w;
  ph_bw_init(&w, h->out, UP_HS_OUT_MAX, PH_BW_BYTES);
  h->out_off = 0;
  size_t host_len = strlen(h->host);
  PUT_LIT(&w, "CONNECT ");
  put_authority(&w, h, host_len);
  PUT_LIT(&w, " HTTP/1.1\r\nHost: ");
  put_authority(&w, h, host_len);
  PUT_LIT(&w, "\r\n");
  if (h->with_auth && h->user) {
    PUT_LIT(&w, "Proxy-Authorization: Basic ");
    put_basic(&w, h);
    PUT_LIT(&w, "\r\n");
  }
  PUT_LIT(&w, "\r\n");
  h->out_len = ph_bw_len(&w);
  head_init(h);
  /* Copied: the borrowed pointers are not needed any more. */
  h->user = h->pass = NULL;
  h->user_len = h->pass_len = 0;
  return ph_bw_over(&w) ? PH_EINVAL : PH_OK;
}

/* ---- The answer's head ------------------------------------------------ */

/* Bare LF line ends and a status line ending at its code are taken (some
 * proxies send them); no field is recorded (the bytes are not kept), but
 * the scanner reads Content-Length and Transfer-Encoding itself. */
static void head_init(up_hs *h) {
  const h1_limits lim = {0, 0, UP_HS_HEAD_MAX, 0};
  h1_init(&h->rx.http, H1_RESPONSE, H1_LF | H1_CODE_ONLY | H1_PAUSE_START,
          &lim, NULL);
}

/* The status line ended: 2xx reads on, the rest is decided now. */
static void status_end(up_hs *h) {
  const h1_head *rx = &h->rx.http;
  if (rx->major != 1) {
    up_hs_end(h, UP_HS_MALFORMED);
    return;
  }
  h->status = rx->status;
  if (rx->status / 100 != 2)
    up_hs_end(h, rx->status == 407 || rx->status == 401 ? UP_HS_AUTH
                                                        : UP_HS_REFUSED);
}

size_t up_connect_read(up_hs *h, const uint8_t *in, size_t n) {
  h1_head *rx = &h->rx.http;
  size_t used = 0;
  switch (h1_feed(rx, (const char *)in, n, &used)) {
  case H1_START:
    status_end(h);
    break;
  case H1_DONE:
    /* A tunnel's answer has no content (RFC 9110 section 9.3.6): only a
     * Content-Length of 0 (any number of zeros) is no content. */
    up_hs_end(h, rx->te_fields || rx->content_length > 0 ? UP_HS_MALFORMED
                                                         : UP_HS_DONE);
    break;
  case H1_ERROR: /* malformed, or no end within UP_HS_HEAD_MAX */
    up_hs_end(h, UP_HS_MALFORMED);
    break;
  default:
    break;
  }
  return used;
}

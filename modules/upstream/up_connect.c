/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP CONNECT (RFC 9110 section 9.3.6, RFC 9112) for the upstream
 * handshake (up_hs.h): the request, with Basic Proxy-Authorization (RFC
 * 7617), and a byte-at-a-time scanner of the answer's head, so a head
 * split anywhere is consumed as it arrives and ends exactly at its empty
 * line. */
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

/* host:port, an IPv6 literal in brackets (RFC 9112 section 3.2.3). */
static void put_authority(ph_bw *w, const up_hs *h) {
  int v6 = h->host_kind == UP_HS_HOST_IPV6;
  ph_bw_printf(w, "%s%s%s:%u", v6 ? "[" : "", h->host, v6 ? "]" : "",
               (unsigned)h->port);
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
  ph_bw_puts(&w, "CONNECT ");
  put_authority(&w, h);
  ph_bw_puts(&w, " HTTP/1.1\r\nHost: ");
  put_authority(&w, h);
  ph_bw_puts(&w, "\r\n");
  if (h->with_auth && h->user) {
    ph_bw_puts(&w, "Proxy-Authorization: Basic ");
    put_basic(&w, h);
    ph_bw_puts(&w, "\r\n");
  }
  ph_bw_puts(&w, "\r\n");
  h->out_len = ph_bw_len(&w);
  /* Copied: the borrowed pointers are not needed any more. */
  h->user = h->pass = NULL;
  h->user_len = h->pass_len = 0;
  return ph_bw_over(&w) ? PH_EINVAL : PH_OK;
}

/* ---- The answer's head ------------------------------------------------ */

enum where {
  W_VERSION = 0, /* "HTTP/1." */
  W_MINOR,       /* its digit */
  W_SP,          /* the space before the code */
  W_CODE,        /* three digits */
  W_AFTER_CODE,  /* a space and the reason, or the line's end */
  W_REASON,
  W_STATUS_CR, /* the LF after the status line's CR */
  W_LINE,      /* a field line's first byte, or the empty line */
  W_NAME,
  W_VALUE,
  W_LINE_CR, /* the LF after a field line's CR */
  W_END_CR   /* the LF after the empty line's CR */
};

/* The field names whose presence frames content (bits of rx.names). */
#define F_CONTENT_LENGTH 1u
#define F_TRANSFER_ENCODING 2u
static const struct {
  const char *name;
  uint32_t len;
} framing[] = {{"content-length", 14}, {"transfer-encoding", 17}};
#define N_FRAMING 2u

enum cl_where { CL_BEFORE = 0, CL_DIGITS, CL_AFTER };

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static int is_ows(uint8_t c) { return c == ' ' || c == '\t'; }

/* RFC 9110 section 5.6.2: tchar. */
static int is_tchar(uint8_t c) {
  if (is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
    return 1;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A reason phrase's or a field value's byte: HTAB, SP, VCHAR, obs-text. */
static int is_text(uint8_t c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

static uint8_t lower(uint8_t c) {
  return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c;
}

/* Narrows the framing names still matching the name's byte at i. */
static void match_name(up_hs_http_rx *rx, uint8_t c, uint32_t i) {
  for (unsigned f = 0; f < N_FRAMING; f++) {
    uint8_t bit = (uint8_t)(1u << f);
    if ((rx->names & bit) &&
        (i >= framing[f].len || (uint8_t)framing[f].name[i] != lower(c)))
      rx->names &= (uint8_t)~bit;
  }
}

/* The field whose name just ended (at ':'), or 0. */
static uint8_t field_of(const up_hs_http_rx *rx) {
  for (unsigned f = 0; f < N_FRAMING; f++) {
    uint8_t bit = (uint8_t)(1u << f);
    if ((rx->names & bit) && rx->name_len == framing[f].len)
      return bit;
  }
  return 0;
}

static void content_length_byte(up_hs_http_rx *rx, uint8_t c) {
  switch (rx->cl_where) {
  case CL_BEFORE:
    if (is_ows(c))
      return;
    if (!is_digit(c)) {
      rx->cl_bad = 1;
      return;
    }
    rx->cl_where = CL_DIGITS;
    rx->cl_digits = 1;
    rx->cl_nonzero = c != '0';
    return;
  case CL_DIGITS:
    if (is_digit(c))
      rx->cl_nonzero |= c != '0';
    else if (is_ows(c))
      rx->cl_where = CL_AFTER;
    else
      rx->cl_bad = 1;
    return;
  default:
    if (!is_ows(c))
      rx->cl_bad = 1;
    return;
  }
}

/* A field line ended: does it frame content? */
static void line_end(up_hs_http_rx *rx) {
  if (rx->field == F_TRANSFER_ENCODING)
    rx->framed = 1;
  if (rx->field == F_CONTENT_LENGTH &&
      (rx->cl_bad || !rx->cl_digits || rx->cl_nonzero))
    rx->framed = 1; /* only "0" (any number of zeros) is no content */
  rx->field = 0;
  rx->where = W_LINE;
}

/* The status line ended: 2xx reads on, the rest is decided now. */
static void status_end(up_hs *h) {
  up_hs_http_rx *rx = &h->rx.http;
  if (rx->code < 100 || rx->code > 599) {
    up_hs_end(h, UP_HS_MALFORMED); /* RFC 9110 section 15: invalid */
    return;
  }
  h->status = rx->code;
  if (rx->code / 100 == 2)
    rx->where = W_LINE;
  else
    up_hs_end(h,
              rx->code == 407 || rx->code == 401 ? UP_HS_AUTH : UP_HS_REFUSED);
}

/* One byte of the head; at an end h->phase says which. */
static void head_byte(up_hs *h, uint8_t c) {
  up_hs_http_rx *rx = &h->rx.http;
  static const char version[] = "HTTP/1.";
  switch (rx->where) {
  case W_VERSION:
    if (c != (uint8_t)version[rx->pos])
      goto malformed;
    if (++rx->pos == sizeof(version) - 1)
      rx->where = W_MINOR;
    return;
  case W_MINOR:
    if (!is_digit(c))
      goto malformed;
    rx->where = W_SP;
    return;
  case W_SP:
    if (c != ' ')
      goto malformed;
    rx->where = W_CODE;
    rx->pos = 0;
    return;
  case W_CODE:
    if (!is_digit(c))
      goto malformed;
    rx->code = (uint16_t)(rx->code * 10 + (c - '0'));
    if (++rx->pos == 3)
      rx->where = W_AFTER_CODE;
    return;
  case W_AFTER_CODE:
    if (c == ' ')
      rx->where = W_REASON;
    else if (c == '\r')
      rx->where = W_STATUS_CR;
    else if (c == '\n')
      status_end(h);
    else
      goto malformed;
    return;
  case W_REASON:
    if (c == '\r')
      rx->where = W_STATUS_CR;
    else if (c == '\n')
      status_end(h);
    else if (!is_text(c))
      goto malformed;
    return;
  case W_STATUS_CR:
    if (c != '\n')
      goto malformed;
    status_end(h);
    return;
  case W_LINE:
    if (c == '\r') {
      rx->where = W_END_CR;
    } else if (c == '\n') {
      goto end;
    } else if (is_tchar(c)) { /* SP or HTAB here is obs-fold: refused */
      rx->where = W_NAME;
      rx->names = (1u << N_FRAMING) - 1;
      rx->name_len = 0;
      rx->cl_where = CL_BEFORE;
      rx->cl_digits = rx->cl_nonzero = rx->cl_bad = 0;
      match_name(rx, c, rx->name_len++);
    } else {
      goto malformed;
    }
    return;
  case W_NAME:
    if (c == ':') {
      rx->field = field_of(rx);
      rx->where = W_VALUE;
    } else if (is_tchar(c)) {
      match_name(rx, c, rx->name_len++);
    } else {
      goto malformed; /* white space before the colon, or worse */
    }
    return;
  case W_VALUE:
    if (c == '\r') {
      rx->where = W_LINE_CR;
    } else if (c == '\n') {
      line_end(rx);
    } else if (is_text(c)) {
      if (rx->field == F_CONTENT_LENGTH)
        content_length_byte(rx, c);
    } else {
      goto malformed;
    }
    return;
  case W_LINE_CR:
    if (c != '\n')
      goto malformed;
    line_end(rx);
    return;
  case W_END_CR:
    if (c != '\n')
      goto malformed;
    goto end;
  default:
    goto malformed;
  }
end:
  up_hs_end(h, rx->framed ? UP_HS_MALFORMED : UP_HS_DONE);
  return;
malformed:
  up_hs_end(h, UP_HS_MALFORMED);
}

size_t up_connect_read(up_hs *h, const uint8_t *in, size_t n) {
  up_hs_http_rx *rx = &h->rx.http;
  size_t used = 0;
  while (used < n && h->phase == UP_HS_P_HTTP_HEAD) {
    head_byte(h, in[used++]);
    rx->seen++;
    if (h->phase == UP_HS_P_HTTP_HEAD && rx->seen >= UP_HS_HEAD_MAX)
      up_hs_end(h, UP_HS_MALFORMED); /* no end within the bound */
  }
  return used;
}

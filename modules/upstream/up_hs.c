/* SPDX-License-Identifier: BSD-2-Clause */
/* The upstream handshake's common part (up_hs.h): arguments, the output
 * buffer, the read loop and the end (the credentials wiped). The two
 * protocols are up_connect.c and up_socks5.c. */
#include "up_hs.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include "lib/host_norm.h"

static int is_http(int protocol) {
  return protocol == PH_POOL_UPSTREAM_HTTP_CONNECT ||
         protocol == PH_POOL_UPSTREAM_HTTP;
}

/* A dotted quad already in inet_ntop's form (four decimal parts, no
 * leading zero: what inet_pton took is 0..255 each) is its own normal
 * form. */
static int ipv4_normal(const char *s, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (s[i] == '0' && (i == 0 || s[i - 1] == '.') && s[i + 1] != '.')
      return 0;
  return 1;
}

/* The host in normal form in h->host, classified. A proxy's address is
 * most often an IPv4 literal in normal form (a check per proxy per
 * interval): it is copied as it is, without host_norm's print back
 * (inet_ntop, a sprintf) and a second inet_pton. */
static int set_host(up_hs *h, const char *host) {
  size_t n = host ? strnlen(host, UP_HS_FIELD_MAX + 1) : 0;
  if (!host || n > UP_HS_FIELD_MAX)
    return PH_EINVAL;
  if (n && n < INET_ADDRSTRLEN && inet_pton(AF_INET, host, h->addr) == 1 &&
      ipv4_normal(host, n)) {
    memcpy(h->host, host, n + 1);
    h->host_kind = UP_HS_HOST_IPV4;
    return PH_OK;
  }
  if (host_norm(host, h->host) != 0)
    return PH_EINVAL;
  if (inet_pton(AF_INET, h->host, h->addr) == 1)
    h->host_kind = UP_HS_HOST_IPV4;
  else if (inet_pton(AF_INET6, h->host, h->addr) == 1)
    h->host_kind = UP_HS_HOST_IPV6;
  else
    h->host_kind = UP_HS_HOST_NAME;
  return PH_OK;
}

static int check_credentials(int protocol, const char *user, uint32_t user_len,
                             const char *pass, uint32_t pass_len) {
  if (user_len > UP_HS_FIELD_MAX || pass_len > UP_HS_FIELD_MAX)
    return PH_EINVAL;
  if (!pass && pass_len > 0)
    return PH_EINVAL;
  if (is_http(protocol)) {
    /* RFC 7617: the user-id of Basic cannot contain a colon. */
    if (memchr(user, ':', user_len))
      return PH_EINVAL;
  } else if (user_len == 0) {
    return PH_EINVAL; /* RFC 1929: ULEN is 1..255 */
  }
  return PH_OK;
}

int up_hs_init(up_hs *h, int protocol, const char *host, uint16_t port,
               const char *user, uint32_t user_len, const char *pass,
               uint32_t pass_len) {
  if (!h)
    return PH_EINVAL;
  memset(h, 0, sizeof(*h));
  h->status = -1;
  h->protocol = protocol;
  if (!is_http(protocol) && protocol != PH_POOL_UPSTREAM_SOCKS5)
    return PH_EINVAL;
  if (port == 0 || set_host(h, host) != PH_OK)
    return PH_EINVAL;
  h->port = port;
  if (user) {
    if (check_credentials(protocol, user, user_len, pass, pass_len) != PH_OK)
      return PH_EINVAL;
    h->with_auth = 1;
    h->user = user;
    h->user_len = user_len;
    h->pass = pass ? pass : "";
    h->pass_len = pass_len;
  }
  if (is_http(protocol)) {
    h->phase = UP_HS_P_HTTP_SEND;
    if (up_connect_request(h) != PH_OK) { /* cannot happen within bounds */
      up_hs_wipe(h);
      return PH_EINVAL;
    }
  } else {
    h->phase = UP_HS_P_S5_SEND_GREETING;
    up_socks5_greeting(h);
  }
  return PH_OK;
}

size_t up_hs_pending_out(const up_hs *h, const uint8_t **data) {
  if (data)
    *data = NULL;
  if (!h || h->phase >= UP_HS_P_END || h->out_off >= h->out_len)
    return 0;
  if (data)
    *data = h->out + h->out_off;
  return h->out_len - h->out_off;
}

/* The phase that reads the answer to the request just sent. */
static int reading_phase(int sending) {
  switch (sending) {
  case UP_HS_P_HTTP_SEND:
    return UP_HS_P_HTTP_HEAD;
  case UP_HS_P_S5_SEND_GREETING:
    return UP_HS_P_S5_METHOD;
  case UP_HS_P_S5_SEND_AUTH:
    return UP_HS_P_S5_AUTH;
  case UP_HS_P_S5_SEND_CONNECT:
    return UP_HS_P_S5_REPLY;
  default:
    return sending;
  }
}

void up_hs_sent(up_hs *h, size_t n) {
  if (!h || h->phase >= UP_HS_P_END || h->out_len == 0)
    return;
  size_t left = h->out_len - h->out_off;
  h->out_off += n < left ? n : left;
  if (h->out_off < h->out_len)
    return;
  /* Sent whole: whatever it carried (credentials in a CONNECT or an
   * RFC 1929 request) is not kept a moment longer. A request of a
   * handshake without credentials held no secret: cleared, not wiped
   * (OPENSSL_cleanse's byte loop, once per check, is not needed). */
  size_t len = h->out_len < sizeof(h->out) ? h->out_len : sizeof(h->out);
  if (h->with_auth)
    OPENSSL_cleanse(h->out, len);
  else
    memset(h->out, 0, len);
  h->out_len = h->out_off = 0;
  h->phase = reading_phase(h->phase);
}

size_t up_hs_want(const up_hs *h) {
  if (!h || h->phase >= UP_HS_P_END || h->out_len > h->out_off)
    return 0;
  if (h->phase == UP_HS_P_HTTP_HEAD)
    return UP_HS_HEAD_MAX - h->rx.http.seen;
  return up_socks5_want(h);
}

/* Only out's first out_len bytes can hold a credential: a request is
 * written from out's start (its credentials only ever below out_len: the
 * bounded writer copies all or nothing) and wiped whole by up_hs_sent
 * once sent, before the next is written. */
static void wipe_secrets(up_hs *h) {
  if (h->out_len) /* 0: sent and wiped (up_hs_sent), or never written */
    OPENSSL_cleanse(h->out, h->out_len < sizeof(h->out) ? h->out_len
                                                       : sizeof(h->out));
  h->out_len = h->out_off = 0;
  h->user = h->pass = NULL;
  h->user_len = h->pass_len = 0;
}

void up_hs_end(up_hs *h, up_hs_state s) {
  wipe_secrets(h);
  h->phase = UP_HS_P_END + (int)s;
}

up_hs_state up_hs_feed(up_hs *h, const uint8_t *in, size_t n, int eof,
                       size_t *consume) {
  size_t used = 0;
  if (consume)
    *consume = 0;
  if (!h || !consume || (!in && n > 0)) {
    if (h && h->phase < UP_HS_P_END && h->phase > 0)
      up_hs_end(h, UP_HS_MALFORMED);
    return UP_HS_MALFORMED;
  }
  if (h->phase >= UP_HS_P_END)
    return (up_hs_state)(h->phase - UP_HS_P_END);
  if (h->phase <= 0) /* never initialised, or init refused */
    return UP_HS_MALFORMED;
  /* A message at a time: each read stops at its message's end, where the
   * next request (if any) must be sent before more is read. */
  size_t want;
  while (h->phase < UP_HS_P_END && used < n && (want = up_hs_want(h)) > 0) {
    size_t take = n - used < want ? n - used : want;
    size_t got = h->phase == UP_HS_P_HTTP_HEAD
                     ? up_connect_read(h, in + used, take)
                     : up_socks5_read(h, in + used, take);
    used += got;
    if (got == 0)
      break;
  }
  *consume = used;
  /* Closed before the end. (Bytes given beyond a message's end are read
   * after the next request is sent: the close counts after them.) */
  if (h->phase < UP_HS_P_END && eof && used == n)
    up_hs_end(h, UP_HS_MALFORMED);
  if (h->phase >= UP_HS_P_END)
    return (up_hs_state)(h->phase - UP_HS_P_END);
  return UP_HS_MORE;
}

void up_hs_wipe(up_hs *h) {
  if (!h)
    return;
  if (h->phase > 0 && h->phase < UP_HS_P_END)
    up_hs_end(h, UP_HS_MALFORMED); /* given up: it cannot go on */
  else
    wipe_secrets(h);
}

const char *up_hs_state_name(up_hs_state s) {
  switch (s) {
  case UP_HS_MORE:
    return "more";
  case UP_HS_DONE:
    return "done";
  case UP_HS_REFUSED:
    return "refused";
  case UP_HS_AUTH:
    return "auth";
  case UP_HS_MALFORMED:
    return "malformed";
  }
  return "unknown";
}

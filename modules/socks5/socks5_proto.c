/* SPDX-License-Identifier: BSD-2-Clause */
/* The SOCKS5 handshake codec (socks5_proto.h): pure, bounded, no I/O. */
#include "socks5_proto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

/* The two bytes every client message starts with: the version, then one
 * the caller reads; *out (size bytes) zeroed first. 1 when both are there
 * and the version is ver, else the verdict (S5_NEED_MORE,
 * S5_ERR_VERSION). */
static int head(const uint8_t *p, size_t n, uint8_t ver, void *out,
                size_t size) {
  memset(out, 0, size);
  if (n < 1)
    return S5_NEED_MORE;
  if (p[0] != ver)
    return S5_ERR_VERSION;
  if (n < 2)
    return S5_NEED_MORE;
  return 1;
}

/* A head whose second byte counts the bytes after it (1 to 255), then
 * extra bytes more: 1 when they are all there, else the verdict. */
static int counted(const uint8_t *p, size_t n, uint8_t ver, size_t extra,
                   void *out, size_t size) {
  int h = head(p, n, ver, out, size);
  if (h != 1)
    return h;
  if (p[1] == 0)
    return S5_ERR_MALFORMED;
  return n < 2 + (size_t)p[1] + extra ? S5_NEED_MORE : 1;
}

int s5_parse_greeting(const uint8_t *p, size_t n, s5_greeting *out) {
  /* RFC 1928: 1 to 255 methods */
  int h = counted(p, n, S5_VERSION, 0, out, sizeof(*out));
  if (h != 1)
    return h;
  size_t nm = p[1];
  for (size_t i = 0; i < nm; i++) {
    if (p[2 + i] == S5_METHOD_NONE)
      out->no_auth = 1;
    else if (p[2 + i] == S5_METHOD_PASSWORD)
      out->password = 1;
  }
  return (int)(2 + nm);
}

int s5_parse_auth(const uint8_t *p, size_t n, s5_auth *out) {
  /* RFC 1929: the user name (1 to 255 bytes), then the password's length */
  int h = counted(p, n, S5_AUTH_VERSION, 1, out, sizeof(*out));
  if (h != 1)
    return h;
  size_t ulen = p[1];
  size_t plen = p[2 + ulen];
  size_t total = 3 + ulen + plen;
  if (n < total)
    return S5_NEED_MORE;
  out->user = p + 2;
  out->user_len = ulen;
  out->pass = p + 3 + ulen;
  out->pass_len = plen;
  return (int)total;
}

/* The address part, from ATYP on: its length, or NEED_MORE/an error. */
static int parse_address(const uint8_t *p, size_t n, s5_request *out) {
  size_t need;
  switch (p[0]) {
  case S5_ATYP_IPV4:
    need = 1 + 4 + 2;
    break;
  case S5_ATYP_IPV6:
    need = 1 + 16 + 2;
    break;
  case S5_ATYP_DOMAIN:
    if (n < 2)
      return S5_NEED_MORE;
    need = 2 + (size_t)p[1] + 2;
    break;
  default:
    return S5_ERR_ATYP;
  }
  if (n < need)
    return S5_NEED_MORE;
  out->atyp = p[0];
  out->port = (uint16_t)((p[need - 2] << 8) | p[need - 1]);
  if (p[0] == S5_ATYP_IPV4) {
    inet_ntop(AF_INET, p + 1, out->host, sizeof(out->host));
  } else if (p[0] == S5_ATYP_IPV6) {
    inet_ntop(AF_INET6, p + 1, out->host, sizeof(out->host));
  } else {
    size_t len = p[1];
    if (len == 0 || memchr(p + 2, '\0', len))
      return S5_ERR_ADDRESS;
    memcpy(out->host, p + 2, len);
    out->host[len] = '\0';
  }
  if (out->port == 0)
    return S5_ERR_ADDRESS;
  return (int)need;
}

int s5_parse_request(const uint8_t *p, size_t n, s5_request *out) {
  int h = head(p, n, S5_VERSION, out, sizeof(*out));
  if (h != 1)
    return h;
  out->cmd = p[1];
  if (p[1] != S5_CMD_CONNECT)
    return S5_ERR_COMMAND;
  /* p[2] is RSV: ignored, as most servers do. */
  if (n < 4)
    return S5_NEED_MORE;
  int r = parse_address(p + 3, n - 3, out);
  if (r <= 0)
    return r;
  out->cmd = S5_CMD_CONNECT;
  return 3 + r;
}

size_t s5_encode_method(uint8_t out[2], int method) {
  out[0] = S5_VERSION;
  out[1] = (uint8_t)method;
  return 2;
}

size_t s5_encode_auth_status(uint8_t out[2], int ok) {
  out[0] = S5_AUTH_VERSION;
  out[1] = ok ? 0x00 : 0x01;
  return 2;
}

size_t s5_encode_reply(uint8_t out[S5_MAX_REPLY], int rep,
                       const struct sockaddr *bound) {
  out[0] = S5_VERSION;
  out[1] = (uint8_t)rep;
  out[2] = 0x00;
  if (bound && bound->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)bound;
    out[3] = S5_ATYP_IPV6;
    memcpy(out + 4, &a->sin6_addr, 16);
    memcpy(out + 20, &a->sin6_port, 2); /* both in network order */
    return 22;
  }
  out[3] = S5_ATYP_IPV4;
  if (bound && bound->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)bound;
    memcpy(out + 4, &a->sin_addr, 4);
    memcpy(out + 8, &a->sin_port, 2);
  } else {
    memset(out + 4, 0, 6);
  }
  return 10;
}

int s5_error_reply(int err) {
  switch (err) {
  case S5_ERR_COMMAND:
    return 0x07;
  case S5_ERR_ATYP:
    return 0x08;
  case S5_ERR_ADDRESS:
  case S5_ERR_MALFORMED:
    return 0x01;
  default:
    return -1;
  }
}

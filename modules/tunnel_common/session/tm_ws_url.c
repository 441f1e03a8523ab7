/* SPDX-License-Identifier: BSD-2-Clause */
/* The strict ws:// / wss:// URL parser (tm_ws_url.h). */
#include "tm_ws_url.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

static int is_alnum(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9');
}

/* A name: labels of letters, digits and '-', separated by single dots
 * (a trailing dot is allowed). Dotted-decimal IPv4 passes this too and is
 * then checked by inet_pton when it is all digits and dots. */
static int host_name_ok(const char *h, size_t n) {
  size_t label = 0;
  int all_num = 1;
  if (n == 0 || n > TM_WS_HOST_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)h[i];
    if (ch == '.') {
      if (label == 0)
        return 0;
      label = 0;
      continue;
    }
    if (!is_alnum(ch) && ch != '-')
      return 0;
    if (!(ch >= '0' && ch <= '9'))
      all_num = 0;
    if (++label > 63)
      return 0;
  }
  if (all_num) {
    /* Looks like an address: it must be one (no "1.2.3", "999.1.1.1"). */
    char tmp[TM_WS_HOST_MAX + 1];
    struct in_addr a;
    memcpy(tmp, h, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET, tmp, &a) == 1;
  }
  return 1;
}

static int is_hex(unsigned char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
         (ch >= 'A' && ch <= 'F');
}

/* RFC 3986 path and query: unreserved, sub-delims, ':', '@', '/', '?'
 * and whole %XX escapes; nothing else (the path goes as it is into the
 * request line, logs and the status page). */
static int path_ok(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (ch == '%') {
      if (i + 2 >= n || !is_hex((unsigned char)p[i + 1]) ||
          !is_hex((unsigned char)p[i + 2]))
        return 0;
      i += 2;
      continue;
    }
    if (!is_alnum(ch) && (!ch || !strchr("-._~!$&'()*+,;=:@/?", ch)))
      return 0;
  }
  return 1;
}

int tm_ws_url_parse(const char *url, size_t len, tm_ws_url *u,
                    const char **err) {
  const char *p, *end, *e;
  memset(u, 0, sizeof(*u));
  *err = "the URL is not ws://host[:port]/path or wss://...";
  if (!url)
    return -1;
  end = url + len;
  for (p = url; p < end; p++)
    if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
      *err = "the URL has a space, a control or a non-ASCII byte";
      return -1;
    }
  if (len >= 5 && !strncasecmp(url, "ws://", 5)) {
    p = url + 5;
    u->port = 80;
  } else if (len >= 6 && !strncasecmp(url, "wss://", 6)) {
    p = url + 6;
    u->tls = 1;
    u->port = 443;
  } else {
    *err = "the URL's scheme is not ws:// or wss://";
    return -1;
  }
  /* The authority ends at the first '/', '?' or end; '#' anywhere and
   * '@' in the authority are refused. */
  if (memchr(url, '#', len)) {
    *err = "the URL has a fragment";
    return -1;
  }
  for (e = p; e < end && *e != '/' && *e != '?'; e++)
    if (*e == '@') {
      *err = "the URL has user information (the token goes in a header)";
      return -1;
    }
  const char *hs = p, *he;
  if (p < e && *p == '[') {
    const char *rb = memchr(p, ']', (size_t)(e - p));
    char tmp[64];
    struct in6_addr a6;
    if (!rb || (size_t)(rb - p - 1) >= sizeof(tmp) || rb == p + 1) {
      *err = "the URL's IPv6 literal is malformed";
      return -1;
    }
    memcpy(tmp, p + 1, (size_t)(rb - p - 1));
    tmp[rb - p - 1] = '\0';
    if (inet_pton(AF_INET6, tmp, &a6) != 1) {
      *err = "the URL's IPv6 literal is malformed";
      return -1;
    }
    memcpy(u->host, tmp, strlen(tmp) + 1);
    u->ipv6 = 1;
    he = rb + 1;
  } else {
    he = memchr(p, ':', (size_t)(e - p));
    if (!he)
      he = e;
    if (!host_name_ok(hs, (size_t)(he - hs))) {
      *err = "the URL's host is not a name or an address";
      return -1;
    }
    memcpy(u->host, hs, (size_t)(he - hs));
    u->host[he - hs] = '\0';
  }
  if (he < e) {
    uint32_t port = 0;
    const char *q = he + 1;
    if (*he != ':' || q == e || e - q > 5) {
      *err = "the URL's port is malformed";
      return -1;
    }
    for (; q < e; q++) {
      if (*q < '0' || *q > '9') {
        *err = "the URL's port is malformed";
        return -1;
      }
      port = port * 10 + (uint32_t)(*q - '0');
    }
    if (port < 1 || port > 65535) {
      *err = "the URL's port is not 1..65535";
      return -1;
    }
    u->port = (uint16_t)port;
  }
  /* Path (and query). A query without a path gets "/" in front. */
  size_t plen = (size_t)(end - e);
  size_t off = 0;
  if (plen == 0 || *e == '?')
    u->path[off++] = '/';
  if (off + plen >= sizeof(u->path)) {
    *err = "the URL's path is too long";
    return -1;
  }
  if (!path_ok(e, plen)) {
    *err = "the URL's path has a byte RFC 3986 does not allow (escape it "
           "as %XX)";
    return -1;
  }
  memcpy(u->path + off, e, plen);
  u->path[off + plen] = '\0';
  return 0;
}

int tm_ws_host_is_loopback(const char *host) {
  struct in_addr a;
  struct in6_addr a6;
  if (!host)
    return 0;
  if (!strcasecmp(host, "localhost") || !strcasecmp(host, "localhost."))
    return 1;
  if (inet_pton(AF_INET, host, &a) == 1)
    return (ntohl(a.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6);
  return 0;
}

void tm_ws_url_shown(const char *url, char *out, size_t cap) {
  if (!cap)
    return;
  size_t n = url ? strcspn(url, "?#") : 0;
  if (n >= cap)
    n = cap - 1;
  if (n)
    memcpy(out, url, n);
  out[n] = '\0';
}

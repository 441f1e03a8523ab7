/* SPDX-License-Identifier: BSD-2-Clause */
/* server_url parsing (tc_url.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tc_url.h"

static int fail(char *why, size_t whylen, const char *msg) {
  snprintf(why, whylen, "%s", msg);
  return -1;
}

/* Host characters of a reg-name or an IPv4 literal (no percent-encoding:
 * libwebsockets takes the host as it is). */
static int host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

int tc_url_parse(const char *s, tc_url *u, char *why, size_t whylen) {
  memset(u, 0, sizeof(*u));
  if (!s || !*s)
    return fail(why, whylen, "empty URL");
  size_t len = strnlen(s, TC_URL_MAX + 1);
  if (len > TC_URL_MAX)
    return fail(why, whylen, "URL longer than 2048 bytes");
  const char *p;
  if (strncasecmp(s, "wss://", 6) == 0) {
    u->tls = 1;
    p = s + 6;
  } else if (strncasecmp(s, "ws://", 5) == 0) {
    p = s + 5;
  } else {
    return fail(why, whylen, "scheme must be ws:// or wss://");
  }
  const char *end = p + strcspn(p, "/?#");
  if (memchr(p, '@', (size_t)(end - p)))
    return fail(why, whylen,
                "credentials in the URL are refused (use token_file)");
  const char *host = p, *host_end, *port = NULL;
  if (*p == '[') {
    host = p + 1;
    host_end = memchr(host, ']', (size_t)(end - host));
    if (!host_end)
      return fail(why, whylen, "unterminated [IPv6] host");
    struct in6_addr a6;
    char tmp[64];
    size_t hl = (size_t)(host_end - host);
    if (hl == 0 || hl >= sizeof(tmp))
      return fail(why, whylen, "bad [IPv6] host");
    memcpy(tmp, host, hl);
    tmp[hl] = 0;
    if (inet_pton(AF_INET6, tmp, &a6) != 1)
      return fail(why, whylen, "bad [IPv6] host");
    if (host_end + 1 < end) {
      if (host_end[1] != ':')
        return fail(why, whylen, "junk after the [IPv6] host");
      port = host_end + 2;
    }
  } else {
    host_end = memchr(p, ':', (size_t)(end - p));
    if (host_end)
      port = host_end + 1;
    else
      host_end = end;
    for (const char *c = host; c < host_end; c++)
      if (!host_char(*c))
        return fail(why, whylen, "bad character in the host");
  }
  size_t hl = (size_t)(host_end - host);
  if (hl == 0)
    return fail(why, whylen, "no host");
  if (hl >= sizeof(u->host))
    return fail(why, whylen, "host longer than 255 bytes");
  memcpy(u->host, host, hl);
  u->port = u->tls ? 443 : 80;
  if (port) {
    if (port >= end)
      return fail(why, whylen, "empty port");
    unsigned long v = 0;
    for (const char *c = port; c < end; c++) {
      if (*c < '0' || *c > '9' || v > 65535)
        return fail(why, whylen, "port must be 1 to 65535");
      v = v * 10 + (unsigned long)(*c - '0');
    }
    if (v < 1 || v > 65535)
      return fail(why, whylen, "port must be 1 to 65535");
    u->port = (uint16_t)v;
  }
  if (*end == '?' || *end == '#')
    return fail(why, whylen, "no query or fragment in the URL");
  const char *path = *end ? end : "/";
  size_t pl = strlen(path);
  if (pl >= sizeof(u->path))
    return fail(why, whylen, "path longer than 1023 bytes");
  for (const char *c = path; *c; c++)
    if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f ||
        *c == '?' || *c == '#')
      return fail(why, whylen, "bad character in the path");
  memcpy(u->path, path, pl + 1);
  return 0;
}

int tc_url_host_is_loopback(const char *host) {
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6);
  size_t n = strlen(host);
  if (n && host[n - 1] == '.')
    n--; /* "localhost." */
  /* Only the one name /etc/hosts maps to loopback; "*.localhost" may
   * go to a resolver that answers otherwise. */
  return n == 9 && strncasecmp(host, "localhost", 9) == 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The task's addresses (chk_url.h). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "chk_url.h"

int chk_is_literal(const char *host) {
  unsigned char b[16];
  return inet_pton(AF_INET, host, b) == 1 || inet_pton(AF_INET6, host, b) == 1;
}

static int port_of(const char *s, size_t n, uint16_t *port) {
  if (!n || n > 5)
    return -1;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (!v || v > 65535)
    return -1;
  *port = (uint16_t)v;
  return 0;
}

static int host_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* s[0..n) is an authority: host[:port] or [v6][:port]. */
static int authority(const char *s, size_t n, chk_url *u, int need_port) {
  const char *h = s, *colon = NULL;
  size_t hl;
  u->v6 = 0;
  if (n && s[0] == '[') {
    const char *rb = memchr(s, ']', n);
    if (!rb)
      return -1;
    h = s + 1;
    hl = (size_t)(rb - h);
    if (rb + 1 < s + n) {
      if (rb[1] != ':')
        return -1;
      colon = rb + 1;
    }
    u->v6 = 1;
  } else {
    colon = memchr(s, ':', n);
    hl = colon ? (size_t)(colon - s) : n;
    for (size_t i = 0; i < hl; i++)
      if (!host_byte(s[i]))
        return -1;
  }
  if (!hl || hl > CHK_HOST_MAX)
    return -1;
  memcpy(u->host, h, hl);
  u->host[hl] = 0;
  if (u->v6) {
    unsigned char b[16];
    if (inet_pton(AF_INET6, u->host, b) != 1)
      return -1;
  }
  if (colon)
    return port_of(colon + 1, (size_t)(s + n - colon - 1), &u->port);
  if (need_port)
    return -1;
  u->port = 80;
  return 0;
}

/* The fields, not the 1.3 KB (a probe parses one per check). */
static void url_clear(chk_url *u) {
  u->host[0] = 0;
  u->port = 0;
  u->path[0] = 0;
  u->v6 = 0;
}

int chk_url_parse(const char *s, chk_url *u) {
  url_clear(u);
  if (!s || strncmp(s, "http://", 7))
    return -1;
  s += 7;
  size_t an = strcspn(s, "/?#");
  if (memchr(s, '@', an) || s[an] == '#')
    return -1;
  if (authority(s, an, u, 0))
    return -1;
  const char *p = s + an;
  size_t pn = strlen(p);
  if (memchr(p, '#', pn) || pn > CHK_PATH_MAX - 1)
    return -1;
  for (size_t i = 0; i < pn; i++)
    if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
      return -1;
  if (!pn || p[0] == '?') {
    u->path[0] = '/';
    memcpy(u->path + 1, p, pn + 1);
  } else {
    memcpy(u->path, p, pn + 1);
  }
  return 0;
}

int chk_hostport_parse(const char *s, chk_url *u) {
  url_clear(u);
  if (!s)
    return -1;
  if (authority(s, strlen(s), u, 1))
    return -1;
  strcpy(u->path, "/");
  return 0;
}

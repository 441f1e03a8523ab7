/* SPDX-License-Identifier: BSD-2-Clause */
/* The client's server_url: ws:// or wss://, a host, an optional port and
 * path, and whether plain ws stays on loopback (the check refuses plain ws
 * to anything else unless allow_plain). Pure: no I/O, no DNS. */
#ifndef TC_URL_H
#define TC_URL_H

#include <stddef.h>
#include <stdint.h>

#define TC_URL_MAX 2048

typedef struct tc_url {
  int tls;         /* wss */
  char host[256];  /* without the brackets of an IPv6 literal */
  uint16_t port;   /* 80 / 443 when absent */
  char path[1024]; /* "/" when absent */
} tc_url;

/* 0 and *u filled, or -1 with a one-line reason in why (it quotes only
 * the scheme or the part that is wrong, never a userinfo: a URL with
 * '@' in its authority is refused, tokens go in a header). */
int tc_url_parse(const char *s, tc_url *u, char *why, size_t whylen);
/* Whether host is a loopback address or "localhost": 127.0.0.0/8, ::1,
 * localhost. */
int tc_url_host_is_loopback(const char *host);

#endif

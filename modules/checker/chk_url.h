/* SPDX-License-Identifier: BSD-2-Clause */
/* The addresses a check task names (issue 26): a plain-http URL (the
 * echo endpoint, a TARGET probe given as a URL) or host:port (a TARGET
 * probe's tunnel). Pure; any thread. */
#ifndef PH_CHK_URL_H
#define PH_CHK_URL_H

#include <stddef.h>
#include <stdint.h>

#define CHK_HOST_MAX 255u
#define CHK_PATH_MAX 1024u

typedef struct chk_url {
  char host[CHK_HOST_MAX + 1]; /* without brackets */
  uint16_t port;
  char path[CHK_PATH_MAX + 1]; /* from the first '/', "/" when none */
  int v6;                      /* host is an IPv6 literal (bracketed) */
} chk_url;

/* "http://host[:port][/path]" (port 80 by default; no user info, no
 * fragment): 0, or -1 for anything else (https included: the checker
 * speaks plain HTTP to what it fetches). */
int chk_url_parse(const char *s, chk_url *u);

/* "host:port" or "[v6]:port", port 1..65535: 0 with host (no brackets)
 * in u->host and u->port (path "/"), or -1. */
int chk_hostport_parse(const char *s, chk_url *u);

/* 1 when host is an IPv4 or IPv6 literal. */
int chk_is_literal(const char *host);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ws:// and wss:// URLs the tunnel client connects to, parsed
 * strictly (pure: no I/O, no allocation, any thread). Accepted:
 *
 *   ws[s]://host[:port][/path[?query]]
 *
 * host is a name of letters, digits, '-' and '.' (1..253 bytes), a
 * dotted IPv4 address, or an IPv6 literal in brackets (no zone id). The
 * scheme is case-blind; the port is 1..65535 (default 80 / 443); the
 * path is printable ASCII without spaces (at most TM_WS_PATH_MAX - 1
 * bytes, "/" when absent). Refused: user information ("user:pass@", a
 * token never goes in a URL), a fragment ('#', RFC 6455 section 3), an
 * empty host or port, control bytes and anything else.
 * t/fuzz/fuzz_tm_url.c holds the parser to this.
 */
#ifndef TM_WS_URL_H
#define TM_WS_URL_H

#include <stddef.h>
#include <stdint.h>

#define TM_WS_HOST_MAX 253u
#define TM_WS_PATH_MAX 1024u

typedef struct tm_ws_url {
  int tls;                       /* 1: wss */
  int ipv6;                      /* host was a bracketed IPv6 literal */
  uint16_t port;                 /* explicit, or 80 / 443 */
  char host[TM_WS_HOST_MAX + 1]; /* without brackets, NUL-terminated */
  char path[TM_WS_PATH_MAX];     /* starts with '/', query included */
} tm_ws_url;

/* Parses len bytes of url. 0 and *u filled, or -1 with *err set to a
 * static sentence (never quoting the input). */
int tm_ws_url_parse(const char *url, size_t len, tm_ws_url *u,
                    const char **err);

/* Whether host (as in tm_ws_url.host, or a listen address) is loopback:
 * an IPv4 address in 127.0.0.0/8, ::1, or the name "localhost". */
int tm_ws_host_is_loopback(const char *host);

/* A configured URL as the status page shows it (issue 28): up to its
 * query (which may carry anything); user information is refused at
 * parse already. Cut to cap - 1 bytes; out is always NUL-terminated. */
void tm_ws_url_shown(const char *url, char *out, size_t cap);

#endif

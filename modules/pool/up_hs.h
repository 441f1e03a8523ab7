/* SPDX-License-Identifier: BSD-2-Clause */
/* The client side of the handshake with one upstream proxy (issue 13,
 * CP-5-3): HTTP CONNECT (with Basic Proxy-Authorization) or SOCKS5 (RFC
 * 1928, with RFC 1929 username/password), asking it for a tunnel to
 * host:port. Pure: no I/O, no clock, no allocation; the pool's attempt
 * (pool_attempt.c) moves the bytes and keeps the time.
 *
 * The I/O rule that keeps every byte of the target's for the client: the
 * caller never reads past the handshake. It peeks (recv MSG_PEEK) at most
 * up_hs_want() bytes, hands them to up_hs_feed(), and then consumes
 * (recv without MSG_PEEK) exactly *consume of them, which the handshake
 * used. Bytes after the handshake's end stay in the socket for the relay.
 * feed() is given the unconsumed bytes from their start each time (it may
 * see the same bytes again, with more after them).
 *
 * Credentials (CP-1-18, CP-8-5): the handshake copies the user name and
 * password only into its own output buffer, which up_hs_wipe() (and the
 * end of the handshake, UP_HS_DONE or a failure) clears with
 * OPENSSL_cleanse; they never appear in a result or an error text.
 */
#ifndef PH_UP_HS_H
#define PH_UP_HS_H

#include <stddef.h>
#include <stdint.h>

/* The longest upstream response head read for a CONNECT (status line and
 * headers); longer is UP_HS_MALFORMED. */
#define UP_HS_HEAD_MAX 8192u
/* The longest request the handshake writes (a CONNECT with a 255-byte
 * host and 255-byte credentials fits). */
#define UP_HS_OUT_MAX 1024u

/* What feed() says. */
typedef enum up_hs_state {
  UP_HS_MORE = 0,      /* send what pending_out() shows, read more */
  UP_HS_DONE = 1,      /* the tunnel is up: relay from now on */
  UP_HS_REFUSED = 2,   /* the proxy answered, and said no (CONNECT
                          non-2xx other than 407, SOCKS5 REP != 0) */
  UP_HS_AUTH = 3,      /* the proxy wants credentials we lack or refused
                          ours (407, SOCKS5 method 0xFF or auth failure) */
  UP_HS_MALFORMED = 4  /* not the protocol, too long, or closed early */
} up_hs_state;

/* Protocols: the values of ph_pool_upstream_protocol (pool_store.h);
 * PH_POOL_UPSTREAM_HTTP uses CONNECT too when it carries a tunnel. */

typedef struct up_hs {
  int protocol;
  int phase;        /* private */
  int with_auth;    /* credentials were given */
  uint8_t out[UP_HS_OUT_MAX];
  size_t out_len, out_off;
  /* Saved for the SOCKS5 steps after the greeting. */
  char host[256];
  uint16_t port;
  const char *user, *pass; /* borrowed from the view, for the SOCKS5
                              auth step; never copied elsewhere */
  uint32_t user_len, pass_len;
  int status;       /* CONNECT: the response's status code; SOCKS5: the
                       REP byte; -1 before */
} up_hs;

/* Prepares a handshake for a tunnel to host (a name or literal address,
 * 1..255 bytes) : port through a proxy speaking `protocol`, with optional
 * credentials (user NULL: none; both may be empty strings otherwise, and
 * each at most 255 bytes). The view that holds the credentials must
 * outlive the handshake. PH_OK, or PH_EINVAL. */
int up_hs_init(up_hs *h, int protocol, const char *host, uint16_t port,
               const char *user, uint32_t user_len, const char *pass,
               uint32_t pass_len);

/* The bytes to write now (*data, the count); 0 when nothing is due. */
size_t up_hs_pending_out(const up_hs *h, const uint8_t **data);
/* n of them were written. */
void up_hs_sent(up_hs *h, size_t n);

/* At most how many bytes to peek now (> 0 while the handshake reads). */
size_t up_hs_want(const up_hs *h);

/* Feeds the n unconsumed bytes in (peeked). *consume: how many of them
 * the caller must now consume (read and drop). Returns the state; with
 * UP_HS_MORE there may be more to send (pending_out) and to read. eof:
 * 1 when the proxy closed its side (in then holds what was left). */
up_hs_state up_hs_feed(up_hs *h, const uint8_t *in, size_t n, int eof,
                       size_t *consume);

/* Clears the output buffer (credentials) and forgets the borrowed
 * pointers. Idempotent. */
void up_hs_wipe(up_hs *h);

/* Stable names (logs, metrics): "more", "done", "refused", "auth",
 * "malformed". */
const char *up_hs_state_name(up_hs_state s);

#endif

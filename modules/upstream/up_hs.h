/* SPDX-License-Identifier: BSD-2-Clause */
/* The upstream kit (modules/upstream, issue 25 item 1): the client side
 * of the handshake with one upstream proxy (issue 13, CP-5-3): HTTP
 * CONNECT (with Basic Proxy-Authorization) or SOCKS5 (RFC 1928, with RFC
 * 1929 username/password), asking it for a tunnel to host:port; and the
 * Proxy-Authorization value an `http` upstream gets with requests
 * forwarded to it in absolute form (up_hs_proxy_auth). A kit: it uses no module; the gateway's
 * pool (modules/pool/pool_dial.c) and the coming checker use it.
 *
 * Pure: no I/O, no clock, no allocation, no logging; the caller moves
 * the bytes and keeps the time (the handshake's deadline is the
 * caller's). Ownership: the caller owns the up_hs (embedded in its own
 * state, no destructor: up_hs_wipe() when it gives up); the handshake
 * borrows the credentials until it copied them (see "Credentials").
 * Threads: no shared state; one handshake is used by one thread at a
 * time (the pool: the loop thread), different ones by any threads.
 * Return values: up_hs_init PH_OK or PH_EINVAL; up_hs_feed an
 * up_hs_state; up_hs_basic and up_hs_proxy_auth a length, 0 when
 * refused; the rest below.
 *
 * The I/O rule that keeps every byte of the target's for the client: the
 * caller never reads past the handshake. It writes what pending_out()
 * shows, then peeks (recv MSG_PEEK) at most up_hs_want() bytes, hands
 * them to up_hs_feed(), and then consumes (recv without MSG_PEEK)
 * exactly *consume of them, which the handshake used. Bytes after the
 * handshake's end stay in the socket for the relay.
 *
 * Every byte the handshake is given that belongs to it is consumed at
 * once, also in the middle of a message: with UP_HS_MORE, *consume is
 * every byte given up to the current message's end (all of them when the
 * caller peeked no more than want()), so no peeked byte stays in the
 * socket while the caller waits for more (a level-triggered read watcher
 * would fire again at once). The handshake keeps what it needs of a
 * partial message itself. Bytes it did not consume (given beyond
 * want()) may be given again, with more after them.
 *
 * want() is 0 while a request is still to be written (pending_out() > 0):
 * an upstream answers what it received whole, so nothing is read before.
 *
 * Decisions:
 *  - CONNECT: the status line decides a refusal (non-2xx: REFUSED; 407,
 *    and 401 too: AUTH) as soon as it ends; the rest of that head is not
 *    read. (No tunnel exists yet, so a 401 is the proxy's own: tinyproxy
 *    answers 407 to no credentials and 401 to wrong ones.) A 2xx
 *    is DONE only at the end of a well-formed head (CRLF or bare LF line
 *    ends, at most UP_HS_HEAD_MAX bytes) without body framing
 *    (Content-Length other than 0, or any Transfer-Encoding: RFC 9110
 *    section 9.3.6, a tunnel's answer has no content): MALFORMED
 *    otherwise. Interim 1xx answers are refusals like any non-2xx.
 *  - SOCKS5: the greeting offers exactly one method: 0x00 without
 *    credentials, 0x02 with them, so a proxy cannot skip the
 *    authentication we were configured for by choosing 0x00 (it may
 *    only choose what was offered; anything else is MALFORMED, 0xFF is
 *    AUTH). The RFC 1929 answer must be version 0x01. A reply decides a
 *    refusal (REP != 0) once its first four bytes (VER REP RSV ATYP) are
 *    valid; success is DONE once the whole reply, BND.ADDR and BND.PORT
 *    included, was consumed.
 *
 * Credentials (CP-1-18, CP-8-5): the handshake copies the user name and
 * password only into its own output buffer, and clears that buffer with
 * OPENSSL_cleanse as soon as the message carrying them was sent, at the
 * end of the handshake (UP_HS_DONE or a failure) and in up_hs_wipe();
 * the borrowed pointers are forgotten as soon as they were copied. They
 * never appear in a result or an error text.
 */
#ifndef PH_UP_HS_H
#define PH_UP_HS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/http1_head.h"

/* The longest upstream response head read for a CONNECT (status line and
 * headers, with the empty line that ends them); longer is
 * UP_HS_MALFORMED. */
#define UP_HS_HEAD_MAX 8192u
/* The longest request the handshake writes: a CONNECT to a 255-byte host
 * with 255-byte credentials is 1,264 bytes (the Basic token alone is
 * 684: base64 of 511 bytes); the RFC 1929 request is at most 513. */
#define UP_HS_OUT_MAX 1280u
/* The longest host, user name and password, in bytes. */
#define UP_HS_FIELD_MAX 255u

/* What feed() says. */
typedef enum up_hs_state {
  UP_HS_MORE = 0,     /* send what pending_out() shows, read more */
  UP_HS_DONE = 1,     /* the tunnel is up: relay from now on */
  UP_HS_REFUSED = 2,  /* the proxy answered, and said no (CONNECT
                         non-2xx other than 401 and 407, SOCKS5 REP != 0) */
  UP_HS_AUTH = 3,     /* the proxy wants credentials we lack or refused
                         ours (407 or 401, SOCKS5 method 0xFF or auth
                         failure) */
  UP_HS_MALFORMED = 4 /* not the protocol, too long, or closed early */
} up_hs_state;

/* Protocols: the values of ph_pool_upstream_protocol (pool_store.h);
 * PH_POOL_UPSTREAM_HTTP uses CONNECT too when it carries a tunnel (a
 * request the caller forwards in absolute form needs no handshake: the
 * pool hands it the socket with the Basic token of up_hs_basic()). */

typedef struct up_hs_s5_rx {
  uint32_t have;  /* bytes of the current message consumed */
  uint32_t need;  /* its length, or a lower bound until known */
  uint8_t hdr[5]; /* its first bytes (the reply's VER REP RSV ATYP
                     and the domain length) */
} up_hs_s5_rx;

typedef struct up_hs {
  int protocol;
  int phase;     /* private (up_hs_phase) */
  int with_auth; /* credentials were given */
  uint8_t out[UP_HS_OUT_MAX];
  size_t out_len, out_off;
  /* Saved for the SOCKS5 steps after the greeting: the host in normal
   * form (host_norm.h: IPv6 without brackets), its kind, its address. */
  char host[UP_HS_FIELD_MAX + 1];
  uint16_t port;
  int host_kind;           /* private (up_hs_host_kind) */
  uint8_t addr[16];        /* the literal's bytes (4 or 16) */
  const char *user, *pass; /* borrowed from the view, for the SOCKS5
                              auth step; never copied elsewhere, NULL
                              once copied into out */
  uint32_t user_len, pass_len;
  int status; /* CONNECT: the response's status code; SOCKS5: the
                 REP byte; -1 before (and for SOCKS5 method or
                 authentication failures) */
  union {
    h1_head http; /* the CONNECT answer's head, scanned as it arrives */
    up_hs_s5_rx s5;
  } rx; /* private */
} up_hs;

/* Prepares a handshake for a tunnel to host (a name or literal address,
 * 1..255 bytes, NUL-terminated; an IPv6 literal with or without
 * brackets) : port (1..65535) through a proxy speaking `protocol`, with
 * optional credentials (user NULL: none; otherwise user and pass of
 * user_len and pass_len bytes, each at most 255, pass NULL only with
 * pass_len 0). The host is sent in normal form (host_norm.h). Refused:
 * a host that is neither a name nor a literal, for CONNECT a user name
 * with ':' (RFC 7617), for SOCKS5 an empty user name (RFC 1929: ULEN is
 * 1..255; an empty password is sent as PLEN 0). The view that holds the
 * credentials must outlive the handshake (or up_hs_wipe()). PH_OK, or
 * PH_EINVAL (then h holds no credentials). */
int up_hs_init(up_hs *h, int protocol, const char *host, uint16_t port,
               const char *user, uint32_t user_len, const char *pass,
               uint32_t pass_len);

/* The bytes to write now (*data, the count); 0 when nothing is due. */
size_t up_hs_pending_out(const up_hs *h, const uint8_t **data);
/* n of them were written (more than pending counts as all of them). */
void up_hs_sent(up_hs *h, size_t n);

/* At most how many bytes to peek now (> 0 while the handshake reads; 0
 * while a request is pending and after the end). For SOCKS5 it is
 * exactly what the current message still needs, once known (the reply's
 * first 5 bytes are asked for first: every reply has at least 7). For
 * CONNECT it is what is left of UP_HS_HEAD_MAX: the head's end is found
 * in the peeked bytes, and only the head is consumed. */
size_t up_hs_want(const up_hs *h);

/* Feeds the n unconsumed bytes in (peeked). *consume: how many of them
 * the caller must now consume (read and drop). Returns the state; with
 * UP_HS_MORE there may be more to send (pending_out) and to read. eof:
 * 1 when the proxy closed its side (in then holds what was left); a
 * handshake not finished by those bytes is UP_HS_MALFORMED (once all of
 * them were consumed: with bytes left over, UP_HS_MORE). Once it
 * ended, feed() returns the same state again and consumes nothing. */
up_hs_state up_hs_feed(up_hs *h, const uint8_t *in, size_t n, int eof,
                       size_t *consume);

/* Clears the output buffer (credentials) and forgets the borrowed
 * pointers. Idempotent. Called before the end (the caller gives up: a
 * timeout, a cancel, a write error), it also ends the handshake: nothing
 * more to send or read, and feed() says UP_HS_MALFORMED. */
void up_hs_wipe(up_hs *h);

/* The Basic credentials token (RFC 7617): base64 of user ':' pass,
 * reading the three parts where they lie (they are never joined in a
 * buffer of their own), written to out (cap bytes; no NUL). user and
 * pass are user_len and pass_len bytes, each at most UP_HS_FIELD_MAX
 * (NULL only with length 0); a user name with ':' is refused (RFC 7617).
 * Returns the token's length (at most UP_HS_BASIC_MAX), or 0 when
 * refused or cap is too small. The CONNECT request's Proxy-Authorization
 * and the pool's absolute-form forwarding (pool_dial.c) both use it.
 * Pure; the caller wipes out when done with it. */
#define UP_HS_BASIC_MAX 684u /* 4 * ceil((255 + 1 + 255) / 3) */
size_t up_hs_basic(const char *user, uint32_t user_len, const char *pass,
                   uint32_t pass_len, char *out, size_t cap);

/* The Proxy-Authorization value an `http` upstream gets with each request
 * forwarded to it in absolute form: "Basic " and up_hs_basic()'s token,
 * NUL-terminated, written to out (cap bytes, the NUL included). Returns
 * its length without the NUL (at most UP_HS_PROXY_AUTH_MAX), or 0 when
 * up_hs_basic() refuses the credentials or cap is too small. Pure; the
 * caller wipes out when done with it. (No credentials, no header: the
 * caller's decision.) */
#define UP_HS_PROXY_AUTH_MAX (6u + UP_HS_BASIC_MAX) /* "Basic " + token */
size_t up_hs_proxy_auth(const char *user, uint32_t user_len, const char *pass,
                        uint32_t pass_len, char *out, size_t cap);

/* Stable names (logs, metrics): "more", "done", "refused", "auth",
 * "malformed". */
const char *up_hs_state_name(up_hs_state s);

/* ---- Private: between up_hs.c and the two protocols' files. ---------- */

typedef enum up_hs_phase {
  UP_HS_P_HTTP_SEND = 1, /* the CONNECT request */
  UP_HS_P_HTTP_HEAD,     /* reading its answer's head */
  UP_HS_P_S5_SEND_GREETING,
  UP_HS_P_S5_METHOD, /* reading the method selection */
  UP_HS_P_S5_SEND_AUTH,
  UP_HS_P_S5_AUTH, /* reading the RFC 1929 status */
  UP_HS_P_S5_SEND_CONNECT,
  UP_HS_P_S5_REPLY, /* reading the CONNECT reply */
  UP_HS_P_END = 100 /* + the final up_hs_state */
} up_hs_phase;

typedef enum up_hs_host_kind {
  UP_HS_HOST_NAME = 0,
  UP_HS_HOST_IPV4 = 1,
  UP_HS_HOST_IPV6 = 2
} up_hs_host_kind;

/* up_connect.c: writes the CONNECT request into h->out (PH_OK or
 * PH_EINVAL when it would not fit), and reads the answer's head: how
 * many of the n bytes it used, with h->phase moved on at an end. */
int up_connect_request(up_hs *h);
size_t up_connect_read(up_hs *h, const uint8_t *in, size_t n);

/* up_socks5.c: writes the greeting into h->out; reads the current
 * message (at most its remaining bytes), building the next request or
 * ending; its remaining bytes (want). */
void up_socks5_greeting(up_hs *h);
size_t up_socks5_read(up_hs *h, const uint8_t *in, size_t n);
size_t up_socks5_want(const up_hs *h);

/* up_hs.c: ends the handshake with s (wiping the credentials). */
void up_hs_end(up_hs *h, up_hs_state s);

#endif

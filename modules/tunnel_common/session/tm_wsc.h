/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 6455 for both ends, as pure code (no I/O, no clock, no
 * allocation): the client's opening request and the check of the
 * server's 101; the server's reading of that request (path, upgrade
 * headers, key, version, the offer and the bearer token) and its 101 or
 * refusal; the frames each end sends (a client's masked, a server's not);
 * and one decoder of received frames with a role (TM_WSC_CLIENT: the
 * server's frames, never masked; TM_WSC_SERVER: a client's, always
 * masked, RFC 6455 section 5.1, unmasked in place). tm_ws_end.c moves the
 * bytes over a libwebsockets raw connection (its sockets and loop; TLS
 * is the client's own), because libwebsockets 4.1's client role handles
 * every received byte in a separate call of its parser and masks every
 * sent byte in a byte loop (about 11 ns a byte received and 3 ns a byte
 * sent, most of the tunnel's bulk cost: docs/benchmarks.md, issue 11),
 * and its server role accepts unmasked client frames without a way to
 * tell (issue 22 item 6).
 *
 * Threads: none of its own; one tm_wsc_rx is used by one thread at a time.
 */
#ifndef TM_WSC_H
#define TM_WSC_H

#include <stddef.h>
#include <stdint.h>

/* Sec-WebSocket-Key: base64 of 16 random bytes, and its NUL. */
#define TM_WSC_KEY_LEN 24
/* The longest 101 response head read (status line and headers). */
#define TM_WSC_RESP_MAX 4096
/* The longest upgrade request head a server reads (request line and
 * headers): longer is refused with 431. */
#define TM_WSC_REQ_MAX 8192
/* The longest header of a frame (2 + 8 length + 4 mask). */
#define TM_WSC_HDR_MAX 14
/* Control frames carry at most 125 bytes (RFC 6455 section 5.5). */
#define TM_WSC_CONTROL_MAX 125

/* Which end a decoder reads for (tm_wsc_rx_init). */
enum tm_wsc_role { TM_WSC_CLIENT = 0, TM_WSC_SERVER = 1 };

enum tm_wsc_opcode {
  TM_WSC_OP_CONT = 0x0,
  TM_WSC_OP_TEXT = 0x1,
  TM_WSC_OP_BINARY = 0x2,
  TM_WSC_OP_CLOSE = 0x8,
  TM_WSC_OP_PING = 0x9,
  TM_WSC_OP_PONG = 0xA,
};

/* The key for a request from 16 random bytes: out gets TM_WSC_KEY_LEN
 * characters and a NUL. */
void tm_wsc_key(const uint8_t random16[16], char out[TM_WSC_KEY_LEN + 1]);

/* The upgrade request: GET path, Host, the key, version 13, the offer
 * (Sec-WebSocket-Protocol, left out when offer is empty) and, when
 * bearer_len > 0, "Authorization: Bearer <bearer>". The length written
 * (no NUL), or -1 when it does not fit in cap or a field holds CR, LF or
 * NUL. The caller wipes buf once sent: it holds the token. */
int tm_wsc_request(char *buf, size_t cap, const char *path, const char *host,
                   const char *offer, const char *bearer, size_t bearer_len,
                   const char *key);

/* The server's answer. */
typedef struct tm_wsc_answer {
  int status;          /* the status code read (0: none yet) */
  char subproto[64];   /* Sec-WebSocket-Protocol; "" when absent */
} tm_wsc_answer;

enum {
  TM_WSC_HS_MORE = 0,      /* no whole head yet: give more */
  TM_WSC_HS_BAD = -1,      /* not a valid 101 for this key: *why says */
  TM_WSC_HS_REFUSED = -2,  /* a whole head with another status */
};

/* Looks for the end of the response head in buf[0..len) (all bytes
 * received so far). >0: the head is whole and valid, its length (the
 * bytes after it are frames); TM_WSC_HS_MORE; or an error with *why a
 * static sentence (never quoting the peer). Valid: "HTTP/1.1 101",
 * Upgrade: websocket, Connection with the token upgrade,
 * Sec-WebSocket-Accept for key, no Sec-WebSocket-Extensions (none was
 * offered), at most one Sec-WebSocket-Protocol of at most 63 bytes (the
 * caller checks it was offered). A head longer than TM_WSC_RESP_MAX is
 * BAD. */
int tm_wsc_response(const uint8_t *buf, size_t len, const char *key,
                    tm_wsc_answer *ans, const char **why);

/* ---- the server's side of the handshake ------------------------------ */

/* What a server read from an upgrade request (tm_wsc_upgrade_parse). */
typedef struct tm_wsc_upgrade {
  int status;               /* 0: a valid upgrade; else the status to answer */
  char key[TM_WSC_KEY_LEN + 1]; /* Sec-WebSocket-Key (valid upgrades) */
  int chosen;               /* index into names of the name chosen */
  size_t auth_off, auth_len; /* Authorization's value in buf (len 0: none) */
} tm_wsc_upgrade;

/* Reads an upgrade request head from buf[0..len) (all bytes received so
 * far). TM_WSC_HS_MORE: no whole head yet (and within TM_WSC_REQ_MAX);
 * TM_WSC_HS_BAD: up->status says what to answer (400 malformed, 431 too
 * long) and *why a static sentence; >0: the head's length (the bytes
 * after it are frames) with up->status 0 for a valid upgrade or the
 * answer: 404 (not a WebSocket upgrade, or a path other than path; a
 * query after '?' is ignored), 400 (not GET over HTTP/1.1, no Host, no
 * Connection: upgrade, a bad or repeated key, a repeated Authorization,
 * no Sec-WebSocket-Protocol, or none of names in it), 426 (a version
 * other than 13). The name chosen is the first the client offered (its
 * priority order, across its Sec-WebSocket-Protocol headers) that names
 * (NULL-terminated) has. The strict line rules of tm_wsc_response apply
 * (the shared scanner, lib/http1_head.h: CRLF only, no control byte or
 * DEL, token names, no folding, at most 100 field lines: more is 431). */
int tm_wsc_upgrade_parse(const uint8_t *buf, size_t len, const char *path,
                         const char *const *names, tm_wsc_upgrade *up,
                         const char **why);

/* The 101 for key, with "Sec-WebSocket-Protocol: subproto" unless
 * subproto is NULL. The length written, or -1 when it does not fit. */
int tm_wsc_accept(char *buf, size_t cap, const char *key,
                  const char *subproto);
/* A refusal with status (400, 404, 426, 431, 503): no body,
 * Connection: close (426 names version 13). The length, or -1. */
int tm_wsc_refusal(char *buf, size_t cap, int status);

/* ---- frames out ------------------------------------------------------- */

/* Writes the header of one frame (FIN set) of len payload bytes into out
 * (TM_WSC_HDR_MAX bytes of room), masked with mask (a client's), or
 * unmasked when mask is NULL (a server's); its length. */
size_t tm_wsc_frame_header(uint8_t *out, unsigned opcode, uint64_t len,
                           const uint8_t *mask);
/* dst[i] = src[i] ^ mask[(off + i) & 3]; dst may be src. */
void tm_wsc_mask(uint8_t *dst, const uint8_t *src, size_t n,
                 const uint8_t mask[4], size_t off);

/* ---- the decoder of received frames -------------------------------- */

typedef struct tm_wsc_rx {
  uint8_t role;         /* tm_wsc_role */
  uint8_t hdr[TM_WSC_HDR_MAX]; /* the current frame's header so far */
  uint8_t hdr_have;
  uint8_t hdr_need;     /* 2, then the whole header's length */
  uint8_t opcode;       /* the current frame's */
  uint8_t fin;
  uint8_t msg_open;     /* a data message is in progress (fragmented) */
  uint8_t msg_text;     /* ... and it is text */
  uint8_t msg_started;  /* its first piece was reported */
  uint64_t left;        /* payload bytes of the current frame still due */
  uint8_t mask[4];      /* server role: the current frame's key */
  uint64_t moff;        /* ... and the payload bytes unmasked so far */
  uint8_t ctl[TM_WSC_CONTROL_MAX];
  uint8_t ctl_len;
} tm_wsc_rx;

enum tm_wsc_event {
  TM_WSC_EV_NEED = 0, /* every byte given was used: give more */
  TM_WSC_EV_DATA,     /* a piece of a data message */
  TM_WSC_EV_CONTROL,  /* a whole ping, pong or close */
  TM_WSC_EV_ERROR,    /* a protocol error: close with 1002 */
};

typedef struct tm_wsc_ev {
  const uint8_t *data; /* the piece (into the input) or the control's payload */
  size_t len;
  unsigned opcode;     /* DATA: TEXT or BINARY (the message's); CONTROL: its */
  int first;           /* DATA: the message's first piece */
  int last;            /* DATA: the message's last piece */
  uint64_t frame_left; /* DATA: bytes of this piece's frame still due */
  const char *why;     /* ERROR: a static sentence */
} tm_wsc_ev;

/* role: TM_WSC_CLIENT (a client reading a server) or TM_WSC_SERVER. */
void tm_wsc_rx_init(tm_wsc_rx *rx, int role);
/* Reads from in[0..len) up to the next event; *used: the bytes it took
 * (the caller gives the rest again, after handling the event). A data
 * piece points into in and is valid until the caller reuses that memory;
 * a control payload points into rx. The server role unmasks the data
 * pieces it reports in place (each byte once: only bytes it took), so in
 * is written to. After ERROR the decoder stays in error. Frames from a
 * server must not be masked and frames from a client must be (RFC 6455
 * section 5.1: a server closes with 1002 on an unmasked one); both have
 * no RSV bit (no extension was negotiated), a known opcode, control
 * frames whole (FIN) and at most 125 bytes, continuation only inside a
 * message and a new data frame only outside one, and a 64-bit length
 * below 2^63. */
enum tm_wsc_event tm_wsc_rx_next(tm_wsc_rx *rx, uint8_t *in, size_t len,
                                 size_t *used, tm_wsc_ev *ev);

#endif

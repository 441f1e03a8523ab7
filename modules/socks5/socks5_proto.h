/* SPDX-License-Identifier: BSD-2-Clause */
/* The SOCKS5 handshake, parsed and encoded without I/O: the greeting
 * (RFC 1928 section 3), the username/password sub-negotiation (RFC 1929)
 * and the request (RFC 1928 section 4), and the server's answers.
 *
 * Each parser looks at the bytes received so far (a prefix of the
 * stream, starting at the message) and answers:
 *   > 0  the message is complete; the value is its length in bytes
 *   S5_NEED_MORE (0)  a valid prefix: wait for more bytes
 *   < 0  an s5_error: the message can never become valid
 * A verdict never changes as more bytes arrive, and no parser reads past
 * the length it was given. Every message is at most S5_MAX_MESSAGE bytes,
 * so a fixed buffer of that size always holds the next one whole.
 */
#ifndef PH_SOCKS5_PROTO_H
#define PH_SOCKS5_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define S5_VERSION 0x05
#define S5_AUTH_VERSION 0x01

/* The largest message: the RFC 1929 request, 1+1+255+1+255. */
#define S5_MAX_MESSAGE 513

enum s5_method {
  S5_METHOD_NONE = 0x00,
  S5_METHOD_PASSWORD = 0x02,
  S5_METHOD_UNACCEPTABLE = 0xFF
};

enum s5_cmd { S5_CMD_CONNECT = 1, S5_CMD_BIND = 2, S5_CMD_UDP = 3 };
enum s5_atyp { S5_ATYP_IPV4 = 1, S5_ATYP_DOMAIN = 3, S5_ATYP_IPV6 = 4 };

#define S5_NEED_MORE 0

enum s5_error {
  S5_ERR_VERSION = -1,   /* not SOCKS version 5 (or 1 in RFC 1929) */
  S5_ERR_MALFORMED = -2, /* impossible lengths or values */
  S5_ERR_COMMAND = -3,   /* not CONNECT: reply 0x07 */
  S5_ERR_ATYP = -4,      /* unknown address type: reply 0x08 */
  S5_ERR_ADDRESS = -5    /* an unusable address (empty name, NUL, port 0) */
};

/* Greeting: VER NMETHODS METHODS[NMETHODS]. */
typedef struct s5_greeting {
  int no_auth;  /* offered 0x00 */
  int password; /* offered 0x02 */
} s5_greeting;

int s5_parse_greeting(const uint8_t *p, size_t n, s5_greeting *out);

/* RFC 1929: VER ULEN UNAME PLEN PASSWD. The pointers point into p.
 * ULEN must be 1..255; PLEN may be 0 (the authorizer decides). */
typedef struct s5_auth {
  const uint8_t *user;
  size_t user_len;
  const uint8_t *pass;
  size_t pass_len;
} s5_auth;

int s5_parse_auth(const uint8_t *p, size_t n, s5_auth *out);

/* Request: VER CMD RSV ATYP DST.ADDR DST.PORT. host is the domain name as
 * sent, or the literal address in text form, NUL-terminated. A command
 * other than CONNECT is S5_ERR_COMMAND as soon as its byte arrives;
 * likewise S5_ERR_ATYP. */
typedef struct s5_request {
  int cmd;
  int atyp;
  uint16_t port;
  char host[256];
} s5_request;

int s5_parse_request(const uint8_t *p, size_t n, s5_request *out);

/* The method selection answer: 2 bytes. */
size_t s5_encode_method(uint8_t out[2], int method);
/* The RFC 1929 status answer (0 = success): 2 bytes. */
size_t s5_encode_auth_status(uint8_t out[2], int ok);

/* The reply: VER REP RSV ATYP BND.ADDR BND.PORT. bound may be NULL or of
 * another family: then 0.0.0.0:0. At most S5_MAX_REPLY bytes. */
#define S5_MAX_REPLY 22
size_t s5_encode_reply(uint8_t out[S5_MAX_REPLY], int rep,
                       const struct sockaddr *bound);

/* The reply code for a request parse error (0x07 or 0x08 or 0x01), or -1
 * when the error gets no reply (wrong version: not a SOCKS5 client). */
int s5_error_reply(int err);

#endif

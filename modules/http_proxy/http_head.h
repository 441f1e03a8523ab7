/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP/1.x message heads for the http_proxy module, without I/O.
 *
 * - Bounded, incremental parsing of a request or response head with the
 *   shared strict scanner (lib/http1_head.h): the caller keeps the bytes
 *   in one buffer (which may move between calls) and calls hp_head_parse
 *   after each read; the head's first line, its header bytes and its
 *   header count are limited, and the answer to a bad head is an HTTP
 *   status (400, 414, 431, 505). On top of the scanner's rules: only the
 *   methods libhttp-parser knows (upper case), HTTP/1.0 and 1.1, bare LF
 *   line ends and empty lines before a request taken (RFC 9112 2.2), a
 *   Content-Length list of equal numbers taken (RFC 9110 8.6). Bodies are
 *   framed by http_body.h.
 * - The request-target: authority-form for CONNECT, absolute-form
 *   http://host[:port]/path otherwise (https:// is 501, anything else 400).
 * - Body framing from the header fields, strictly (hp_head_framing).
 * - Rewriting: a request to origin-form with a correct Host header and a
 *   response for the client, both without hop-by-hop headers and with
 *   the framing header the proxy chose instead of the peer's; and that
 *   request in absolute form, with the upstream proxy's own
 *   Proxy-Authorization, for an upstream that is an HTTP proxy.
 * - Proxy-Authorization: Basic decoding.
 *
 * Every offset (hp_head_span) is relative to the start of the head's buffer.
 */
#ifndef PH_HTTP_HEAD_H
#define PH_HTTP_HEAD_H

#include <http_parser.h>
#include <stddef.h>

#include "lib/http1_head.h"
#include <stdint.h>
#include <sys/types.h>

/* Limits of one head; each is at least 1. */
typedef struct hp_head_limits {
  size_t max_line;         /* request or status line, with its CRLF */
  size_t max_header_bytes; /* header lines and the blank line after them */
  size_t max_headers;      /* header fields */
} hp_head_limits;

enum hp_head_result { HH_ERROR = -1, HH_MORE = 0, HH_DONE = 1 };

/* Offsets from the start of the head's buffer. */
typedef h1_span hp_head_span;
/* A field: its name and its value without surrounding whitespace. */
typedef h1_field hp_head_field;

/* What a field is to the proxy (http_head.flags[i]). */
#define HH_F_HOP 1u /* hop-by-hop: not forwarded */
#define HH_F_TE 2u  /* a Transfer-Encoding field */
#define HH_F_CL 4u  /* a Content-Length field */

typedef struct http_head {
  h1_head scan;
  hp_head_limits lim;
  int kind;         /* HTTP_REQUEST or HTTP_RESPONSE */
  size_t fed;       /* head bytes given to the scanner */
  size_t line_len;  /* first line with its LF (and skipped empty lines) */
  size_t head_len;  /* the whole head with its blank line, once done */
  hp_head_span url; /* request-target (requests) */
  hp_head_span reason; /* reason phrase (responses) */
  hp_head_field *fields; /* max_headers of them, the scanner's */
  uint8_t *flags;        /* HH_F_* of each field, once done */
  size_t n_fields;
  int method;   /* enum http_method (requests) */
  int status;   /* the answer to a bad head, when hp_head_parse said HH_ERROR */
  int code;     /* the status code (responses) */
  unsigned done : 1;      /* head complete */
  unsigned skip_body : 1; /* a response to HEAD: no body whatever it says */
  unsigned failed : 1;
  unsigned conn_close : 1; /* Connection (or Proxy-Connection): close */
  unsigned conn_keep : 1;  /* ... keep-alive */
} http_head;

/* kind is HTTP_REQUEST or HTTP_RESPONSE. */
void hp_head_init(http_head *h, enum http_parser_type kind,
                  const hp_head_limits *lim);
/* Frees the field arrays; h can be initialised again afterwards. */
void hp_head_free(http_head *h);
/* A response to a HEAD request: the parser expects no body. Before the
 * first hp_head_parse. */
void hp_head_expect_no_body(http_head *h);

/* Parses what is new in buf[0..len) (the bytes before were given in
 * earlier calls, at the same offsets). HH_MORE: the head is not complete
 * yet (and within the limits); HH_DONE: h->head_len bytes are the head,
 * the bytes after it belong to the body or to the next message (the
 * parser never looks at them); HH_ERROR: answer h->status and close. A
 * version other than HTTP/1.0 and HTTP/1.1 is 505. */
int hp_head_parse(http_head *h, const char *buf, size_t len);

/* After HH_DONE. */
int hp_head_method(const http_head *h); /* enum http_method (requests) */
int hp_head_status(const http_head *h); /* status code (responses) */
int hp_head_minor(const http_head *h);  /* 0 or 1: HTTP/1.0 or HTTP/1.1 */
/* The message allows a next one on the connection: HTTP/1.1 without
 * "Connection: close", HTTP/1.0 with "keep-alive". (A body framed by the
 * end of the connection does not: the caller knows that from
 * hp_head_framing.) */
int hp_head_keep_alive(const http_head *h);

/* How the message's body is framed (RFC 9112 section 6), strictly:
 * Transfer-Encoding must be exactly "chunked", never beside a
 * Content-Length nor in an HTTP/1.0 message; every Content-Length value
 * (several fields, or a list) must be the same 1*DIGIT below 2^62. A
 * request with neither has no body; a response with neither is framed by
 * the close, except those that never have a body (1xx, 204, 304, a
 * response to HEAD): *kind HB_NONE, and *length the valid Content-Length
 * they carry, if any (*has_length). Returns 0, or the status to answer:
 * for a request 400 (bad or conflicting framing) or 501 (a transfer
 * coding other than chunked), for a response 502. After HH_DONE. */
int hp_head_framing(const http_head *h, const char *buf, int *kind,
                    uint64_t *length, int *has_length);

/* The value of the first header called name (case-insensitive); 1 when
 * found, else 0. */
int hp_head_find(const http_head *h, const char *buf, const char *name,
                 hp_head_span *value);
/* Whether header i is hop-by-hop: Connection, Keep-Alive,
 * Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE,
 * Trailer, Upgrade, or a name listed in a Connection header (except
 * Host, Content-Length and Transfer-Encoding: they frame the message and
 * are judged by hp_head_framing, never dropped on a peer's say-so). The
 * rewrites leave out Content-Length and Transfer-Encoding too, and write
 * the proxy's own framing instead. */
int hp_head_hop_by_hop(const http_head *h, size_t i);

/* The request-target. */
enum hp_head_form { HH_FORM_AUTHORITY = 1, HH_FORM_ABSOLUTE = 2 };

typedef struct hp_head_target {
  int form;
  char host[256];  /* name or address, NUL-terminated, IPv6 without [] */
  uint16_t port;   /* from the target, or 80 */
  unsigned ipv6 : 1;
  hp_head_span path;  /* absolute-form: path, may be empty */
  hp_head_span query; /* absolute-form: query without '?', when has_query */
  unsigned has_query : 1;
} hp_head_target;

/* Parses the request-target of a complete request head: authority-form
 * (host:port) for CONNECT, absolute-form with the http scheme for other
 * methods. 0, or the status to answer: 400 (any other form, bad host or
 * port, userinfo, even empty), 501 (https:// is not forwarded). */
int hp_head_target_parse(const http_head *h, const char *buf,
                         hp_head_target *t);

/* The framing the proxy gives a response body it read framed as kind
 * (hp_head_framing), for a client of HTTP/1.client_minor: no body and
 * Content-Length stay as they are; chunked and close-delimited bodies
 * become chunked for an HTTP/1.1 client, close-delimited for an HTTP/1.0
 * one (which never receives chunked framing). */
int hp_head_reframe(int kind, int client_minor);

/* The framing header a rewritten head carries: kind HB_LENGTH writes
 * "Content-Length: length", HB_CHUNKED "Transfer-Encoding: chunked", the
 * others nothing. The peer's own Content-Length and Transfer-Encoding
 * fields are never copied. */
typedef struct hp_head_frame {
  int kind;
  uint64_t length;
} hp_head_frame;

/* An upper bound of the bytes hp_head_write_request/hp_head_write_response
 * write for this head. */
size_t hp_head_write_max(const http_head *h);
/* The request for the origin server: "METHOD origin-form HTTP/1.1" (the
 * proxy's own version, RFC 9110 section 6.2), a Host header from the
 * target (the client's Host headers are dropped, as RFC 9112 section
 * 3.2.2 asks), the client's other headers without the hop-by-hop and
 * framing ones, the framing header of fr, and "Via". Returns the length,
 * or -1 when cap is too small. */
ssize_t hp_head_write_request(const http_head *h, const char *buf,
                              const hp_head_target *t, const hp_head_frame *fr,
                              char *out, size_t cap);
/* The same request for an upstream that is an HTTP forward proxy
 * (open_http_forward.h): head[0..len) is a whole head
 * hp_head_write_request wrote for target t; written to out is that head
 * with its request-target in absolute form, "http://" and t's authority
 * (as the Host field has it: the host the client sent, ":port" unless
 * 80) before the origin-form target ("OPTIONS *" becomes the authority
 * alone, RFC 9112 section 3.2.4), and, when proxy_auth is not NULL, one
 * "Proxy-Authorization: <proxy_auth>" field (auth_len bytes, refused
 * with a control byte) before the empty line. At most
 * len + HP_HEAD_ABSOLUTE_EXTRA + auth_len bytes. Returns the length, or
 * -1 when cap is too small or the input is not such a head. The output
 * holds a credential: the caller wipes it once it is sent. */
#define HP_HEAD_ABSOLUTE_EXTRA                                                \
  (sizeof("http://[]:65535") - 1 + 255 +                                      \
   sizeof("Proxy-Authorization: \r\n") - 1)
ssize_t hp_head_write_absolute(const char *head, size_t len,
                               const hp_head_target *t, const char *proxy_auth,
                               size_t auth_len, char *out, size_t cap);
/* Whether v[0..len) may be a field value: no control byte but HTAB (no
 * CR, no LF: nothing that could end the line). */
int hp_head_value_ok(const char *v, size_t len);
/* The response for the client: "HTTP/1.1", the code and reason the parser
 * read, the headers without the hop-by-hop and framing ones, the framing
 * header of fr, "Via", then "Connection: close" when close_client, or
 * "Connection: keep-alive" for an HTTP/1.0 client (client_minor 0) whose
 * connection stays open. */
ssize_t hp_head_write_response(const http_head *h, const char *buf,
                               const hp_head_frame *fr, int close_client,
                               int client_minor, char *out, size_t cap);

/* Decodes a Proxy-Authorization value "Basic <base64(user:password)>".
 * The decoded bytes go to out (cap bytes; 512 holds the largest accepted
 * pair): *user and *pass point into out and are NUL-terminated. 0, or -1
 * when the scheme is not Basic, the base64 is invalid, there is no ':',
 * user or password exceeds 255 bytes, or either holds a control byte. */
int hp_head_basic_decode(const char *value, size_t len, char *out, size_t cap,
                         const char **user, size_t *user_len, const char **pass,
                         size_t *pass_len);

#endif

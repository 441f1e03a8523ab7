/* HTTP/1.x message heads for the http_proxy module, without I/O.
 *
 * - Bounded, incremental parsing of a request or response head with
 *   Debian's libhttp-parser (the Node.js parser): the caller keeps the
 *   bytes in one buffer (which may move between calls) and calls
 *   hh_parse after each read; the head's first line, its header bytes and
 *   its header count are limited, and the answer to a bad head is an HTTP
 *   status (400, 414, 431, 505).
 * - The request-target: authority-form for CONNECT, absolute-form
 *   http://host[:port]/path otherwise (https:// is 501, anything else 400).
 * - Rewriting: a request to origin-form with a correct Host header and a
 *   response for the client, both without hop-by-hop headers.
 * - Body framing: after the head, the same parser delimits the message's
 *   body (Content-Length, chunked, or until close) in the byte stream, so
 *   a body is forwarded as it arrives, verbatim, with bounded buffers.
 * - Proxy-Authorization: Basic decoding.
 *
 * Every offset (hh_span) is relative to the start of the head's buffer.
 */
#ifndef PH_HTTP_HEAD_H
#define PH_HTTP_HEAD_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Limits of one head; each is at least 1. */
typedef struct hh_limits {
  size_t max_line;         /* request or status line, with its CRLF */
  size_t max_header_bytes; /* header lines and the blank line after them */
  size_t max_headers;      /* header fields */
} hh_limits;

enum hh_result { HH_ERROR = -1, HH_MORE = 0, HH_DONE = 1 };

typedef struct hh_span {
  uint32_t off, len;
} hh_span;

typedef struct hh_field {
  hh_span name, value; /* value without surrounding whitespace */
  unsigned char hop;   /* hop-by-hop: not forwarded */
  unsigned char te;    /* a Transfer-Encoding field */
} hh_field;

typedef struct http_head {
  http_parser parser;
  hh_limits lim;
  const char *base; /* the buffer, only while the parser runs */
  size_t fed;       /* head bytes given to the parser */
  size_t scan;      /* bytes examined for the first line's end */
  size_t line_len;  /* first line with its LF; 0 until seen */
  size_t head_len;  /* the whole head with its blank line, once done */
  hh_span url;      /* request-target (requests) */
  hh_span reason;   /* reason phrase (responses) */
  hh_field *fields;
  size_t n_fields, cap_fields;
  int last_cb;  /* which data callback ran last (field or value) */
  int status;   /* the answer to a bad head, when hh_parse said HH_ERROR */
  unsigned started : 1;   /* a non-blank byte was seen */
  unsigned done : 1;      /* head complete */
  unsigned skip_body : 1; /* a response to HEAD: no body whatever it says */
  unsigned body_started : 1;
  unsigned body_done : 1;
  unsigned failed : 1;
} http_head;

/* kind is HTTP_REQUEST or HTTP_RESPONSE. */
void hh_init(http_head *h, enum http_parser_type kind, const hh_limits *lim);
/* Frees the field array; h can be initialised again afterwards. */
void hh_free(http_head *h);
/* A response to a HEAD request: the parser expects no body. Before the
 * first hh_parse. */
void hh_expect_no_body(http_head *h);

/* Parses what is new in buf[0..len) (the bytes before were given in
 * earlier calls, at the same offsets). HH_MORE: the head is not complete
 * yet (and within the limits); HH_DONE: h->head_len bytes are the head,
 * the bytes after it belong to the body or to the next message; HH_ERROR:
 * answer h->status and close. */
int hh_parse(http_head *h, const char *buf, size_t len);

/* After HH_DONE. */
int hh_method(const http_head *h);       /* enum http_method (requests) */
int hh_status(const http_head *h);       /* status code (responses) */
int hh_minor(const http_head *h);        /* 0 or 1: HTTP/1.0 or HTTP/1.1 */
/* The message allows a next one on the connection (HTTP/1.1 without
 * "Connection: close", HTTP/1.0 with "keep-alive") and is not framed by
 * the end of the connection. */
int hh_keep_alive(const http_head *h);
int hh_chunked(const http_head *h);   /* Transfer-Encoding: chunked */
int hh_needs_eof(const http_head *h); /* response body ends at close */

/* The value of the first header called name (case-insensitive); 1 when
 * found, else 0. */
int hh_find(const http_head *h, const char *buf, const char *name,
            hh_span *value);
/* Whether header i is hop-by-hop: Connection, Keep-Alive,
 * Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE,
 * Trailer, Upgrade, or a name listed in a Connection header (except
 * Host, Content-Length and Transfer-Encoding: they frame the message, and
 * dropping them on a peer's say-so would desynchronise the two sides).
 * Transfer-Encoding is kept: bodies are forwarded as they were framed. */
int hh_hop_by_hop(const http_head *h, size_t i);

/* The request-target. */
enum hh_form { HH_FORM_AUTHORITY = 1, HH_FORM_ABSOLUTE = 2 };

typedef struct hh_target {
  int form;
  char host[256];  /* name or address, NUL-terminated, IPv6 without [] */
  uint16_t port;   /* from the target, or 80 */
  unsigned ipv6 : 1;
  hh_span path;    /* absolute-form: path, may be empty */
  hh_span query;   /* absolute-form: query without '?', when has_query */
  unsigned has_query : 1;
} hh_target;

/* Parses the request-target of a complete request head: authority-form
 * (host:port) for CONNECT, absolute-form with the http scheme for other
 * methods. 0, or the status to answer: 400 (any other form, bad host or
 * port, userinfo), 501 (https:// or another scheme is not forwarded). */
int hh_target_parse(const http_head *h, const char *buf, hh_target *t);

/* An upper bound of the bytes hh_write_request/hh_write_response write
 * for this head. */
size_t hh_write_max(const http_head *h);
/* The request for the origin server: "METHOD origin-form HTTP/1.x", a
 * Host header from the target (the client's Host headers are dropped, as
 * RFC 9112 section 3.2.2 asks), the client's other headers without the
 * hop-by-hop ones, "Via", and "Connection: keep-alive" for HTTP/1.0.
 * Returns the length, or -1 when cap is too small. */
ssize_t hh_write_request(const http_head *h, const char *buf,
                         const hh_target *t, char *out, size_t cap);
/* The response for the client: the status line (rebuilt from the
 * version, code and reason the parser read), the headers without the
 * hop-by-hop ones, "Via", then "Connection: close" when
 * close_client, or "Connection: keep-alive" for an HTTP/1.0 client
 * (client_minor 0) whose connection stays open. */
ssize_t hh_write_response(const http_head *h, const char *buf,
                          int close_client, int client_minor, char *out,
                          size_t cap);

/* Body framing, after HH_DONE. hh_body_begin: HH_DONE when the message
 * has no body (the next message starts at head_len), HH_MORE when a body
 * follows. hh_body: examines data[0..len), the next bytes after what it
 * saw before; HH_MORE: all of them are body; HH_DONE: the first *used
 * bytes end the body (the rest is the next message); HH_ERROR: malformed
 * framing (bad chunk size, ...). hh_body_eof: the peer closed; HH_DONE
 * when that ends a body framed by close, HH_ERROR when the body was cut
 * short. */
int hh_body_begin(http_head *h);
int hh_body(http_head *h, const char *data, size_t len, size_t *used);
int hh_body_eof(http_head *h);

/* Decodes a Proxy-Authorization value "Basic <base64(user:password)>".
 * The decoded bytes go to out (cap bytes; 512 holds the largest accepted
 * pair): *user and *pass point into out and are NUL-terminated. 0, or -1
 * when the scheme is not Basic, the base64 is invalid, there is no ':',
 * user or password exceeds 255 bytes, or either holds a control byte. */
int hh_basic_decode(const char *value, size_t len, char *out, size_t cap,
                    const char **user, size_t *user_len, const char **pass,
                    size_t *pass_len);

#endif

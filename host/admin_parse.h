/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin listener's HTTP/1.x request-head parser: pure (bytes in,
 * result out, no I/O, no allocation), so it can be fuzzed on its own.
 * The bytes are scanned by the shared strict scanner
 * (modules/lib/http1_head.h, compiled into the host); at most 100 field
 * lines (more is TOO_LARGE), a Content-Length of at most 18 digits.
 *
 * Accepts CRLF or bare LF line ends (RFC 9112 2.2), an origin-form target
 * ("/path?query"), versions HTTP/1.0 and HTTP/1.1 (other HTTP/1.x minors
 * too, as 1.1), and header lines of the form "name: value" whose name is
 * a token. Of the header values, only those the admin routes need are
 * read (ABI 1.3): Content-Length, Transfer-Encoding (only whether it is
 * there), Authorization, Content-Type and Cookie (the status page's
 * session; located, not interpreted). A Content-Length that is not a
 * number, or two that differ, and a second Authorization, Content-Type
 * or Cookie (RFC 6265 5.4: a user agent sends one), make the head BAD: a request
 * whose framing or credentials could be read two ways is refused. */
#ifndef PH_ADMIN_PARSE_H
#define PH_ADMIN_PARSE_H

#include <stddef.h>

enum admin_parse_result {
  ADMIN_PARSE_INCOMPLETE = 0, /* need more bytes */
  ADMIN_PARSE_DONE,           /* a whole, well-formed head */
  ADMIN_PARSE_BAD,            /* malformed: answer 400 */
  ADMIN_PARSE_TOO_LARGE,      /* no end of head within max bytes: 431 */
  ADMIN_PARSE_VERSION         /* well-formed, but not HTTP/1.x: 505 */
};

typedef struct admin_request {
  /* Point into the parsed bytes; valid when the result is DONE (method
   * and version also on VERSION). Not NUL-terminated. */
  const char *method;
  size_t method_len;
  const char *path; /* the target without its query string */
  size_t path_len;
  const char *query; /* after '?', without it; NULL when there is none */
  size_t query_len;
  int minor;        /* HTTP/1.minor */
  size_t head_len;  /* bytes up to and including the empty line */
  /* Header values, leading and trailing whitespace removed; NULL when
   * absent (valid when the result is DONE). */
  const char *authorization;
  size_t authorization_len;
  const char *content_type;
  size_t content_type_len;
  const char *cookie;
  size_t cookie_len;
  long long content_length; /* -1 when absent */
  int transfer_encoding;    /* 1 when a Transfer-Encoding line was sent */
} admin_request;

/* The body framing of a DONE head, for a request that may have a body:
 * 0 (no body or Content-Length <= max_body), 411 (Transfer-Encoding
 * without Content-Length: only Content-Length bodies are read), 400
 * (both: RFC 9112 6.1 calls it an attack), 413 (Content-Length above
 * max_body). */
int admin_body_framing(const admin_request *req, size_t max_body);

/* Parses the first len bytes of p. A malformed request line is reported
 * as soon as its line end has arrived, before the rest of the head. When
 * the head has not ended within max bytes, returns TOO_LARGE (bytes past
 * max are never looked at). */
enum admin_parse_result admin_parse_head(const char *p, size_t len,
                                         size_t max, admin_request *req);

#endif

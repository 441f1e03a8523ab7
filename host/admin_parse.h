/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin listener's HTTP/1.x request-head parser: pure (bytes in,
 * result out, no I/O, no allocation), so it can be fuzzed on its own.
 *
 * Accepts CRLF or bare LF line ends (RFC 9112 2.2), an origin-form target
 * ("/path?query"), versions HTTP/1.0 and HTTP/1.1 (other HTTP/1.x minors
 * too, as 1.1), and header lines of the form "name: value" whose name is
 * a token. Header values are not interpreted. */
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
  int minor;        /* HTTP/1.minor */
  size_t head_len;  /* bytes up to and including the empty line */
} admin_request;

/* Parses the first len bytes of p. A malformed request line is reported
 * as soon as its line end has arrived, before the rest of the head. When
 * the head has not ended within max bytes, returns TOO_LARGE (bytes past
 * max are never looked at). */
enum admin_parse_result admin_parse_head(const char *p, size_t len,
                                         size_t max, admin_request *req);

#endif

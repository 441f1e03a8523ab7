/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_parse.h. Grammar (RFC 9110/9112, reduced to what the admin
 * endpoints need):
 *
 *   head         = request-line *( field-line ) empty-line
 *   request-line = method SP origin-form SP "HTTP/" DIGIT "." DIGIT EOL
 *   field-line   = token ":" *( SP / HTAB / VCHAR / obs-text ) EOL
 *   EOL          = CRLF / LF
 *
 * The whole head is parsed again on every call; it is at most a few KiB
 * and the caller's deadline bounds how often a slow client can make us. */
#include "admin_parse.h"

#include <string.h>

static int is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9'))
    return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_visible(unsigned char c) { return c >= 0x21 && c <= 0x7e; }

static int is_field_char(unsigned char c) {
  return c == ' ' || c == '\t' || is_visible(c) || c >= 0x80;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The end of the line starting at pos: the index of its '\n' within
 * [pos, n), or n when it has not arrived. *content_end excludes a CR
 * before the LF. */
static size_t line_end(const char *p, size_t pos, size_t n,
                       size_t *content_end) {
  const char *nl = memchr(p + pos, '\n', n - pos);
  if (!nl)
    return n;
  size_t e = (size_t)(nl - p);
  *content_end = (e > pos && p[e - 1] == '\r') ? e - 1 : e;
  return e;
}

/* A request line can only hold printable ASCII and spaces, so a partial
 * one holding anything else (TLS, binary junk) is refused at once
 * instead of waiting for a line end that may never come. A CR is
 * allowed as the very last byte so far: the LF may follow. */
static int partial_line_ok(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (!(c == ' ' || is_visible(c) || (c == '\r' && i + 1 == n)))
      return 0;
  }
  return 1;
}

static enum admin_parse_result parse_version(const char *v, size_t n,
                                             admin_request *req) {
  if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || !is_digit((unsigned char)v[5]) ||
      v[6] != '.' || !is_digit((unsigned char)v[7]))
    return ADMIN_PARSE_BAD;
  req->minor = v[7] - '0';
  return v[5] == '1' ? ADMIN_PARSE_DONE : ADMIN_PARSE_VERSION;
}

static enum admin_parse_result parse_request_line(const char *p, size_t n,
                                                  admin_request *req) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)p[i]))
    i++;
  if (i == 0 || i >= n || p[i] != ' ')
    return ADMIN_PARSE_BAD;
  req->method = p;
  req->method_len = i;

  size_t t = ++i;
  while (i < n && is_visible((unsigned char)p[i]))
    i++;
  if (i == t || i >= n || p[i] != ' ' || p[t] != '/')
    return ADMIN_PARSE_BAD;
  const char *q = memchr(p + t, '?', i - t);
  req->path = p + t;
  req->path_len = q ? (size_t)(q - (p + t)) : i - t;
  if (q) {
    req->query = q + 1;
    req->query_len = (size_t)(p + i - (q + 1));
  }

  i++;
  return parse_version(p + i, n - i, req);
}

static int name_is(const char *p, size_t n, const char *want) {
  if (n != strlen(want))
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != want[i])
      return 0;
  }
  return 1;
}

/* 1-18 digits (so that it fits a long long without overflow); -1. */
static long long parse_length(const char *v, size_t n) {
  if (n == 0 || n > 18)
    return -1;
  long long x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit((unsigned char)v[i]))
      return -1;
    x = x * 10 + (v[i] - '0');
  }
  return x;
}

/* Stores a value once; a second one is ambiguous. 0 or -1. */
static int set_once(const char **at, size_t *len, const char *v, size_t n) {
  if (*at)
    return -1;
  *at = v;
  *len = n;
  return 0;
}

/* Checks a field line and reads the fields the routes need. 1 or 0. */
static int field_line(const char *p, size_t n, admin_request *req) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)p[i]))
    i++;
  /* No name, or whitespace before the colon, or obs-fold: all refused. */
  if (i == 0 || i >= n || p[i] != ':')
    return 0;
  size_t name_len = i;
  for (i++; i < n; i++)
    if (!is_field_char((unsigned char)p[i]))
      return 0;
  size_t v = name_len + 1, e = n;
  while (v < e && (p[v] == ' ' || p[v] == '\t'))
    v++;
  while (e > v && (p[e - 1] == ' ' || p[e - 1] == '\t'))
    e--;
  if (name_is(p, name_len, "content-length")) {
    long long len = parse_length(p + v, e - v);
    if (len < 0 || (req->content_length >= 0 && req->content_length != len))
      return 0;
    req->content_length = len;
  } else if (name_is(p, name_len, "transfer-encoding")) {
    req->transfer_encoding = 1;
  } else if (name_is(p, name_len, "authorization")) {
    return set_once(&req->authorization, &req->authorization_len, p + v,
                    e - v) == 0;
  } else if (name_is(p, name_len, "content-type")) {
    return set_once(&req->content_type, &req->content_type_len, p + v,
                    e - v) == 0;
  }
  return 1;
}

enum admin_parse_result admin_parse_head(const char *p, size_t len,
                                         size_t max, admin_request *req) {
  memset(req, 0, sizeof(*req));
  req->content_length = -1;
  size_t n = len < max ? len : max;
  if (n == 0)
    return len >= max ? ADMIN_PARSE_TOO_LARGE : ADMIN_PARSE_INCOMPLETE;
  size_t ce = 0;
  size_t e = line_end(p, 0, n, &ce);
  if (e == n) {
    if (!partial_line_ok(p, n))
      return ADMIN_PARSE_BAD;
    return len >= max ? ADMIN_PARSE_TOO_LARGE : ADMIN_PARSE_INCOMPLETE;
  }
  enum admin_parse_result r = parse_request_line(p, ce, req);
  if (r != ADMIN_PARSE_DONE)
    return r;

  for (size_t pos = e + 1;;) {
    e = line_end(p, pos, n, &ce);
    if (e == n)
      return len >= max ? ADMIN_PARSE_TOO_LARGE : ADMIN_PARSE_INCOMPLETE;
    if (ce == pos) {
      req->head_len = e + 1;
      return ADMIN_PARSE_DONE;
    }
    if (!field_line(p + pos, ce - pos, req))
      return ADMIN_PARSE_BAD;
    pos = e + 1;
  }
}

int admin_body_framing(const admin_request *req, size_t max_body) {
  if (req->transfer_encoding)
    return req->content_length >= 0 ? 400 : 411;
  if (req->content_length > 0 &&
      (unsigned long long)req->content_length > (unsigned long long)max_body)
    return 413;
  return 0;
}

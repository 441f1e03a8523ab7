/* SPDX-License-Identifier: BSD-2-Clause */
/* See admin_parse.h. The head is scanned by the shared strict scanner
 * (modules/lib/http1_head.c, compiled into the host too), with bare LF
 * line ends allowed; this file keeps the admin listener's own rules on
 * top: an origin-form target, HTTP/1.x only (505), and the fields the
 * routes read (one Authorization, one Content-Type).
 *
 * The whole head is scanned again on every call; it is at most a few KiB
 * and the caller's deadline bounds how often a slow client can make us. */
#include "admin_parse.h"

#include <string.h>

#include "lib/http1_head.h"

/* At most this many field lines (more is TOO_LARGE). */
#define ADMIN_FIELDS_MAX 100

/* The request line is whole: the target and the version. */
static enum admin_parse_result request_line(const char *p, const h1_head *h,
                                            admin_request *req) {
  req->method = p + h->method.off;
  req->method_len = h->method.len;
  req->minor = h->minor;
  const char *t = p + h->target.off;
  if (t[0] != '/')
    return ADMIN_PARSE_BAD;
  const char *q = memchr(t, '?', h->target.len);
  req->path = t;
  req->path_len = q ? (size_t)(q - t) : h->target.len;
  if (q) {
    req->query = q + 1;
    req->query_len = (size_t)(t + h->target.len - (q + 1));
  }
  return h->major == 1 ? ADMIN_PARSE_DONE : ADMIN_PARSE_VERSION;
}

/* Stores a value once; a second one is ambiguous. 0 or -1. */
static int set_once(const char **at, size_t *len, const char *v, size_t n) {
  if (*at)
    return -1;
  *at = v;
  *len = n;
  return 0;
}

static enum admin_parse_result fields(const char *p, const h1_head *h,
                                      const h1_field *f, admin_request *req) {
  for (uint32_t i = 0; i < h->n_fields; i++) {
    const char *v = p + f[i].value.off;
    size_t n = f[i].value.len;
    if (h1_name_is(h, p, i, "authorization")) {
      if (set_once(&req->authorization, &req->authorization_len, v, n) < 0)
        return ADMIN_PARSE_BAD;
    } else if (h1_name_is(h, p, i, "content-type")) {
      if (set_once(&req->content_type, &req->content_type_len, v, n) < 0)
        return ADMIN_PARSE_BAD;
    } else if (h1_name_is(h, p, i, "cookie")) {
      if (set_once(&req->cookie, &req->cookie_len, v, n) < 0)
        return ADMIN_PARSE_BAD;
    }
  }
  req->content_length = h->content_length;
  req->transfer_encoding = h->te_fields > 0;
  req->head_len = h->head_len;
  return ADMIN_PARSE_DONE;
}

static enum admin_parse_result scan_error(const h1_head *h) {
  return h->error == H1_E_HEAD_TOO_LONG || h->error == H1_E_TOO_MANY_FIELDS
             ? ADMIN_PARSE_TOO_LARGE
             : ADMIN_PARSE_BAD;
}

enum admin_parse_result admin_parse_head(const char *p, size_t len,
                                         size_t max, admin_request *req) {
  memset(req, 0, sizeof(*req));
  req->content_length = -1;
  if (max == 0)
    return ADMIN_PARSE_TOO_LARGE;
  h1_head h;
  h1_field f[ADMIN_FIELDS_MAX];
  h1_limits lim = {0, 0, max > UINT32_MAX ? UINT32_MAX : (uint32_t)max,
                   ADMIN_FIELDS_MAX};
  h1_init(&h, H1_REQUEST, H1_LF | H1_PAUSE_START, &lim, f);
  size_t used = 0;
  int r = h1_feed(&h, p, len, &used);
  if (r == H1_MORE)
    return ADMIN_PARSE_INCOMPLETE;
  if (r == H1_ERROR)
    return scan_error(&h);
  /* H1_START: a malformed or non-1.x request line is answered at once. */
  enum admin_parse_result res = request_line(p, &h, req);
  if (res != ADMIN_PARSE_DONE)
    return res;
  size_t more = 0;
  r = h1_feed(&h, p + used, len - used, &more);
  if (r == H1_MORE)
    return ADMIN_PARSE_INCOMPLETE;
  if (r == H1_ERROR) {
    memset(req, 0, sizeof(*req));
    req->content_length = -1;
    return scan_error(&h);
  }
  return fields(p, &h, f, req);
}

int admin_body_framing(const admin_request *req, size_t max_body) {
  if (req->transfer_encoding)
    return req->content_length >= 0 ? 400 : 411;
  if (req->content_length > 0 &&
      (unsigned long long)req->content_length > (unsigned long long)max_body)
    return 413;
  return 0;
}

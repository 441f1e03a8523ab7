/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP/1.x heads without I/O (http_head.h).
 *
 * libhttp-parser runs over the head's buffer as bytes arrive; its
 * callbacks record offsets (never pointers, so the buffer may move) and
 * enforce the field count, and the first line and header byte limits are
 * checked on the raw bytes before the parser sees them. The parser is
 * paused when the head is complete and never resumed: the body (or the
 * next message) is not its business. The lenient parser decides nothing
 * that is forwarded: the framing comes from the fields (hp_head_framing), the
 * heads are rewritten from what was recorded, and a bare CR, which the
 * parser would read as a line end, is refused.
 *
 * A paused on_headers_complete leaves the head's last LF unconsumed.
 */
#include "http_head.h"
#include "http_body.h"

#include "lib/bw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { CB_NONE = 0, CB_FIELD, CB_VALUE };

/* The field array grows by doubling from this, up to max_headers. */
#define HH_FIELDS_FIRST 16u
/* hp_head_write_max's room for what the rewrite adds: request line target
 * form, Host, Via and Connection lines. */
#define HH_WRITE_EXTRA 512u

static int on_url(http_parser *p, const char *at, size_t len);
static int on_status(http_parser *p, const char *at, size_t len);
static int on_header_field(http_parser *p, const char *at, size_t len);
static int on_header_value(http_parser *p, const char *at, size_t len);
static int on_headers_complete(http_parser *p);

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_status = on_status,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
};

/* ---- small helpers ------------------------------------------------------ */

static int cb_fail(http_head *h, int status) {
  if (!h->status)
    h->status = status;
  return -1;
}

static int fail(http_head *h, int status) {
  if (!h->status)
    h->status = status;
  h->failed = 1;
  return HH_ERROR;
}

static int eq_ci(const char *a, size_t alen, const char *b) {
  size_t blen = strlen(b);
  return alen == blen && strncasecmp(a, b, blen) == 0;
}

static int is_ows(char c) { return c == ' ' || c == '\t'; }

static const char *span_ptr(const char *buf, hp_head_span s) {
  return buf + s.off;
}

/* ---- parser callbacks ----------------------------------------------------- */

static int on_url(http_parser *p, const char *at, size_t len) {
  http_head *h = p->data;
  if (h->done)
    return 0;
  uint32_t off = (uint32_t)(at - h->base);
  if (h->url.len == 0)
    h->url.off = off;
  else if (off != h->url.off + h->url.len)
    return cb_fail(h, 400);
  h->url.len += (uint32_t)len;
  return 0;
}

/* The reason phrase; rewritten into the client's status line, so it may
 * hold no control byte (the lenient parser takes any). */
static int on_status(http_parser *p, const char *at, size_t len) {
  http_head *h = p->data;
  if (h->done)
    return 0;
  uint32_t off = (uint32_t)(at - h->base);
  if (h->reason.len == 0)
    h->reason.off = off;
  else if (off != h->reason.off + h->reason.len)
    return cb_fail(h, 400);
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)at[i] < 0x20 && at[i] != '\t') || at[i] == 0x7f)
      return cb_fail(h, 400);
  h->reason.len += (uint32_t)len;
  return 0;
}

static int grow_fields(http_head *h) {
  if (h->n_fields < h->cap_fields)
    return 0;
  size_t cap = h->cap_fields ? h->cap_fields * 2 : HH_FIELDS_FIRST;
  if (cap > h->lim.max_headers)
    cap = h->lim.max_headers;
  hp_head_field *f = realloc(h->fields, cap * sizeof(*f));
  if (!f)
    return -1;
  h->fields = f;
  h->cap_fields = cap;
  return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
  http_head *h = p->data;
  /* The lenient parser lets SP into names ("Transfer-Encoding : x"): a
   * field the parser and the origin could read differently. RFC 9112
   * section 5.1 asks for 400; trailers are refused alike. */
  if (memchr(at, ' ', len))
    return cb_fail(h, 400);
  uint32_t off = (uint32_t)(at - h->base);
  if (h->last_cb != CB_FIELD) {
    if (h->n_fields >= h->lim.max_headers)
      return cb_fail(h, 431);
    if (grow_fields(h) < 0)
      return cb_fail(h, 503);
    hp_head_field *f = &h->fields[h->n_fields++];
    memset(f, 0, sizeof(*f));
    f->name.off = off;
    f->name.len = (uint32_t)len;
  } else {
    hp_head_field *f = &h->fields[h->n_fields - 1];
    if (off != f->name.off + f->name.len)
      return cb_fail(h, 400);
    f->name.len += (uint32_t)len;
  }
  h->last_cb = CB_FIELD;
  return 0;
}

/* A value arriving in two pieces that do not touch, or starting on a
 * later line than its name, is an obsolete line folding (RFC 9112
 * section 5.2): rejected, as a proxy may do, rather than repaired. */
static int on_header_value(http_parser *p, const char *at, size_t len) {
  http_head *h = p->data;
  if (h->n_fields == 0)
    return cb_fail(h, 400);
  hp_head_field *f = &h->fields[h->n_fields - 1];
  uint32_t off = (uint32_t)(at - h->base);
  if (h->last_cb != CB_VALUE) {
    uint32_t from = f->name.off + f->name.len;
    if (len == 0) {
      off = from; /* empty value: the parser points at the next line */
    } else if (off < from || memchr(h->base + from, '\n', off - from)) {
      return cb_fail(h, 400);
    }
    f->value.off = off;
    f->value.len = (uint32_t)len;
  } else {
    if (off != f->value.off + f->value.len)
      return cb_fail(h, 400);
    f->value.len += (uint32_t)len;
  }
  h->last_cb = CB_VALUE;
  return 0;
}

static int no_body_status(int status) {
  return status / 100 == 1 || status == 204 || status == 304;
}

static int on_headers_complete(http_parser *p) {
  http_head *h = p->data;
  h->done = 1;
  http_parser_pause(p, 1);
  /* 1: the parser expects no body, so it does not refuse a head whose
   * framing fields it would not read a body by (hp_head_framing judges). */
  return 1;
}

/* ---- head parsing ------------------------------------------------------- */

void hp_head_init(http_head *h, enum http_parser_type kind,
                  const hp_head_limits *lim) {
  memset(h, 0, sizeof(*h));
  http_parser_init(&h->parser, kind);
  h->parser.data = h;
  h->lim = *lim;
  if (h->lim.max_headers < 1)
    h->lim.max_headers = 1;
}

void hp_head_free(http_head *h) {
  free(h->fields);
  h->fields = NULL;
  h->n_fields = h->cap_fields = 0;
}

void hp_head_expect_no_body(http_head *h) { h->skip_body = 1; }

/* Finds the end of the first line (leading blank lines count towards it,
 * as the parser skips them). 414 when it is or will be longer than
 * max_line; 400 for a CR that does not end it: the lenient parser ends
 * the line at "CR + any byte", and a status line copied to the client
 * must mean the same to every reader. */
static int find_line(http_head *h, const char *buf, size_t len) {
  while (h->scan < len && !h->line_len) {
    char c = buf[h->scan];
    if (!h->started) {
      h->started = c != '\r' && c != '\n';
    } else if (c == '\n') {
      h->line_len = h->scan + 1;
    } else if (c == '\r') {
      if (h->scan + 1 == len)
        break; /* look again when the next byte is here */
      if (buf[h->scan + 1] != '\n')
        return 400;
    }
    h->scan++;
  }
  if (h->line_len)
    return h->line_len > h->lim.max_line ? 414 : 0;
  return len >= h->lim.max_line ? 414 : 0;
}

static int errno_status(enum http_errno e) {
  return e == HPE_HEADER_OVERFLOW ? 431 : 400;
}

static void trim_values(http_head *h, const char *buf) {
  for (size_t i = 0; i < h->n_fields; i++) {
    hp_head_span *v = &h->fields[i].value;
    while (v->len > 0 && is_ows(buf[v->off + v->len - 1]))
      v->len--;
  }
}

/* Framing fields never become hop-by-hop through a Connection list. */
static int framing_field(const char *name, size_t len) {
  return eq_ci(name, len, "host") || eq_ci(name, len, "content-length") ||
         eq_ci(name, len, "transfer-encoding");
}

static int fixed_hop(const char *name, size_t len) {
  static const char *const hop[] = {
      "connection", "keep-alive", "proxy-connection", "proxy-authorization",
      "proxy-authenticate", "te", "trailer", "upgrade", NULL};
  for (int i = 0; hop[i]; i++)
    if (eq_ci(name, len, hop[i]))
      return 1;
  return 0;
}

static int connection_field(const char *name, size_t len) {
  return eq_ci(name, len, "connection") ||
         eq_ci(name, len, "proxy-connection");
}

/* Marks every field named by the token buf[t..t+tlen). */
static void mark_listed(http_head *h, const char *buf, const char *tok,
                        size_t tlen) {
  if (tlen == 0 || framing_field(tok, tlen))
    return;
  for (size_t k = 0; k < h->n_fields; k++) {
    hp_head_field *f = &h->fields[k];
    if (f->name.len == tlen &&
        strncasecmp(span_ptr(buf, f->name), tok, tlen) == 0)
      f->hop = 1;
  }
}

static void mark_hop(http_head *h, const char *buf) {
  for (size_t i = 0; i < h->n_fields; i++) {
    hp_head_field *f = &h->fields[i];
    if (fixed_hop(span_ptr(buf, f->name), f->name.len))
      f->hop = 1;
    if (eq_ci(span_ptr(buf, f->name), f->name.len, "transfer-encoding"))
      f->te = 1;
    if (eq_ci(span_ptr(buf, f->name), f->name.len, "content-length"))
      f->cl = 1;
  }
  for (size_t i = 0; i < h->n_fields; i++) {
    hp_head_field *f = &h->fields[i];
    if (!connection_field(span_ptr(buf, f->name), f->name.len))
      continue;
    const char *v = span_ptr(buf, f->value), *end = v + f->value.len;
    while (v < end) {
      const char *comma = memchr(v, ',', (size_t)(end - v));
      const char *te = comma ? comma : end;
      const char *ts = v;
      while (ts < te && is_ows(*ts))
        ts++;
      const char *tz = te;
      while (tz > ts && is_ows(tz[-1]))
        tz--;
      mark_listed(h, buf, ts, (size_t)(tz - ts));
      v = comma ? comma + 1 : end;
    }
  }
}

/* A CR not followed by LF: the parser takes "CR + any byte" as a line end
 * where other readers do not (RFC 9112 section 2.2 lets a recipient
 * refuse it). */
static int bare_cr(const char *buf, size_t len) {
  for (const char *p = memchr(buf, '\r', len); p;
       p = memchr(p + 1, '\r', len - (size_t)(p + 1 - buf)))
    if ((size_t)(p + 1 - buf) == len || p[1] != '\n')
      return 1;
  return 0;
}

static int head_done(http_head *h, const char *buf, size_t len,
                     size_t got) {
  if (HTTP_PARSER_ERRNO(&h->parser) != HPE_PAUSED)
    return fail(h, 400);
  h->head_len = h->fed + got + 1; /* the unconsumed last LF */
  if (h->head_len > len || buf[h->head_len - 1] != '\n' || !h->line_len)
    return fail(h, 400);
  h->fed = h->head_len;
  if (h->head_len - h->line_len > h->lim.max_header_bytes)
    return fail(h, 431);
  if (h->parser.http_major != 1 || h->parser.http_minor > 1)
    return fail(h, 505);
  if (bare_cr(buf, h->head_len))
    return fail(h, 400);
  if (h->parser.type == HTTP_REQUEST && h->url.len == 0)
    return fail(h, 400);
  trim_values(h, buf);
  mark_hop(h, buf);
  return HH_DONE;
}

int hp_head_parse(http_head *h, const char *buf, size_t len) {
  if (h->failed)
    return HH_ERROR;
  if (h->done)
    return HH_DONE;
  if (len <= h->fed)
    return HH_MORE;
  int st = find_line(h, buf, len);
  if (st)
    return fail(h, st);
  h->base = buf;
  size_t got = http_parser_execute(&h->parser, &settings, buf + h->fed,
                                   len - h->fed);
  h->base = NULL;
  if (h->status)
    return fail(h, h->status);
  if (h->done)
    return head_done(h, buf, len, got);
  enum http_errno e = HTTP_PARSER_ERRNO(&h->parser);
  if (e != HPE_OK)
    return fail(h, errno_status(e));
  h->fed = len;
  /* Not complete yet with every header byte used: it cannot fit. */
  if (h->line_len && len - h->line_len >= h->lim.max_header_bytes)
    return fail(h, 431);
  return HH_MORE;
}

int hp_head_method(const http_head *h) { return (int)h->parser.method; }
int hp_head_status(const http_head *h) { return (int)h->parser.status_code; }
int hp_head_minor(const http_head *h) { return h->parser.http_minor > 0; }
int hp_head_keep_alive(const http_head *h) {
  const http_parser *p = &h->parser;
  if (p->flags & F_CONNECTION_CLOSE)
    return 0;
  return h->parser.http_minor > 0 || (p->flags & F_CONNECTION_KEEP_ALIVE);
}

/* ---- body framing ------------------------------------------------------ */

/* Calls fn for each element of a field's comma-separated value, without
 * its surrounding whitespace (empty elements included); stops at the
 * first nonzero return and returns it. */
static int each_element(const char *v, size_t len,
                        int (*fn)(const char *e, size_t n, void *arg),
                        void *arg) {
  const char *end = v + len;
  for (;;) {
    const char *comma = memchr(v, ',', (size_t)(end - v));
    const char *e = comma ? comma : end, *a = v;
    while (a < e && is_ows(*a))
      a++;
    while (e > a && is_ows(e[-1]))
      e--;
    int r = fn(a, (size_t)(e - a), arg);
    if (r || !comma)
      return r;
    v = comma + 1;
  }
}

/* Content-Length values must all be the same number. */
#define HH_MAX_LENGTH (UINT64_C(1) << 62)
typedef struct length_acc {
  uint64_t value;
  int seen;
} length_acc;

static int length_element(const char *e, size_t n, void *arg) {
  length_acc *a = arg;
  if (n == 0 || n > 19)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (e[i] < '0' || e[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(e[i] - '0');
  }
  if (v >= HH_MAX_LENGTH || (a->seen && v != a->value))
    return -1;
  a->value = v;
  a->seen = 1;
  return 0;
}

/* Transfer-Encoding elements, in order across fields: counts them and
 * remembers whether the last non-empty one is "chunked". */
typedef struct coding_acc {
  int codings, chunked_last;
} coding_acc;

static int coding_element(const char *e, size_t n, void *arg) {
  coding_acc *a = arg;
  if (n == 0)
    return 0; /* empty list elements do not count (RFC 9110 5.6.1) */
  a->codings++;
  a->chunked_last = eq_ci(e, n, "chunked");
  return 0;
}

int hp_head_framing(const http_head *h, const char *buf, int *kind,
                    uint64_t *length, int *has_length) {
  int request = h->parser.type == HTTP_REQUEST;
  int bad = request ? 400 : 502;
  length_acc la = {0, 0};
  coding_acc ca = {0, 0};
  int te_fields = 0;
  for (size_t i = 0; i < h->n_fields; i++) {
    const hp_head_field *f = &h->fields[i];
    if (f->cl && each_element(span_ptr(buf, f->value), f->value.len,
                              length_element, &la))
      return bad;
    if (f->te) {
      te_fields++;
      each_element(span_ptr(buf, f->value), f->value.len, coding_element,
                   &ca);
    }
  }
  *kind = HB_NONE;
  *length = la.value;
  *has_length = la.seen;
  if (te_fields) {
    /* RFC 9112 section 6.1: with Content-Length, or in HTTP/1.0, the
     * framing is faulty (a smuggling attempt, likely). */
    if (la.seen || h->parser.http_minor == 0 || ca.codings == 0)
      return bad;
    if (!ca.chunked_last)
      return bad; /* section 6.3: the length cannot be determined */
    if (ca.codings > 1)
      return request ? 501 : 502; /* a coding we do not decode */
  }
  if (!request &&
      (h->skip_body || no_body_status((int)h->parser.status_code)))
    return 0;
  if (te_fields)
    *kind = HB_CHUNKED;
  else if (la.seen)
    *kind = HB_LENGTH;
  else
    *kind = request ? HB_NONE : HB_CLOSE;
  return 0;
}

int hp_head_find(const http_head *h, const char *buf, const char *name,
                 hp_head_span *value) {
  for (size_t i = 0; i < h->n_fields; i++)
    if (eq_ci(span_ptr(buf, h->fields[i].name), h->fields[i].name.len,
              name)) {
      *value = h->fields[i].value;
      return 1;
    }
  return 0;
}

int hp_head_hop_by_hop(const http_head *h, size_t i) {
  return i < h->n_fields && h->fields[i].hop;
}

int hp_head_reframe(int kind, int client_minor) {
  if (kind == HB_CHUNKED || kind == HB_CLOSE)
    return client_minor ? HB_CHUNKED : HB_CLOSE;
  return kind;
}

/* ---- request-target ------------------------------------------------------- */

static int copy_host(hp_head_target *t, const char *h, size_t len) {
  if (len == 0 || len >= sizeof(t->host))
    return 400;
  for (size_t i = 0; i < len; i++)
    if (h[i] == '%') /* IPv6 zone identifiers name local interfaces */
      return 400;
  memcpy(t->host, h, len);
  t->host[len] = '\0';
  t->ipv6 = memchr(h, ':', len) != NULL;
  return 0;
}

static int parse_absolute(const char *u, const struct http_parser_url *pu,
                          hp_head_target *t) {
  if (!(pu->field_set & (1 << UF_SCHEMA)))
    return 400; /* origin-form or asterisk: we are a proxy */
  const char *scheme = u + pu->field_data[UF_SCHEMA].off;
  size_t slen = pu->field_data[UF_SCHEMA].len;
  if (eq_ci(scheme, slen, "https"))
    return 501; /* TLS to the origin is the client's: use CONNECT */
  if (!eq_ci(scheme, slen, "http"))
    return 400;
  if (!(pu->field_set & (1 << UF_HOST)))
    return 400;
  /* Userinfo, even empty ("http://@host/"): the parser only reports a
   * non-empty one, so look for the '@' before the host. */
  const char *auth = scheme + slen + 3; /* after "://" */
  if ((pu->field_set & (1 << UF_USERINFO)) ||
      memchr(auth, '@', (size_t)(u + pu->field_data[UF_HOST].off - auth)))
    return 400;
  t->form = HH_FORM_ABSOLUTE;
  t->port = 80;
  return 0;
}

int hp_head_target_parse(const http_head *h, const char *buf,
                         hp_head_target *t) {
  memset(t, 0, sizeof(*t));
  if (!h->done || h->url.len == 0)
    return 400;
  const char *u = buf + h->url.off;
  int is_connect = h->parser.method == HTTP_CONNECT;
  struct http_parser_url pu;
  http_parser_url_init(&pu);
  if (http_parser_parse_url(u, h->url.len, is_connect, &pu) != 0)
    return 400;
  if (is_connect) {
    if (pu.field_set != ((1 << UF_HOST) | (1 << UF_PORT)))
      return 400;
    t->form = HH_FORM_AUTHORITY;
  } else {
    int st = parse_absolute(u, &pu, t);
    if (st)
      return st;
  }
  int st = copy_host(t, u + pu.field_data[UF_HOST].off,
                     pu.field_data[UF_HOST].len);
  if (st)
    return st;
  if (pu.field_set & (1 << UF_PORT)) {
    if (pu.port == 0)
      return 400;
    t->port = pu.port;
  }
  if (pu.field_set & (1 << UF_PATH)) {
    t->path.off = h->url.off + pu.field_data[UF_PATH].off;
    t->path.len = pu.field_data[UF_PATH].len;
  }
  if (pu.field_set & (1 << UF_QUERY)) {
    t->has_query = 1;
    t->query.off = h->url.off + pu.field_data[UF_QUERY].off;
    t->query.len = pu.field_data[UF_QUERY].len;
  }
  return 0;
}

/* ---- rewriting ------------------------------------------------------------ */

/* The fields to forward: neither hop-by-hop nor framing (the proxy
 * writes its own framing header). */
static void put_fields(ph_bw *w, const http_head *h, const char *buf,
                       int drop_host) {
  for (size_t i = 0; i < h->n_fields; i++) {
    const hp_head_field *f = &h->fields[i];
    if (f->hop || f->te || f->cl)
      continue;
    if (drop_host && eq_ci(span_ptr(buf, f->name), f->name.len, "host"))
      continue;
    ph_bw_put(w, span_ptr(buf, f->name), f->name.len);
    ph_bw_put(w, ": ", 2);
    ph_bw_put(w, span_ptr(buf, f->value), f->value.len);
    ph_bw_put(w, "\r\n", 2);
  }
}

size_t hp_head_write_max(const http_head *h) {
  /* Every line may gain a CR and ": " may replace ":". */
  return h->head_len + 3 * (h->n_fields + 1) + HH_WRITE_EXTRA;
}

static void put_frame(ph_bw *w, const hp_head_frame *fr) {
  if (fr->kind == HB_CHUNKED) {
    ph_bw_puts(w, "Transfer-Encoding: chunked\r\n");
  } else if (fr->kind == HB_LENGTH) {
    ph_bw_printf(w, "Content-Length: %llu\r\n",
                 (unsigned long long)fr->length);
  }
}

static ssize_t finish(const ph_bw *w) {
  return ph_bw_over(w) ? -1 : (ssize_t)ph_bw_len(w);
}

/* The target's authority: the host (an IPv6 literal in brackets) and
 * ":port" unless it is 80. */
static void put_authority(ph_bw *w, const hp_head_target *t) {
  if (t->ipv6)
    ph_bw_put(w, "[", 1);
  ph_bw_puts(w, t->host);
  if (t->ipv6)
    ph_bw_put(w, "]", 1);
  if (t->port != 80) {
    ph_bw_put(w, ":", 1);
    ph_bw_printf(w, "%u", t->port);
  }
}

ssize_t hp_head_write_request(const http_head *h, const char *buf,
                              const hp_head_target *t, const hp_head_frame *fr,
                              char *out, size_t cap) {
  ph_bw w;
  ph_bw_init(&w, out, cap, PH_BW_BYTES);
  ph_bw_puts(&w, http_method_str((enum http_method)h->parser.method));
  ph_bw_put(&w, " ", 1);
  if (t->path.len > 0)
    ph_bw_put(&w, buf + t->path.off, t->path.len);
  else if (h->parser.method == HTTP_OPTIONS && !t->has_query)
    ph_bw_put(&w, "*", 1); /* RFC 9112 section 3.2.4 */
  else
    ph_bw_put(&w, "/", 1);
  if (t->has_query) {
    ph_bw_put(&w, "?", 1);
    ph_bw_put(&w, buf + t->query.off, t->query.len);
  }
  ph_bw_puts(&w, " HTTP/1.1\r\nHost: ");
  put_authority(&w, t);
  ph_bw_put(&w, "\r\n", 2);
  put_fields(&w, h, buf, 1);
  put_frame(&w, fr);
  ph_bw_puts(&w,
        hp_head_minor(h) ? "Via: 1.1 proxyhost\r\n" : "Via: 1.0 proxyhost\r\n");
  ph_bw_put(&w, "\r\n", 2);
  return finish(&w);
}

ssize_t hp_head_write_absolute(const char *head, size_t len,
                               const hp_head_target *t, const char *proxy_auth,
                               size_t auth_len, char *out, size_t cap) {
  static const char ver[] = " HTTP/1.1\r\n";
  const size_t vl = sizeof(ver) - 1;
  const char *sp = head ? memchr(head, ' ', len) : NULL;
  const char *eol = sp ? memmem(sp, len - (size_t)(sp - head), "\r\n", 2)
                       : NULL;
  /* What hp_head_write_request wrote, or nothing: fail closed. */
  if (!eol || (size_t)(eol + 2 - sp) < vl + 2 ||
      memcmp(eol + 2 - vl, ver, vl) != 0 || len < 4 ||
      memcmp(head + len - 4, "\r\n\r\n", 4) != 0 ||
      !hp_head_value_ok(proxy_auth, proxy_auth ? auth_len : 0))
    return -1;
  const char *tgt = sp + 1, *tend = eol + 2 - vl;
  ph_bw w;
  ph_bw_init(&w, out, cap, PH_BW_BYTES);
  ph_bw_put(&w, head, (size_t)(tgt - head)); /* "METHOD " */
  ph_bw_puts(&w, "http://");
  put_authority(&w, t);
  /* "OPTIONS *" came from an absolute-form target without a path: it
   * goes on as the authority alone (RFC 9112 section 3.2.4). */
  if (!(tend - tgt == 1 && *tgt == '*'))
    ph_bw_put(&w, tgt, (size_t)(tend - tgt));
  ph_bw_put(&w, tend, (size_t)(head + len - 2 - tend)); /* version, fields */
  if (proxy_auth && auth_len) {
    ph_bw_puts(&w, "Proxy-Authorization: ");
    ph_bw_put(&w, proxy_auth, auth_len);
    ph_bw_put(&w, "\r\n", 2);
  }
  ph_bw_put(&w, "\r\n", 2);
  return finish(&w);
}

int hp_head_value_ok(const char *v, size_t len) {
  if (len && !v)
    return 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)v[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return 0;
  }
  return 1;
}

ssize_t hp_head_write_response(const http_head *h, const char *buf,
                               const hp_head_frame *fr, int close_client,
                               int client_minor, char *out, size_t cap) {
  ph_bw w;
  ph_bw_init(&w, out, cap, PH_BW_BYTES);
  /* Rebuilt from what the parser understood, not copied: the lenient
   * parser accepts first lines that other readers would split
   * differently. */
  ph_bw_printf(&w, "HTTP/1.1 %03d ", hp_head_status(h));
  ph_bw_put(&w, buf + h->reason.off, h->reason.len);
  ph_bw_put(&w, "\r\n", 2);
  put_fields(&w, h, buf, 0);
  put_frame(&w, fr);
  ph_bw_puts(&w,
        hp_head_minor(h) ? "Via: 1.1 proxyhost\r\n" : "Via: 1.0 proxyhost\r\n");
  if (close_client)
    ph_bw_puts(&w, "Connection: close\r\n");
  else if (client_minor == 0)
    ph_bw_puts(&w, "Connection: keep-alive\r\n");
  ph_bw_put(&w, "\r\n", 2);
  return finish(&w);
}

/* ---- Basic credentials ------------------------------------------------------ */

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* Strict base64 (padding optional); -1 on any other byte or when out is
 * too small. */
static ssize_t b64_decode(const char *in, size_t len, char *out, size_t cap) {
  while (len > 0 && in[len - 1] == '=' && len % 4 != 1)
    len--;
  if (len % 4 == 1)
    return -1;
  size_t n = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value((unsigned char)in[i]);
    if (v < 0)
      return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n >= cap)
        return -1;
      out[n++] = (char)((acc >> bits) & 0xff);
    }
  }
  return (ssize_t)n;
}

static int has_ctl(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
      return 1;
  return 0;
}

int hp_head_basic_decode(const char *value, size_t len, char *out, size_t cap,
                         const char **user, size_t *user_len, const char **pass,
                         size_t *pass_len) {
  while (len > 0 && is_ows(*value)) {
    value++;
    len--;
  }
  while (len > 0 && is_ows(value[len - 1]))
    len--;
  if (len < 6 || strncasecmp(value, "basic", 5) != 0 || !is_ows(value[5]))
    return -1;
  value += 5;
  len -= 5;
  while (len > 0 && is_ows(*value)) {
    value++;
    len--;
  }
  if (cap < 2)
    return -1;
  ssize_t n = b64_decode(value, len, out, cap - 1);
  if (n < 0)
    return -1;
  char *colon = memchr(out, ':', (size_t)n);
  if (!colon)
    return -1;
  size_t ul = (size_t)(colon - out), pl = (size_t)n - ul - 1;
  if (ul == 0 || ul > 255 || pl > 255 || has_ctl(out, ul) ||
      has_ctl(colon + 1, pl))
    return -1;
  *colon = '\0';
  out[n] = '\0';
  *user = out;
  *user_len = ul;
  *pass = colon + 1;
  *pass_len = pl;
  return 0;
}

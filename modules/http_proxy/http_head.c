/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP/1.x heads without I/O (http_head.h).
 *
 * The shared strict scanner (lib/http1_head.h) reads the head as bytes
 * arrive and records offsets (never pointers, so the buffer may move);
 * it enforces the first line, header byte and field count limits and
 * stops at the head's end: the body (or the next message) is not its
 * business. This file keeps the proxy's own rules on top: the method
 * table, the versions, hop-by-hop fields, the framing, the rewrites.
 */
#include "http_head.h"
#include "http_body.h"

#include "lib/b64.h"
#include "lib/bw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* hp_head_write_max's room for what the rewrite adds: request line target
 * form, Host, Via and Connection lines. */
#define HH_WRITE_EXTRA 512u

/* ---- small helpers ------------------------------------------------------ */

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

static int no_body_status(int status) {
  return status / 100 == 1 || status == 204 || status == 304;
}

/* The methods libhttp-parser knows, by name (upper case, exactly). */
static const struct {
  const char *name;
  uint8_t len;
  uint8_t method;
} methods[] = {
#define HH_METHOD(num, name, string) {#string, sizeof(#string) - 1, num},
    HTTP_METHOD_MAP(HH_METHOD)
#undef HH_METHOD
};

static int method_of(const char *m, size_t len) {
  for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
    if (methods[i].len == len && memcmp(methods[i].name, m, len) == 0)
      return methods[i].method;
  return -1;
}

/* ---- head parsing ------------------------------------------------------- */

void hp_head_init(http_head *h, enum http_parser_type kind,
                  const hp_head_limits *lim) {
  memset(h, 0, sizeof(*h));
  h->kind = kind == HTTP_RESPONSE ? HTTP_RESPONSE : HTTP_REQUEST;
  h->lim = *lim;
  if (h->lim.max_headers < 1)
    h->lim.max_headers = 1;
  h->method = -1;
}

void hp_head_free(http_head *h) {
  free(h->fields);
  h->fields = NULL;
  h->flags = NULL;
  h->n_fields = 0;
}

void hp_head_expect_no_body(http_head *h) { h->skip_body = 1; }

static uint32_t clamp32(size_t v) {
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The field arrays (one allocation) and the scanner, before the first
 * byte. 0 or -1. */
static int start(http_head *h) {
  size_t n = h->lim.max_headers;
  h->fields = malloc(n * (sizeof(*h->fields) + sizeof(*h->flags)));
  if (!h->fields)
    return -1;
  h->flags = (uint8_t *)(h->fields + n);
  h1_limits lim = {clamp32(h->lim.max_line), clamp32(h->lim.max_header_bytes),
                   0, clamp32(n)};
  unsigned opts = H1_LF | H1_CL_LIST |
                  (h->kind == HTTP_REQUEST ? H1_SKIP_EMPTY : H1_CODE_ONLY);
  h1_init(&h->scan, h->kind == HTTP_REQUEST ? H1_REQUEST : H1_RESPONSE, opts,
          &lim, h->fields);
  return 0;
}

static int scan_status(int error) {
  switch (error) {
  case H1_E_START_TOO_LONG:
    return 414;
  case H1_E_FIELDS_TOO_LONG:
  case H1_E_TOO_MANY_FIELDS:
    return 431;
  default:
    return 400;
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

/* Marks every field named by the token tok[0..tlen). */
static void mark_listed(http_head *h, const char *buf, const char *tok,
                        size_t tlen) {
  if (tlen == 0 || framing_field(tok, tlen))
    return;
  for (size_t k = 0; k < h->n_fields; k++) {
    const hp_head_field *f = &h->fields[k];
    if (f->name.len == tlen &&
        strncasecmp(span_ptr(buf, f->name), tok, tlen) == 0)
      h->flags[k] |= HH_F_HOP;
  }
}

/* The Connection list: the fields it names are hop-by-hop, and "close" or
 * "keep-alive" decide whether the connection stays. */
static void connection_list(http_head *h, const char *buf,
                            const hp_head_field *f) {
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
    size_t tl = (size_t)(tz - ts);
    if (eq_ci(ts, tl, "close"))
      h->conn_close = 1;
    else if (eq_ci(ts, tl, "keep-alive"))
      h->conn_keep = 1;
    mark_listed(h, buf, ts, tl);
    v = comma ? comma + 1 : end;
  }
}

static void mark_hop(http_head *h, const char *buf) {
  for (size_t i = 0; i < h->n_fields; i++) {
    const hp_head_field *f = &h->fields[i];
    const char *n = span_ptr(buf, f->name);
    uint8_t fl = 0;
    if (fixed_hop(n, f->name.len))
      fl |= HH_F_HOP;
    if (eq_ci(n, f->name.len, "transfer-encoding"))
      fl |= HH_F_TE;
    if (eq_ci(n, f->name.len, "content-length"))
      fl |= HH_F_CL;
    h->flags[i] = fl;
  }
  for (size_t i = 0; i < h->n_fields; i++)
    if (connection_field(span_ptr(buf, h->fields[i].name),
                         h->fields[i].name.len))
      connection_list(h, buf, &h->fields[i]);
}

static int head_done(http_head *h, const char *buf) {
  const h1_head *s = &h->scan;
  h->line_len = s->start_len;
  h->head_len = s->head_len;
  h->n_fields = s->n_fields;
  if (s->major != 1 || s->minor > 1)
    return fail(h, 505);
  if (h->kind == HTTP_REQUEST) {
    h->method = method_of(buf + s->method.off, s->method.len);
    if (h->method < 0)
      return fail(h, 400);
    h->url = s->target;
  } else {
    h->code = s->status;
    h->reason = s->reason;
  }
  mark_hop(h, buf);
  h->done = 1;
  return HH_DONE;
}

int hp_head_parse(http_head *h, const char *buf, size_t len) {
  if (h->failed)
    return HH_ERROR;
  if (h->done)
    return HH_DONE;
  if (len <= h->fed)
    return HH_MORE;
  if (!h->fields && start(h) < 0)
    return fail(h, 503);
  size_t used = 0;
  int r = h1_feed(&h->scan, buf + h->fed, len - h->fed, &used);
  h->fed += used;
  if (r == H1_ERROR)
    return fail(h, scan_status(h->scan.error));
  if (r == H1_DONE)
    return head_done(h, buf);
  return HH_MORE;
}

int hp_head_method(const http_head *h) { return h->method; }
int hp_head_status(const http_head *h) { return h->code; }
int hp_head_minor(const http_head *h) { return h->scan.minor > 0; }
int hp_head_keep_alive(const http_head *h) {
  if (h->conn_close)
    return 0;
  return h->scan.minor > 0 || h->conn_keep;
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
  int request = h->kind == HTTP_REQUEST;
  int bad = request ? 400 : 502;
  /* Every Content-Length number was checked equal by the scanner. */
  struct {
    uint64_t value;
    int seen;
  } la = {h->scan.content_length >= 0 ? (uint64_t)h->scan.content_length : 0,
          h->scan.content_length >= 0};
  coding_acc ca = {0, 0};
  int te_fields = 0;
  for (size_t i = 0; i < h->n_fields; i++) {
    const hp_head_field *f = &h->fields[i];
    if (h->flags[i] & HH_F_TE) {
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
    if (la.seen || h->scan.minor == 0 || ca.codings == 0)
      return bad;
    if (!ca.chunked_last)
      return bad; /* section 6.3: the length cannot be determined */
    if (ca.codings > 1)
      return request ? 501 : 502; /* a coding we do not decode */
  }
  if (!request &&
      (h->skip_body || no_body_status(h->code)))
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
  return i < h->n_fields && (h->flags[i] & HH_F_HOP);
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
  int is_connect = h->method == HTTP_CONNECT;
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
    if (h->flags[i])
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
  ph_bw_puts(&w, http_method_str((enum http_method)h->method));
  ph_bw_put(&w, " ", 1);
  if (t->path.len > 0)
    ph_bw_put(&w, buf + t->path.off, t->path.len);
  else if (h->method == HTTP_OPTIONS && !t->has_query)
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

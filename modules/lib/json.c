/* SPDX-License-Identifier: BSD-2-Clause */
/* See json.h. The reader is a recursive descent whose recursion is bounded
 * by max_depth (at most JSON_MAX_DEPTH frames). */
#include "json.h"

#include <stdio.h>
#include <string.h>

typedef struct parser {
  const char *s;
  size_t len, pos;
  json_tok *toks;
  size_t max_toks, n;
  size_t max_depth;
} parser;

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      return;
    p->pos++;
  }
}

static int new_tok(parser *p, int type, size_t *idx) {
  if (p->n >= p->max_toks)
    return JSON_ETOKENS;
  json_tok *t = &p->toks[p->n];
  memset(t, 0, sizeof(*t));
  t->type = (uint8_t)type;
  t->start = (uint32_t)p->pos;
  *idx = p->n++;
  return JSON_OK;
}

/* One UTF-8 sequence at s[i..end): its length (1-4), or 0 when invalid
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t i, size_t end,
                       uint32_t *cp) {
  unsigned char c = s[i];
  size_t n;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (end - i < n)
    return 0;
  for (size_t k = 1; k < n; k++) {
    if ((s[i + k] & 0xc0) != 0x80)
      return 0;
    v = (v << 6) | (s[i + k] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

static int hex4(const char *s, uint32_t *out) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (uint32_t)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

/* Decodes the escape at s[i] (the byte after '\') up to end: the code
 * point and the escape's length after the backslash, or 0 when invalid.
 * A \u high surrogate must be followed by a \u low surrogate. */
static size_t unescape(const char *s, size_t i, size_t end, uint32_t *cp) {
  switch (s[i]) {
  case '"': *cp = '"'; return 1;
  case '\\': *cp = '\\'; return 1;
  case '/': *cp = '/'; return 1;
  case 'b': *cp = '\b'; return 1;
  case 'f': *cp = '\f'; return 1;
  case 'n': *cp = '\n'; return 1;
  case 'r': *cp = '\r'; return 1;
  case 't': *cp = '\t'; return 1;
  case 'u': break;
  default: return 0;
  }
  uint32_t hi, lo;
  if (end - i < 5 || hex4(s + i + 1, &hi) < 0)
    return 0;
  if (hi >= 0xdc00 && hi <= 0xdfff)
    return 0; /* a low surrogate first */
  if (hi < 0xd800 || hi > 0xdbff) {
    *cp = hi;
    return 5;
  }
  if (end - i < 11 || s[i + 5] != '\\' || s[i + 6] != 'u' ||
      hex4(s + i + 7, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
    return 0;
  *cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
  return 11;
}

static int parse_string(parser *p, size_t *idx) {
  p->pos++; /* the quote */
  int rc = new_tok(p, JSON_STRING, idx);
  if (rc)
    return rc;
  const unsigned char *u = (const unsigned char *)p->s;
  while (p->pos < p->len) {
    unsigned char c = u[p->pos];
    if (c == '"') {
      p->toks[*idx].end = (uint32_t)p->pos;
      p->pos++;
      return JSON_OK;
    }
    if (c < 0x20)
      return JSON_ESYNTAX;
    uint32_t cp;
    if (c == '\\') {
      if (p->pos + 1 >= p->len)
        return JSON_ESYNTAX;
      size_t n = unescape(p->s, p->pos + 1, p->len, &cp);
      if (!n)
        return p->s[p->pos + 1] == 'u' ? JSON_EUTF8 : JSON_ESYNTAX;
      p->pos += 1 + n;
      continue;
    }
    size_t n = utf8_len(u, p->pos, p->len, &cp);
    if (!n)
      return JSON_EUTF8;
    p->pos += n;
  }
  return JSON_ESYNTAX;
}

static int digits(parser *p) {
  size_t s = p->pos;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
    p->pos++;
  return p->pos > s;
}

static int parse_number(parser *p, size_t *idx) {
  int rc = new_tok(p, JSON_NUMBER, idx);
  if (rc)
    return rc;
  if (p->s[p->pos] == '-')
    p->pos++;
  if (p->pos < p->len && p->s[p->pos] == '0')
    p->pos++; /* a leading zero stands alone */
  else if (!digits(p))
    return JSON_ESYNTAX;
  if (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    if (!digits(p))
      return JSON_ESYNTAX;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
      p->pos++;
    if (!digits(p))
      return JSON_ESYNTAX;
  }
  p->toks[*idx].end = (uint32_t)p->pos;
  return JSON_OK;
}

static int parse_literal(parser *p, const char *word, int type,
                         size_t *idx) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return JSON_ESYNTAX;
  int rc = new_tok(p, type, idx);
  if (rc)
    return rc;
  p->pos += n;
  p->toks[*idx].end = (uint32_t)p->pos;
  return JSON_OK;
}

/* A streaming view of a string token's decoded bytes, for comparisons
 * without a buffer. */
typedef struct str_iter {
  const char *s;
  size_t pos, end;
  unsigned char pend[4];
  size_t npend, ipend;
} str_iter;

static void iter_init(str_iter *it, const char *s, size_t start,
                      size_t end) {
  memset(it, 0, sizeof(*it));
  it->s = s;
  it->pos = start;
  it->end = end;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xc0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xe0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (unsigned char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (unsigned char)(0xf0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (unsigned char)(0x80 | (cp & 0x3f));
  return 4;
}

/* The next decoded byte, or -1 at the end. The token was validated. */
static int iter_next(str_iter *it) {
  if (it->ipend < it->npend)
    return it->pend[it->ipend++];
  if (it->pos >= it->end)
    return -1;
  unsigned char c = (unsigned char)it->s[it->pos];
  if (c != '\\') {
    it->pos++;
    return c;
  }
  uint32_t cp = 0;
  size_t n = unescape(it->s, it->pos + 1, it->end, &cp);
  it->pos += 1 + n;
  it->npend = put_utf8(it->pend, cp);
  it->ipend = 1;
  return it->pend[0];
}

static int tok_eq(const parser *p, const json_tok *a, const json_tok *b) {
  str_iter x, y;
  iter_init(&x, p->s, a->start, a->end);
  iter_init(&y, p->s, b->start, b->end);
  for (;;) {
    int cx = iter_next(&x), cy = iter_next(&y);
    if (cx != cy)
      return 0;
    if (cx < 0)
      return 1;
  }
}

static int parse_value(parser *p, size_t depth, size_t *idx);

static int parse_container(parser *p, size_t depth, int type, size_t *idx) {
  if (depth >= p->max_depth)
    return JSON_EDEPTH;
  int rc = new_tok(p, type, idx);
  if (rc)
    return rc;
  char close = type == JSON_OBJECT ? '}' : ']';
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    p->toks[*idx].end = (uint32_t)p->pos;
    p->toks[*idx].next = (uint32_t)p->n;
    return JSON_OK;
  }
  for (;;) {
    size_t child;
    if (type == JSON_OBJECT) {
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != '"')
        return JSON_ESYNTAX;
      size_t key;
      if ((rc = parse_string(p, &key)))
        return rc;
      p->toks[key].next = (uint32_t)p->n;
      /* Every earlier key of this object: keys are at *idx + 1 and then
       * after each value's subtree. */
      for (size_t k = *idx + 1; k < key; k = p->toks[k + 1].next)
        if (tok_eq(p, &p->toks[k], &p->toks[key]))
          return JSON_EDUP;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':')
        return JSON_ESYNTAX;
      p->pos++;
    }
    if ((rc = parse_value(p, depth + 1, &child)))
      return rc;
    p->toks[*idx].size++;
    skip_ws(p);
    if (p->pos >= p->len)
      return JSON_ESYNTAX;
    char c = p->s[p->pos++];
    if (c == close)
      break;
    if (c != ',')
      return JSON_ESYNTAX;
  }
  p->toks[*idx].end = (uint32_t)p->pos;
  p->toks[*idx].next = (uint32_t)p->n;
  return JSON_OK;
}

static int parse_value(parser *p, size_t depth, size_t *idx) {
  skip_ws(p);
  if (p->pos >= p->len)
    return JSON_ESYNTAX;
  int rc;
  char c = p->s[p->pos];
  switch (c) {
  case '{':
    return parse_container(p, depth, JSON_OBJECT, idx);
  case '[':
    return parse_container(p, depth, JSON_ARRAY, idx);
  case '"':
    rc = parse_string(p, idx);
    break;
  case 't':
    rc = parse_literal(p, "true", JSON_TRUE, idx);
    break;
  case 'f':
    rc = parse_literal(p, "false", JSON_FALSE, idx);
    break;
  case 'n':
    rc = parse_literal(p, "null", JSON_NULL, idx);
    break;
  default:
    if (c == '-' || (c >= '0' && c <= '9'))
      rc = parse_number(p, idx);
    else
      rc = JSON_ESYNTAX;
  }
  if (rc == JSON_OK)
    p->toks[*idx].next = (uint32_t)p->n;
  return rc;
}

int json_parse(json_doc *doc, const char *text, size_t len, json_tok *toks,
               size_t max_toks, size_t max_depth, size_t *err_off) {
  memset(doc, 0, sizeof(*doc));
  if (err_off)
    *err_off = 0;
  if (len > JSON_MAX_INPUT)
    return JSON_ESIZE;
  if (!text || !toks)
    return JSON_ESYNTAX;
  parser p = {.s = text,
              .len = len,
              .toks = toks,
              .max_toks = max_toks,
              .max_depth = max_depth < JSON_MAX_DEPTH ? max_depth
                                                      : JSON_MAX_DEPTH};
  size_t top;
  int rc = parse_value(&p, 0, &top);
  if (rc == JSON_OK) {
    skip_ws(&p);
    if (p.pos != p.len)
      rc = JSON_ESYNTAX;
  }
  if (rc != JSON_OK) {
    if (err_off)
      *err_off = p.pos;
    return rc;
  }
  doc->text = text;
  doc->len = len;
  doc->toks = toks;
  doc->n = p.n;
  return JSON_OK;
}

/* ---- reading values ------------------------------------------------- */

int json_type_of(const json_doc *doc, size_t i) {
  return doc && i < doc->n ? doc->toks[i].type : 0;
}

long json_get(const json_doc *doc, size_t obj, const char *key) {
  if (json_type_of(doc, obj) != JSON_OBJECT)
    return -1;
  const json_tok *o = &doc->toks[obj];
  size_t k = obj + 1;
  for (uint32_t m = 0; m < o->size; m++) {
    if (json_str_eq(doc, k, key))
      return (long)(k + 1);
    k = doc->toks[k + 1].next;
  }
  return -1;
}

long json_str(const json_doc *doc, size_t i, char *out, size_t cap) {
  if (json_type_of(doc, i) != JSON_STRING || cap == 0)
    return -1;
  str_iter it;
  iter_init(&it, doc->text, doc->toks[i].start, doc->toks[i].end);
  size_t n = 0;
  for (int c; (c = iter_next(&it)) >= 0;) {
    if (c == 0 || n + 1 >= cap)
      return -1;
    out[n++] = (char)c;
  }
  out[n] = '\0';
  return (long)n;
}

int json_str_eq(const json_doc *doc, size_t i, const char *s) {
  if (json_type_of(doc, i) != JSON_STRING || !s)
    return 0;
  str_iter it;
  iter_init(&it, doc->text, doc->toks[i].start, doc->toks[i].end);
  for (size_t k = 0;; k++) {
    int c = iter_next(&it);
    if (c < 0)
      return s[k] == '\0';
    if (s[k] == '\0' || (unsigned char)s[k] != c)
      return 0;
  }
}

int json_int(const json_doc *doc, size_t i, int64_t *out) {
  if (json_type_of(doc, i) != JSON_NUMBER)
    return -1;
  const char *s = doc->text + doc->toks[i].start;
  size_t n = doc->toks[i].end - doc->toks[i].start, k = 0;
  int neg = s[0] == '-';
  k = (size_t)neg;
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; k < n; k++) {
    if (s[k] < '0' || s[k] > '9')
      return -1; /* a fraction or an exponent */
    uint64_t d = (uint64_t)(s[k] - '0');
    if (v > (lim - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

int json_bool(const json_doc *doc, size_t i, int *out) {
  int t = json_type_of(doc, i);
  if (t != JSON_TRUE && t != JSON_FALSE)
    return -1;
  *out = t == JSON_TRUE;
  return 0;
}

/* ---- writer --------------------------------------------------------- */

void json_w_init(json_w *w, char *buf, size_t cap) {
  memset(w, 0, sizeof(*w));
  ph_bw_init(&w->out, buf, cap, PH_BW_TEXT);
  w->failed = ph_bw_over(&w->out); /* no buffer, or no room for the NUL */
}

static void put(json_w *w, const char *s, size_t n) {
  if (!w->failed && ph_bw_put(&w->out, s, n) < 0)
    w->failed = 1;
}

/* Before a value: a comma between an array's elements or an object's
 * members; inside an object a value must follow its key. */
static void before_value(json_w *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (w->depth > 0 && w->need_comma[w->depth] < 0) {
    w->failed = 1; /* a value in an object without a key */
    return;
  }
  if (w->depth == 0 && ph_bw_len(&w->out) > 0) {
    w->failed = 1; /* a second top-level value */
    return;
  }
  if (w->need_comma[w->depth] == 1)
    put(w, ",", 1);
  w->need_comma[w->depth] = w->depth > 0 ? 1 : 0;
}

static void open_c(json_w *w, const char *c, int is_obj) {
  before_value(w);
  if (w->depth >= JSON_W_MAX_DEPTH) {
    w->failed = 1;
    return;
  }
  put(w, c, 1);
  w->depth++;
  /* Objects: -1 (a key comes next, no comma), -2 (a key, after a comma);
   * arrays: 0 then 1. */
  w->need_comma[w->depth] = is_obj ? -1 : 0;
}

static void close_c(json_w *w, const char *c, int is_obj) {
  int state = w->depth > 0 ? w->need_comma[w->depth] : 0;
  if (w->depth == 0 || w->after_key || (is_obj != (state < 0)))
    w->failed = 1;
  if (w->failed)
    return;
  put(w, c, 1);
  w->depth--;
  if (w->depth > 0 && w->need_comma[w->depth] >= 0)
    w->need_comma[w->depth] = 1;
  else if (w->depth > 0)
    w->need_comma[w->depth] = -2;
}

void json_w_obj(json_w *w) { open_c(w, "{", 1); }
void json_w_obj_end(json_w *w) { close_c(w, "}", 1); }
void json_w_arr(json_w *w) { open_c(w, "[", 0); }
void json_w_arr_end(json_w *w) { close_c(w, "]", 0); }

static void put_escaped(json_w *w, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  put(w, "\"", 1);
  for (size_t i = 0; i < n && !w->failed;) {
    unsigned char c = u[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\', esc[1] = (char)c;
      put(w, esc, 2);
      i++;
    } else if (c < 0x20) {
      const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
      if (named) {
        put(w, named, 2);
      } else {
        snprintf(esc, sizeof(esc), "\\u%04x", c);
        put(w, esc, 6);
      }
      i++;
    } else {
      uint32_t cp;
      size_t len = utf8_len(u, i, n, &cp);
      if (!len) {
        w->failed = 1;
        return;
      }
      put(w, s + i, len);
      i += len;
    }
  }
  put(w, "\"", 1);
}

void json_w_key(json_w *w, const char *key) {
  if (w->depth == 0 || w->need_comma[w->depth] >= 0 || w->after_key ||
      !key) {
    w->failed = 1;
    return;
  }
  if (w->need_comma[w->depth] == -2)
    put(w, ",", 1);
  put_escaped(w, key, strlen(key));
  put(w, ":", 1);
  w->need_comma[w->depth] = -2;
  w->after_key = 1;
}

void json_w_strn(json_w *w, const char *s, size_t n) {
  before_value(w);
  if (!s)
    put(w, "null", 4);
  else
    put_escaped(w, s, n);
}

void json_w_str(json_w *w, const char *s) {
  json_w_strn(w, s, s ? strlen(s) : 0);
}

void json_w_int(json_w *w, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof(b), "%lld", (long long)v);
  before_value(w);
  put(w, b, (size_t)n);
}

void json_w_uint(json_w *w, uint64_t v) {
  char b[24];
  int n = snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
  before_value(w);
  put(w, b, (size_t)n);
}

void json_w_bool(json_w *w, int v) {
  before_value(w);
  put(w, v ? "true" : "false", v ? 4 : 5);
}

void json_w_null(json_w *w) {
  before_value(w);
  put(w, "null", 4);
}

void json_w_kstr(json_w *w, const char *key, const char *s) {
  json_w_key(w, key);
  json_w_str(w, s);
}

void json_w_kint(json_w *w, const char *key, int64_t v) {
  json_w_key(w, key);
  json_w_int(w, v);
}

void json_w_kuint(json_w *w, const char *key, uint64_t v) {
  json_w_key(w, key);
  json_w_uint(w, v);
}

void json_w_kbool(json_w *w, const char *key, int v) {
  json_w_key(w, key);
  json_w_bool(w, v);
}

long json_w_finish(json_w *w) {
  if (w->failed || w->depth != 0 || w->after_key || ph_bw_len(&w->out) == 0)
    return -1;
  return (long)ph_bw_len(&w->out);
}

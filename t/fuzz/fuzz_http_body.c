/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the http_proxy module's body framing
 * (modules/http_proxy/http_body.c): the strict chunked decoder, the
 * Content-Length and close-delimited decoders, and the chunked encoder.
 *
 * Input layout:
 *   byte 0     the kind: % 3 is 0 chunked, 1 Content-Length, 2 close
 *   byte 1     the read size the body arrives in: % 64 + 1 bytes
 *   byte 2     the limits: % 4 picks one of limits[] below
 *   byte 3     seed for the random read sizes and, when the payload is
 *              framed again, for how it arrives and how much each write
 *              takes
 *   bytes 4-5  the Content-Length, little-endian (kind 1 only)
 *   the rest   the peer's body bytes (and whatever follows them)
 *
 * Besides memory safety it checks the contract:
 *  - every call keeps used <= len and produced <= used, HB_MORE uses all;
 *    after HB_DONE or HB_ERROR every call says so again, using nothing;
 *  - the verdict, the bytes used and the payload do not depend on how the
 *    input was split (one piece, fixed reads, random reads), nor on
 *    decoding in place or not;
 *  - a reference decoder written here, independently and plainly (over
 *    the whole buffer, recursive descent along RFC 9112 section 7.1),
 *    agrees on the verdict, the offset where the body ended or the
 *    offending byte, and the payload: so no framing byte of the input
 *    ever comes out as payload;
 *  - the payload framed again as chunked (arriving in random pieces,
 *    written in random partial writes) decodes back to itself, done at
 *    exactly the last byte written and not before; framed as
 *    Content-Length it goes out as it is. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_proxy/http_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts (a finding) naming the broken promise's line. */
#define check(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "fuzz_http_body: check failed at line %d: %s\n",      \
              __LINE__, #cond);                                             \
      abort();                                                              \
    }                                                                       \
  } while (0)

#define HDR 6

static const hp_body_limits limits[] = {{4096, 8192}, {8, 8}, {32, 64}, {3, 2}};
static const hp_body_limits roomy = {65536, 65536};

/* ---- randomness from the input ------------------------------------------ */

static uint64_t rng;
static uint64_t rnd(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* ---- the reference chunked decoder --------------------------------------- */

enum { R_UNSET = 2 };

typedef struct ref {
  const unsigned char *s;
  size_t n, i;
  size_t lim_at; /* the first offset past the current line's limit */
  int r;         /* R_UNSET while going, then an hp_body_result */
  size_t at;     /* HB_DONE: the end; HB_ERROR: the offending byte */
  char *pay;
  size_t plen;
} ref;

static void ref_err(ref *p, size_t at) {
  p->r = HB_ERROR;
  p->at = at;
}

/* The byte at p->i of a line, or -1 when the input ends before it (the
 * body is unfinished) or it lies past the line's limit. */
static int ref_byte(ref *p) {
  if (p->i >= p->n) {
    p->r = HB_MORE;
    p->at = p->n;
    return -1;
  }
  if (p->i >= p->lim_at) {
    ref_err(p, p->lim_at);
    return -1;
  }
  return p->s[p->i];
}

static size_t sat_add(size_t a, size_t b) {
  return a + b < a ? SIZE_MAX : a + b;
}

static int ref_tchar(int c) {
  static const char extra[] = "!#$%&'*+-.^_`|~";
  if (c >= '0' && c <= '9')
    return 1;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
    return 1;
  for (size_t k = 0; extra[k]; k++)
    if (c == extra[k])
      return 1;
  return 0;
}

static int ref_ws(int c) { return c == ' ' || c == '\t'; }

static int ref_hex(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Skips SP / HTAB; 0 when it stopped (end of input or limit). */
static int ref_skip_ws(ref *p) {
  int c;
  while ((c = ref_byte(p)) >= 0 && ref_ws(c))
    p->i++;
  return c >= 0;
}

/* token = 1*tchar */
static int ref_token(ref *p) {
  int c = ref_byte(p);
  if (c < 0)
    return 0;
  if (!ref_tchar(c)) {
    ref_err(p, p->i);
    return 0;
  }
  while ((c = ref_byte(p)) >= 0 && ref_tchar(c))
    p->i++;
  return c >= 0;
}

/* quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE, at the
 * opening DQUOTE. */
static int ref_quoted(ref *p) {
  p->i++;
  for (;;) {
    int c = ref_byte(p);
    if (c < 0)
      return 0;
    if (c == '"') {
      p->i++;
      return 1;
    }
    if (c == '\\') {
      p->i++;
      c = ref_byte(p);
      if (c < 0)
        return 0;
      if (!(c == '\t' || c == ' ' || (c >= 0x21 && c <= 0x7e) || c >= 0x80)) {
        ref_err(p, p->i);
        return 0;
      }
      p->i++;
      continue;
    }
    int qdtext = c == '\t' || c == ' ' || c == 0x21 ||
                 (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) ||
                 c >= 0x80;
    if (!qdtext) {
      ref_err(p, p->i);
      return 0;
    }
    p->i++;
  }
}

/* CRLF, at the CR. */
static int ref_crlf(ref *p) {
  for (int k = 0; k < 2; k++) {
    int c = ref_byte(p);
    if (c < 0)
      return 0;
    if (c != (k ? '\n' : '\r')) {
      ref_err(p, p->i);
      return 0;
    }
    p->i++;
  }
  return 1;
}

/* chunk-size [ chunk-ext ] CRLF; the size in *size. */
static int ref_size_line(ref *p, uint64_t *size) {
  uint64_t v = 0;
  unsigned nd = 0;
  int c, h;
  while ((c = ref_byte(p)) >= 0 && (h = ref_hex(c)) >= 0) {
    if (nd == 16 || v >= (1ull << 59)) { /* 17 digits, or >= 2^63 */
      ref_err(p, p->i);
      return 0;
    }
    v = v * 16 + (uint64_t)h;
    nd++;
    p->i++;
  }
  if (c < 0)
    return 0;
  if (nd == 0) {
    ref_err(p, p->i);
    return 0;
  }
  /* chunk-ext = *( BWS ";" BWS token [ BWS "=" BWS ( token /
   * quoted-string ) ] ) */
  for (;;) {
    size_t w = p->i;
    if (!ref_skip_ws(p))
      return 0;
    c = ref_byte(p);
    if (c == '\r' && p->i == w)
      break;
    if (c != ';') {
      ref_err(p, p->i);
      return 0;
    }
    p->i++;
    if (!ref_skip_ws(p) || !ref_token(p))
      return 0;
    w = p->i;
    if (!ref_skip_ws(p))
      return 0;
    if (ref_byte(p) != '=') {
      p->i = w; /* that BWS belongs to the next ";" (or is an error) */
      continue;
    }
    p->i++;
    if (!ref_skip_ws(p))
      return 0;
    c = ref_byte(p);
    if (c == '"' ? !ref_quoted(p) : !ref_token(p))
      return 0;
  }
  if (!ref_crlf(p))
    return 0;
  *size = v;
  return 1;
}

/* trailer-section CRLF: *( token ":" OWS field-value OWS CRLF ) CRLF. */
static void ref_trailer(ref *p, const hp_body_limits *lim) {
  p->lim_at = sat_add(p->i, lim->max_trailer);
  for (;;) {
    int c = ref_byte(p);
    if (c < 0)
      return;
    if (c == '\r') {
      if (ref_crlf(p)) {
        p->r = HB_DONE;
        p->at = p->i;
      }
      return;
    }
    if (!ref_token(p))
      return;
    c = ref_byte(p);
    if (c < 0)
      return;
    if (c != ':') {
      ref_err(p, p->i);
      return;
    }
    p->i++;
    while ((c = ref_byte(p)) >= 0 &&
           (c == ' ' || c == '\t' || (c >= 0x21 && c <= 0x7e) || c >= 0x80))
      p->i++;
    if (c < 0)
      return;
    if (!ref_crlf(p))
      return;
  }
}

static void ref_chunked(ref *p, const hp_body_limits *lim) {
  p->r = R_UNSET;
  for (;;) {
    uint64_t size;
    p->lim_at = sat_add(p->i, lim->max_line);
    if (!ref_size_line(p, &size))
      return;
    if (size == 0) {
      ref_trailer(p, lim);
      return;
    }
    /* chunk-data CRLF: no line limit here. */
    size_t have = p->n - p->i;
    size_t take = size < have ? (size_t)size : have;
    memcpy(p->pay + p->plen, p->s + p->i, take);
    p->plen += take;
    p->i += take;
    if (take < size) {
      p->r = HB_MORE;
      p->at = p->n;
      return;
    }
    p->lim_at = SIZE_MAX;
    if (!ref_crlf(p))
      return;
  }
}

/* ---- running hp_body_decode
 * ------------------------------------------------------ */

typedef struct got {
  int r;
  size_t used, plen;
  char *pay;
} got;

/* The read sizes: 0 one piece, 1 fixed step, 2 random. */
static size_t next_read(int how, size_t step, size_t left) {
  size_t k = how == 0 ? left : how == 1 ? step : 1 + below(2 * step);
  return k < left ? k : left;
}

/* Decodes body[0..n) in reads (each in its own exactly sized buffer),
 * in place or into g->pay, checking every call's promises. */
static void decode(int kind, uint64_t length, const hp_body_limits *lim,
                   const char *body, size_t n, int how, size_t step,
                   int inplace, got *g) {
  hp_body_decoder d;
  hp_body_decoder_init(&d, kind, length, lim);
  g->r = HB_MORE;
  g->used = g->plen = 0;
  size_t u, p;
  if (n == 0) {
    g->r = hp_body_decode(&d, NULL, 0, g->pay, &u, &p);
    check(u == 0 && p == 0);
  }
  while (g->used < n && g->r == HB_MORE) {
    size_t k = next_read(how, step, n - g->used);
    char *buf = malloc(k);
    check(buf != NULL);
    memcpy(buf, body + g->used, k);
    char *out = inplace ? buf : g->pay + g->plen;
    g->r = hp_body_decode(&d, buf, k, out, &u, &p);
    check(g->r == HB_MORE || g->r == HB_DONE || g->r == HB_ERROR);
    check(u <= k && p <= u);
    if (g->r == HB_MORE)
      check(u == k);
    if (inplace)
      memcpy(g->pay + g->plen, buf, p);
    free(buf);
    g->used += u;
    g->plen += p;
  }
  check(d.payload == g->plen);
  /* The verdict stays. */
  if (g->r != HB_MORE) {
    char one = 'x';
    u = p = 7;
    check(hp_body_decode(&d, &one, 1, &one, &u, &p) == g->r && u == 0 &&
          p == 0);
    check(hp_body_decode_eof(&d) == g->r);
  } else {
    int e = hp_body_decode_eof(&d);
    check(e == (kind == HB_CLOSE ? HB_DONE : HB_ERROR));
    char one = 'x';
    check(hp_body_decode(&d, &one, 1, &one, &u, &p) == e && u == 0 && p == 0);
  }
}

static int same(const got *a, const got *b) {
  return a->r == b->r && a->used == b->used && a->plen == b->plen &&
         memcmp(a->pay, b->pay, a->plen) == 0;
}

/* ---- the encoder ----------------------------------------------------------- */

static size_t plan_total(const hp_body_plan *pl) {
  return pl->pre_len + pl->payload + pl->post_len;
}

/* Frames pay[0..len) as kind, arriving in random pieces, written in
 * random partial writes; each write is decoded at once. */
static void encode(int kind, const char *pay, size_t len) {
  /* At most 22 framing bytes a chunk, a chunk a byte, and the end. */
  char *wire = malloc(len + 22 * len + 16), *back = malloc(len + 1);
  check(wire != NULL && back != NULL);
  hp_body_encoder e;
  hp_body_decoder d;
  hp_body_encoder_init(&e, kind);
  hp_body_decoder_init(&d, kind == HB_CHUNKED ? HB_CHUNKED : HB_LENGTH, len,
                       &roomy);
  size_t arrived = 0, sent = 0, wn = 0, bn = 0;
  int verdict = d.done ? HB_DONE : HB_MORE;
  for (size_t iter = 0; !hp_body_encode_finished(&e); iter++) {
    check(iter < 4 * len + 1000);
    if (arrived < len && below(2) == 0)
      arrived += 1 + below(below(2) ? 16 : len - arrived);
    if (arrived > len)
      arrived = len;
    int end = arrived == len;
    hp_body_plan pl;
    hp_body_encode_plan(&e, arrived - sent, end, &pl);
    check(pl.payload <= arrived - sent && pl.pre_len <= sizeof(e.frame) &&
          pl.post_len <= sizeof(e.frame));
    size_t total = plan_total(&pl);
    if (total == 0) {
      check(!end || hp_body_encode_finished(&e));
      continue;
    }
    size_t n = below(8) == 0 ? below(total + 1) : 1 + below(total);
    size_t w = 0;
    for (size_t k = 0; k < pl.pre_len && w < n; k++)
      wire[wn + w++] = pl.pre[k];
    for (size_t k = 0; k < pl.payload && w < n; k++)
      wire[wn + w++] = pay[sent + k];
    for (size_t k = 0; k < pl.post_len && w < n; k++)
      wire[wn + w++] = pl.post[k];
    size_t took = hp_body_encode_sent(&e, &pl, n);
    check(took <= pl.payload && took <= n);
    if (w) {
      size_t u, p;
      check(verdict == HB_MORE);
      verdict = hp_body_decode(&d, wire + wn, w, back + bn, &u, &p);
      check(verdict != HB_ERROR);
      /* Done exactly with the encoder's last byte, never before. */
      check((verdict == HB_DONE) == (hp_body_encode_finished(&e) != 0));
      check(u == w);
      bn += p;
    }
    wn += w;
    sent += took;
  }
  check(verdict == HB_DONE && sent == len && bn == len);
  check(memcmp(back, pay, len) == 0);
  if (kind != HB_CHUNKED)
    check(wn == len && memcmp(wire, pay, len) == 0);
  free(wire);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HDR)
    return 0;
  int kind = data[0] % 3 == 0 ? HB_CHUNKED
             : data[0] % 3 == 1 ? HB_LENGTH
                                : HB_CLOSE;
  size_t step = (size_t)(data[1] % 64) + 1;
  const hp_body_limits *lim = &limits[data[2] % 4];
  rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)data[3] << 32) ^ size;
  uint64_t length = (uint64_t)data[4] | (uint64_t)data[5] << 8;
  const char *body = (const char *)data + HDR;
  size_t n = size - HDR;

  char *bufs[4];
  got g[4];
  for (int k = 0; k < 4; k++) {
    bufs[k] = malloc(n + 1);
    check(bufs[k] != NULL);
    g[k].pay = bufs[k];
  }
  decode(kind, length, lim, body, n, 0, step, 0, &g[0]);
  decode(kind, length, lim, body, n, 1, step, 0, &g[1]);
  decode(kind, length, lim, body, n, 2, step, 1, &g[2]);
  decode(kind, length, lim, body, n, 0, step, 1, &g[3]);
  for (int k = 1; k < 4; k++)
    check(same(&g[0], &g[k]));

  /* The reference. */
  ref p = {(const unsigned char *)body, n, 0, SIZE_MAX, R_UNSET, 0, NULL, 0};
  char *rpay = malloc(n + 1);
  check(rpay != NULL);
  p.pay = rpay;
  if (kind == HB_CHUNKED) {
    ref_chunked(&p, lim);
  } else {
    size_t take = kind == HB_LENGTH && length < n ? (size_t)length : n;
    memcpy(rpay, body, take);
    p.plen = take;
    p.at = take;
    p.r = kind == HB_LENGTH && take == length ? HB_DONE : HB_MORE;
  }
  check(p.r != R_UNSET);
  check(g[0].r == p.r);
  check(g[0].used == p.at);
  check(g[0].plen == p.plen && memcmp(g[0].pay, rpay, p.plen) == 0);
  free(rpay);

  /* Framed again. */
  encode(HB_CHUNKED, g[0].pay, g[0].plen);
  encode(HB_LENGTH, g[0].pay, g[0].plen);
  for (int k = 0; k < 4; k++)
    free(bufs[k]);
  return 0;
}

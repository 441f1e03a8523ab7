/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the http_proxy module's response path, as
 * http_forward.c runs it: an origin's bytes (interim heads, the final
 * head, the body) parsed (http_head.c), the body's framing judged
 * (hp_head_framing) and decoded in place (http_body.c), the head rewritten and
 * the payload framed again for the client (hp_head_reframe, the encoder) with
 * partial writes. Then a strict client reads what the proxy wrote.
 *
 * Input: byte 0: bit 0 the client speaks HTTP/1.0, bit 1 the request was
 * HEAD, bits 2-3 one of four limit sets; byte 1 the origin's read size
 * (1..64); byte 2 seeds the sizes of the proxy's writes. The rest is what
 * the origin sent, then it closed.
 *
 * The promise checked: whatever the origin sends, the client can never
 * disagree with the proxy about where the response ends. What the client
 * gets is the interim heads the proxy forwarded (HTTP/1.1 clients only)
 * and one final response with exactly one framing (Content-Length,
 * chunked, or none and the close; never chunked for HTTP/1.0), whose body
 * is the payload the proxy decoded and ends exactly where the proxy's
 * output ends, or nothing when the proxy answered 502. A body cut short
 * is never complete to the client (except close-framed ones, which cannot
 * say). Memory safety under ASan, of course. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_proxy/http_body.h"
#include "http_proxy/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define check(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "fuzz_http_response: check failed at line %d: %s\n",  \
              __LINE__, #cond);                                             \
      abort();                                                              \
    }                                                                       \
  } while (0)

#define MAX_INTERIM 8 /* as http_forward.c */

static const hp_head_limits limits[] = {
    {8192, 16384, 100}, {64, 128, 4}, {256, 1024, 8}, {16384, 65536, 1000}};

/* A growing byte string. */
typedef struct bytes {
  char *p;
  size_t len, cap;
} bytes;

static void append(bytes *b, const void *s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = (b->len + n) * 2 + 64;
    char *p = realloc(b->p, cap);
    check(p != NULL);
    b->p = p;
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->len, s, n);
  b->len += n;
}

/* The proxy's side of one exchange. */
typedef struct proxy {
  const hp_head_limits *lim;
  int client_minor, head_req;
  bytes in;       /* the origin's bytes read so far, not consumed */
  bytes out;      /* what the client got */
  bytes payload;  /* the body payload the proxy decoded */
  size_t dec;     /* in [0, dec): decoded payload not written yet */
  int interim, final, failed, cut;
  int in_kind, out_kind;
  http_head resp;
  hp_body_decoder d;
  hp_body_encoder e;
  unsigned wseed;
} proxy;

static void new_head(proxy *p) {
  hp_head_free(&p->resp);
  hp_head_init(&p->resp, HTTP_RESPONSE, p->lim);
  if (p->head_req)
    hp_head_expect_no_body(&p->resp);
}

static void consume(bytes *b, size_t n) {
  memmove(b->p, b->p + n, b->len - n);
  b->len -= n;
}

/* Writes the rewritten head to the client. */
static void write_head(proxy *p, const hp_head_frame *fr, int interim) {
  size_t max = hp_head_write_max(&p->resp);
  char *h = malloc(max);
  check(h != NULL);
  ssize_t n = hp_head_write_response(&p->resp, p->in.p, fr, 0,
                                     interim ? 1 : p->client_minor, h, max);
  check(n > 0 && (size_t)n <= max);
  append(&p->out, h, (size_t)n);
  free(h);
}

/* Writes decoded payload framed by the encoder, in write sizes drawn from
 * wseed, until nothing is ready. */
static void flush_body(proxy *p) {
  for (int guard = 0; guard < 100000; guard++) {
    hp_body_plan pl;
    hp_body_encode_plan(&p->e, p->dec, p->d.done, &pl);
    size_t want = pl.pre_len + pl.payload + pl.post_len;
    if (want == 0)
      return;
    p->wseed = p->wseed * 1103515245u + 12345u;
    size_t n = (p->wseed >> 16) % (want + 1);
    if (n == 0)
      n = 1;
    /* Write the first n bytes of pre, payload, post. */
    size_t left = n, k;
    k = left < pl.pre_len ? left : pl.pre_len;
    append(&p->out, pl.pre, k);
    left -= k;
    k = left < pl.payload ? left : pl.payload;
    append(&p->out, p->in.p, k);
    left -= k;
    k = left < pl.post_len ? left : pl.post_len;
    append(&p->out, pl.post, k);
    size_t used = hp_body_encode_sent(&p->e, &pl, n);
    check(used <= pl.payload && used <= p->dec);
    consume(&p->in, used);
    p->dec -= used;
  }
  check(0); /* the encoder did not finish: a loop */
}

/* Decodes what is new in in (in place, as body_decode does). */
static void decode(proxy *p) {
  if (p->dec >= p->in.len)
    return;
  char *s = p->in.p + p->dec;
  size_t n = p->in.len - p->dec, used = 0, made = 0;
  int r = hp_body_decode(&p->d, s, n, s, &used, &made);
  check(used <= n && made <= used);
  append(&p->payload, s, made);
  if (r == HB_ERROR) {
    p->failed = 1;
    return;
  }
  check(r == HB_DONE || used == n);
  memmove(s + made, s + used, n - used);
  p->in.len -= used - made;
  p->dec += made;
}

/* A final head is at the start of in. */
static void on_final(proxy *p) {
  int kind, has;
  uint64_t length;
  if (hp_head_framing(&p->resp, p->in.p, &kind, &length, &has)) {
    p->failed = 1;
    return;
  }
  p->in_kind = kind;
  p->out_kind = hp_head_reframe(kind, p->client_minor);
  hp_head_frame fr = {p->out_kind, length};
  int status = hp_head_status(&p->resp);
  if (kind == HB_NONE && has && status != 204)
    fr.kind = HB_LENGTH;
  write_head(p, &fr, 0);
  consume(&p->in, p->resp.head_len);
  hp_body_limits bl = {p->lim->max_line, p->lim->max_header_bytes};
  hp_body_decoder_init(&p->d, kind, length, &bl);
  hp_body_encoder_init(&p->e, kind == HB_NONE ? HB_NONE : p->out_kind);
  p->final = 1;
  p->dec = 0;
}

/* New origin bytes arrived in in. */
static void step(proxy *p) {
  while (!p->final && !p->failed && p->in.len > 0) {
    int r = hp_head_parse(&p->resp, p->in.p, p->in.len);
    if (r == HH_MORE)
      return;
    if (r == HH_ERROR) {
      p->failed = 1;
      return;
    }
    int status = hp_head_status(&p->resp);
    if (status < 100 || status > 599 || status == 101) {
      p->failed = 1;
      return;
    }
    if (status / 100 != 1) {
      on_final(p);
      break;
    }
    if (++p->interim > MAX_INTERIM) {
      p->failed = 1;
      return;
    }
    if (p->client_minor) {
      hp_head_frame none = {HB_NONE, 0};
      write_head(p, &none, 1);
    }
    consume(&p->in, p->resp.head_len);
    new_head(p);
  }
  if (p->final && !p->failed) {
    decode(p);
    if (!p->failed)
      flush_body(p);
  }
}

/* The client reads what the proxy wrote, strictly. */
static void client_reads(const proxy *p) {
  char *buf = malloc(p->out.len ? p->out.len : 1);
  check(buf != NULL);
  memcpy(buf, p->out.p, p->out.len);
  size_t off = 0;
  int interims = 0;
  static const hp_head_limits roomy = {65536, 262144, 4000};
  for (;;) {
    http_head h;
    hp_head_init(&h, HTTP_RESPONSE, &roomy);
    if (p->head_req)
      hp_head_expect_no_body(&h);
    int r = hp_head_parse(&h, buf + off, p->out.len - off);
    check(r == HH_DONE);
    check(hp_head_minor(&h) == 1); /* we speak HTTP/1.1 */
    int status = hp_head_status(&h);
    if (status / 100 == 1) {
      check(p->client_minor == 1); /* no interim to an HTTP/1.0 client */
      interims++;
      off += h.head_len;
      hp_head_free(&h);
      continue;
    }
    check(interims == (p->client_minor ? p->interim : 0));
    int kind, has;
    uint64_t length;
    check(hp_head_framing(&h, buf + off, &kind, &length, &has) == 0);
    size_t te = 0;
    for (size_t i = 0; i < h.n_fields; i++)
      te += (h.flags[i] & HH_F_TE) != 0;
    check(te <= 1 && (te == 0 || p->client_minor == 1));
    check(kind == (p->in_kind == HB_NONE ? HB_NONE : p->out_kind));
    off += h.head_len;
    hp_head_free(&h);
    hp_body_limits bl = {65536, 262144};
    hp_body_decoder d;
    hp_body_decoder_init(&d, kind, length, &bl);
    char *body = malloc(p->out.len - off + 1);
    check(body != NULL);
    size_t used = 0, made = 0;
    int br =
        hp_body_decode(&d, buf + off, p->out.len - off, body, &used, &made);
    check(br != HB_ERROR);
    /* What the client decoded is a prefix of, or all of, the payload. */
    check(made <= p->payload.len);
    check(made == 0 || memcmp(body, p->payload.p, made) == 0);
    if (br == HB_DONE) {
      check(off + used == p->out.len); /* nothing after the response */
      check(!p->cut);                  /* a cut body is never complete */
      check(made == p->payload.len);
    } else if (!p->cut) {
      /* Not complete without the close: only close-framed bodies. */
      check(hp_body_decode_eof(&d) == HB_DONE);
      check(made == p->payload.len);
    }
    free(body);
    break;
  }
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  proxy p;
  memset(&p, 0, sizeof(p));
  p.client_minor = !(data[0] & 1);
  p.head_req = (data[0] >> 1) & 1;
  p.lim = &limits[(data[0] >> 2) & 3];
  size_t step_n = (size_t)(data[1] % 64) + 1;
  p.wseed = data[2];
  const char *text = (const char *)data + 3;
  size_t n = size - 3;
  new_head(&p);
  for (size_t off = 0; off < n && !p.failed; off += step_n) {
    size_t k = n - off < step_n ? n - off : step_n;
    /* The module reads a head at most head_cap bytes at a time. */
    append(&p.in, text + off, k);
    step(&p);
    if (!p.final && p.in.len >= p.lim->max_line + p.lim->max_header_bytes)
      check(p.failed); /* hp_head_parse refuses before the buffer is full */
  }
  if (p.failed && p.final)
    p.cut = 1; /* bad framing mid-body: the proxy closes the client */
  if (!p.failed && p.final) {
    /* The origin closed. */
    if (hp_body_decode_eof(&p.d) == HB_DONE)
      flush_body(&p);
    else
      p.cut = 1;
    if (!p.cut)
      check(hp_body_encode_finished(&p.e));
  }
  if (p.failed && p.out.len == 0) {
    /* The proxy answers 502 of its own: nothing of the origin's. */
  } else if (p.final) {
    client_reads(&p);
  }
  hp_head_free(&p.resp);
  free(p.in.p);
  free(p.out.p);
  free(p.payload.p);
  return 0;
}

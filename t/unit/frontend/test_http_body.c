/* SPDX-License-Identifier: BSD-2-Clause */
/* The http_proxy module's body framing (modules/http_proxy/http_body.c):
 * the strict chunked decoder of RFC 9112 section 7.1 (extensions with
 * tokens and quoted-strings, trailers, CRLF only, size and line limits),
 * Content-Length and close-delimited bodies, the end of input, decoding
 * in place, the verdict's independence of how the bytes were split, and
 * the encoder (chunked framing with partial writes at any byte, round
 * trips through the decoder).
 *
 * Requirements: TM-SEC-1 (bounded values: chunk sizes, size lines and
 * trailer sections have limits). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "http_proxy/http_body.h"
#include "tap.h"

static const hp_body_limits std_lim = {4096, 8192};

#define S(lit) (lit), (sizeof(lit) - 1)

/* ---- helpers ---------------------------------------------------------- */

/* What a decoder made of some input: its verdict, the bytes it used over
 * all calls, the payload, and whether every call kept the contract (used
 * <= len, produced <= used, HB_MORE uses everything). */
typedef struct outcome {
  int r;
  size_t used;
  size_t plen;
  char pay[8192];
  int contract;
} outcome;

/* Decodes in[0..n) in reads of first bytes, then step bytes each, every
 * read in its own exactly sized buffer (so ASan sees any read past it).
 * inplace: each read is decoded into its own buffer. Stops at the first
 * verdict other than HB_MORE. */
static void run(int kind, uint64_t length, const hp_body_limits *lim,
                const char *in, size_t n, size_t first, size_t step,
                int inplace, outcome *o) {
  hp_body_decoder d;
  hp_body_decoder_init(&d, kind, length, lim);
  o->r = HB_MORE;
  o->used = o->plen = 0;
  o->contract = 1;
  size_t off = 0, k = first;
  if (n == 0) {
    size_t u = 1, p = 1;
    o->r = hp_body_decode(&d, "", 0, o->pay, &u, &p);
    o->contract = u == 0 && p == 0;
    return;
  }
  while (off < n && o->r == HB_MORE) {
    if (k > n - off)
      k = n - off;
    char *buf = malloc(k);
    memcpy(buf, in + off, k);
    size_t u = 0, p = 0;
    char *out = inplace ? buf : o->pay + o->plen;
    o->r = hp_body_decode(&d, buf, k, out, &u, &p);
    if (u > k || p > u || (o->r == HB_MORE && u != k) ||
        o->plen + p > sizeof(o->pay))
      o->contract = 0;
    else if (inplace)
      memcpy(o->pay + o->plen, buf, p);
    free(buf);
    o->plen += p;
    o->used += u;
    off += u;
    k = step;
  }
}

static int same(const outcome *a, const outcome *b) {
  return a->r == b->r && a->used == b->used && a->plen == b->plen &&
         memcmp(a->pay, b->pay, a->plen) == 0 && a->contract && b->contract;
}

/* One-shot decoding of a chunked body with limits. */
static int chunked(const hp_body_limits *lim, const char *in, size_t n,
                   outcome *o) {
  run(HB_CHUNKED, 0, lim, in, n, n, n, 0, o);
  return o->r;
}

/* ---- chunked vectors ----------------------------------------------------- */

typedef struct vec {
  const char *name;
  const char *in;
  size_t n;
  int r;
  long used; /* -1: all of it */
  const char *pay;
  const hp_body_limits *lim; /* NULL: std_lim */
} vec;

static const hp_body_limits line8 = {8, 8192};      /* size lines of 8 bytes */
static const hp_body_limits trailer16 = {4096, 16}; /* 16 trailer bytes */

static const vec vecs[] = {
    /* Accepted. */
    {"one chunk", S("5\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1, "hello", NULL},
    {"two chunks", S("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), HB_DONE, -1,
     "hello world", NULL},
    {"empty body (last chunk only)", S("0\r\n\r\n"), HB_DONE, -1, "", NULL},
    {"extension without value", S("5;foo\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1,
     "hello", NULL},
    {"extensions with token values",
     S("5;foo=bar;baz\r\nhello\r\n0;x=1\r\n\r\n"), HB_DONE, -1, "hello", NULL},
    {"BWS around ; and =",
     S("5 ; foo = bar\t;\tbaz\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1, "hello",
     NULL},
    {"BWS after the size before ;", S("5\t ;a\r\nhello\r\n0\r\n\r\n"), HB_DONE,
     -1, "hello", NULL},
    {"quoted-string extension with quoted-pairs and ;",
     S("5;name=\"quoted \\\"value\\\" ; x=y\"\r\nhello\r\n0\r\n\r\n"), HB_DONE,
     -1, "hello", NULL},
    {"empty quoted-string", S("5;q=\"\"\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1,
     "hello", NULL},
    {"quoted-string with HTAB, obs-text, quoted-pair of obs-text",
     S("5;q=\"a\tb\x80\xff\\\xa0\\\t\"\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1,
     "hello", NULL},
    {"quoted-string then BWS ; token",
     S("5;a=\"b\" ;c\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1, "hello", NULL},
    {"extension on the last chunk", S("0;a=\"b\";c=d\r\n\r\n"), HB_DONE, -1, "",
     NULL},
    {"trailer fields",
     S("5\r\nhello\r\n0\r\nExpires: never\r\nX-Sum:abc \t\r\nEmpty:\r\n"
       "X-Obs: \x80\xff\r\n\r\n"),
     HB_DONE, -1, "hello", NULL},
    {"leading zeros", S("0005\r\nhello\r\n0000\r\n\r\n"), HB_DONE, -1, "hello",
     NULL},
    {"uppercase hex", S("A\r\n0123456789\r\n0\r\n\r\n"), HB_DONE, -1,
     "0123456789", NULL},
    {"mixed case hex",
     S("1F\r\n0123456789abcdef0123456789abcde\r\n1f\r\n"
       "0123456789abcdef0123456789abcde\r\n0\r\n\r\n"),
     HB_DONE, -1,
     "0123456789abcdef0123456789abcde0123456789abcdef0123456789abcde", NULL},
    {"16 hex digits", S("0000000000000005\r\nhello\r\n0\r\n\r\n"), HB_DONE, -1,
     "hello", NULL},
    {"payload that looks like framing",
     S("7\r\n0\r\n\r\nab\r\n0\r\n\r\n"), HB_DONE, -1, "0\r\n\r\nab", NULL},
    {"bytes after the body are not used",
     S("0\r\n\r\nGET / HTTP/1.1\r\n\r\n"), HB_DONE, 5, "", NULL},
    {"bytes after a trailer are not used",
     S("1\r\nx\r\n0\r\nA: b\r\n\r\n\r\n"), HB_DONE, 17, "x", NULL},
    {"TM-SEC-1 size line of exactly max_line bytes",
     S("5;abcd\r\nhello\r\n0;abcde\r\n\r\n"), HB_ERROR, 23, "hello", &line8},
    {"TM-SEC-1 each size line has max_line bytes",
     S("5;abcd\r\nhello\r\n0;abcd\r\n\r\n"), HB_DONE, -1, "hello", &line8},
    {"TM-SEC-1 trailer of exactly max_trailer bytes",
     S("0\r\nX: 012345678\r\n\r\n"), HB_DONE, -1, "", &trailer16},
    /* Incomplete. */
    {"inside chunk data", S("5\r\nhel"), HB_MORE, -1, "hel", NULL},
    {"inside a size line", S("5\r\nhello\r\n1;a=\"x"), HB_MORE, -1, "hello",
     NULL},
    {"largest chunk size (2^63 - 1)", S("7fffffffffffffff\r\nabc"), HB_MORE, -1,
     "abc", NULL},
    {"final CRLF missing", S("5\r\nhello\r\n0\r\n"), HB_MORE, -1, "hello",
     NULL},
    {"inside the trailer", S("0\r\nX: y\r\n"), HB_MORE, -1, "", NULL},
    {"CR of the final CRLF", S("0\r\n\r"), HB_MORE, -1, "", NULL},
    /* Refused, at the offending byte. */
    {"BWS before CRLF (\"5 \\r\\n\")", S("5 \r\n"), HB_ERROR, 2, "", NULL},
    {"bare CR after the size (\"5\\rX\")", S("5\rX"), HB_ERROR, 2, "", NULL},
    {"bare LF after the size", S("5\nhello\r\n0\r\n\r\n"), HB_ERROR, 1, "",
     NULL},
    {"CR CR LF after the size", S("5\r\r\n"), HB_ERROR, 2, "", NULL},
    {"bare LF after ; (\"5;\\n\")", S("5;\n"), HB_ERROR, 2, "", NULL},
    {"; without a name", S("5;\r\n"), HB_ERROR, 2, "", NULL},
    {"bare LF after an extension name", S("5;a\n"), HB_ERROR, 3, "", NULL},
    {"bare CR in an extension name", S("5;a\rb"), HB_ERROR, 4, "", NULL},
    {"bare LF after a token value", S("5;a=b\n"), HB_ERROR, 5, "", NULL},
    {"bare LF after a quoted value", S("5;a=\"b\"\n"), HB_ERROR, 7, "", NULL},
    {"BWS after a name before CRLF", S("5;a \r\n"), HB_ERROR, 4, "", NULL},
    {"= without a value", S("5;a=\r\n"), HB_ERROR, 4, "", NULL},
    {"= BWS without a value", S("5;a= \r\n"), HB_ERROR, 5, "", NULL},
    {"BWS after a value before CRLF", S("5;a=b \r\n"), HB_ERROR, 6, "", NULL},
    {"= without a name", S("5;=b\r\n"), HB_ERROR, 2, "", NULL},
    {"no chunk size", S("\r\n"), HB_ERROR, 0, "", NULL},
    {"extension without a size", S(";a\r\n"), HB_ERROR, 0, "", NULL},
    {"not hex", S("x\r\n"), HB_ERROR, 0, "", NULL},
    {"sign", S("-5\r\n"), HB_ERROR, 0, "", NULL},
    {"plus", S("+5\r\n"), HB_ERROR, 0, "", NULL},
    {"0x prefix", S("0x5\r\n"), HB_ERROR, 1, "", NULL},
    {"leading BWS", S(" 5\r\n"), HB_ERROR, 0, "", NULL},
    {"NUL in an extension name", S("5;a\0\r\n"), HB_ERROR, 3, "", NULL},
    {"not a tchar in an extension name", S("5;a@b\r\n"), HB_ERROR, 3, "",
     NULL},
    {"DQUOTE inside a token value", S("5;a=b\"c\"\r\n"), HB_ERROR, 5, "", NULL},
    {"bytes after a quoted-string", S("5;a=\"b\"c\r\n"), HB_ERROR, 7, "", NULL},
    {"CR in a quoted-string", S("5;a=\"b\r\n"), HB_ERROR, 6, "", NULL},
    {"LF in a quoted-string", S("5;a=\"b\nc\"\r\n"), HB_ERROR, 6, "", NULL},
    {"CTL in a quoted-string", S("5;a=\"\x01\"\r\n"), HB_ERROR, 5, "", NULL},
    {"DEL in a quoted-string", S("5;a=\"\x7f\"\r\n"), HB_ERROR, 5, "", NULL},
    {"quoted-pair of LF", S("5;a=\"\\\n\"\r\n"), HB_ERROR, 6, "", NULL},
    {"quoted-pair of NUL", S("5;a=\"\\\0\"\r\n"), HB_ERROR, 6, "", NULL},
    {"chunk data not followed by CRLF", S("5\r\nhelloXY0\r\n\r\n"), HB_ERROR, 8,
     "hello", NULL},
    {"chunk data followed by LF only", S("5\r\nhello\n0\r\n\r\n"), HB_ERROR, 8,
     "hello", NULL},
    {"chunk data followed by CR only", S("5\r\nhello\r0\r\n\r\n"), HB_ERROR, 9,
     "hello", NULL},
    {"chunk data followed by CR CR LF", S("5\r\nhello\r\r\n"), HB_ERROR, 9,
     "hello", NULL},
    {"bare LF after the last chunk", S("0\n\r\n"), HB_ERROR, 1, "", NULL},
    {"bare LF as the final line", S("0\r\n\n"), HB_ERROR, 3, "", NULL},
    {"bare CR as the final line", S("0\r\n\r\r"), HB_ERROR, 4, "", NULL},
    {"bare LF ending a trailer", S("0\r\nX: y\n\r\n"), HB_ERROR, 7, "", NULL},
    {"CR CR LF ending a trailer", S("0\r\nX: y\r\r\n"), HB_ERROR, 8, "", NULL},
    {"bare CR inside a trailer value", S("0\r\nX: a\rb\r\n\r\n"), HB_ERROR, 8,
     "", NULL},
    {"NUL in a trailer value", S("0\r\nX: \0\r\n\r\n"), HB_ERROR, 6, "", NULL},
    {"CTL in a trailer value", S("0\r\nX: a\x01\r\n\r\n"), HB_ERROR, 7, "",
     NULL},
    {"DEL in a trailer value", S("0\r\nX:\x7f\r\n\r\n"), HB_ERROR, 5, "", NULL},
    {"SP before a trailer's colon", S("0\r\nX : y\r\n\r\n"), HB_ERROR, 4, "",
     NULL},
    {"obs-fold in the trailer", S("0\r\nX: y\r\n z\r\n\r\n"), HB_ERROR, 9, "",
     NULL},
    {"trailer without a name", S("0\r\n: y\r\n\r\n"), HB_ERROR, 3, "", NULL},
    {"trailer without a colon", S("0\r\nX\r\n\r\n"), HB_ERROR, 4, "", NULL},
    {"TM-SEC-1 17 hex digits", S("00000000000000005\r\nhello\r\n0\r\n\r\n"),
     HB_ERROR, 16, "", NULL},
    {"TM-SEC-1 2^64 (17 digits)", S("10000000000000000\r\n"), HB_ERROR, 16, "",
     NULL},
    {"TM-SEC-1 chunk size 2^63", S("8000000000000000\r\n"), HB_ERROR, 15, "",
     NULL},
    {"TM-SEC-1 chunk size 2^64 - 1", S("ffffffffffffffff\r\n"), HB_ERROR, 15,
     "", NULL},
    {"TM-SEC-1 size line over max_line", S("5;abcde\r\nhello\r\n0\r\n\r\n"),
     HB_ERROR, 8, "", &line8},
    {"TM-SEC-1 unfinished size line over max_line", S("5;abcdefg"), HB_ERROR, 8,
     "", &line8},
    {"TM-SEC-1 trailer over max_trailer", S("0\r\nX: 0123456789\r\n\r\n"),
     HB_ERROR, 19, "", &trailer16},
    {"TM-SEC-1 unfinished trailer over max_trailer",
     S("0\r\nX: 0123456789abcdefghij"), HB_ERROR, 19, "", &trailer16},
    /* The injection attack: a lenient parser that takes ";\n" as the end
     * of the size line reads a last chunk inside the data and then a
     * response of the attacker's making. */
    {"response splitting: \"e;\\n\" is refused at its LF",
     S("e;\nAAAAAAA\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: x\r\n"
       "Content-Length: 0\r\n\r\n"),
     HB_ERROR, 2, "", NULL},
    {"response splitting: \"e\\n\" is refused at its LF",
     S("e\nAAAAAAA\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: x\r\n\r\n"),
     HB_ERROR, 1, "", NULL},
};

#define N_VECS (sizeof(vecs) / sizeof(vecs[0]))

static void test_vectors(void) {
  static outcome o;
  for (size_t i = 0; i < N_VECS; i++) {
    const vec *v = &vecs[i];
    chunked(v->lim ? v->lim : &std_lim, v->in, v->n, &o);
    size_t want_used = v->used < 0 ? v->n : (size_t)v->used;
    int good = o.r == v->r && o.used == want_used &&
               o.plen == strlen(v->pay) && memcmp(o.pay, v->pay, o.plen) == 0 &&
               o.contract;
    char name[160];
    snprintf(name, sizeof(name), "chunked: %s", v->name);
    ok(good, name);
    if (!good)
      printf("#   r=%d (want %d) used=%zu (want %zu) payload '%.*s'\n", o.r,
             v->r, o.used, want_used, (int)o.plen, o.pay);
  }
}

/* Every vector fed byte by byte and in every split in two: the same
 * verdict, bytes used and payload as in one piece; in place too. */
static void test_split_invariance(void) {
  static outcome one, other;
  size_t failures = 0, runs = 0;
  for (size_t i = 0; i < N_VECS; i++) {
    const vec *v = &vecs[i];
    const hp_body_limits *lim = v->lim ? v->lim : &std_lim;
    run(HB_CHUNKED, 0, lim, v->in, v->n, v->n, v->n, 0, &one);
    int good = 1;
    run(HB_CHUNKED, 0, lim, v->in, v->n, 1, 1, 0, &other);
    good &= same(&one, &other);
    run(HB_CHUNKED, 0, lim, v->in, v->n, 1, 1, 1, &other);
    good &= same(&one, &other);
    run(HB_CHUNKED, 0, lim, v->in, v->n, v->n, v->n, 1, &other);
    good &= same(&one, &other);
    for (size_t at = 1; at < v->n; at++) {
      run(HB_CHUNKED, 0, lim, v->in, v->n, at, v->n, 0, &other);
      good &= same(&one, &other);
      run(HB_CHUNKED, 0, lim, v->in, v->n, at, v->n, 1, &other);
      good &= same(&one, &other);
      runs += 2;
    }
    if (!good) {
      failures++;
      printf("#   split dependent: %s\n", v->name);
    }
  }
  ok(failures == 0, "chunked: every vector byte by byte, in every 2-way "
                    "split and in place gives the one-shot verdict, "
                    "used bytes and payload");
  ok(runs > 1000, "split invariance ran over many splits");
}

/* ---- chunked: limits, big bodies, state after the verdict ------------- */

static void test_chunked_more(void) {
  static outcome o;
  /* A size line longer than the default limit (TM-SEC-1). */
  static char big[6000];
  memset(big, 'a', sizeof(big));
  big[0] = '5';
  big[1] = ';';
  chunked(&std_lim, big, sizeof(big), &o);
  ok(o.r == HB_ERROR && o.used == std_lim.max_line,
     "TM-SEC-1 a 6000-byte extension is refused at max_line");
  /* A trailer section larger than the limit, field by field. */
  static char tr[10000];
  size_t n = 0;
  memcpy(tr, "0\r\n", 3);
  n = 3;
  while (n + 12 < sizeof(tr)) {
    memcpy(tr + n, "X-A: bbbbb\r\n", 12);
    n += 12;
  }
  chunked(&std_lim, tr, n, &o);
  ok(o.r == HB_ERROR && o.used == 3 + std_lim.max_trailer,
     "TM-SEC-1 many small trailer fields are refused at max_trailer");

  hp_body_limits tiny = {4096, 2};
  is_int(chunked(&tiny, S("0\r\n\r\n"), &o), HB_DONE,
         "TM-SEC-1 max_trailer 2 takes just the final CRLF");
  tiny.max_trailer = 1;
  ok(chunked(&tiny, S("0\r\n\r\n"), &o) == HB_ERROR && o.used == 4,
     "TM-SEC-1 max_trailer 1 refuses even an empty trailer section");
  hp_body_limits zero = {0, 0};
  ok(chunked(&zero, S("0\r\n\r\n"), &o) == HB_ERROR && o.used == 0,
     "TM-SEC-1 zero limits refuse every chunked body");

  hp_body_decoder d;
  size_t u = 9, p = 9;
  char out[16];
  hp_body_decoder_init(&d, HB_CHUNKED, 0, NULL);
  ok(hp_body_decode(&d, "0\r\n\r\n", 5, out, &u, &p) == HB_ERROR && u == 0,
     "no limits given: chunked bodies fail closed");

  /* Many small chunks, one size line limit each. */
  static char many[6 * 1000 + 5];
  n = 0;
  for (int i = 0; i < 1000; i++) {
    memcpy(many + n, "1\r\nx\r\n", 6);
    n += 6;
  }
  memcpy(many + n, "0\r\n\r\n", 5);
  n += 5;
  hp_body_limits small = {3, 2};
  ok(chunked(&small, many, n, &o) == HB_DONE && o.used == n && o.plen == 1000,
     "1000 one-byte chunks with 3-byte size lines");

  /* A large chunk in pieces. */
  static char large[6 + 4096 + 7];
  memcpy(large, "1000\r\n", 6);
  memset(large + 6, 'z', 4096);
  memcpy(large + 6 + 4096, "\r\n0\r\n\r\n", 7);
  static outcome a;
  run(HB_CHUNKED, 0, &std_lim, large, 6 + 4096 + 7, 7, 1000, 0, &a);
  ok(a.r == HB_DONE && a.plen == 4096 && a.used == 6 + 4096 + 7 && a.contract,
     "a 4096-byte chunk in 1000-byte reads");

  /* After HB_DONE and HB_ERROR. */
  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  ok(hp_body_decode(&d, S("3\r\nabc\r\n0\r\n\r\nXYZ"), out, &u, &p) ==
             HB_DONE &&
         u == 13 && p == 3 && d.payload == 3,
     "done: used stops at the end, payload counted");
  u = p = 9;
  ok(hp_body_decode(&d, S("1\r\nx\r\n"), out, &u, &p) == HB_DONE && u == 0 &&
         p == 0,
     "after HB_DONE: HB_DONE with nothing used or produced");
  is_int(hp_body_decode_eof(&d), HB_DONE, "eof after the end is fine");

  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  ok(hp_body_decode(&d, S("2\r\nab\r\n5;\n"), out, &u, &p) == HB_ERROR &&
         u == 9 && p == 2,
     "error: used and produced say how far it got");
  u = p = 9;
  ok(hp_body_decode(&d, S("0\r\n\r\n"), out, &u, &p) == HB_ERROR && u == 0 &&
         p == 0,
     "after HB_ERROR: HB_ERROR with nothing used or produced");
  is_int(hp_body_decode_eof(&d), HB_ERROR, "eof after an error is an error");

  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  ok(hp_body_decode(&d, NULL, 0, out, &u, &p) == HB_MORE && u == 0 && p == 0,
     "len 0 changes nothing");
  ok(hp_body_decode(&d, S("2\r\nab"), out, &u, &p) == HB_MORE && u == 5 &&
         p == 2,
     "chunked: inside the data");
  is_int(hp_body_decode_eof(&d), HB_ERROR, "eof inside chunk data: cut short");
  ok(hp_body_decode(&d, S("\r\n0\r\n\r\n"), out, &u, &p) == HB_ERROR && u == 0,
     "after a cut-short eof every call is an error");

  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  hp_body_decode(&d, S("2\r\nab\r\n0\r\n\r"), out, &u, &p);
  is_int(hp_body_decode_eof(&d), HB_ERROR,
         "eof before the final LF: cut short");
  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  is_int(hp_body_decode_eof(&d), HB_ERROR, "eof before any chunk: cut short");
}

/* ---- Content-Length, close, none ----------------------------------------- */

/* A read-only page holding s: decoding it in place must not write. */
static char *ro_page(const char *s, size_t n) {
  long pg = sysconf(_SC_PAGESIZE);
  char *m = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return NULL;
  memcpy(m, s, n);
  mprotect(m, (size_t)pg, PROT_READ);
  return m;
}

static void test_length_close_none(void) {
  hp_body_decoder d;
  char out[64];
  size_t u, p;
  hp_body_decoder_init(&d, HB_LENGTH, 5, &std_lim);
  ok(hp_body_decode(&d, S("helloGET / HTTP/1.1\r\n\r\n"), out, &u, &p) ==
             HB_DONE &&
         u == 5 && p == 5 && memcmp(out, "hello", 5) == 0,
     "Content-Length 5: 5 bytes, the pipelined request after is not used");
  ok(hp_body_decode(&d, S("more"), out, &u, &p) == HB_DONE && u == 0 && p == 0,
     "Content-Length: done stays done");

  hp_body_decoder_init(&d, HB_LENGTH, 10, &std_lim);
  ok(hp_body_decode(&d, S("hello"), out, &u, &p) == HB_MORE && u == 5 && p == 5,
     "Content-Length 10: first 5");
  ok(hp_body_decode(&d, S("world!!"), out, &u, &p) == HB_DONE && u == 5 &&
         p == 5 && d.payload == 10,
     "Content-Length 10: the next 5 end it, 2 left over");

  hp_body_decoder_init(&d, HB_LENGTH, 0, &std_lim);
  ok(hp_body_decode(&d, S("GET"), out, &u, &p) == HB_DONE && u == 0 && p == 0,
     "Content-Length 0: done at once");
  is_int(hp_body_decode_eof(&d), HB_DONE, "Content-Length 0: eof is fine");

  hp_body_decoder_init(&d, HB_LENGTH, UINT64_MAX, NULL);
  ok(hp_body_decode(&d, S("abc"), out, &u, &p) == HB_MORE && u == 3 &&
         d.left == UINT64_MAX - 3,
     "a huge Content-Length counts down");

  hp_body_decoder_init(&d, HB_LENGTH, 5, &std_lim);
  hp_body_decode(&d, S("hel"), out, &u, &p);
  is_int(hp_body_decode_eof(&d), HB_ERROR,
         "Content-Length: eof after 3 of 5 is "
         "cut short");
  ok(hp_body_decode(&d, S("lo"), out, &u, &p) == HB_ERROR && u == 0,
     "Content-Length: error stays");

  hp_body_decoder_init(&d, HB_LENGTH, 5, &std_lim);
  hp_body_decode(&d, S("hello"), out, &u, &p);
  is_int(hp_body_decode_eof(&d), HB_DONE,
         "Content-Length: eof at the end is fine");

  hp_body_decoder_init(&d, HB_CLOSE, 99, &std_lim);
  ok(hp_body_decode(&d, S("0\r\n\r\nanything"), out, &u, &p) == HB_MORE &&
         u == 13 && p == 13 && memcmp(out, "0\r\n\r\nanything", 13) == 0,
     "close-delimited: every byte is payload");
  is_int(hp_body_decode_eof(&d), HB_DONE, "close-delimited: eof ends it");
  ok(hp_body_decode(&d, S("x"), out, &u, &p) == HB_DONE && u == 0 && p == 0,
     "close-delimited: done after eof");

  hp_body_decoder_init(&d, HB_NONE, 7, &std_lim);
  ok(hp_body_decode(&d, S("x"), out, &u, &p) == HB_DONE && u == 0 && p == 0,
     "no body: done at once");
  is_int(hp_body_decode_eof(&d), HB_DONE, "no body: eof is fine");

  hp_body_decoder_init(&d, 42, 7, &std_lim);
  ok(hp_body_decode(&d, S("x"), out, &u, &p) == HB_ERROR && u == 0,
     "an unknown kind is an error");

  /* In place, with no copy at all: the input is on a read-only page. */
  char *ro = ro_page(S("helloNEXT"));
  if (ro) {
    hp_body_decoder_init(&d, HB_LENGTH, 5, &std_lim);
    ok(hp_body_decode(&d, ro, 9, ro, &u, &p) == HB_DONE && u == 5 && p == 5,
       "Content-Length decodes in place without writing (read-only input)");
    hp_body_decoder_init(&d, HB_CLOSE, 0, &std_lim);
    ok(hp_body_decode(&d, ro, 9, ro, &u, &p) == HB_MORE && p == 9,
       "close-delimited decodes in place without writing");
    hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
    char first[] = "b\r\nhe";
    hp_body_decode(&d, first, 5, first, &u, &p);
    ok(hp_body_decode(&d, ro, 9, ro, &u, &p) == HB_MORE && u == 9 && p == 9,
       "a chunk's data continued in the next read: no copy either");
    munmap(ro, (size_t)sysconf(_SC_PAGESIZE));
  } else {
    ok(0, "mmap for the read-only input");
  }

  /* Chunked in place: the payload moves to the front. */
  char buf[] = "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: v\r\n\r\nrest";
  size_t n = sizeof(buf) - 1;
  hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
  ok(hp_body_decode(&d, buf, n, buf, &u, &p) == HB_DONE && u == n - 4 &&
         p == 11 && memcmp(buf, "hello world", 11) == 0 &&
         memcmp(buf + u, "rest", 4) == 0,
     "chunked in place: payload at the front, the rest untouched");
}

/* ---- the encoder ---------------------------------------------------------- */

/* Appends what the plan says a write of n bytes sends. */
static size_t plan_bytes(const hp_body_plan *pl, const char *payload, size_t n,
                         char *to) {
  size_t w = 0;
  for (size_t i = 0; i < pl->pre_len && w < n; i++)
    to[w++] = pl->pre[i];
  for (size_t i = 0; i < pl->payload && w < n; i++)
    to[w++] = payload[i];
  for (size_t i = 0; i < pl->post_len && w < n; i++)
    to[w++] = pl->post[i];
  return w;
}

static int plan_is(const hp_body_plan *pl, const char *pre, size_t payload,
                   const char *post) {
  return pl->pre_len == strlen(pre) && memcmp(pl->pre, pre, pl->pre_len) == 0 &&
         pl->payload == payload && pl->post_len == strlen(post) &&
         memcmp(pl->post, post, pl->post_len) == 0;
}

static size_t plan_total(const hp_body_plan *pl) {
  return pl->pre_len + pl->payload + pl->post_len;
}

static void test_encoder_basics(void) {
  hp_body_encoder e;
  hp_body_plan pl;
  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 0, 0, &pl);
  ok(plan_is(&pl, "", 0, ""), "chunked: nothing ready, empty plan");
  hp_body_encode_plan(&e, 5, 0, &pl);
  ok(plan_is(&pl, "5\r\n", 5, "\r\n"), "chunked: a chunk of the 5 ready");
  is_int(hp_body_encode_sent(&e, &pl, 10), 5,
         "all of it sent: 5 payload bytes");
  hp_body_encode_plan(&e, 255, 0, &pl);
  ok(plan_is(&pl, "ff\r\n", 255, "\r\n"), "chunked: lowercase hex size");
  is_int(hp_body_encode_sent(&e, &pl, 1), 0, "one byte of the size line");
  hp_body_encode_plan(&e, 255, 0, &pl);
  ok(plan_is(&pl, "f\r\n", 255, "\r\n"), "the rest of the size line");
  is_int(hp_body_encode_sent(&e, &pl, 3 + 100), 100, "size line and 100 bytes");
  hp_body_encode_plan(&e, 300, 0, &pl);
  ok(plan_is(&pl, "", 155, "\r\n"),
     "an open chunk takes only its own 155 bytes");
  is_int(hp_body_encode_sent(&e, &pl, 155), 155,
         "the chunk's data sent, not its CRLF");
  hp_body_encode_plan(&e, 0, 0, &pl);
  ok(plan_is(&pl, "", 0, ""), "the owed CRLF waits for more");
  hp_body_encode_plan(&e, 145, 0, &pl);
  ok(plan_is(&pl, "\r\n91\r\n", 145, "\r\n"),
     "the owed CRLF goes before the next chunk's size");
  is_int(hp_body_encode_sent(&e, &pl, 6 + 145 + 1), 145,
         "stop inside the CRLF");
  hp_body_encode_plan(&e, 0, 0, &pl);
  ok(plan_is(&pl, "\n", 0, ""), "the rest of a CRLF is planned again");
  is_int(hp_body_encode_sent(&e, &pl, 1), 0, "and sent");
  ok(!hp_body_encode_finished(&e), "not finished before the end");
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "0\r\n\r\n", 0, ""), "the end: last chunk, empty trailer");
  ok(!hp_body_encode_finished(&e), "not finished before it is sent");
  hp_body_encode_sent(&e, &pl, 2);
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "\n\r\n", 0, ""), "the rest of the last chunk");
  hp_body_encode_plan(&e, 7, 1, &pl);
  ok(plan_is(&pl, "\n\r\n", 0, ""), "no payload after the end was queued");
  hp_body_encode_sent(&e, &pl, 3);
  ok(hp_body_encode_finished(&e), "finished when its last byte is sent");
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "", 0, ""), "finished: empty plan");
  is_int(hp_body_encode_sent(&e, &pl, 5), 0, "finished: nothing to account");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 3, 1, &pl);
  ok(plan_is(&pl, "3\r\n", 3, "\r\n0\r\n\r\n"),
     "the last payload and the end in one plan");
  is_int(hp_body_encode_sent(&e, &pl, plan_total(&pl)), 3, "sent whole");
  ok(hp_body_encode_finished(&e), "and finished");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 3, 1, &pl);
  hp_body_encode_sent(&e, &pl, 3 + 3 + 3);
  ok(!hp_body_encode_finished(&e), "stopped inside the last chunk");
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "\r\n\r\n", 0, ""), "its rest is planned");
  hp_body_encode_sent(&e, &pl, 4);
  ok(hp_body_encode_finished(&e), "then finished");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 3, 1, &pl);
  hp_body_encode_sent(&e, &pl, 3 + 3);
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "\r\n0\r\n\r\n", 0, ""),
     "data sent, none of the post: the owed CRLF and the end");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_is(&pl, "0\r\n\r\n", 0, ""), "an empty body: just the last chunk");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, 5, 1, &pl);
  hp_body_encode_plan(&e, 9, 1, &pl);
  ok(plan_is(&pl, "5\r\n", 5, "\r\n"),
     "planned again with more ready: the open chunk keeps its size, no end "
     "while payload is left");
  is_int(hp_body_encode_sent(&e, &pl, plan_total(&pl)), 5, "5 sent");
  hp_body_encode_plan(&e, 4, 1, &pl);
  ok(plan_is(&pl, "4\r\n", 4, "\r\n0\r\n\r\n"), "the other 4 and the end");

  hp_body_encoder_init(&e, HB_CHUNKED);
  hp_body_encode_plan(&e, (size_t)0xfedcba9876543210ull, 0, &pl);
  ok(pl.pre_len == 18 && memcmp(pl.pre, "fedcba9876543210\r\n", 18) == 0,
     "a 16-digit chunk size");

  const int kinds[] = {HB_LENGTH, HB_CLOSE};
  for (int i = 0; i < 2; i++) {
    hp_body_encoder_init(&e, kinds[i]);
    hp_body_encode_plan(&e, 5, 0, &pl);
    ok(pl.pre_len == 0 && pl.payload == 5 && pl.post_len == 0,
       "identity: the payload as it is");
    is_int(hp_body_encode_sent(&e, &pl, 3), 3, "identity: partial write");
    hp_body_encode_plan(&e, 2, 1, &pl);
    ok(pl.pre_len == 0 && pl.payload == 2 && pl.post_len == 0,
       "identity: the last bytes");
    hp_body_encode_sent(&e, &pl, 1);
    ok(!hp_body_encode_finished(&e), "identity: not finished with 1 left");
    hp_body_encode_plan(&e, 1, 1, &pl);
    hp_body_encode_sent(&e, &pl, 1);
    ok(hp_body_encode_finished(&e), "identity: finished with the last byte");
  }
  hp_body_encoder_init(&e, HB_LENGTH);
  hp_body_encode_plan(&e, 0, 1, &pl);
  ok(plan_total(&pl) == 0 && hp_body_encode_finished(&e),
     "identity: end with nothing left is finished");

  hp_body_encoder_init(&e, HB_NONE);
  hp_body_encode_plan(&e, 5, 1, &pl);
  ok(hp_body_encode_finished(&e) && plan_total(&pl) == 0,
     "no body: finished at once");
}

/* xorshift64*: deterministic, so failures reproduce. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* Encodes len random payload bytes arriving in random pieces, written in
 * random partial writes; every write is fed to a decoder at once. 1 when
 * the decoder gets back the payload, HB_MORE until the last byte and
 * HB_DONE exactly at it, and the encoder finishes with that byte. */
static int round_trip(int kind, size_t len) {
  static char payload[4096], wire[16384], got[4096];
  for (size_t i = 0; i < len; i++)
    payload[i] = (char)rnd();
  hp_body_encoder e;
  hp_body_decoder d;
  hp_body_encoder_init(&e, kind);
  hp_body_decoder_init(&d, kind, len, &std_lim);
  size_t arrived = 0, sent = 0, wn = 0, gn = 0;
  int verdict = len == 0 && kind == HB_LENGTH ? HB_DONE : HB_MORE;
  for (int iter = 0; iter < 100000 && !hp_body_encode_finished(&e); iter++) {
    if (arrived < len && below(3) == 0)
      arrived += 1 + below(len - arrived);
    size_t ready = arrived - sent;
    int end = arrived == len;
    hp_body_plan pl;
    hp_body_encode_plan(&e, ready, end, &pl);
    size_t total = plan_total(&pl);
    if (pl.payload > ready || pl.pre_len > sizeof(e.frame))
      return 0;
    if (total == 0) {
      if (end && !hp_body_encode_finished(&e))
        return 0; /* stuck */
      continue;
    }
    size_t n = below(4) == 0 ? total : below(total + 1);
    if (wn + n > sizeof(wire))
      return 0;
    size_t w = plan_bytes(&pl, payload + sent, n, wire + wn);
    size_t pay = hp_body_encode_sent(&e, &pl, n);
    /* The decoder sees the bytes as they are written. */
    if (verdict == HB_MORE && w) {
      size_t u, p;
      verdict = hp_body_decode(&d, wire + wn, w, got + gn, &u, &p);
      gn += p;
      if (verdict == HB_DONE && (u != w || !hp_body_encode_finished(&e)))
        return 0; /* done before the end */
      if (verdict == HB_ERROR)
        return 0;
    }
    wn += w;
    sent += pay;
  }
  if (kind == HB_CLOSE && verdict == HB_MORE)
    verdict = hp_body_decode_eof(&d);
  if (kind != HB_CHUNKED && (wn != len || memcmp(wire, payload, len) != 0))
    return 0;
  return hp_body_encode_finished(&e) && verdict == HB_DONE && sent == len &&
         gn == len && memcmp(got, payload, len) == 0;
}

static void test_encoder_round_trip(void) {
  const int kinds[] = {HB_CHUNKED, HB_LENGTH, HB_CLOSE};
  const char *names[] = {"chunked", "Content-Length", "close-delimited"};
  for (int k = 0; k < 3; k++) {
    int fails = 0;
    for (int i = 0; i < 300; i++) {
      size_t len = i < 10 ? (size_t)i : below(i % 3 ? 64 : 3000);
      if (!round_trip(kinds[k], len))
        fails++;
    }
    char name[160];
    snprintf(name, sizeof(name),
             "%s encoder: 300 random bodies with random partial writes "
             "decode back to the payload, done exactly at the end",
             names[k]);
    is_int(fails, 0, name);
  }

  /* Never a last chunk (or any zero-size chunk) before the end: whatever
   * was written before end was given is an unfinished body. */
  int early = 0;
  for (int i = 0; i < 200; i++) {
    hp_body_encoder e;
    hp_body_decoder d;
    hp_body_encoder_init(&e, HB_CHUNKED);
    hp_body_decoder_init(&d, HB_CHUNKED, 0, &std_lim);
    static char wire[8192], out[8192], pay[64];
    for (int step = 0; step < 50; step++) {
      hp_body_plan pl;
      size_t ready = below(3) ? below(sizeof(pay)) : 0;
      hp_body_encode_plan(&e, ready, 0, &pl);
      size_t n = below(plan_total(&pl) + 1);
      size_t w = plan_bytes(&pl, pay, n, wire);
      hp_body_encode_sent(&e, &pl, n);
      size_t u, p;
      if (w && hp_body_decode(&d, wire, w, out, &u, &p) != HB_MORE)
        early++;
      if (memmem(wire, w, "\n0\r\n", 4))
        early++;
    }
    if (hp_body_encode_finished(&e))
      early++;
  }
  is_int(early, 0, "chunked encoder: no \"0\\r\\n\" and no end before end "
                   "is given (200 random runs)");
}

int main(void) {
  plan_lazy();
  test_vectors();
  test_split_invariance();
  test_chunked_more();
  test_length_close_none();
  test_encoder_basics();
  test_encoder_round_trip();
  return done_testing();
}

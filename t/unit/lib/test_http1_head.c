/* SPDX-License-Identifier: BSD-2-Clause */
/* The strict HTTP/1 head scanner (modules/lib/http1_head.c, issue 25
 * item 2), table-driven: each row is bytes, a kind, options and limits,
 * and the outcome (done with the head's length, more, or an error and
 * the offset of the byte that decided it). Every row is fed whole, in
 * two pieces at every split point, and a byte at a time: the outcome,
 * the bytes used and every recorded span must be the same each way.
 *
 * Requirements: TM-SEC-1 (bounded heads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/http1_head.h"
#include "tap.h"

#define MAXF 8

enum { R_MORE = H1_MORE, R_DONE = H1_DONE, R_ERR = H1_ERROR };

typedef struct row {
  const char *name;
  int kind;
  unsigned opts;
  h1_limits lim;
  const char *in;
  int result;
  int error;    /* H1_ERROR rows */
  long used;    /* bytes used at the end (-1: all of them) */
  long fields;  /* DONE rows: field count (-1: not checked) */
  long long cl; /* DONE rows: content_length */
  size_t len;   /* the input's length when it holds NUL (0: strlen) */
} row;

static size_t row_len(const row *r) { return r->len ? r->len : strlen(r->in); }

#define L0 {0, 0, 0, MAXF}
#define REQ H1_REQUEST
#define RESP H1_RESPONSE

static const row rows[] = {
    {"a minimal request", REQ, 0, L0, "GET / HTTP/1.1\r\n\r\n", R_DONE, 0, 18, 0, -1, 0},
    {"fields and a body after", REQ, 0, L0,
     "POST /x?y HTTP/1.0\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", R_DONE, 0,
     50, 2, 3, 0},
    {"incomplete", REQ, 0, L0, "GET / HTTP/1.1\r\nHost: a\r\n", R_MORE, 0, -1, 0, 0, 0},
    {"bare LF refused", REQ, 0, L0, "GET / HTTP/1.1\n\n", R_ERR, H1_E_BARE_LF, 15, 0, 0, 0},
    {"bare LF with H1_LF", REQ, H1_LF, L0, "GET / HTTP/1.1\nA: b\n\n", R_DONE, 0, 21, 1, -1, 0},
    {"bare CR in a value", REQ, 0, L0, "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", R_ERR,
     H1_E_BARE_CR, 22, 0, 0, 0},
    {"bare CR after the start line", REQ, 0, L0, "GET / HTTP/1.1\rX", R_ERR,
     H1_E_BARE_CR, 16, 0, 0, 0},
    {"bare CR ending the head", REQ, 0, L0, "GET / HTTP/1.1\r\n\rX", R_ERR,
     H1_E_BARE_CR, 18, 0, 0, 0},
    {"obs-fold refused", REQ, 0, L0, "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", R_ERR,
     H1_E_OBS_FOLD, 23, 0, 0, 0},
    {"white space before the first field", REQ, 0, L0,
     "GET / HTTP/1.1\r\n A: b\r\n\r\n", R_ERR, H1_E_OBS_FOLD, 17, 0, 0, 0},
    {"white space before the colon", REQ, 0, L0,
     "GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", R_ERR,
     H1_E_SPACE_NAME, 34, 0, 0, 0},
    {"a name that is not a token", REQ, 0, L0, "GET / HTTP/1.1\r\nA(b: c\r\n\r\n",
     R_ERR, H1_E_NAME, 18, 0, 0, 0},
    {"an empty name", REQ, 0, L0, "GET / HTTP/1.1\r\n: c\r\n\r\n", R_ERR,
     H1_E_NAME, 17, 0, 0, 0},
    {"a line without a colon", REQ, 0, L0, "GET / HTTP/1.1\r\nAbc\r\n\r\n", R_ERR,
     H1_E_NAME, 20, 0, 0, 0},
    {"NUL in a value", REQ, 0, L0, "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n", R_ERR,
     H1_E_VALUE, 21, 0, 0, 27},
    {"DEL in a value", REQ, 0, L0, "GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", R_ERR,
     H1_E_VALUE, 21, 0, 0, 0},
    {"obs-text and tabs in a value", REQ, 0, L0,
     "GET / HTTP/1.1\r\nA:\t\xc3\xa9 x\t\r\n\r\n", R_DONE, 0, 28, 1, -1, 0},
    {"an empty value", REQ, 0, L0, "GET / HTTP/1.1\r\nA:\r\nB:  \r\n\r\n", R_DONE, 0,
     28, 2, -1, 0},
    {"two equal Content-Lengths", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length:5 \r\n\r\n", R_DONE,
     0, 56, 2, 5, 0},
    {"two different Content-Lengths", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 54, 0, 0, 0},
    {"a Content-Length list", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 34, 0, 0, 0},
    {"a Content-Length list with H1_CL_LIST", REQ, H1_CL_LIST, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n",
     R_DONE, 0, 59, 2, 5, 0},
    {"a Content-Length list that differs", REQ, H1_CL_LIST, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 38, 0, 0, 0},
    {"an empty Content-Length element", REQ, H1_CL_LIST, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 5,,5\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 35, 0, 0, 0},
    {"a signed Content-Length", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", R_ERR, H1_E_CONTENT_LENGTH,
     33, 0, 0, 0},
    {"an empty Content-Length", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: \r\n\r\n", R_ERR, H1_E_CONTENT_LENGTH,
     34, 0, 0, 0},
    {"a 19-digit Content-Length", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 51, 0, 0, 0},
    {"an 18-digit Content-Length", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 123456789012345678\r\n\r\n", R_DONE,
     0, 54, 1, 123456789012345678LL, 0},
    {"a 20-digit Content-Length", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 10000000000000000000\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 51, 0, 0, 0},
    {"a Content-Length of 2^62", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nContent-Length: 4611686018427387904\r\n\r\n", R_ERR,
     H1_E_CONTENT_LENGTH, 51, 0, 0, 0},
    {"Transfer-Encoding counted", REQ, 0, L0,
     "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", R_DONE, 0, 46, 1,
     -1, 0},
    {"two spaces in the request line", REQ, 0, L0, "GET  / HTTP/1.1\r\n\r\n",
     R_ERR, H1_E_START_LINE, 5, 0, 0, 0},
    {"a control byte in the target", REQ, 0, L0, "GET /\x01 HTTP/1.1\r\n\r\n",
     R_ERR, H1_E_START_LINE, 6, 0, 0, 0},
    {"HTTP/0.9", REQ, 0, L0, "GET /\r\n", R_ERR, H1_E_START_LINE, 6, 0, 0, 0},
    {"a bad version", REQ, 0, L0, "GET / HTTP/1.10\r\n\r\n", R_ERR, H1_E_VERSION,
     15, 0, 0, 0},
    {"a lower-case version", REQ, 0, L0, "GET / http/1.1\r\n\r\n", R_ERR,
     H1_E_VERSION, 7, 0, 0, 0},
    {"HTTP/2.0 is scanned (the caller says 505)", REQ, 0, L0,
     "GET / HTTP/2.0\r\n\r\n", R_DONE, 0, 18, 0, -1, 0},
    {"TLS bytes refused at once", REQ, 0, L0, "\x16\x03\x01\x02", R_ERR,
     H1_E_START_LINE, 1, 0, 0, 0},
    {"an empty line first refused", REQ, 0, L0, "\r\nGET / HTTP/1.1\r\n\r\n",
     R_ERR, H1_E_START_LINE, 1, 0, 0, 0},
    {"empty lines first skipped", REQ, H1_SKIP_EMPTY, L0,
     "\r\n\r\nGET / HTTP/1.1\r\n\r\n", R_DONE, 0, 22, 0, -1, 0},
    {"start line limit: exactly", REQ, 0, {16, 0, 0, MAXF},
     "GET / HTTP/1.1\r\n\r\n", R_DONE, 0, 18, 0, -1, 0},
    {"start line limit: one over", REQ, 0, {15, 0, 0, MAXF},
     "GET / HTTP/1.1\r\n\r\n", R_ERR, H1_E_START_TOO_LONG, 15, 0, 0, 0},
    {"field bytes limit: exactly", REQ, 0, {0, 8, 0, MAXF},
     "GET / HTTP/1.1\r\nA: b\r\n\r\n", R_DONE, 0, 24, 1, -1, 0},
    {"field bytes limit: one over", REQ, 0, {0, 7, 0, MAXF},
     "GET / HTTP/1.1\r\nA: b\r\n\r\n", R_ERR, H1_E_FIELDS_TOO_LONG, 23, 0, 0, 0},
    {"head limit: exactly", REQ, 0, {0, 0, 24, MAXF},
     "GET / HTTP/1.1\r\nA: b\r\n\r\n", R_DONE, 0, 24, 1, -1, 0},
    {"head limit: one over", REQ, 0, {0, 0, 23, MAXF},
     "GET / HTTP/1.1\r\nA: b\r\n\r\n", R_ERR, H1_E_HEAD_TOO_LONG, 23, 0, 0, 0},
    {"head limit in the start line", REQ, 0, {0, 0, 10, MAXF},
     "GET / HTTP/1.1\r\n\r\n", R_ERR, H1_E_HEAD_TOO_LONG, 10, 0, 0, 0},
    {"a bad byte before the limit wins", REQ, 0, {0, 0, 20, MAXF},
     "GET / HTTP/1.1\r\nA\x01", R_ERR, H1_E_NAME, 18, 0, 0, 0},
    {"field count: exactly", REQ, 0, {0, 0, 0, 2},
     "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", R_DONE, 0, 30, 2, -1, 0},
    {"field count: one over", REQ, 0, {0, 0, 0, 2},
     "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", R_ERR,
     H1_E_TOO_MANY_FIELDS, 29, 0, 0, 0},
    {"a status line", RESP, 0, L0, "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody", R_DONE,
     0, 25, 1, -1, 0},
    {"an empty reason", RESP, 0, L0, "HTTP/1.0 404 \r\n\r\n", R_DONE, 0, 17, 0,
     -1, 0},
    {"no SP after the code refused", RESP, 0, L0, "HTTP/1.1 200\r\n\r\n", R_ERR,
     H1_E_START_LINE, 13, 0, 0, 0},
    {"no SP after the code with H1_CODE_ONLY", RESP, H1_CODE_ONLY, L0,
     "HTTP/1.1 200\r\n\r\n", R_DONE, 0, 16, 0, -1, 0},
    {"a 4-digit code", RESP, 0, L0, "HTTP/1.1 2000 OK\r\n\r\n", R_ERR,
     H1_E_STATUS, 13, 0, 0, 0},
    {"a code below 100", RESP, 0, L0, "HTTP/1.1 099 OK\r\n\r\n", R_ERR,
     H1_E_STATUS, 10, 0, 0, 0},
    {"a code above 599", RESP, 0, L0, "HTTP/1.1 600 OK\r\n\r\n", R_ERR,
     H1_E_STATUS, 10, 0, 0, 0},
    {"a control byte in the reason", RESP, 0, L0, "HTTP/1.1 200 O\x01K\r\n\r\n",
     R_ERR, H1_E_VALUE, 15, 0, 0, 0},
    {"not HTTP", RESP, 0, L0, "SSH-2.0-OpenSSH\r\n", R_ERR, H1_E_VERSION, 1, 0,
     0, 0},
    {"a response's Content-Length", RESP, 0, L0,
     "HTTP/1.1 200 OK\r\nContent-Length: 0000\r\n\r\n", R_DONE, 0, 41, 1, 0, 0},
};

/* Feeds in at the split points given (cuts[0..ncut), ascending). */
static int run(const row *r, const size_t *cuts, size_t ncut, h1_head *h,
               h1_field *f, size_t *used_total) {
  size_t n = row_len(r);
  h1_init(h, r->kind, r->opts, &r->lim, f);
  size_t at = 0;
  int res = H1_MORE;
  for (size_t c = 0; c <= ncut && res == H1_MORE; c++) {
    size_t end = c < ncut ? cuts[c] : n;
    size_t used = 0;
    /* A private copy, exactly the piece: ASan sees any read past it. */
    char *piece = malloc(end - at + 1);
    memcpy(piece, r->in + at, end - at);
    res = h1_feed(h, piece, end - at, &used);
    free(piece);
    if (res == H1_MORE && used != end - at)
      return -100; /* MORE takes every byte */
    at += used;
  }
  *used_total = at;
  return res;
}

static int same_fields(const h1_head *a, const h1_field *fa, const h1_head *b,
                       const h1_field *fb) {
  if (a->n_fields != b->n_fields || a->head_len != b->head_len ||
      a->content_length != b->content_length || a->te_fields != b->te_fields ||
      a->method.off != b->method.off || a->method.len != b->method.len ||
      a->target.off != b->target.off || a->target.len != b->target.len ||
      a->reason.off != b->reason.off || a->reason.len != b->reason.len ||
      a->status != b->status || a->minor != b->minor)
    return 0;
  for (size_t i = 0; i < a->n_fields && i < MAXF; i++)
    if (memcmp(&fa[i], &fb[i], sizeof(fa[i])) != 0)
      return 0;
  return 1;
}

static void check_row(const row *r) {
  h1_head whole, piece;
  h1_field fw[MAXF], fp[MAXF];
  size_t used = 0, n = row_len(r);
  memset(fw, 0, sizeof(fw));
  int res = run(r, NULL, 0, &whole, fw, &used);
  char name[160];
  snprintf(name, sizeof(name), "%s: outcome", r->name);
  is_int(res, r->result, name);
  if (res == H1_ERROR) {
    snprintf(name, sizeof(name), "%s: error (%s)", r->name,
             h1_error_name(whole.error));
    is_int(whole.error, r->error, name);
  }
  snprintf(name, sizeof(name), "%s: bytes used", r->name);
  is_int((long)used, r->used < 0 ? (long)n : r->used, name);
  if (res == H1_DONE) {
    snprintf(name, sizeof(name), "%s: head length", r->name);
    is_int(whole.head_len, used, name);
    if (r->fields >= 0) {
      snprintf(name, sizeof(name), "%s: field count", r->name);
      is_int(whole.n_fields, r->fields, name);
    }
    if (r->cl >= 0) {
      snprintf(name, sizeof(name), "%s: Content-Length", r->name);
      is_int(whole.content_length, r->cl, name);
    }
  }
  /* Every split point, then a byte at a time. */
  int same = 1;
  for (size_t cut = 0; cut <= n && same; cut++) {
    size_t u = 0;
    memset(fp, 0, sizeof(fp));
    int rr = run(r, &cut, 1, &piece, fp, &u);
    if (rr != res || u != used || piece.error != whole.error ||
        !same_fields(&whole, fw, &piece, fp)) {
      diag("split at %zu: result %d used %zu error %d", cut, rr, u,
           piece.error);
      same = 0;
    }
  }
  size_t cuts[128];
  size_t nc = 0;
  for (size_t i = 1; i < n && nc < 128; i++)
    cuts[nc++] = i;
  size_t u = 0;
  memset(fp, 0, sizeof(fp));
  int rr = run(r, cuts, nc, &piece, fp, &u);
  if (rr != res || u != used || piece.error != whole.error ||
      !same_fields(&whole, fw, &piece, fp)) {
    diag("byte at a time: result %d used %zu", rr, u);
    same = 0;
  }
  snprintf(name, sizeof(name), "%s: the same for every split", r->name);
  ok(same, name);
}

static void check_lookups(void) {
  static const char in[] = "GET /p?q HTTP/1.1\r\nHost: a.example\r\n"
                           "Connection: keep-alive, Upgrade\r\n"
                           "X-Empty:\r\nhost:  b \r\n\r\n";
  h1_head h;
  h1_field f[MAXF];
  h1_limits lim = {0, 0, 0, MAXF};
  size_t used;
  h1_init(&h, H1_REQUEST, 0, &lim, f);
  is_int(h1_feed(&h, in, sizeof(in) - 1, &used), H1_DONE, "lookups: done");
  is_int(h.method.len, 3, "method span");
  ok(!memcmp(in + h.target.off, "/p?q", 4) && h.target.len == 4,
     "target span");
  is_int(h.minor, 1, "minor version");
  long i = h1_find(&h, in, "HOST", 0);
  is_int(i, 0, "first Host found, case-insensitively");
  ok(!memcmp(in + f[0].value.off, "a.example", 9) && f[0].value.len == 9,
     "its value");
  long j = h1_find(&h, in, "host", (size_t)i + 1);
  is_int(j, 3, "the next Host");
  ok(f[3].value.len == 1 && in[f[3].value.off] == 'b',
     "its value without surrounding white space");
  is_int(f[2].value.len, 0, "an empty value");
  is_int(h1_find(&h, in, "missing", 0), -1, "a missing field");
  ok(h1_name_is(&h, in, 1, "connection"), "h1_name_is");
  long c = h1_find(&h, in, "Connection", 0);
  ok(h1_list_has(in + f[c].value.off, f[c].value.len, "upgrade"),
     "h1_list_has finds an element");
  ok(!h1_list_has(in + f[c].value.off, f[c].value.len, "keep"),
     "h1_list_has matches whole elements");

  /* Without a field array: counted, not recorded, still limited. */
  h1_limits two = {0, 0, 0, 2};
  h1_init(&h, H1_REQUEST, 0, &two, NULL);
  is_int(h1_feed(&h, in, sizeof(in) - 1, &used), H1_ERROR,
         "no array: the count is still limited");
  is_int(h1_find(&h, in, "host", 0), -1, "no array: no lookups");

  /* H1_PAUSE_START stops after the start line, then goes on. */
  static const char resp[] = "HTTP/1.1 407 Auth\r\nA: b\r\n\r\nX";
  h1_init(&h, H1_RESPONSE, H1_PAUSE_START, &lim, f);
  is_int(h1_feed(&h, resp, sizeof(resp) - 1, &used), H1_START,
         "pause: the start line");
  is_int(used, 19, "pause: used through its LF");
  is_int(h.status, 407, "pause: the status is known");
  size_t more;
  is_int(h1_feed(&h, resp + used, sizeof(resp) - 1 - used, &more), H1_DONE,
         "pause: then the rest");
  is_int(used + more, 27, "pause: up to the head's end, not the byte after");
  is_int(h1_feed(&h, "x", 1, &more), H1_DONE, "done stays done");
  is_int(more, 0, "and takes nothing");
}

int main(void) {
  plan_lazy();
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    check_row(&rows[i]);
  check_lookups();
  return done_testing();
}

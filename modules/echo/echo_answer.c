/* SPDX-License-Identifier: BSD-2-Clause */
/* The echo endpoint's answer (echo_answer.h). */
#include <stdio.h>
#include <string.h>

#include "echo_answer.h"
#include "lib/http1_head.h"
#include "lib/json.h"

static const h1_limits echo_limits = {ECHO_HEAD_MAX, ECHO_HEAD_MAX,
                                      ECHO_HEAD_MAX, ECHO_FIELDS_MAX};

static int scan(h1_head *h, h1_field *f, const char *req, size_t len) {
  h1_init(h, H1_REQUEST, H1_LF | H1_SKIP_EMPTY, &echo_limits, f);
  size_t used = 0;
  return h1_feed(h, req, len, &used);
}

int echo_head_complete(const char *req, size_t len) {
  h1_head h;
  h1_field f[ECHO_FIELDS_MAX];
  int r = scan(&h, f, req, len);
  if (r == H1_DONE)
    return ECHO_WHOLE;
  if (r == H1_ERROR)
    return ECHO_BAD;
  return len >= ECHO_HEAD_MAX ? ECHO_BAD : ECHO_MORE;
}

static int span_eq(const char *base, h1_span s, const char *lit) {
  size_t n = strlen(lit);
  if (s.len != n)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char a = base[s.off + i], b = lit[i];
    if (a >= 'A' && a <= 'Z')
      a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z')
      b = (char)(b - 'A' + 'a');
    if (a != b)
      return 0;
  }
  return 1;
}

/* A copy of s (at most cap - 1 bytes) where every byte outside printable
 * ASCII is '?': a header's value may be anything, the JSON may not. */
static void printable(char *out, size_t cap, const char *s, size_t n) {
  if (n >= cap)
    n = cap - 1;
  for (size_t i = 0; i < n; i++)
    out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  out[n] = 0;
}

/* The nonce: the header, else the query's nonce= (bounded). */
static void find_nonce(const char *req, const h1_head *h, const h1_field *f,
                       char *out, size_t cap) {
  out[0] = 0;
  for (uint32_t i = 0; i < h->n_fields; i++)
    if (span_eq(req, f[i].name, ECHO_NONCE_HEADER)) {
      printable(out, cap, req + f[i].value.off, f[i].value.len);
      return;
    }
  const char *t = req + h->target.off, *end = t + h->target.len;
  const char *q = memchr(t, '?', h->target.len);
  while (q && q < end) {
    const char *p = q + 1;
    if ((size_t)(end - p) >= 6 && !memcmp(p, "nonce=", 6)) {
      p += 6;
      const char *e = p;
      while (e < end && *e != '&' && *e != '#')
        e++;
      printable(out, cap, p, (size_t)(e - p));
      return;
    }
    q = memchr(p, '&', (size_t)(end - p));
  }
}

static size_t respond(char *out, size_t cap, int status, const char *reason,
                      const char *body, size_t blen, int with_body) {
  int n = snprintf(out, cap,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                   "Content-Length: %zu\r\nCache-Control: no-store\r\n"
                   "Connection: close\r\n\r\n",
                   status, reason,
                   status == 200 ? "application/json" : "text/plain", blen);
  if (n < 0 || (size_t)n >= cap)
    return 0;
  if (with_body) {
    if ((size_t)n + blen > cap)
      return 0;
    memcpy(out + n, body, blen);
    return (size_t)n + blen;
  }
  return (size_t)n;
}

size_t echo_answer(const char *req, size_t len, const char *peer, char *out,
                   size_t cap, int *status) {
  h1_head h;
  h1_field f[ECHO_FIELDS_MAX];
  int st = 400;
  int r = len > ECHO_HEAD_MAX ? H1_ERROR : scan(&h, f, req, len);
  if (status)
    *status = 0;
  if (r != H1_DONE) {
    int big = len > ECHO_HEAD_MAX ||
              (r == H1_ERROR && (h.error == H1_E_START_TOO_LONG ||
                                 h.error == H1_E_FIELDS_TOO_LONG ||
                                 h.error == H1_E_HEAD_TOO_LONG ||
                                 h.error == H1_E_TOO_MANY_FIELDS));
    st = big ? 431 : 400;
    if (status)
      *status = st;
    return big ? respond(out, cap, 431, "Request Header Fields Too Large",
                         "too large\n", 10, 1)
               : respond(out, cap, 400, "Bad Request", "bad request\n", 12, 1);
  }
  int head = span_eq(req, h.method, "HEAD");
  if (!head && !span_eq(req, h.method, "GET")) {
    if (status)
      *status = 405;
    return respond(out, cap, 405, "Method Not Allowed", "GET only\n", 9, 1);
  }
  char nonce[ECHO_NONCE_MAX + 1];
  find_nonce(req, &h, f, nonce, sizeof(nonce));
  /* The body is written at the end of out, the head before it: one pass,
   * no second buffer. Room for the head: 160 bytes. */
  if (cap < 256)
    return 0;
  char *body = out + 160;
  size_t bcap = cap - 160;
  json_w w;
  json_w_init(&w, body, bcap);
  json_w_obj(&w);
  json_w_key(&w, "remote_addr");
  json_w_str(&w, peer ? peer : "");
  json_w_key(&w, "nonce");
  json_w_str(&w, nonce);
  json_w_key(&w, "method");
  json_w_str(&w, head ? "HEAD" : "GET");
  json_w_key(&w, "headers");
  json_w_arr(&w);
  char buf[ECHO_HEAD_MAX + 1];
  for (uint32_t i = 0; i < h.n_fields; i++) {
    json_w_arr(&w);
    printable(buf, sizeof(buf), req + f[i].name.off, f[i].name.len);
    json_w_str(&w, buf);
    printable(buf, sizeof(buf), req + f[i].value.off, f[i].value.len);
    json_w_str(&w, buf);
    json_w_arr_end(&w);
  }
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  long blen = json_w_finish(&w);
  if (blen < 0 || (size_t)blen + 1 >= bcap)
    return 0;
  body[blen++] = '\n';
  char hd[160];
  size_t hn = respond(hd, sizeof(hd), 200, "OK", NULL, (size_t)blen, 0);
  if (!hn)
    return 0;
  memmove(out + hn, body, head ? 0 : (size_t)blen);
  memcpy(out, hd, hn);
  if (status)
    *status = 200;
  return hn + (head ? 0 : (size_t)blen);
}

/* The http_proxy module's head handling (modules/http_proxy/http_head.c):
 * parser limits, request-target forms, hop-by-hop removal (including the
 * headers a Connection header names), rewriting to origin-form, body
 * framing and chunked detection, Basic credentials, hostile inputs.
 *
 * Then the module itself through the mock host, with a fake connector
 * (real loopback sockets to a target this test plays) and a fake
 * authorizer: forwarding with keep-alive and upstream reuse, chunked
 * bodies both ways, CONNECT, connector failures mapped to statuses,
 * oversized heads, timeouts, Proxy-Authorization, metrics.
 *
 * Requirements: TM-SEC-1 (bounded heads and buffers), TM-SEC-2 (no raw
 * error text to clients), TM-OBS-2/-10/-18 (open counter, bounded labels,
 * no hosts or users in labels), TM-P0-5 (a client going away cancels its
 * open). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>

#include "http_head.h"
#include "mock.h"
#include "tap.h"

static const hh_limits std_lim = {8192, 16384, 100};

/* ---- pure: helpers -------------------------------------------------------- */

/* The bytes fed so far, in a buffer that moves on every call (the parser
 * must keep offsets, not pointers) and is exactly as long as the data (so
 * ASan catches any read past it). */
typedef struct fed {
  char *buf;
  size_t len;
} fed;

static int feed(http_head *h, fed *f, const char *text, size_t n,
                size_t step) {
  int r = HH_MORE;
  size_t i = 0;
  free(f->buf);
  f->buf = NULL;
  f->len = 0;
  while (i < n && r == HH_MORE) {
    size_t k = n - i < step ? n - i : step;
    char *nb = malloc(f->len + k);
    if (f->len)
      memcpy(nb, f->buf, f->len);
    memcpy(nb + f->len, text + i, k);
    free(f->buf);
    f->buf = nb;
    f->len += k;
    i += k;
    r = hh_parse(h, f->buf, f->len);
  }
  return r;
}

/* Parses a whole request; the status (0 when fine) and, when asked, the
 * rewritten request in out. */
static int rewrite(const char *text, size_t step, char *out, size_t cap) {
  http_head h;
  fed f = {0};
  hh_init(&h, HTTP_REQUEST, &std_lim);
  int r = feed(&h, &f, text, strlen(text), step);
  int st = r == HH_ERROR ? h.status : r == HH_MORE ? -1 : 0;
  hh_target t;
  if (st == 0)
    st = hh_target_parse(&h, f.buf, &t);
  if (st == 0 && out) {
    if (t.form == HH_FORM_ABSOLUTE) {
      ssize_t n = hh_write_request(&h, f.buf, &t, out, cap - 1);
      if (n < 0 || (size_t)n > hh_write_max(&h))
        st = -2;
      else
        out[n] = '\0';
    } else {
      snprintf(out, cap, "%s|%u|%d", t.host, t.port, t.ipv6);
    }
  }
  hh_free(&h);
  free(f.buf);
  return st;
}

static char *repeat(char c, size_t n) {
  char *s = malloc(n + 1);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

/* ---- pure: tests ------------------------------------------------------------ */

static void test_request_rewrite(void) {
  const char *req = "GET http://Example.com:8080/p/q?x=1#frag HTTP/1.1\r\n"
                    "Host: other.example\r\nUser-Agent: t\r\n"
                    "Accept: */*\r\n\r\n";
  const char *want = "GET /p/q?x=1 HTTP/1.1\r\nHost: Example.com:8080\r\n"
                     "User-Agent: t\r\nAccept: */*\r\n"
                     "Via: 1.1 proxyhost\r\n\r\n";
  size_t steps[] = {1, 3, 7, 4096};
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    char out[1024] = "";
    int st = rewrite(req, steps[i], out, sizeof(out));
    char name[96];
    snprintf(name, sizeof(name),
             "absolute-form to origin-form, Host replaced (%zu-byte reads)",
             steps[i]);
    ok(st == 0 && strcmp(out, want) == 0, name);
    if (st || strcmp(out, want))
      printf("#   st=%d got:\n%s\n", st, out);
  }

  http_head h;
  fed f = {0};
  hh_init(&h, HTTP_REQUEST, &std_lim);
  const char *two = "GET http://a/ HTTP/1.1\r\nX: 1\r\n\r\nGET http://b/";
  is_int(feed(&h, &f, two, strlen(two), 4096), HH_DONE, "head found");
  is_int(h.head_len, strlen("GET http://a/ HTTP/1.1\r\nX: 1\r\n\r\n"),
         "head_len stops at the blank line (pipelined bytes untouched)");
  is_int(hh_method(&h), HTTP_GET, "method");
  is_int(hh_minor(&h), 1, "HTTP/1.1");
  ok(hh_keep_alive(&h), "HTTP/1.1 keeps the connection by default");
  is_int(hh_body_begin(&h), HH_DONE, "no body without framing headers");
  hh_free(&h);
  free(f.buf);

  char out[1024];
  is_int(rewrite("GET http://a/x HTTP/1.0\r\n\r\n", 4096, out, sizeof(out)),
         0, "HTTP/1.0 request");
  like(out, "GET /x HTTP/1.0\r\n", "HTTP/1.0 kept (bodies are not reframed)");
  like(out, "Connection: keep-alive\r\n",
       "and the upstream connection asked to stay open");
  like(out, "Via: 1.0 proxyhost\r\n", "Via names our hop");
}

static void test_limits(void) {
  hh_limits lim = {64, 128, 4};
  http_head h;
  fed f = {0};
  /* A request line of exactly 64 bytes with its CRLF, then 65. */
  char line[200];
  const char *pre = "GET http://a/", *post = " HTTP/1.1\r\n";
  size_t pad = 64 - strlen(pre) - strlen(post);
  for (int extra = 0; extra <= 1; extra++) {
    char *p = repeat('x', pad + (size_t)extra);
    snprintf(line, sizeof(line), "%s%s%s\r\n", pre, p, post);
    free(p);
    for (size_t step = 1; step <= 4096; step *= 4096) {
      hh_init(&h, HTTP_REQUEST, &lim);
      int r = feed(&h, &f, line, strlen(line), step);
      if (extra == 0)
        is_int(r, HH_DONE, "request line at the limit is accepted");
      else
        ok(r == HH_ERROR && h.status == 414,
           "request line one byte over the limit: 414");
      hh_free(&h);
    }
  }
  /* No LF within the limit: 414 without waiting for the rest. */
  char *x = repeat('x', 80);
  snprintf(line, sizeof(line), "GET http://a/%s", x);
  free(x);
  hh_init(&h, HTTP_REQUEST, &lim);
  ok(feed(&h, &f, line, 64, 64) == HH_ERROR && h.status == 414,
     "a line still open at the limit is 414 at once");
  hh_free(&h);

  /* Header bytes (with the blank line): 128 accepted, 129 refused. */
  for (int extra = 0; extra <= 1; extra++) {
    char head[512];
    /* "X: " + v + "\r\n" + "\r\n" = 128 + extra */
    char *v = repeat('v', 128 - 7 + (size_t)extra);
    snprintf(head, sizeof(head), "GET http://a/ HTTP/1.1\r\nX: %s\r\n\r\n",
             v);
    free(v);
    for (size_t step = 1; step <= 4096; step *= 4096) {
      hh_init(&h, HTTP_REQUEST, &lim);
      int r = feed(&h, &f, head, strlen(head), step);
      if (extra == 0)
        is_int(r, HH_DONE, "header bytes at the limit are accepted");
      else
        ok(r == HH_ERROR && h.status == 431,
           "header bytes one over the limit: 431");
      hh_free(&h);
    }
  }
  /* An unfinished header section that used every allowed byte. */
  char *v = repeat('v', 200);
  char big[512];
  snprintf(big, sizeof(big), "GET http://a/ HTTP/1.1\r\nX: %s", v);
  free(v);
  hh_init(&h, HTTP_REQUEST, &lim);
  ok(feed(&h, &f, big, strlen(big), 16) == HH_ERROR && h.status == 431,
     "an endless header is 431 once it reaches the limit");
  hh_free(&h);

  /* Field count. */
  const char *four = "GET http://a/ HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n"
                     "D: 4\r\n\r\n";
  const char *five = "GET http://a/ HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n"
                     "D: 4\r\nE: 5\r\n\r\n";
  hh_init(&h, HTTP_REQUEST, &lim);
  is_int(feed(&h, &f, four, strlen(four), 1), HH_DONE,
         "max_headers fields accepted");
  is_int(h.n_fields, 4, "all recorded");
  hh_free(&h);
  hh_init(&h, HTTP_REQUEST, &lim);
  ok(feed(&h, &f, five, strlen(five), 1) == HH_ERROR && h.status == 431,
     "one field more: 431");
  hh_free(&h);
  free(f.buf);
}

static void test_targets(void) {
  struct {
    const char *line;
    int status;
    const char *want; /* host|port|ipv6, or the rewritten request's text */
  } t[] = {
      {"CONNECT example.com:443 HTTP/1.1", 0, "example.com|443|0"},
      {"CONNECT 127.0.0.1:8443 HTTP/1.1", 0, "127.0.0.1|8443|0"},
      {"CONNECT [2001:db8::1]:443 HTTP/1.1", 0, "2001:db8::1|443|1"},
      {"CONNECT example.com HTTP/1.1", 400, NULL},
      {"CONNECT example.com:0 HTTP/1.1", 400, NULL},
      {"CONNECT example.com:65536 HTTP/1.1", 400, NULL},
      {"CONNECT http://example.com:80/ HTTP/1.1", 400, NULL},
      {"CONNECT user@example.com:443 HTTP/1.1", 400, NULL},
      {"GET /index.html HTTP/1.1", 400, NULL},
      {"OPTIONS * HTTP/1.1", 400, NULL},
      {"GET https://example.com/ HTTP/1.1", 501, NULL},
      {"GET HTTPS://example.com/ HTTP/1.1", 501, NULL},
      {"GET ftp://example.com/ HTTP/1.1", 400, NULL},
      {"GET http://user:pw@example.com/ HTTP/1.1", 400, NULL},
      {"GET http:///x HTTP/1.1", 400, NULL},
      {"GET http://example.com:0/ HTTP/1.1", 400, NULL},
      {"GET http://example.com HTTP/1.1", 0,
       "GET / HTTP/1.1\r\nHost: example.com\r\n"},
      {"GET http://example.com?q HTTP/1.1", 0,
       "GET /?q HTTP/1.1\r\nHost: example.com\r\n"},
      {"OPTIONS http://example.com HTTP/1.1", 0,
       "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n"},
      {"GET http://[::1]:8080/a HTTP/1.1", 0,
       "GET /a HTTP/1.1\r\nHost: [::1]:8080\r\n"},
      {"GET http://example.com:80/ HTTP/1.1", 0,
       "GET / HTTP/1.1\r\nHost: example.com\r\n"},
      {"DELETE http://example.com/r HTTP/1.1", 0,
       "DELETE /r HTTP/1.1\r\nHost: example.com\r\n"},
      {"PATCH http://example.com:81/r HTTP/1.1", 0,
       "PATCH /r HTTP/1.1\r\nHost: example.com:81\r\n"},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    char req[512], out[1024] = "", name[160];
    snprintf(req, sizeof(req), "%s\r\nHost: x\r\n\r\n", t[i].line);
    int st = rewrite(req, 4096, out, sizeof(out));
    snprintf(name, sizeof(name), "%s -> %d", t[i].line, t[i].status);
    if (t[i].status) {
      is_int(st, t[i].status, name);
    } else if (ok(st == 0 && strncmp(out, t[i].want, strlen(t[i].want)) == 0,
                  name)) {
    } else {
      printf("#   st=%d out=%s\n", st, out);
    }
  }
  char *host = repeat('h', 256), req[600];
  snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
  is_int(rewrite(req, 4096, NULL, 0), 400, "a 256-byte host name: 400");
  host[255] = '\0';
  snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
  is_int(rewrite(req, 4096, NULL, 0), 0, "a 255-byte host name is fine");
  free(host);
}

static void test_hop_by_hop(void) {
  const char *req =
      "POST http://a.example/x HTTP/1.1\r\n"
      "Host: a.example\r\n"
      "Connection: keep-alive, X-Listed , content-length, Transfer-Encoding,"
      " host\r\n"
      "connection: x-lower\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n"
      "TE: trailers\r\n"
      "Trailer: X-Sum\r\n"
      "Upgrade: websocket\r\n"
      "X-Listed: 1\r\n"
      "X-LOWER: 2\r\n"
      "X-Kept: 3\r\n"
      "Content-Length: 0\r\n\r\n";
  char out[2048] = "";
  is_int(rewrite(req, 5, out, sizeof(out)), 0, "request with hop headers");
  const char *gone[] = {"Connection:", "onnection:",     "Keep-Alive:",
                        "Proxy-Connection:", "Proxy-Authorization:",
                        "TE:",          "Trailer:",       "Upgrade:",
                        "X-Listed:",    "X-LOWER:",       "YWxpY2U6"};
  for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
    char name[96];
    snprintf(name, sizeof(name), "%s removed", gone[i]);
    unlike(out, gone[i], name);
  }
  like(out, "X-Kept: 3\r\n", "end-to-end header kept");
  like(out, "Content-Length: 0\r\n",
       "Content-Length kept though Connection names it (framing)");
  like(out, "Host: a.example\r\n", "Host from the target, once");
  ok(strstr(out, "Host:") == strstr(out, "Host: a.example") &&
         !strstr(strstr(out, "Host:") + 1, "Host:"),
     "a single Host header");

  /* Responses. */
  const char *resp = "HTTP/1.1 200 OK\r\n"
                     "Connection: keep-alive, X-Hop\r\n"
                     "X-Hop: 1\r\n"
                     "Keep-Alive: timeout=5\r\n"
                     "Proxy-Authenticate: Basic realm=\"up\"\r\n"
                     "Upgrade: h2c\r\n"
                     "Content-Type: text/plain\r\n"
                     "Content-Length: 2\r\n\r\nok";
  http_head h;
  fed f = {0};
  hh_init(&h, HTTP_RESPONSE, &std_lim);
  is_int(feed(&h, &f, resp, strlen(resp), 3), HH_DONE, "response head");
  is_int(hh_status(&h), 200, "status");
  char w[1024];
  ssize_t n = hh_write_response(&h, f.buf, 0, 1, w, sizeof(w) - 1);
  ok(n > 0, "response rewritten");
  w[n > 0 ? n : 0] = '\0';
  ok(strncmp(w, "HTTP/1.1 200 OK\r\n", 17) == 0, "status line as received");
  unlike(w, "X-Hop", "Connection-listed header removed from the response");
  unlike(w, "Keep-Alive", "Keep-Alive removed");
  unlike(w, "Proxy-Authenticate", "Proxy-Authenticate removed");
  unlike(w, "Upgrade", "Upgrade removed");
  unlike(w, "Connection:", "no Connection for a kept HTTP/1.1 client");
  like(w, "Content-Length: 2\r\nVia: 1.1 proxyhost\r\n\r\n",
       "end-to-end headers, Via, blank line");
  n = hh_write_response(&h, f.buf, 1, 1, w, sizeof(w) - 1);
  w[n > 0 ? n : 0] = '\0';
  like(w, "Connection: close\r\n", "Connection: close when we will close");
  n = hh_write_response(&h, f.buf, 0, 0, w, sizeof(w) - 1);
  w[n > 0 ? n : 0] = '\0';
  like(w, "Connection: keep-alive\r\n", "an HTTP/1.0 client is told");
  is_int(hh_write_response(&h, f.buf, 0, 0, w, 20), -1,
         "a short output buffer is refused, not overrun");
  hh_free(&h);
  free(f.buf);
}

static void test_basic(void) {
  char out[512];
  const char *u, *p;
  size_t ul, pl;
  ok(hh_basic_decode("Basic YWxpY2U6c2VjcmV0", 22, out, sizeof(out), &u, &ul,
                     &p, &pl) == 0 &&
         strcmp(u, "alice") == 0 && strcmp(p, "secret") == 0 && ul == 5 &&
         pl == 6,
     "Basic alice:secret");
  const char *v = "  basic \t YWxpY2U6c2VjcmV0  ";
  ok(hh_basic_decode(v, strlen(v), out, sizeof(out), &u, &ul, &p, &pl) == 0 &&
         strcmp(u, "alice") == 0,
     "scheme case-insensitive, whitespace tolerated");
  v = "Basic YTpiOmM="; /* a:b:c */
  ok(hh_basic_decode(v, strlen(v), out, sizeof(out), &u, &ul, &p, &pl) == 0 &&
         strcmp(u, "a") == 0 && strcmp(p, "b:c") == 0,
     "the password may hold ':'");
  v = "Basic YWxpY2U6"; /* alice: */
  ok(hh_basic_decode(v, strlen(v), out, sizeof(out), &u, &ul, &p, &pl) == 0 &&
         pl == 0,
     "empty password decodes (the authorizer decides)");
  v = "Basic YWxpY2U6c2VjcmV0MQ"; /* alice:secret1, unpadded */
  ok(hh_basic_decode(v, strlen(v), out, sizeof(out), &u, &ul, &p, &pl) == 0 &&
         strcmp(p, "secret1") == 0,
     "unpadded base64");
  const char *bad[] = {
      "Bearer YWxpY2U6c2VjcmV0", "Basic", "Basic ", "BasicYWxpY2U6c2VjcmV0",
      "Basic YWxpY2U=",  /* no colon */
      "Basic OnNlY3JldA==", /* empty user */
      "Basic YWxp!2U6c2VjcmV0", "Basic YWxpY2U6c2VjcmV0=====",
      "Basic YQ", /* one byte, no colon */
      "Basic YWxpY2U6c2Vj\x01cmV0",
      "Basic YWxpY2U6cwFk", /* alice:s\x01d: control byte */
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char name[96];
    snprintf(name, sizeof(name), "refused: %.40s", bad[i]);
    is_int(hh_basic_decode(bad[i], strlen(bad[i]), out, sizeof(out), &u, &ul,
                           &p, &pl),
           -1, name);
  }
  /* 256-byte user: base64 of "u"*256 + ":x". */
  char raw[300], b64[420];
  memset(raw, 'u', 256);
  memcpy(raw + 256, ":x", 2);
  static const char tbl[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = 0, rl = 258;
  memcpy(b64, "Basic ", 6);
  n = 6;
  for (size_t i = 0; i < rl; i += 3) {
    uint32_t x = (uint32_t)(unsigned char)raw[i] << 16;
    if (i + 1 < rl)
      x |= (uint32_t)(unsigned char)raw[i + 1] << 8;
    if (i + 2 < rl)
      x |= (unsigned char)raw[i + 2];
    b64[n++] = tbl[(x >> 18) & 63];
    b64[n++] = tbl[(x >> 12) & 63];
    b64[n++] = i + 1 < rl ? tbl[(x >> 6) & 63] : '=';
    b64[n++] = i + 2 < rl ? tbl[x & 63] : '=';
  }
  is_int(hh_basic_decode(b64, n, out, sizeof(out), &u, &ul, &p, &pl), -1,
         "a 256-byte user is refused");
  is_int(hh_basic_decode(b64, n, out, 64, &u, &ul, &p, &pl), -1,
         "a small output buffer is refused, not overrun");
}

static void test_bodies(void) {
  http_head h;
  fed f = {0};
  size_t used;
  const char *cl = "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
  hh_init(&h, HTTP_REQUEST, &std_lim);
  is_int(feed(&h, &f, cl, strlen(cl), 4096), HH_DONE, "CL head");
  ok(!hh_chunked(&h), "not chunked");
  is_int(hh_body_begin(&h), HH_MORE, "a body follows");
  is_int(hh_body(&h, "hel", 3, &used), HH_MORE, "part of the body");
  is_int(used, 3, "all of it is body");
  is_int(hh_body(&h, "loGET http://b/", 15, &used), HH_DONE, "body ends");
  is_int(used, 2, "exactly at Content-Length; the next request untouched");
  hh_free(&h);

  const char *ch = "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                   "\r\n";
  const char *body = "5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\n"
                     "X-Sum: 1\r\n\r\n";
  hh_init(&h, HTTP_REQUEST, &std_lim);
  is_int(feed(&h, &f, ch, strlen(ch), 4096), HH_DONE, "chunked head");
  ok(hh_chunked(&h), "chunked detected");
  char rw[512];
  hh_target t;
  hh_target_parse(&h, f.buf, &t);
  ssize_t n = hh_write_request(&h, f.buf, &t, rw, sizeof(rw) - 1);
  rw[n > 0 ? n : 0] = '\0';
  like(rw, "Transfer-Encoding: chunked\r\n",
       "Transfer-Encoding kept: the body is forwarded as framed");
  is_int(hh_body_begin(&h), HH_MORE, "a chunked body follows");
  size_t total = 0;
  int r = HH_MORE;
  char more[256];
  snprintf(more, sizeof(more), "%sGET http://b/", body);
  for (size_t i = 0; i < strlen(more) && r == HH_MORE; i++) {
    r = hh_body(&h, more + i, 1, &used);
    total += used;
  }
  is_int(r, HH_DONE, "chunked body (with extension and trailer) ends");
  is_int(total, strlen(body), "at the last CRLF, byte by byte");
  hh_free(&h);

  hh_init(&h, HTTP_REQUEST, &std_lim);
  feed(&h, &f, ch, strlen(ch), 4096);
  hh_body_begin(&h);
  is_int(hh_body(&h, "zz\r\n", 4, &used), HH_ERROR, "bad chunk size");
  hh_free(&h);

  hh_init(&h, HTTP_REQUEST, &std_lim);
  feed(&h, &f, ch, strlen(ch), 4096);
  hh_body_begin(&h);
  is_int(hh_body(&h, "fffffffffffffffff\r\n", 19, &used), HH_ERROR,
         "chunk size overflow");
  hh_free(&h);

  /* Framing conflicts: refused (request smuggling). */
  const char *conflicts[] = {
      "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n"
      "\r\n",
      "POST http://a/ HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
      "Transfer-Encoding: gzip\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof(conflicts) / sizeof(conflicts[0]); i++) {
    hh_init(&h, HTTP_REQUEST, &std_lim);
    r = feed(&h, &f, conflicts[i], strlen(conflicts[i]), 4096);
    if (r == HH_DONE)
      r = hh_body_begin(&h);
    char name[64];
    snprintf(name, sizeof(name), "framing conflict %zu refused", i + 1);
    ok(r == HH_ERROR, name);
    hh_free(&h);
  }

  /* Responses. */
  struct {
    const char *text;
    int no_body, begin, eof, keep;
  } rs[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", 0, HH_MORE, 0, 1},
      {"HTTP/1.1 200 OK\r\n\r\n", 0, HH_MORE, 1, 0},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, HH_MORE, 1,
       0},
      {"HTTP/1.1 204 No Content\r\n\r\n", 0, HH_DONE, 0, 1},
      {"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 0, HH_DONE,
       0, 1},
      {"HTTP/1.1 100 Continue\r\n\r\n", 0, HH_DONE, 0, 1},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", 1, HH_DONE, 0, 1},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 1, HH_DONE,
       0, 1},
      {"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", 0, HH_MORE, 0, 0},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n"
       "\r\n",
       0, HH_MORE, 0, 1},
      {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
       0, HH_MORE, 0, 0},
  };
  for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
    char name[120];
    hh_init(&h, HTTP_RESPONSE, &std_lim);
    if (rs[i].no_body)
      hh_expect_no_body(&h);
    r = feed(&h, &f, rs[i].text, strlen(rs[i].text), 2);
    snprintf(name, sizeof(name), "response %zu%s: framing and keep-alive",
             i + 1, rs[i].no_body ? " (to HEAD)" : "");
    ok(r == HH_DONE && hh_needs_eof(&h) == rs[i].eof &&
           hh_keep_alive(&h) == rs[i].keep && hh_body_begin(&h) == rs[i].begin,
       name);
    hh_free(&h);
  }

  const char *eofr = "HTTP/1.1 200 OK\r\n\r\n";
  hh_init(&h, HTTP_RESPONSE, &std_lim);
  feed(&h, &f, eofr, strlen(eofr), 4096);
  hh_body_begin(&h);
  is_int(hh_body(&h, "abc", 3, &used), HH_MORE, "close-framed body");
  is_int(hh_body_eof(&h), HH_DONE, "ends at EOF");
  hh_free(&h);

  const char *cut = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  hh_init(&h, HTTP_RESPONSE, &std_lim);
  feed(&h, &f, cut, strlen(cut), 4096);
  hh_body_begin(&h);
  hh_body(&h, "abc", 3, &used);
  is_int(hh_body_eof(&h), HH_ERROR, "a Content-Length body cut short");
  hh_free(&h);

  const char *cutc = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  hh_init(&h, HTTP_RESPONSE, &std_lim);
  feed(&h, &f, cutc, strlen(cutc), 4096);
  hh_body_begin(&h);
  hh_body(&h, "5\r\nab", 6, &used);
  is_int(hh_body_eof(&h), HH_ERROR, "a chunked body cut short");
  hh_free(&h);
  free(f.buf);
}

static void test_hostile(void) {
  struct {
    const char *text;
    size_t len;
    int status;
    const char *what;
  } t[] = {
      {"GET http://a/ HTTP/1.1\r\nX: a\0b\r\n\r\n", 33, 400, "NUL in value"},
      {"GET http://a/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 0, 400, "obs-fold"},
      {"GET http://a/ HTTP/1.1\r\nX:\r\n b\r\n\r\n", 0, 400,
       "obs-fold after an empty value"},
      {"GET http://a/ HTTP/1.1\r\nX : a\r\n\r\n", 0, 400,
       "space before the colon"},
      {"GET http://a/ HTTP/1.1\r\nX(: a\r\n\r\n", 0, 400, "bad name byte"},
      {"GET http://a/ HTTP/1.1\r\nX: a\rY: b\r\n\r\n", 0, 400, "bare CR"},
      {"GET http://a/ HTTP/2.0\r\n\r\n", 0, 505, "HTTP/2.0 request line"},
      {"GET http://a/ HTTP/1.1 x\r\n\r\n", 0, 400, "junk after version"},
      {"GET http://a/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 0,
       400, "space before the colon of a framing header"},
      {"GET http://a/ HTTP/1.1\r\nX Y: a\r\n\r\n", 0, 400,
       "space inside a name"},
      {"FOO http://a/ HTTP/1.1\r\n\r\n", 0, 400, "unknown method"},
      {"get http://a/ HTTP/1.1\r\n\r\n", 0, 400, "lower-case method"},
      {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11, 400,
       "a TLS ClientHello"},
      {"GET http://a/\x01 HTTP/1.1\r\n\r\n", 0, 400, "control byte in URL"},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    for (size_t step = 1; step <= 4096; step *= 4096) {
      http_head h;
      fed f = {0};
      hh_init(&h, HTTP_REQUEST, &std_lim);
      size_t len = t[i].len ? t[i].len : strlen(t[i].text);
      int r = feed(&h, &f, t[i].text, len, step);
      char name[120];
      snprintf(name, sizeof(name), "%s: %d (%s)", t[i].what, t[i].status,
               step == 1 ? "byte by byte" : "at once");
      ok(r == HH_ERROR && h.status == t[i].status, name);
      if (!(r == HH_ERROR && h.status == t[i].status))
        printf("#   r=%d status=%d\n", r, h.status);
      hh_free(&h);
      free(f.buf);
    }
  }
  /* Endless blank lines before the request line count towards it. */
  char *crlf = malloc(20000);
  for (size_t i = 0; i < 20000; i += 2)
    memcpy(crlf + i, "\r\n", 2);
  http_head h;
  fed f = {0};
  hh_init(&h, HTTP_REQUEST, &std_lim);
  ok(feed(&h, &f, crlf, 20000, 1000) == HH_ERROR && h.status == 414,
     "endless blank lines: 414");
  hh_free(&h);
  free(f.buf);
  free(crlf);

  /* Random and mutated heads: no crash, and the verdict does not depend
   * on how the bytes were split. */
  srand(12345);
  const char *seed = "GET http://a.b:81/x?y HTTP/1.1\r\nHost: a\r\n"
                     "Connection: x\r\nX: 1\r\nContent-Length: 2\r\n\r\nab";
  int same = 1;
  for (int i = 0; i < 3000; i++) {
    char in[256];
    size_t n = strlen(seed);
    memcpy(in, seed, n);
    int flips = 1 + rand() % 4;
    for (int k = 0; k < flips; k++)
      in[rand() % n] = (char)(rand() % 256);
    if (i % 3 == 0)
      n = (size_t)(rand() % (int)n) + 1;
    http_head a, b;
    fed fa = {0}, fb = {0};
    hh_init(&a, HTTP_REQUEST, &std_lim);
    hh_init(&b, HTTP_REQUEST, &std_lim);
    int ra = feed(&a, &fa, in, n, 1);
    int rb = feed(&b, &fb, in, n, 4096);
    if (ra != rb || (ra == HH_ERROR && a.status != b.status) ||
        (ra == HH_DONE && a.head_len != b.head_len))
      same = 0;
    if (ra == HH_DONE) {
      hh_target tg;
      char out[2048];
      if (hh_target_parse(&a, fa.buf, &tg) == 0 &&
          tg.form == HH_FORM_ABSOLUTE) {
        ssize_t w = hh_write_request(&a, fa.buf, &tg, out, sizeof(out));
        if (w < 0 || (size_t)w > hh_write_max(&a))
          same = 0;
      }
    }
    hh_free(&a);
    hh_free(&b);
    free(fa.buf);
    free(fb.buf);
  }
  ok(same, "3000 mutated heads: same verdict byte by byte and at once");
}

/* ---- the module through the mock host --------------------------------------- */

static const ph_api *fapi;

/* Fake connector: "refused.test", "deny.test", "timeout.test" and
 * "full.test" fail with those codes, "hang.test" never answers (until
 * cancelled); anything else is a real connection to 127.0.0.1:port. */
typedef struct pend {
  int64_t id;
  ph_open_cb cb;
  void *arg;
  int code, fd, live, hang;
} pend;

static struct {
  ph_ctx *ctx;
  ph_timer *timer;
  pend p[64];
  int64_t next_id;
  int opens, cancels, proxy_port;
  char host[256], principal[256];
} fc;

static void fc_fire(ph_timer *t, void *arg) {
  (void)t;
  (void)arg;
  for (int i = 0; i < 64; i++) {
    pend *q = &fc.p[i];
    if (!q->live || q->hang)
      continue;
    q->live = 0;
    ph_open_result res = {.size = sizeof(res),
                          .stage = q->code ? PH_STAGE_CONNECT : PH_STAGE_NONE,
                          .code = q->code,
                          .fd = q->fd};
    q->cb(q->arg, &res);
  }
}

static int dial(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static int64_t fc_open(void *self, const ph_open_request *rq, ph_open_cb cb,
                       void *arg) {
  (void)self;
  int i = 0;
  while (i < 64 && fc.p[i].live)
    i++;
  if (i == 64)
    return PH_EINVAL;
  pend *q = &fc.p[i];
  memset(q, 0, sizeof(*q));
  q->id = ++fc.next_id;
  q->cb = cb;
  q->arg = arg;
  q->live = 1;
  q->fd = -1;
  fc.opens++;
  snprintf(fc.host, sizeof(fc.host), "%s", rq->host);
  snprintf(fc.principal, sizeof(fc.principal), "%s",
           rq->principal ? rq->principal : "");
  if (strcmp(rq->host, "refused.test") == 0)
    q->code = PH_OPEN_CONNECTION_REFUSED;
  else if (strcmp(rq->host, "deny.test") == 0)
    q->code = PH_OPEN_FORBIDDEN;
  else if (strcmp(rq->host, "timeout.test") == 0)
    q->code = PH_OPEN_TIMEOUT;
  else if (strcmp(rq->host, "full.test") == 0)
    q->code = PH_OPEN_QUEUE_FULL;
  else if (strcmp(rq->host, "hang.test") == 0)
    q->hang = 1;
  else if ((q->fd = dial(rq->port)) < 0)
    q->code = PH_OPEN_CONNECTION_REFUSED;
  fapi->timer_set(fc.timer, 1, 0);
  return q->id;
}

static int fc_cancel(void *self, int64_t id) {
  (void)self;
  for (int i = 0; i < 64; i++)
    if (fc.p[i].live && fc.p[i].id == id) {
      if (fc.p[i].fd >= 0)
        close(fc.p[i].fd);
      fc.p[i].live = 0;
      fc.cancels++;
      return PH_OK;
    }
  return PH_ENOENT;
}

static const ph_connector_v1 fc_vt = {fc_open, fc_cancel};

static void fc_listener(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  (void)arg;
  const ph_listener_event *ev = payload;
  const struct sockaddr_in *a = (const void *)ev->addr;
  if (ev->bound && a->sin_family == AF_INET)
    fc.proxy_port = ntohs(a->sin_port);
}

static int fc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  fapi = a;
  memset(&fc, 0, sizeof(fc));
  fc.ctx = ctx;
  *state = &fc;
  fc.timer = a->timer_new(ctx, fc_fire, NULL);
  ph_topic *t = a->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  if (!fc.timer || !t || a->subscribe(ctx, t, fc_listener, NULL) <= 0)
    return PH_EINVAL;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &fc_vt, &fc);
}

static void fc_destroy(void *state) {
  (void)state;
  for (int i = 0; i < 64; i++)
    if (fc.p[i].live && fc.p[i].fd >= 0)
      close(fc.p[i].fd);
  if (fc.timer)
    fapi->timer_free(fc.timer);
  fc.timer = NULL;
}

static const char *const fc_provides[] = {PH_CONNECTOR_SERVICE, NULL};
static const ph_module fake_connector = {
    PH_MODULE_HEADER("fake_connector", "1.0"),
    .provides = fc_provides,
    .init = fc_init,
    .destroy = fc_destroy,
};

/* Fake authorizer: alice/secret is allowed, user "down" finds the store
 * unavailable, everything else is denied. */
static struct {
  ph_timer *timer;
  int64_t id;
  ph_auth_cb cb;
  void *arg;
  int verdict, live, checks;
} fa;

static void fa_fire(ph_timer *t, void *arg) {
  (void)t;
  (void)arg;
  if (fa.live) {
    fa.live = 0;
    fa.cb(fa.arg, fa.verdict);
  }
}

static int64_t fa_check(void *self, const char *user, size_t ul,
                        const char *pass, size_t pl, ph_auth_cb cb,
                        void *arg) {
  (void)self;
  if (fa.live)
    return PH_EINVAL; /* one at a time is all this test needs */
  fa.checks++;
  fa.live = 1;
  fa.cb = cb;
  fa.arg = arg;
  fa.verdict = PH_AUTH_DENY;
  if (ul == 5 && memcmp(user, "alice", 5) == 0 && pl == 6 &&
      memcmp(pass, "secret", 6) == 0)
    fa.verdict = PH_AUTH_ALLOW;
  if (ul == 4 && memcmp(user, "down", 4) == 0)
    fa.verdict = PH_AUTH_UNAVAILABLE;
  fapi->timer_set(fa.timer, 1, 0);
  return ++fa.id;
}

static int fa_cancel(void *self, int64_t id) {
  (void)self;
  if (fa.live && id == fa.id) {
    fa.live = 0;
    return PH_OK;
  }
  return PH_ENOENT;
}

static const ph_authorizer_v1 fa_vt = {fa_check, fa_cancel};

static int fa_init(ph_ctx *ctx, const ph_api *a, void **state) {
  fapi = a;
  memset(&fa, 0, sizeof(fa));
  *state = &fa;
  fa.timer = a->timer_new(ctx, fa_fire, NULL);
  if (!fa.timer)
    return PH_EINVAL;
  return a->service_register(ctx, PH_AUTHORIZER_SERVICE, PH_AUTHORIZER_MAJOR,
                             PH_AUTHORIZER_MINOR, &fa_vt, &fa);
}

static void fa_destroy(void *state) {
  (void)state;
  if (fa.timer)
    fapi->timer_free(fa.timer);
  fa.timer = NULL;
}

static const char *const fa_provides[] = {PH_AUTHORIZER_SERVICE, NULL};
static const ph_module fake_authorizer = {
    PH_MODULE_HEADER("fake_authorizer", "1.0"),
    .provides = fa_provides,
    .init = fa_init,
    .destroy = fa_destroy,
};

/* ---- sockets on the test's side ------------------------------------------------ */

typedef struct rbuf {
  char data[65536];
  size_t len;
  int eof;
} rbuf;

/* Whether data holds one complete message: a head and the body its
 * Content-Length or chunked framing says (or, with neither, a request or
 * a bodiless status is complete at the head; other responses at EOF). */
static int complete(const rbuf *b, int response) {
  const char *end = memmem(b->data, b->len, "\r\n\r\n", 4);
  if (!end)
    return b->eof;
  size_t head = (size_t)(end - b->data) + 4;
  char h[8192];
  size_t hl = head < sizeof(h) - 1 ? head : sizeof(h) - 1;
  memcpy(h, b->data, hl);
  h[hl] = '\0';
  const char *cl = strcasestr(h, "\r\ncontent-length:");
  if (response && (strstr(h, " 204 ") || strstr(h, " 304 ") ||
                   strstr(h, " 200 Connection established")))
    return 1;
  if (cl)
    return b->len >= head + strtoul(cl + 17, NULL, 10) || b->eof;
  if (strcasestr(h, "\r\ntransfer-encoding: chunked"))
    return memmem(b->data + head, b->len - head, "0\r\n\r\n", 5) != NULL ||
           b->eof;
  return !response || b->eof;
}

/* Runs the loop until fd delivered a whole message (or EOF), at most ms. */
static void wait_message(ph_mock *m, int fd, rbuf *b, int response, int ms) {
  b->len = 0;
  b->eof = 0;
  for (int waited = 0; waited < ms; waited += 5) {
    mock_run_for(m, 5);
    for (;;) {
      ssize_t n = recv(fd, b->data + b->len, sizeof(b->data) - 1 - b->len, 0);
      if (n > 0) {
        b->len += (size_t)n;
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        b->eof = 1;
      break;
    }
    b->data[b->len] = '\0';
    if (b->len > 0 && complete(b, response))
      return;
    if (b->eof)
      return;
  }
}

static void send_str(int fd, const char *s) {
  size_t n = strlen(s), off = 0;
  while (off < n) {
    ssize_t w = send(fd, s + off, n - off, MSG_NOSIGNAL);
    if (w > 0)
      off += (size_t)w;
    else if (w < 0 && errno != EAGAIN)
      return;
  }
}

static int target_listen(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof(a);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
      listen(fd, 16) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

static int target_accept(ph_mock *m, int lfd, int ms) {
  for (int waited = 0; waited < ms; waited += 5) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    if (fd >= 0)
      return fd;
    mock_run_for(m, 5);
  }
  return -1;
}

/* A connection that is closed by the peer reads EOF within ms. */
static int closed_by_peer(ph_mock *m, int fd, int ms) {
  char c[256];
  for (int waited = 0; waited < ms; waited += 5) {
    mock_run_for(m, 5);
    ssize_t n = recv(fd, c, sizeof(c), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return 1;
  }
  return 0;
}

static ph_buf err;
static char logpath[256];

static ph_mock *start_proxy(const char *extra, int with_authorizer,
                            int expect_fail) {
  char ini[2048];
  snprintf(ini, sizeof(ini),
           "[proxyhost]\nmodules = %s/http_proxy/.libs/http_proxy.so\n"
           "drain_timeout = 2s\n"
           "[log]\nlevel = debug\nfile = %s\n"
           "[http_proxy]\nlisten = 127.0.0.1:0\n%s",
           PH_BUILD_MODULES, logpath, extra);
  buf_reset(&err);
  ph_mock *m = mock_new(ini, &err);
  if (!m || mock_add(m, &fake_connector, &err) < 0 ||
      (with_authorizer && mock_add(m, &fake_authorizer, &err) < 0) ||
      mock_init(m, &err) < 0 || mock_start(m, &err) < 0) {
    if (!expect_fail)
      printf("# setup failed: %s\n", err.data ? err.data : "?");
    mock_free(m);
    return NULL;
  }
  return m;
}

static int proxy_conn(void) { return dial((uint16_t)fc.proxy_port); }

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return strdup("");
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  text[n] = '\0';
  fclose(f);
  return strdup(text);
}

static void test_forwarding(void) {
  ph_mock *m = start_proxy("header_timeout = 300ms\n", 0, 0);
  ok(m != NULL, "http_proxy starts with a connector");
  if (!m)
    return;
  ok(fc.proxy_port > 0, "the listener announced its address");
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char req[1024];

  int c = proxy_conn();
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/a?b=1 HTTP/1.1\r\nHost: wrong\r\n"
           "Proxy-Connection: keep-alive\r\nConnection: X-Trace\r\n"
           "X-Trace: 1\r\nUser-Agent: unit\r\n\r\n",
           tport);
  send_str(c, req);
  int s = target_accept(m, lfd, 1000);
  ok(s >= 0, "the connector's connection reached the target");
  wait_message(m, s, t, 0, 1000);
  char want[128];
  snprintf(want, sizeof(want), "GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n",
           tport);
  ok(strncmp(t->data, want, strlen(want)) == 0,
     "the origin gets origin-form with the target's Host first");
  unlike(t->data, "wrong", "the client's Host is dropped");
  unlike(t->data, "Proxy-Connection", "Proxy-Connection removed");
  unlike(t->data, "X-Trace", "a Connection-listed header removed");
  like(t->data, "User-Agent: unit\r\n", "end-to-end headers kept");
  is_str(fc.host, "127.0.0.1", "the connector got the target host");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
              "Keep-Alive: timeout=5\r\nConnection: keep-alive\r\n\r\nhello");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 OK\r\n", 17) == 0, "client gets 200");
  like(b->data, "\r\n\r\nhello", "and the body");
  unlike(b->data, "Keep-Alive", "hop-by-hop response header removed");
  unlike(b->data, "Connection: close", "the connection stays open");

  /* Same client connection, same origin: no new open. */
  snprintf(req, sizeof(req),
           "POST http://127.0.0.1:%u/up HTTP/1.1\r\n"
           "Transfer-Encoding: chunked\r\n\r\n"
           "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n",
           tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  is_int(fc.opens, 1, "keep-alive: the upstream connection is reused");
  like(t->data, "Transfer-Encoding: chunked\r\n",
       "a chunked request keeps its framing");
  like(t->data, "\r\n\r\n4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n",
       "and its chunked body arrives verbatim");
  send_str(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "3\r\nabc\r\n0\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "Transfer-Encoding: chunked\r\n", "chunked response head");
  like(b->data, "\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
       "chunked response body verbatim");

  /* Pipelined requests are answered in order, one at a time. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/p1 HTTP/1.1\r\n\r\n"
           "GET http://127.0.0.1:%u/p2 HTTP/1.1\r\n\r\n",
           tport, tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  ok(strncmp(t->data, "GET /p1 ", 8) == 0 && !strstr(t->data, "/p2"),
     "pipelined: the first request alone goes upstream");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\np1");
  wait_message(m, s, t, 0, 1000);
  ok(strncmp(t->data, "GET /p2 ", 8) == 0, "then the second");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\np2");
  wait_message(m, c, b, 1, 1000);
  ok(strstr(b->data, "\r\n\r\np1") != NULL, "first answer");
  if (!strstr(b->data, "p2"))
    wait_message(m, c, b, 1, 1000);
  ok(strstr(b->data, "p2") != NULL, "second answer");
  is_int(fc.opens, 1, "on the same upstream connection");

  /* The origin closes a kept connection: the next request still works,
   * on a new one. */
  close(s);
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/again HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  ok(s >= 0, "a closed kept upstream is replaced");
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "\r\n\r\nagain", "and answers");
  is_int(fc.opens, 2, "through a second open");

  /* The origin drops a kept connection after reading a request, without
   * answering (its idle timer raced ours): a request without a body is
   * sent again, once, on a new connection. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/retry HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  ok(strncmp(t->data, "GET /retry ", 11) == 0, "the kept upstream got it");
  close(s);
  s = target_accept(m, lfd, 1000);
  ok(s >= 0, "dropped unanswered: a new connection");
  wait_message(m, s, t, 0, 1000);
  ok(strncmp(t->data, "GET /retry ", 11) == 0, "carries the same request");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nretry");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "\r\n\r\nretry", "and the client gets the answer");
  is_int(fc.opens, 3, "after one more open");

  /* A response framed by close ends the client connection. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/eof HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\n\r\nuntil-close");
  mock_run_for(m, 20);
  close(s);
  wait_message(m, c, b, 1, 1000);
  like(b->data, "Connection: close\r\n", "close-framed: Connection: close");
  like(b->data, "\r\n\r\nuntil-close", "body until the origin closed");
  ok(b->eof, "and the client connection ends");
  close(c);

  /* HTTP/1.0 client without keep-alive: answered and closed. */
  c = proxy_conn();
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/old HTTP/1.0\r\n\r\n",
           tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /old HTTP/1.0\r\n", "HTTP/1.0 forwarded as 1.0");
  send_str(s, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "Connection: close\r\n", "HTTP/1.0 client told close");
  ok(closed_by_peer(m, c, 1000), "and the connection closes");
  close(c);
  close(s);

  /* HEAD: a Content-Length but no body. */
  c = proxy_conn();
  snprintf(req, sizeof(req), "HEAD http://127.0.0.1:%u/h HTTP/1.1\r\n\r\n",
           tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
  mock_run_for(m, 30);
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/after HTTP/1.1\r\n\r\n",
           tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /after", "after a HEAD response the next request flows");
  send_str(s, "HTTP/1.1 204 No Content\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "HTTP/1.1 204", "and its response too");
  close(c);
  close(s);

  /* Upstream misbehaviour: 502 before any byte went to the client, a
   * closed connection after. */
  const char *bad_up[] = {
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n"
      "Connection: upgrade\r\n\r\n",
      "garbage\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
      "HTTP/1.1 200 OK\rX: smuggled\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof(bad_up) / sizeof(bad_up[0]); i++) {
    c = proxy_conn();
    snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/bad HTTP/1.1\r\n\r\n",
             tport);
    send_str(c, req);
    s = target_accept(m, lfd, 1000);
    wait_message(m, s, t, 0, 1000);
    send_str(s, bad_up[i]);
    wait_message(m, c, b, 1, 1000);
    char name[80];
    snprintf(name, sizeof(name), "bad upstream response %zu: 502", i + 1);
    ok(strncmp(b->data, "HTTP/1.1 502 ", 13) == 0, name);
    close(c);
    close(s);
  }
  c = proxy_conn();
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/cut HTTP/1.1\r\n\r\n",
           tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\nzz\r\n");
  wait_message(m, c, b, 1, 1000);
  if (!b->eof)
    wait_message(m, c, b, 1, 1000);
  ok(b->eof, "a broken chunked body after the head: the client connection "
             "closes");
  close(c);
  close(s);

  /* CONNECT: 200 only after the open, then a byte relay; bytes sent
   * right after the head go first. */
  c = proxy_conn();
  snprintf(req, sizeof(req),
           "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: x\r\n\r\nEARLY", tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, c, b, 1, 1000);
  is_str(b->data, "HTTP/1.1 200 Connection established\r\n\r\n",
         "CONNECT answered 200 once open");
  wait_message(m, s, t, 1, 300);
  is_str(t->data, "EARLY", "pipelined bytes reached the target first");
  send_str(s, "from-target");
  wait_message(m, c, b, 1, 300);
  is_str(b->data, "from-target", "and the tunnel carries bytes back");
  close(c);
  ok(closed_by_peer(m, s, 1000), "closing the client ends the tunnel");
  close(s);

  /* Connector failures: a status, a fixed short body, Connection: close. */
  struct {
    const char *host;
    const char *line;
  } fail[] = {{"refused.test", "HTTP/1.1 502 Bad Gateway\r\n"},
              {"deny.test", "HTTP/1.1 403 Forbidden\r\n"},
              {"timeout.test", "HTTP/1.1 504 Gateway Timeout\r\n"},
              {"full.test", "HTTP/1.1 503 Service Unavailable\r\n"}};
  for (size_t i = 0; i < 4; i++) {
    for (int connect_method = 0; connect_method <= 1; connect_method++) {
      c = proxy_conn();
      if (connect_method)
        snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\r\n\r\n",
                 fail[i].host);
      else
        snprintf(req, sizeof(req), "GET http://%s/ HTTP/1.1\r\n\r\n",
                 fail[i].host);
      send_str(c, req);
      wait_message(m, c, b, 1, 1000);
      char name[128];
      snprintf(name, sizeof(name), "%s %s -> %.12s",
               connect_method ? "CONNECT" : "GET", fail[i].host,
               fail[i].line + 9);
      ok(strncmp(b->data, fail[i].line, strlen(fail[i].line)) == 0, name);
      like(b->data, "Connection: close\r\n", "  with Connection: close");
      const char *body = strstr(b->data, "\r\n\r\n");
      char wbody[64];
      snprintf(wbody, sizeof(wbody), "%s", fail[i].line + 9);
      strcpy(strstr(wbody, "\r\n"), "\n");
      ok(body && strncmp(body + 4, wbody, strlen(wbody)) == 0 &&
             strlen(body + 4) == strlen(wbody),
         "  and only the status in the body (no internal detail)");
      close(c);
    }
  }

  /* A client that goes away while its open is pending cancels it. */
  int cancels = fc.cancels;
  c = proxy_conn();
  send_str(c, "CONNECT hang.test:443 HTTP/1.1\r\n\r\n");
  mock_run_for(m, 30);
  close(c);
  mock_run_for(m, 30);
  is_int(fc.cancels, cancels + 1, "client gone: the open is cancelled");

  const char *mt = mock_metrics_text(m);
  like(mt, "proxyhost_http_requests_total{method_class=\"forward\","
           "status_class=\"2xx\"} 11",
       "forwarded requests counted by status class");
  like(mt, "proxyhost_http_requests_total{method_class=\"connect\","
           "status_class=\"2xx\"} 1",
       "CONNECT counted");
  like(mt, "proxyhost_http_requests_total{method_class=\"connect\","
           "status_class=\"5xx\"} 3",
       "failed CONNECTs counted");
  like(mt, "tunnelmesh_stream_open_total{component=\"client\","
           "result=\"failure\",error_class=\"connection_refused\"} 2",
       "open results by error_class");
  like(mt, "tunnelmesh_stream_open_total{component=\"client\","
           "result=\"rejected\",error_class=\"forbidden\"} 2",
       "policy refusals are 'rejected'");
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"open\",result=\"success\"} 12",
       "open stage durations");
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"ttfb\",result=\"success\"} 1",
       "CONNECT TTFB");
  like(mt, "proxyhost_streams_active{component=\"client\"} 0",
       "no stream left open");
  ok(strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                "direction=\"up\"} ") &&
         !strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                     "direction=\"up\"} 0\n"),
     "bytes relayed counted");
  unlike(mt, "127.0.0.1", "no address in any label");
  unlike(mt, ".test", "no target host in any label");

  close(lfd);
  is_int(mock_stop(m), 0, "stops within the drain deadline");
  mock_free(m);
  char *log = slurp(logpath);
  like(log, "http request", "access log lines");
  like(log, "duration_us=", "with durations in microseconds");
  free(log);
  free(b);
  free(t);
}

static void test_limits_module(void) {
  ph_mock *m = start_proxy("header_timeout = 300ms\nmax_request_line = 1KiB\n"
                           "max_header_bytes = 2KiB\nmax_headers = 10\n",
                           0, 0);
  ok(m != NULL, "starts with small limits");
  if (!m)
    return;
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char *big = malloc(8192);

  /* A good client, connected first, is served while bad ones are
   * refused on their own connections. */
  int good = proxy_conn();
  char req[512];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/ok HTTP/1.1\r\n\r\n",
           tport);
  send_str(good, req);

  int c = proxy_conn();
  char *path = repeat('p', 1100);
  snprintf(big, 8192, "GET http://a/%s HTTP/1.1\r\n\r\n", path);
  free(path);
  send_str(c, big);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 414 ", 13) == 0, "long request line: 414");
  ok(closed_by_peer(m, c, 3000), "and that connection closes");
  close(c);

  c = proxy_conn();
  char *v = repeat('v', 2100);
  snprintf(big, 8192, "GET http://a/ HTTP/1.1\r\nX: %s\r\n\r\n", v);
  free(v);
  send_str(c, big);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 431 ", 13) == 0, "big header section: 431");
  close(c);

  c = proxy_conn();
  size_t n = (size_t)snprintf(big, 8192, "GET http://a/ HTTP/1.1\r\n");
  for (int i = 0; i < 11; i++)
    n += (size_t)snprintf(big + n, 8192 - n, "X-%d: %d\r\n", i, i);
  snprintf(big + n, 8192 - n, "\r\n");
  send_str(c, big);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 431 ", 13) == 0, "too many headers: 431");
  close(c);

  c = proxy_conn();
  send_str(c, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 400 ", 13) == 0, "garbage: 400");
  close(c);

  c = proxy_conn();
  send_str(c, "GET https://a/ HTTP/1.1\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 501 ", 13) == 0, "https:// forwarding: 501");
  close(c);

  int s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /ok HTTP/1.1", "the good client's request went on");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  wait_message(m, good, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0,
     "a good client is served while bad ones are refused");
  close(good);
  close(s);

  c = proxy_conn();
  send_str(c, "GET http://a/ HTTP/1.1\r\nX-Slow: ");
  wait_message(m, c, b, 1, 1500);
  ok(strncmp(b->data, "HTTP/1.1 408 ", 13) == 0,
     "a head not finished within header_timeout: 408");
  close(c);

  c = proxy_conn();
  wait_message(m, c, b, 1, 1500);
  ok(strncmp(b->data, "HTTP/1.1 408 ", 13) == 0,
     "a client that sends nothing gets 408 as well");
  ok(closed_by_peer(m, c, 3000), "and is closed");
  close(c);

  /* A slow client's head under the limit still works when complete. */
  c = proxy_conn();
  send_str(c, "GET http://127.0.0.1:");
  mock_run_for(m, 50);
  snprintf(req, sizeof(req), "%u/slow HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /slow HTTP/1.1", "a head in two reads is assembled");
  close(c);
  close(s);

  const char *mt = mock_metrics_text(m);
  like(mt, "proxyhost_http_requests_total{method_class=\"forward\","
           "status_class=\"4xx\"} 6",
       "refused heads counted as 4xx");
  like(mt, "proxyhost_http_requests_total{method_class=\"forward\","
           "status_class=\"5xx\"} 1",
       "and the https:// refusal (501) as 5xx");
  close(lfd);
  is_int(mock_stop(m), 0, "stops");
  mock_free(m);
  free(big);
  free(b);
  free(t);
}

static void test_auth(void) {
  ph_mock *m = start_proxy("auth = password\n", 0, 1);
  ok(m == NULL, "auth = password without an authorizer: refused");
  like(err.data ? err.data : "",
       "http_proxy.auth: password needs a module that provides the "
       "\"authorizer\" service",
       "by the module's check, naming the key, before any init");

  m = start_proxy("auth = password\n", 1, 0);
  ok(m != NULL, "auth = password with an authorizer starts");
  if (!m)
    return;
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char req[512];

  int c = proxy_conn();
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/ HTTP/1.1\r\n\r\n",
           tport);
  send_str(c, req);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 407 ", 13) == 0, "no credentials: 407");
  like(b->data, "Proxy-Authenticate: Basic realm=\"proxyhost\"\r\n",
       "with the Basic challenge");
  like(b->data, "Connection: keep-alive", "and the connection stays open");
  is_int(fc.opens, 0, "nothing was opened");

  /* Wrong password on the same connection. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/ HTTP/1.1\r\n"
           "Proxy-Authorization: Basic YWxpY2U6d3Jvbmc=\r\n\r\n",
           tport); /* alice:wrong */
  send_str(c, req);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 407 ", 13) == 0, "bad credentials: 407");
  is_int(fa.checks, 1, "checked by the authorizer");

  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/in HTTP/1.1\r\n"
           "Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n",
           tport); /* alice:secret */
  send_str(c, req);
  int s = target_accept(m, lfd, 1000);
  ok(s >= 0, "good credentials: the request goes on");
  wait_message(m, s, t, 0, 1000);
  unlike(t->data, "Proxy-Authorization", "credentials never forwarded");
  is_str(fc.principal, "alice", "the connector gets the principal");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "and succeeds");

  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "a second request");
  is_int(fa.checks, 2, "reuses the verification on the same connection");
  close(c);
  close(s);

  /* Many pipelined requests without credentials: each gets its 407, in
   * order, without the proxy recursing through them. */
  c = proxy_conn();
  char *many = malloc(200 * 40 + 1);
  size_t ml = 0;
  for (int i = 0; i < 200; i++)
    ml += (size_t)sprintf(many + ml, "GET http://a/%d HTTP/1.1\r\n\r\n", i);
  send_str(c, many);
  free(many);
  int n407 = 0;
  for (int waited = 0; waited < 3000 && n407 < 200; waited += 10) {
    mock_run_for(m, 10);
    ssize_t r;
    while ((r = recv(c, b->data, sizeof(b->data) - 1, 0)) > 0) {
      b->data[r] = '\0';
      for (char *q = b->data; (q = memmem(q, (size_t)(b->data + r - q),
                                          " 407 ", 5)) != NULL; q++)
        n407++;
    }
  }
  is_int(n407, 200, "200 pipelined requests: 200 answers of 407");
  close(c);

  c = proxy_conn();
  send_str(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n"
              "Proxy-Authorization: Basic ZG93bjp4\r\n\r\n"); /* down:x */
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 503 ", 13) == 0,
     "authorizer unavailable: 503 (fail closed)");
  close(c);

  c = proxy_conn();
  send_str(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n"
              "Proxy-Authorization: Bearer abc\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 407 ", 13) == 0, "not Basic: 407");
  close(c);

  const char *mt = mock_metrics_text(m);
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"authorization\",result=\"rejected\"} 2",
       "authorization stage measured");
  unlike(mt, "alice", "no user name in metrics");
  close(lfd);
  is_int(mock_stop(m), 0, "stops");
  mock_free(m);
  char *log = slurp(logpath);
  unlike(log, "secret", "the password never reaches the log");
  unlike(log, "YWxpY2U6c2VjcmV0", "nor the encoded credentials");
  unlike(log, "alice", "nor the user name");
  free(log);
  free(b);
  free(t);
}

int main(void) {
  plan_lazy();
  test_request_rewrite();
  test_limits();
  test_targets();
  test_hop_by_hop();
  test_basic();
  test_bodies();
  test_hostile();

  char so[512];
  snprintf(so, sizeof(so), "%s/http_proxy/.libs/http_proxy.so",
           PH_BUILD_MODULES);
  struct stat st;
  if (stat(so, &st) != 0) {
    printf("ok %d - # SKIP the http_proxy module was not built\n", ++tap_n_);
    return done_testing();
  }
  buf_init(&err, 65536);
  snprintf(logpath, sizeof(logpath), "/tmp/test_http_head.%d.log",
           (int)getpid());
  test_forwarding();
  test_limits_module();
  test_auth();
  unlink(logpath);
  buf_free(&err);
  return done_testing();
}

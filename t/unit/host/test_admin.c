/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/admin.c: a libev loop on the main thread serves
 * 127.0.0.1:0 while a client thread with blocking sockets (bounded by
 * SO_RCVTIMEO/SO_SNDTIMEO) runs the scenarios, then wakes the loop with
 * an ev_async. A 10 s safety timer fails the test if anything hangs. */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "admin.h"
#include "admin_parse.h"
#include "core.h" /* ph_host_api */
#include "metrics.h"
#include "tap.h"

#define TIMEOUT_MS 300
#define MAX_CONNS 3
#define RESP_MAX (16 << 20)
#define BULK_METRICS 160 /* x 1024 series: about 6 MB of exposition */

static int port, bulk_port;
static struct ev_loop *loop_;
static atomic_int ready_flag = 1;
static ev_async done_async;
static int timed_out;

/* ---- modules' routes (ABI 1.3), on the loop thread ----------------------
 * /v1/echo answers inside the handler with what it got; /v1/later answers
 * from a timer; /v1/never never answers (the deadline cancels it);
 * /v1/one takes one request at a time. */
static ph_routes *routes_;
static atomic_int cancels, later_cancels;
static int64_t later_id;
static ev_timer later_timer;

static void echo_handle(void *arg, int64_t id, const ph_http_request *r) {
  (void)arg;
  char out[70000];
  int n = snprintf(out, sizeof(out),
                   "method=%s path=%s query=%s auth=%s type=%s len=%zu "
                   "body=%s",
                   r->method, r->path, r->query,
                   r->authorization ? r->authorization : "(none)",
                   r->content_type ? r->content_type : "(none)", r->body_len,
                   r->body);
  routes_reply(routes_, NULL, id, 201, "text/x-echo", out,
               (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

static void count_cancel(void *arg, int64_t id) {
  (void)arg;
  (void)id;
  atomic_fetch_add(&cancels, 1);
}

static void later_fire(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)w;
  (void)revents;
  routes_reply(routes_, NULL, later_id, 200, "application/json", "{}", 2);
  later_id = 0;
}

static void later_handle(void *arg, int64_t id, const ph_http_request *r) {
  (void)arg;
  (void)r;
  later_id = id;
  ev_timer_set(&later_timer, 0.05, 0.);
  ev_timer_start(loop_, &later_timer);
}

static void later_cancel(void *arg, int64_t id) {
  (void)arg;
  (void)id;
  ev_timer_stop(loop_, &later_timer);
  later_id = 0;
  atomic_fetch_add(&later_cancels, 1);
}

static void never_handle(void *arg, int64_t id, const ph_http_request *r) {
  (void)arg;
  (void)id;
  (void)r;
}

static void add_routes(ph_routes *rt) {
  ph_buf e;
  buf_init(&e, 0);
  ok(routes_add(rt, NULL, "echo_mod", "/v1/echo", echo_handle, count_cancel,
                NULL, 4, &e) == PH_OK &&
         routes_add(rt, NULL, "later_mod", "/v1/later", later_handle,
                    later_cancel, NULL, 1, &e) == PH_OK &&
         routes_add(rt, NULL, "never_mod", "/v1/never", never_handle,
                    count_cancel, NULL, MAX_CONNS, &e) == PH_OK,
     "routes registered");
  buf_reset(&e);
  is_int(routes_add(rt, NULL, "other", "/v1/echo", echo_handle, count_cancel,
                    NULL, 1, &e),
         PH_EEXIST, "a prefix taken twice is refused");
  like(e.data, "route /v1/echo of module other overlaps route /v1/echo of "
               "module echo_mod", "... naming both modules");
  buf_reset(&e);
  is_int(routes_add(rt, NULL, "other", "/v1/echo/sub", echo_handle,
                    count_cancel, NULL, 1, &e),
         PH_EEXIST, "a prefix inside another is refused");
  buf_reset(&e);
  is_int(routes_add(rt, NULL, "other", "/v1", echo_handle, count_cancel,
                    NULL, 1, &e),
         PH_EINVAL, "a prefix must be below /v1/");
  is_int(routes_add(rt, NULL, "other", "/v1/x/", echo_handle, count_cancel,
                    NULL, 1, &e),
         PH_EINVAL, "no trailing slash");
  is_int(routes_add(rt, NULL, "other", "/v1/X", echo_handle, count_cancel,
                    NULL, 1, &e),
         PH_EINVAL, "lower case only");
  is_int(routes_add(rt, NULL, "other", "/v1/x", echo_handle, NULL, NULL, 1,
                    &e),
         PH_EINVAL, "cancel is required");
  is_int(routes_add(rt, NULL, "other", "/v1/x", echo_handle, count_cancel,
                    NULL, 0, &e),
         PH_EINVAL, "max_in_flight 0 is refused");
  is_int(routes_add(rt, NULL, "other", "/v1/x", echo_handle, count_cancel,
                    NULL, PH_ROUTE_MAX_IN_FLIGHT + 1, &e),
         PH_EINVAL, "max_in_flight above the bound is refused");
  is_int(routes_reply(rt, NULL, 12345, 200, NULL, NULL, 0), PH_ENOENT,
         "a reply to an unknown request is refused");
  buf_free(&e);
}

static int ready_cb(void *arg, ph_buf *why) {
  (void)arg;
  if (atomic_load(&ready_flag))
    return 1;
  buf_puts(why, "module dns: not started\nmodule tls: loading keys");
  return 0;
}

/* ---- client side ------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int client_connect_to(int to_port, int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (rcvbuf)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)to_port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int client_connect(int rcvbuf) {
  return client_connect_to(port, rcvbuf);
}

/* Reads until EOF into resp (NUL-terminated); the length, or -1 on error
 * or timeout. */
static long read_all(int fd, char *resp, size_t cap) {
  size_t len = 0;
  for (;;) {
    ssize_t r = recv(fd, resp + len, cap - 1 - len, 0);
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    len += (size_t)r;
    if (len == cap - 1)
      return -1;
  }
  resp[len] = '\0';
  return (long)len;
}

typedef struct reply {
  long len;
  int status;
  const char *body; /* after the blank line, or NULL */
  long content_length;
  char *raw;
} reply;

static void parse_reply(reply *r) {
  r->status = -1;
  r->content_length = -1;
  r->body = NULL;
  if (r->len < 0 || sscanf(r->raw, "HTTP/1.1 %d ", &r->status) != 1)
    return;
  char *end = strstr(r->raw, "\r\n\r\n");
  if (end)
    r->body = end + 4;
  char *cl = strstr(r->raw, "\r\nContent-Length: ");
  if (cl)
    r->content_length = strtol(cl + 18, NULL, 10);
}

/* One whole exchange; delay_ms before reading (to fill the windows). */
static reply request_to(int to_port, const char *raw, size_t n, int rcvbuf,
                        int delay_ms) {
  reply r = {.len = -1, .raw = calloc(1, RESP_MAX)};
  int fd = client_connect_to(to_port, rcvbuf);
  if (fd >= 0 && send_all(fd, raw, n) == 0) {
    if (delay_ms)
      usleep((useconds_t)delay_ms * 1000);
    r.len = read_all(fd, r.raw, RESP_MAX);
  }
  if (fd >= 0)
    close(fd);
  parse_reply(&r);
  return r;
}

static reply request_ex(const char *raw, size_t n) {
  return request_to(port, raw, n, 0, 0);
}

static reply request(const char *raw) {
  return request_ex(raw, strlen(raw));
}

static void check_reply(const char *raw, int status, const char *body,
                        const char *what) {
  reply r = request(raw);
  char name[200];
  snprintf(name, sizeof(name), "%s: status %d", what, status);
  is_int(r.status, status, name);
  snprintf(name, sizeof(name), "%s: body", what);
  is_str(r.body, body, name);
  snprintf(name, sizeof(name), "%s: Connection: close", what);
  like(r.raw, "\r\nConnection: close\r\n", name);
  snprintf(name, sizeof(name), "%s: Content-Length matches", what);
  is_int(r.content_length, r.body ? (long)strlen(r.body) : -2, name);
  free(r.raw);
}

static void test_routes(void) {
  check_reply("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 200, "ok\n",
              "/healthz");
  check_reply("GET /healthz?verbose=1 HTTP/1.0\r\n\r\n", 200, "ok\n",
              "query string ignored");
  check_reply("GET /healthz HTTP/1.0\n\n", 200, "ok\n", "bare LF");
  check_reply("GET /nope HTTP/1.1\r\n\r\n", 404, "not found\n", "404");
  check_reply("GET /metricsx HTTP/1.1\r\n\r\n", 404, "not found\n",
              "prefix is not a match");
  check_reply("garbage\r\n\r\n", 400, "bad request\n", "garbage");
  check_reply("GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n", 400,
              "bad request\n", "bad header line");
  check_reply("GET /healthz HTTP/2.0\r\n\r\n", 505,
              "http version not supported\n", "HTTP/2.0");

  reply r = request("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  is_int(r.status, 405, "POST: 405");
  like(r.raw, "\r\nAllow: GET, HEAD\r\n", "POST: Allow header");
  free(r.raw);
  r = request("DELETE /nope HTTP/1.1\r\n\r\n");
  is_int(r.status, 405, "method checked before path");
  free(r.raw);

  /* No line end ever comes, yet binary junk is refused at once (waiting
   * would end in the deadline's close, without a status). */
  r = request_ex("\x16\x03\x01\x02", 4);
  is_int(r.status, 400, "binary junk: 400 without waiting for a line end");
  free(r.raw);
}

#define LATER_GET "GET /v1/later HTTP/1.1\r\n\r\n"

/* ABI 1.3: requests for modules' routes. */
static void test_module_routes(void) {
  reply r = request("POST /v1/echo/x?a=1&b=2 HTTP/1.1\r\nHost: x\r\n"
                    "Authorization:  Bearer abc \r\n"
                    "Content-Type: application/json\r\n"
                    "Content-Length: 7\r\n\r\n{\"a\":1}");
  is_int(r.status, 201, "route: the module's status");
  like(r.raw, "\r\nContent-Type: text/x-echo\r\n", "route: its type");
  is_str(r.body,
         "method=POST path=/v1/echo/x query=a=1&b=2 auth=Bearer abc "
         "type=application/json len=7 body={\"a\":1}",
         "route: method, path, query, Authorization, type and body");
  free(r.raw);
  r = request("GET /v1/echo HTTP/1.1\r\n\r\n");
  is_str(r.body,
         "method=GET path=/v1/echo query= auth=(none) type=(none) len=0 "
         "body=",
         "route: the prefix itself, no body, no headers");
  free(r.raw);
  check_reply("GET /v1/echoes HTTP/1.1\r\n\r\n", 404, "not found\n",
              "a longer segment is not the route's");
  check_reply("PATCH /v1/nothing HTTP/1.1\r\n\r\n", 404, "not found\n",
              "no module serves it: 404");
  r = request("PUT /v1/echo HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  is_int(r.status, 405, "PUT to a route: 405");
  like(r.raw, "\r\nAllow: GET, POST, PATCH, DELETE\r\n",
       "... with the methods routes take");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
              "\r\n3\r\nabc\r\n0\r\n\r\n");
  is_int(r.status, 411, "chunked body: 411");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
              "Content-Length: 3\r\n\r\nabc");
  is_int(r.status, 400, "chunked and Content-Length: 400");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nContent-Length: 3\r\n"
              "Content-Length: 4\r\n\r\nabcd");
  is_int(r.status, 400, "two different Content-Lengths: 400");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nContent-Length: 3x\r\n\r\nabc");
  is_int(r.status, 400, "a Content-Length that is not a number: 400");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nAuthorization: Bearer a\r\n"
              "Authorization: Bearer b\r\nContent-Length: 0\r\n\r\n");
  is_int(r.status, 400, "two Authorization headers: 400");
  free(r.raw);
  r = request("POST /v1/echo HTTP/1.1\r\nContent-Length: 1025\r\n\r\n");
  is_int(r.status, 413, "a body above max_body: 413, before it is sent");
  free(r.raw);

  /* A body of exactly max_body, sent in pieces after the head. */
  char *big = malloc(2048);
  int n = snprintf(big, 2048, "PATCH /v1/echo HTTP/1.1\r\n"
                   "Content-Length: 1024\r\n\r\n");
  int fd = client_connect(0);
  send_all(fd, big, (size_t)n);
  memset(big, 'z', 1024);
  usleep(20000);
  send_all(fd, big, 512);
  usleep(20000);
  send_all(fd, big + 512, 512);
  r = (reply){.raw = calloc(1, RESP_MAX)};
  r.len = read_all(fd, r.raw, RESP_MAX);
  close(fd);
  parse_reply(&r);
  is_int(r.status, 201, "a body of max_body in pieces: answered");
  like(r.body, "len=1024 body=zzzz", "... the module got all of it");
  free(r.raw);
  free(big);

  /* Answered later, from a timer. */
  r = request("DELETE /v1/later/7 HTTP/1.1\r\n\r\n");
  is_int(r.status, 200, "an answer from a timer: 200");
  is_str(r.body, "{}", "... its body");
  free(r.raw);

  /* The client leaves while the module works: the module hears of it. */
  fd = client_connect(0);
  send_all(fd, LATER_GET, strlen(LATER_GET));
  usleep(10000);
  close(fd);
  for (int i = 0; i < 100 && atomic_load(&later_cancels) == 0; i++)
    usleep(5000);
  is_int(atomic_load(&later_cancels), 1,
         "the client left: the module's cancel ran");

  /* One at a time on /v1/later: a second request meanwhile is a 503. */
  fd = client_connect(0);
  send_all(fd, LATER_GET, strlen(LATER_GET));
  usleep(10000);
  r = request("GET /v1/later HTTP/1.1\r\n\r\n");
  is_int(r.status, 503, "over max_in_flight: 503 without a call");
  free(r.raw);
  r = (reply){.raw = calloc(1, RESP_MAX)};
  r.len = read_all(fd, r.raw, RESP_MAX);
  close(fd);
  parse_reply(&r);
  is_int(r.status, 200, "... the first one is answered");
  free(r.raw);

  /* No answer by the deadline: the module's cancel runs, and a 504. */
  int before = atomic_load(&cancels);
  r = request("GET /v1/never HTTP/1.1\r\n\r\n");
  is_int(r.status, 504, "no answer by the deadline: 504");
  is_int(atomic_load(&cancels), before + 1, "... and the request cancelled");
  free(r.raw);
}

/* The parser's view of body framing (the listener's checks above). */
static void test_body_framing(void) {
  admin_request q;
  const char *h = "POST /v1/a?x=1 HTTP/1.1\r\ncontent-length:  12 \r\n"
                  "AUTHORIZATION: Bearer t\r\ncontent-TYPE: a/b\r\n\r\n";
  is_int(admin_parse_head(h, strlen(h), 8192, &q), ADMIN_PARSE_DONE,
         "framing: parsed");
  is_int((int)q.content_length, 12, "Content-Length, case-insensitive");
  ok(q.query_len == 3 && memcmp(q.query, "x=1", 3) == 0, "the query");
  ok(q.authorization_len == 8 && memcmp(q.authorization, "Bearer t", 8) == 0,
     "Authorization, trimmed");
  ok(q.content_type_len == 3, "Content-Type");
  is_int(admin_body_framing(&q, 12), 0, "12 bytes within 12");
  is_int(admin_body_framing(&q, 11), 413, "12 bytes over 11: 413");
  h = "GET / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
  is_int(admin_parse_head(h, strlen(h), 8192, &q), ADMIN_PARSE_DONE,
         "the same Content-Length twice is one");
  h = "GET / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n";
  is_int(admin_parse_head(h, strlen(h), 8192, &q), ADMIN_PARSE_BAD,
         "a Content-Length of 19 digits: bad");
  h = "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n";
  is_int(admin_parse_head(h, strlen(h), 8192, &q), ADMIN_PARSE_BAD,
         "a negative Content-Length: bad");
  h = "GET / HTTP/1.1\r\nContent-Type: a\r\nContent-Type: b\r\n\r\n";
  is_int(admin_parse_head(h, strlen(h), 8192, &q), ADMIN_PARSE_BAD,
         "two Content-Types: bad");
  h = "GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
  admin_parse_head(h, strlen(h), 8192, &q);
  is_int(admin_body_framing(&q, 100), 411, "any Transfer-Encoding: 411");
}

static void test_metrics_and_head(void) {
  reply r = request("GET /metrics HTTP/1.1\r\n\r\n");
  is_int(r.status, 200, "/metrics: 200");
  like(r.raw,
       "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
       "/metrics: content type");
  like(r.body, "\ntest_hits_total 42\n", "/metrics: counter value");
  is_int(r.content_length, r.body ? (long)strlen(r.body) : -2,
         "/metrics: Content-Length matches");
  long get_len = r.content_length;
  free(r.raw);

  r = request("HEAD /metrics HTTP/1.1\r\n\r\n");
  is_int(r.status, 200, "HEAD /metrics: 200");
  is_int(r.content_length, get_len, "HEAD /metrics: GET's Content-Length");
  is_str(r.body, "", "HEAD /metrics: no body");
  free(r.raw);
  r = request("HEAD /healthz HTTP/1.1\r\n\r\n");
  is_int(r.content_length, 3, "HEAD /healthz: Content-Length 3");
  is_str(r.body, "", "HEAD /healthz: no body");
  free(r.raw);

  /* More than the kernel's send buffer can take (tcp_wmem max is a few
   * MiB), a tiny receive window and a late reader: the server's first
   * write is partial and the rest goes out from the EV_WRITE watcher. */
  r = request_to(bulk_port, "GET /metrics HTTP/1.1\r\n\r\n", 25, 2048, 100);
  is_int(r.status, 200, "/metrics, slow reader: 200");
  ok(r.content_length > (5 << 20), "/metrics, slow reader: a large body");
  is_int(r.body ? (long)strlen(r.body) : -1, r.content_length,
         "/metrics, slow reader: whole body arrived");
  free(r.raw);
}

static void test_ready(void) {
  check_reply("GET /readyz HTTP/1.1\r\n\r\n", 200, "ready\n", "ready");
  atomic_store(&ready_flag, 0);
  check_reply("GET /readyz HTTP/1.1\r\n\r\n", 503,
              "module dns: not started\nmodule tls: loading keys\n",
              "not ready");
  atomic_store(&ready_flag, 1);
  check_reply("GET /readyz HTTP/1.1\r\n\r\n", 200, "ready\n", "ready again");
}

static void test_large_head(void) {
  size_t n = 10000;
  char *big = malloc(n + 1);
  strcpy(big, "GET /healthz HTTP/1.1\r\nX-Big: ");
  size_t used = strlen(big);
  memset(big + used, 'a', n - used - 4);
  memcpy(big + n - 4, "\r\n\r\n", 5);
  reply r = request_ex(big, n);
  is_int(r.status, 431, "head over 8 KiB: 431");
  is_str(r.body, "request header fields too large\n", "431 body");
  free(r.raw);

  /* Exactly 8192 bytes including the blank line is still accepted. */
  used = strlen("GET /healthz HTTP/1.1\r\nX-Big: ");
  memset(big + used, 'b', 8192 - used - 4);
  memcpy(big + 8192 - 4, "\r\n\r\n", 4);
  r = request_ex(big, 8192);
  is_int(r.status, 200, "head of exactly 8 KiB: 200");
  free(r.raw);
  free(big);
}

/* Waits for the server to close fd; seconds taken, or -1 when it did not
 * close (data, or our own 2 s receive timeout). */
static double time_to_close(int fd, double t0) {
  char c;
  ssize_t r = recv(fd, &c, 1, 0);
  if (r == 0 || (r < 0 && errno == ECONNRESET))
    return now_s() - t0;
  return -1;
}

static void test_deadline(void) {
  /* A client that sends nothing waits in the kernel (TCP_DEFER_ACCEPT)
   * and is never given a slot; one that has sent part of a request is
   * closed at the deadline. */
  double t0 = now_s();
  int fd = client_connect(0);
  send_all(fd, "GET /heal", 9);
  double dt = time_to_close(fd, t0);
  ok(dt >= TIMEOUT_MS / 1000.0 * 0.9 && dt < 1.5,
     "client stuck mid-head closed at the deadline");
  printf("# client stuck mid-head closed after %.3f s\n", dt);
  close(fd);
}

static int still_open(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

static void close_all(int *fds, int n) {
  for (int i = 0; i < n; i++)
    close(fds[i]);
}

/* MAX_CONNS clients that each sent the first byte of a request. */
static void open_idle(int *fds) {
  for (int i = 0; i < MAX_CONNS; i++) {
    fds[i] = client_connect(0);
    send_all(fds[i], "G", 1);
  }
}

static int status_of(const char *raw) {
  reply r = request(raw);
  int status = r.status;
  free(r.raw);
  return status;
}

/* Issue 22 item 9: a slot held by a client that is not being served goes
 * to a new connection (the oldest first); a newcomer is closed at once
 * only when every slot is serving a request. */
static void test_max_connections(void) {
  /* A finished exchange holds its slot until the server has read the
   * client's close; give it time so all MAX_CONNS slots are free. */
  usleep(50000);
  int idle[MAX_CONNS];
  open_idle(idle);
  int extra = client_connect(0);
  send_all(extra, "G", 1);
  ok(time_to_close(idle[0], now_s()) >= 0,
     "issue 22 item 9: over the limit, the oldest idle client is closed");
  int open_ = still_open(extra);
  for (int i = 1; i < MAX_CONNS; i++)
    open_ = open_ && still_open(idle[i]);
  ok(open_, "... the others and the new one stay open");
  is_int(status_of("GET /healthz HTTP/1.1\r\n\r\n"), 200,
         "a request is served while idle clients hold every slot");
  close(extra);
  close_all(idle, MAX_CONNS);

  int silent[MAX_CONNS];
  for (int i = 0; i < MAX_CONNS; i++)
    silent[i] = client_connect(0);
  is_int(status_of("GET /healthz HTTP/1.1\r\n\r\n"), 200,
         "clients that send nothing take no slot");
  close_all(silent, MAX_CONNS);

  /* Every slot serving a request (the module never answers): a newcomer
   * is closed at once, the requests answered at their deadline. */
  usleep(50000);
  int busy[MAX_CONNS];
  const char *never = "GET /v1/never HTTP/1.1\r\n\r\n";
  for (int i = 0; i < MAX_CONNS; i++) {
    busy[i] = client_connect(0);
    send_all(busy[i], never, strlen(never));
  }
  usleep(50000);
  extra = client_connect(0);
  send_all(extra, "G", 1);
  ok(time_to_close(extra, now_s()) >= 0,
     "every slot serving a request: the newcomer is closed");
  close(extra);
  int answered = 0;
  for (int i = 0; i < MAX_CONNS; i++) {
    reply r = {.raw = calloc(1, RESP_MAX)};
    r.len = read_all(busy[i], r.raw, RESP_MAX);
    parse_reply(&r);
    answered += r.status == 504;
    free(r.raw);
  }
  is_int(answered, MAX_CONNS, "... the requests in progress are answered");
  close_all(busy, MAX_CONNS);

  reply r = request("GET /metrics HTTP/1.1\r\n\r\n");
  like(r.body, "proxyhost_admin_connections_closed_total{reason=\"evicted\"} ",
       "closes counted by reason");
  like(r.body, "proxyhost_admin_connections_closed_total{reason=\"full\"} 1\n",
       "... one newcomer refused");
  free(r.raw);
}

/* Issue 22 item 9: a client that asks for a large response and does not
 * read it holds its slot in WRITE; a newcomer still gets one (the bulk
 * listener: 2 slots, about 6 MB of /metrics). */
static void test_write_eviction(void) {
  static const char get[] = "GET /metrics HTTP/1.1\r\n\r\n";
  int slow[2];
  for (int i = 0; i < 2; i++) {
    slow[i] = client_connect_to(bulk_port, 4096);
    send_all(slow[i], get, sizeof(get) - 1);
  }
  /* Both are being written to once their first bytes are here. */
  int writing = 0;
  for (int tries = 0; tries < 200 && writing < 2; tries++) {
    char c;
    writing = 0;
    for (int i = 0; i < 2; i++)
      writing += recv(slow[i], &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
    if (writing < 2)
      usleep(10000);
  }
  is_int(writing, 2, "two clients that do not read a large /metrics");
  reply r = request_to(bulk_port, "GET /healthz HTTP/1.1\r\n\r\n", 25, 0, 0);
  is_int(r.status, 200, "... do not keep a newcomer out");
  free(r.raw);
  close_all(slow, 2);
}

static void *client_main(void *arg) {
  int *idle = arg;
  test_routes();
  test_module_routes();
  test_metrics_and_head();
  test_ready();
  test_large_head();
  test_deadline();
  test_max_connections();
  test_write_eviction();
  /* Left open for admin_stop to clean up; the request after it makes sure
   * the server has accepted it (accepts are in arrival order). */
  *idle = client_connect(0);
  reply r = request("GET /healthz HTTP/1.1\r\n\r\n");
  free(r.raw);
  ev_async_send(loop_, &done_async);
  return NULL;
}

/* ---- loop side -------------------------------------------------------- */

static void on_done(struct ev_loop *loop, ev_async *w, int revents) {
  (void)w;
  (void)revents;
  ev_break(loop, EVBREAK_ALL);
}

static void on_safety(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)w;
  (void)revents;
  timed_out = 1;
  ev_break(loop, EVBREAK_ALL);
}

static void expect_start_error(struct ev_loop *loop, const char *listen,
                               int max, int timeout, const char *want) {
  ph_admin_opts o = {.listen = listen, .max_connections = max,
                     .timeout_ms = timeout};
  ph_buf err;
  buf_init(&err, 0);
  ph_admin *a = admin_start(loop, &o, &err);
  char name[200];
  snprintf(name, sizeof(name), "admin_start(%s) fails", listen);
  ok(a == NULL, name);
  is_str(err.data, want, "... with the reason");
  if (a)
    admin_stop(a);
  buf_free(&err);
}

/* One parser serves admin_check_listen (--check-config, exit 2) and
 * admin_start: the same reason from both. */
static void expect_bad_listen(struct ev_loop *loop, const char *listen,
                              const char *why) {
  char got[200] = "";
  char name[240];
  snprintf(name, sizeof(name), "admin_check_listen(%s) refuses", listen);
  ok(admin_check_listen(listen, got, sizeof(got)) == -1, name);
  is_str(got, why, "... with the reason");
  char want[240];
  snprintf(want, sizeof(want), "admin listen %s", why);
  expect_start_error(loop, listen, 1, 1, want);
}

/* The one listen-address parser: the host's admin listen and, through
 * ph_api.parse_listen_addr, every module's listen keys. */
static void test_parse_listen_addr(void) {
  ok(ph_host_api.parse_listen_addr == addr_parse_listen,
     "the host API table carries parse_listen_addr");
  struct sockaddr_storage ss;
  socklen_t len = 0;
  char why[160] = "";
  const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
  const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
  ok(addr_parse_listen("127.0.0.1:1080", &ss, &len, why, sizeof(why)) ==
             PH_OK &&
         ss.ss_family == AF_INET && len == sizeof(*in4) &&
         ntohs(in4->sin_port) == 1080 &&
         in4->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
     "127.0.0.1:1080: IPv4, port 1080");
  ok(addr_parse_listen("[::1]:0", &ss, &len, why, sizeof(why)) == PH_OK &&
         ss.ss_family == AF_INET6 && len == sizeof(*in6) &&
         ntohs(in6->sin6_port) == 0 &&
         IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr),
     "[::1]:0: IPv6, port 0");
  ok(addr_parse_listen("0.0.0.0:65535", &ss, &len, why, sizeof(why)) ==
             PH_OK &&
         ntohs(in4->sin_port) == 65535,
     "port 65535");
  is_int(addr_parse_listen(NULL, &ss, &len, why, sizeof(why)), PH_EINVAL,
         "NULL is refused");
  is_str(why, "\"\": want IPv4:PORT or [IPv6]:PORT", "... with a reason");
  char tiny[8];
  is_int(addr_parse_listen("localhost:1080", &ss, &len, tiny, sizeof(tiny)),
         PH_EINVAL, "a name is refused");
  is_int((int)strlen(tiny), 7, "the reason is truncated to whylen");
}

static void test_start_errors(struct ev_loop *loop) {
  expect_bad_listen(loop, "127.0.0.1:99999",
                    "\"127.0.0.1:99999\": invalid port (0-65535)");
  expect_bad_listen(loop, "127.0.0.1:",
                    "\"127.0.0.1:\": invalid port (0-65535)");
  expect_bad_listen(loop, "127.0.0.1:8x",
                    "\"127.0.0.1:8x\": invalid port (0-65535)");
  expect_bad_listen(loop, "127.0.0.1",
                    "\"127.0.0.1\": want IPv4:PORT or [IPv6]:PORT");
  const char *numeric = ": invalid address (want a numeric IPv4:PORT or "
                        "[IPv6]:PORT)";
  char why[200];
  const char *names[] = {"localhost:9470", "::1:9470", "[127.0.0.1]:9470"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(why, sizeof(why), "\"%s\"%s", names[i], numeric);
    expect_bad_listen(loop, names[i], why);
  }
  char none[8] = "x";
  ok(admin_check_listen("[::1]:0", none, sizeof(none)) == 0 &&
         admin_check_listen("0.0.0.0:9470", none, sizeof(none)) == 0,
     "admin_check_listen accepts [::1]:0 and 0.0.0.0:9470");
  expect_start_error(loop, "", 1, 1, "admin listen: no address");
  expect_start_error(loop, "127.0.0.1:0", 0, 1,
                     "admin: max_connections must be at least 1, got 0");
  expect_start_error(loop, "127.0.0.1:0", 1, 0,
                     "admin: timeout_ms must be at least 1, got 0");

  ph_admin_opts o = {.listen = "[::1]:0", .max_connections = 1,
                     .timeout_ms = 1};
  ph_buf err;
  buf_init(&err, 0);
  ph_admin *a = admin_start(loop, &o, &err);
  ok(a && admin_port(a) > 0, "[::1]:0 binds an ephemeral port");
  if (!a)
    printf("# %s\n", err.data);
  admin_stop(a);
  buf_free(&err);
}

/* The listening socket among our descriptors: non-blocking, close-on-exec. */
static void test_listener_flags(void) {
  int found = 0;
  for (int fd = 3; fd < 1024 && !found; fd++) {
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int listening = 0;
    socklen_t il = sizeof(listening);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
        sa.sin_family != AF_INET || ntohs(sa.sin_port) != port ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &il) < 0 ||
        !listening)
      continue;
    found = 1;
    ok(fcntl(fd, F_GETFD) & FD_CLOEXEC, "listener is close-on-exec");
    ok(fcntl(fd, F_GETFL) & O_NONBLOCK, "listener is non-blocking");
  }
  ok(found, "listener found among the descriptors");
}

static ph_registry *make_registry(void) {
  ph_registry *r = metrics_new();
  ph_metric_def hits = {.name = "test_hits_total", .help = "Hits.",
                        .type = PH_METRIC_COUNTER};
  metrics_inc(metrics_series(metrics_register(r, &hits, NULL), NULL), 42);
  return r;
}

/* BULK_METRICS counters of 32 x 32 series each, for the partial writes. */
static ph_registry *make_bulk_registry(void) {
  static const char *vals[33];
  static char names[32][16];
  for (int i = 0; i < 32; i++) {
    snprintf(names[i], sizeof(names[i]), "v%d", i);
    vals[i] = names[i];
  }
  ph_registry *r = metrics_new();
  ph_label_def l[] = {{"a", vals}, {"b", vals}};
  for (int i = 0; i < BULK_METRICS; i++) {
    char name[32];
    snprintf(name, sizeof(name), "test_bulk%d_total", i);
    ph_metric_def d = {.name = name, .help = "Bulk.",
                       .type = PH_METRIC_COUNTER, .labels = l,
                       .n_labels = 2};
    metrics_register(r, &d, NULL);
  }
  return r;
}

int main(void) {
  plan_lazy();
  struct ev_loop *loop = loop_ = ev_default_loop(0);
  test_parse_listen_addr();
  test_start_errors(loop);
  test_body_framing();
  routes_ = routes_new();
  add_routes(routes_);
  ev_timer_init(&later_timer, later_fire, 0.05, 0.);

  ph_registry *reg = make_registry();
  ph_admin_opts o = {.listen = "127.0.0.1:0",
                     .max_connections = MAX_CONNS,
                     .timeout_ms = TIMEOUT_MS,
                     .max_body = 1024,
                     .routes = routes_,
                     .registry = reg,
                     .ready = ready_cb};
  ph_buf err;
  buf_init(&err, 0);
  ph_admin *a = admin_start(loop, &o, &err);
  ok(a != NULL, "admin_start on 127.0.0.1:0");
  if (!a) {
    printf("# %s\n", err.data);
    return done_testing();
  }
  port = admin_port(a);
  ok(port > 0, "admin_port gives the bound port");
  test_listener_flags();

  char taken[64];
  snprintf(taken, sizeof(taken), "127.0.0.1:%d", port);
  o.listen = taken;
  ok(admin_start(loop, &o, &err) == NULL, "second bind to the port fails");
  like(err.data, ": bind: Address already in use", "... with the reason");
  char holder[64];
  snprintf(holder, sizeof(holder), "; see who holds it: ss -ltnp 'sport = :%d'",
           port);
  like(err.data, holder, "... and how to see who holds the port");

  /* A second listener with a generous deadline for the big response. */
  ph_registry *bulk_reg = make_bulk_registry();
  ph_admin_opts bo = {.listen = "127.0.0.1:0", .max_connections = 2,
                      .timeout_ms = 5000, .registry = bulk_reg};
  ph_admin *bulk = admin_start(loop, &bo, &err);
  ok(bulk != NULL, "second listener with another registry");
  bulk_port = admin_port(bulk);

  ev_async_init(&done_async, on_done);
  ev_async_start(loop, &done_async);
  ev_timer safety;
  ev_timer_init(&safety, on_safety, 10., 0.);
  ev_timer_start(loop, &safety);

  int idle = -1;
  pthread_t t;
  pthread_create(&t, NULL, client_main, &idle);
  ev_run(loop, 0);
  /* Closing the listener and clients also unblocks a stuck client. */
  admin_stop(a);
  admin_stop(bulk);
  pthread_join(t, NULL);
  routes_free(routes_);
  ok(!timed_out, "client finished before the safety timer");
  if (idle >= 0)
    close(idle);

  ev_timer_stop(loop, &safety);
  ev_async_stop(loop, &done_async);
  buf_free(&err);
  metrics_free(reg);
  metrics_free(bulk_reg);
  ev_loop_destroy(loop);
  return done_testing();
}

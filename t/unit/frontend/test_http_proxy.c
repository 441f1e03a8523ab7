/* SPDX-License-Identifier: BSD-2-Clause */
/* The http_proxy module through the mock host, with a fake connector
 * (real loopback sockets to a target this test plays) and a fake
 * authorizer: forwarding with keep-alive and upstream reuse, bodies both
 * ways (decoded and framed again), CONNECT, connector failures mapped to
 * statuses, oversized heads, timeouts, Proxy-Authorization, metrics; and
 * the hostile-peer cases of issue 7 (an origin's malformed interim and
 * final heads, framing that could be read two ways, a reload that must
 * reach kept connections, a client leaving while it is not read, a stop
 * with half a head). And the connector's leases (connector.h minor 3;
 * issue 13, the pool's outcomes CP-5-4/CP-5-5): the request names the
 * listener and offers its head's fields (the first of a name, trimmed;
 * never Proxy-Authorization), one lease per upstream connection (not
 * per request) with first_byte once, ended once: CLOSED after complete
 * responses (the client leaving, a kept connection the origin dropped
 * and the retry's), TARGET_ERROR for a response that cannot be read,
 * CLIENT_ERROR for a request body that cannot, and at destroy
 * CLIENT_ERROR for an exchange or a tunnel in progress, CLOSED for a
 * kept idle upstream. And an upstream that is an HTTP forward proxy
 * (issue 13: the pool's `http` upstreams, PH_OPEN_F_HTTP_FORWARD /
 * PH_OPEN_R_HTTP_PROXY): the forwarded request asks for it and CONNECT
 * never does; the head goes in absolute form (scheme, host, port as the
 * client sent them, OPTIONS without a path, IPv6, port 80) with the
 * connector's Proxy-Authorization and never the client's, everything
 * else as to an origin (hop-by-hop removal, bodies framed again,
 * keep-alive per target host:port); the proxy's 407 is a 502 for the
 * client with the lease ended TARGET_ERROR; what no connector may
 * answer (a value with CR LF, the flag to a CONNECT) is a 502; and the
 * credential never reaches the log.
 *
 * Requirements: TM-SEC-1 (bounded heads and buffers), TM-SEC-2 (no raw
 * error text to clients), TM-SEC-7 (after a close no dial or timer
 * remains), TM-OBS-2/-10/-18 (open counter, bounded labels, no hosts or
 * users in labels), TM-P0-5 (a client going away cancels its open). */
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
#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "fake_authorizer.h"
#include "fake_connector.h"
#include "file_test.h"
#include "listener_test.h"
#include "mock_test.h"
#include "sock_test.h"
#include "tap.h"

static char *repeat(char c, size_t n) {
  char *s = malloc(n + 1);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

/* ---- the module through the mock host --------------------------------------- */

/* Fake connector: "refused.test", "deny.test", "timeout.test" and
 * "full.test" fail with those codes, "hang.test" never answers (until
 * cancelled); anything else is a real connection to 127.0.0.1:port.
 * "inside-ok.test" and "inside-refused.test" answer inside open() itself,
 * against connector.h's contract, to drive the dispatcher's reentrant
 * path. */
static const fc_row connector_rows[] = {
    {.host = "refused.test", .code = PH_OPEN_CONNECTION_REFUSED},
    {.host = "deny.test", .code = PH_OPEN_FORBIDDEN},
    {.host = "timeout.test", .code = PH_OPEN_TIMEOUT},
    {.host = "full.test", .code = PH_OPEN_QUEUE_FULL},
    {.host = "hang.test", .when = FC_NEVER},
    {.host = "inside-refused.test",
     .code = PH_OPEN_CONNECTION_REFUSED,
     .when = FC_INSIDE},
    {.host = "inside-*", .when = FC_INSIDE},
    {.host = NULL}};

static fake_connector FC;

/* As the pool with an `http` upstream: with as_proxy set, an open that
 * asks PH_OPEN_F_HTTP_FORWARD dials upstream_port (the test plays the
 * forward proxy there) and answers PH_OPEN_R_HTTP_PROXY with proxy_auth
 * as the value to add (NULL: none); with flag_always, even an open that
 * did not ask (a connector's bug). forward: the last open asked it. */
static struct {
  int proxy_port; /* the listener's, as announced */
  int as_proxy, flag_always, forward;
  uint16_t upstream_port;
  const char *proxy_auth;
} fc;

static ph_open_http_forward fc_fwd;

static void fc_prepare(void *arg, const ph_open_request *rq, fc_pending *q) {
  (void)arg;
  fc.forward = (rq->flags & PH_OPEN_F_HTTP_FORWARD) != 0;
  q->tag = fc.as_proxy && (fc.forward || fc.flag_always);
  if (q->tag)
    q->port = fc.upstream_port;
}

static void fc_decorate(void *arg, const fc_pending *q, ph_open_result *r) {
  (void)arg;
  if (r->code || !q->tag)
    return;
  memset(&fc_fwd, 0, sizeof(fc_fwd));
  fc_fwd.size = sizeof(fc_fwd);
  fc_fwd.proxy_authorization = fc.proxy_auth;
  fc_fwd.proxy_authorization_len =
      fc.proxy_auth ? (uint32_t)strlen(fc.proxy_auth) : 0;
  r->flags = PH_OPEN_R_HTTP_PROXY;
  r->http_forward = &fc_fwd;
}

static int dial(uint16_t port) { return sock_test_dial(port, 1); }

static int fc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  memset(&fc, 0, sizeof(fc));
  fake_connector_init(&FC, a, ctx, connector_rows);
  FC.prepare = fc_prepare;
  FC.decorate = fc_decorate;
  *state = &FC;
  if (listener_test_watch(ctx, a, &fc.proxy_port) != PH_OK)
    return PH_EINVAL;
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &fake_connector_vt, &FC);
}

static void fc_destroy(void *state) { fake_connector_free(state); }

MOCK_TEST_MODULE(fc_mod, "fake_connector", "1.0",
                 .provides = MOCK_TEST_NAMES(PH_CONNECTOR_SERVICE),
                 .init = fc_init, .destroy = fc_destroy);

/* Fake authorizer: alice/secret is allowed, user "down" finds the store
 * unavailable, everything else is denied. User "now" is answered inside
 * check_password itself (now/secret allowed), against authorizer.h's
 * contract, to drive the dispatcher's reentrant path. One check at a
 * time is all this test needs. */
static const fa_row authorizer_rows[] = {
    {.user = "alice", .pass = "secret", .verdict = PH_AUTH_ALLOW},
    {.user = "down", .pass = NULL, .verdict = PH_AUTH_UNAVAILABLE},
    {.user = "now",
     .pass = "secret",
     .verdict = PH_AUTH_ALLOW,
     .when = FA_INSIDE},
    {.user = "now", .pass = NULL, .verdict = PH_AUTH_DENY, .when = FA_INSIDE},
    {.user = NULL}};

static fake_authorizer FA;

static int fa_init(ph_ctx *ctx, const ph_api *a, void **state) {
  fake_authorizer_init(&FA, a, ctx, authorizer_rows);
  FA.max_pending = 1;
  *state = &FA;
  return a->service_register(ctx, PH_AUTHORIZER_SERVICE, PH_AUTHORIZER_MAJOR,
                             PH_AUTHORIZER_MINOR, &fake_authorizer_vt, &FA);
}

static void fa_destroy(void *state) { fake_authorizer_free(state); }

MOCK_TEST_MODULE(fa_mod, "fake_authorizer", "1.0",
                 .provides = MOCK_TEST_NAMES(PH_AUTHORIZER_SERVICE),
                 .init = fa_init, .destroy = fa_destroy);

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
    ph_mock_run_for(m, 5);
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
  int p = 0, fd = sock_test_listen(&p, 16, 1);
  *port = (uint16_t)p;
  return fd;
}

static int target_accept(ph_mock *m, int lfd, int ms) {
  for (int waited = 0; waited < ms; waited += 5) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    if (fd >= 0)
      return fd;
    ph_mock_run_for(m, 5);
  }
  return -1;
}

/* A connection that is closed by the peer reads EOF within ms. */
static int closed_by_peer(ph_mock *m, int fd, int ms) {
  char c[256];
  for (int waited = 0; waited < ms; waited += 5) {
    ph_mock_run_for(m, 5);
    ssize_t n = recv(fd, c, sizeof(c), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return 1;
  }
  return 0;
}

static char err[8192];
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
  err[0] = '\0';
  ph_mock *m = ph_mock_new(ini, err, sizeof err);
  if (!m || ph_mock_add(m, &fc_mod, err, sizeof err) < 0 ||
      (with_authorizer && ph_mock_add(m, &fa_mod, err, sizeof err) < 0) ||
      ph_mock_init(m, err, sizeof err) < 0 ||
      ph_mock_start(m, err, sizeof err) < 0) {
    if (!expect_fail)
      printf("# setup failed: %s\n", err);
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

static int proxy_conn(void) { return dial((uint16_t)fc.proxy_port); }


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
  is_str(FC.last.host, "127.0.0.1", "the connector got the target host");
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
  is_int(FC.opens, 1, "keep-alive: the upstream connection is reused");
  like(t->data, "Transfer-Encoding: chunked\r\n",
       "a chunked request stays chunked");
  like(t->data, "\r\n\r\n9\r\nwikipedia\r\n0\r\n\r\n",
       "and its body arrives framed again by the proxy (one chunk)");
  send_str(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "3\r\nabc\r\n0\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  like(b->data, "Transfer-Encoding: chunked\r\n", "chunked response head");
  like(b->data, "\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
       "chunked response body, framed again");

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
  is_int(FC.opens, 1, "on the same upstream connection");

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
  is_int(FC.opens, 2, "through a second open");

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
  is_int(FC.opens, 3, "after one more open");

  /* A response framed by close reaches an HTTP/1.1 client chunked: its
   * connection stays open. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/eof HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\n\r\nuntil-close");
  ph_mock_run_for(m, 20);
  close(s);
  wait_message(m, c, b, 1, 1000);
  like(b->data, "Transfer-Encoding: chunked\r\n",
       "close-framed: chunked for an HTTP/1.1 client");
  like(b->data, "\r\n\r\nb\r\nuntil-close\r\n0\r\n\r\n",
       "the body until the origin closed, then the last chunk");
  ok(!b->eof, "and the client connection stays open");
  close(c);

  /* HTTP/1.0 client without keep-alive: answered and closed. */
  c = proxy_conn();
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/old HTTP/1.0\r\n\r\n",
           tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /old HTTP/1.1\r\n",
     "HTTP/1.0 forwarded with the proxy's version (RFC 9110 6.2)");
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
  ph_mock_run_for(m, 30);
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
  int cancels = FC.cancels;
  c = proxy_conn();
  send_str(c, "CONNECT hang.test:443 HTTP/1.1\r\n\r\n");
  ph_mock_run_for(m, 30);
  close(c);
  ph_mock_run_for(m, 30);
  is_int(FC.cancels, cancels + 1, "client gone: the open is cancelled");

  const char *mt = ph_mock_metrics_text(m);
  like(mt, "proxyhost_http_proxy_requests_total{method_class=\"forward\","
           "status_class=\"2xx\"} 11",
       "forwarded requests counted by status class");
  like(mt, "proxyhost_http_proxy_requests_total{method_class=\"connect\","
           "status_class=\"2xx\"} 1",
       "CONNECT counted");
  like(mt, "proxyhost_http_proxy_requests_total{method_class=\"connect\","
           "status_class=\"5xx\"} 3",
       "failed CONNECTs counted");
  like(mt, "tunnelmesh_stream_open_total{component=\"client\","
           "result=\"failure\",error_class=\"connection_refused\",open_mode=\"strict\"} 2",
       "open results by error_class");
  like(mt, "tunnelmesh_stream_open_total{component=\"client\","
           "result=\"rejected\",error_class=\"forbidden\",open_mode=\"strict\"} 2",
       "policy refusals are 'rejected'");
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"open\",result=\"success\",scope=\"local\"} 12",
       "open stage durations");
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"ttfb\",result=\"success\",scope=\"local\"} 1",
       "CONNECT TTFB");
  like(mt, "proxyhost_stream_active{component=\"client\"} 0",
       "no stream left open");
  ok(strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                "direction=\"up\",protocol=\"http\"} ") &&
         !strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                     "direction=\"up\",protocol=\"http\"} 0\n"),
     "TM-OBS-14: the forwarded requests' bytes counted protocol=\"http\"");
  ok(strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                "direction=\"down\",protocol=\"tcp\"} ") &&
         !strstr(mt, "proxyhost_stream_bytes_total{component=\"client\","
                     "direction=\"down\",protocol=\"tcp\"} 0\n"),
     "TM-OBS-14: the CONNECT tunnel's bytes counted protocol=\"tcp\"");
  unlike(mt, "127.0.0.1", "no address in any label");
  unlike(mt, ".test", "no target host in any label");

  close(lfd);
  is_int(ph_mock_stop(m), 0, "stops within the drain deadline");
  ph_mock_free(m);
  char *log = file_test_slurp(logpath);
  like(log, "module=http_proxy msg=access stream=", "access log lines");
  like(log, "method=GET status=2xx status_code=200 result=success",
       "with the method, the status and the result");
  like(log, "duration_us=", "with durations in microseconds");
  unlike(log, ".test", "no target at any level without log_target");
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
  ph_mock_run_for(m, 50);
  snprintf(req, sizeof(req), "%u/slow HTTP/1.1\r\n\r\n", tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /slow HTTP/1.1", "a head in two reads is assembled");
  close(c);
  close(s);

  const char *mt = ph_mock_metrics_text(m);
  like(mt, "proxyhost_http_proxy_requests_total{method_class=\"forward\","
           "status_class=\"4xx\"} 6",
       "refused heads counted as 4xx");
  like(mt, "proxyhost_http_proxy_requests_total{method_class=\"forward\","
           "status_class=\"5xx\"} 1",
       "and the https:// refusal (501) as 5xx");
  close(lfd);
  is_int(ph_mock_stop(m), 0, "stops");
  ph_mock_free(m);
  free(big);
  free(b);
  free(t);
}

static void test_auth(void) {
  ph_mock *m = start_proxy("auth = password\n", 0, 1);
  ok(m == NULL, "auth = password without an authorizer: refused");
  like(err,
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
  is_int(FC.opens, 0, "nothing was opened");

  /* Wrong password on the same connection. */
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/ HTTP/1.1\r\n"
           "Proxy-Authorization: Basic YWxpY2U6d3Jvbmc=\r\n\r\n",
           tport); /* alice:wrong */
  send_str(c, req);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 407 ", 13) == 0, "bad credentials: 407");
  is_int(FA.checks, 1, "checked by the authorizer");

  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/in HTTP/1.1\r\n"
           "Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n",
           tport); /* alice:secret */
  send_str(c, req);
  int s = target_accept(m, lfd, 1000);
  ok(s >= 0, "good credentials: the request goes on");
  wait_message(m, s, t, 0, 1000);
  unlike(t->data, "Proxy-Authorization", "credentials never forwarded");
  is_str(FC.last.principal, "alice", "the connector gets the principal");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "and succeeds");

  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "a second request");
  is_int(FA.checks, 2, "reuses the verification on the same connection");

  /* Issue 7 D3: after a reload (the user may be gone) the same value on
   * the same connection is checked again, and the kept upstream is not
   * reused without asking the connector. */
  int opens = FC.opens;
  is_int(ph_mock_reload(m, NULL, NULL, 0), 0, "reload");
  send_str(c, req);
  int s2 = target_accept(m, lfd, 1000);
  is_int(FA.checks, 3, "after a reload a verified credential is checked again");
  ok(s2 >= 0 && FC.opens == opens + 1,
     "and the connector is asked again (a new upstream)");
  wait_message(m, s2, t, 0, 1000);
  send_str(s2, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "allowed again");
  close(s2);
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
    ph_mock_run_for(m, 10);
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

  const char *mt = ph_mock_metrics_text(m);
  like(mt, "tunnelmesh_stream_stage_duration_seconds_count{component="
           "\"client\",stage=\"authorization\",result=\"rejected\",scope=\"local\"} 2",
       "authorization stage measured");
  unlike(mt, "alice", "no user name in metrics");
  close(lfd);
  is_int(ph_mock_stop(m), 0, "stops");
  ph_mock_free(m);
  char *log = file_test_slurp(logpath);
  unlike(log, "secret", "the password never reaches the log");
  unlike(log, "YWxpY2U6c2VjcmV0", "nor the encoded credentials");
  like(log, "user=alice", "the authenticated user is in the access line");
  free(log);
  free(b);
  free(t);
}

/* ---- issue 7: hostile peers ------------------------------------------------ */

/* Sends req on c, answers it from the target with answer (accepting a new
 * upstream when *s < 0), and reads what the client gets into b. */
static void answer_with(ph_mock *m, int c, int lfd, int *s, const char *req,
                        const char *answer, rbuf *b, rbuf *t) {
  send_str(c, req);
  if (*s < 0)
    *s = target_accept(m, lfd, 1000);
  wait_message(m, *s, t, 0, 1000);
  send_str(*s, answer);
  wait_message(m, c, b, 1, 1000);
}

/* A request that works, on a new connection: the proxy is still serving. */
static int still_serves(ph_mock *m, int lfd, uint16_t tport, rbuf *b,
                        rbuf *t) {
  char req[256];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/ok HTTP/1.1\r\n\r\n",
           tport);
  int c = proxy_conn(), s = -1;
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b, t);
  int good = strncmp(b->data, "HTTP/1.1 200 ", 13) == 0 &&
             strstr(b->data, "\r\n\r\nok") != NULL;
  close(c);
  if (s >= 0)
    close(s);
  return good;
}

/* D1: malformed heads after interim responses. The client has read an
 * interim head already, so only closing can tell it; the proxy must not
 * touch the closed connection (the use-after-free ASan found). */
static void test_bad_interim(ph_mock *m, int lfd, uint16_t tport, rbuf *b,
                             rbuf *t) {
  const char *answers[] = {
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2OO OK\r\nContent-Length: 2\r\n"
      "\r\nok",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
      "\r\nok",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n"
      "Upgrade: x\r\n\r\n",
  };
  const char *names[] = {"100 then a malformed status line",
                         "nine 100 Continue heads", "100 then 101"};
  char req[256], name[160];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/d1 HTTP/1.1\r\n\r\n",
           tport);
  for (size_t i = 0; i < 3; i++) {
    int c = proxy_conn(), s = -1;
    send_str(c, req);
    s = target_accept(m, lfd, 1000);
    wait_message(m, s, t, 0, 1000);
    send_str(s, answers[i]);
    snprintf(name, sizeof(name), "D1: %s: the client connection closes",
             names[i]);
    ok(closed_by_peer(m, c, 2000), name);
    snprintf(name, sizeof(name), "D1: %s: and the proxy goes on serving",
             names[i]);
    ok(still_serves(m, lfd, tport, b, t), name);
    close(c);
    close(s);
  }
  /* Before any response byte reached the client, it gets a 502. */
  int c = proxy_conn(), s = -1;
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/d1 HTTP/1.0\r\n\r\n",
           tport);
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2OO OK\r\n\r\n", b, t);
  ok(strncmp(b->data, "HTTP/1.1 502 ", 13) == 0,
     "D1: an HTTP/1.0 client (no interim forwarded) gets 502");
  close(c);
  close(s);
}

/* D2: framing an origin or a client could make two readers take two
 * ways. The proxy refuses it; what it forwards is framed by itself. */
static void test_framing_attacks(ph_mock *m, int lfd, uint16_t tport,
                                 rbuf *b, rbuf *t) {
  char req[512];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/a HTTP/1.1\r\n\r\n",
           tport);
  struct {
    const char *body, *name;
  } bad[] = {
      {"c;\nxxxxx\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: injected=1\r\n"
       "Content-Length: 2\r\n\r\nhi",
       "a size line ended by a bare LF (the response-injection attack)"},
      {"5\r\nhelloXY0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: injected=1\r\n\r\n",
       "chunk data not followed by CRLF"},
      {"5\rX\r\nhello\r\n0\r\n\r\n", "a bare CR in a size line"},
      {"5 \r\nhello\r\n0\r\n\r\n", "a space after the size"},
      {"5;a=b\nc\r\nhello\r\n0\r\n\r\n", "a bare LF in an extension"},
      {"5\r\nhello\r\n0\r\nX: 1\n\r\n", "a bare LF in a trailer"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char answer[512], name[160];
    snprintf(answer, sizeof(answer),
             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%s",
             bad[i].body);
    int c = proxy_conn(), s = -1;
    answer_with(m, c, lfd, &s, req, answer, b, t);
    snprintf(name, sizeof(name), "D2: %s: 502", bad[i].name);
    ok(strncmp(b->data, "HTTP/1.1 502 ", 13) == 0, name);
    snprintf(name, sizeof(name), "D2: %s: nothing of it reaches the client",
             bad[i].name);
    ok(!strstr(b->data, "injected") && !strstr(b->data, "hello"), name);
    close(c);
    close(s);
  }

  /* The same, once the head and a good chunk went to the client: the
   * client connection closes without a last chunk, so the client knows. */
  int c = proxy_conn(), s = -1;
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n",
              b, t);
  send_str(s, "3\r\nabcXY0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: injected=1"
              "\r\nContent-Length: 0\r\n\r\n");
  ok(closed_by_peer(m, c, 2000), "D2: bad framing mid-body: the client "
                                 "connection closes");
  ok(!strstr(b->data, "XY") && !strstr(b->data, "0\r\n\r\n"),
     "without the bad bytes or a last chunk");
  close(c);
  close(s);

  /* A good chunked response with extensions and trailers: framed anew,
   * the extensions and trailers dropped. */
  c = proxy_conn();
  s = -1;
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5;name=\"a;b\";x\r\nhello\r\n06\r\n world\r\n0;end\r\n"
              "X-Sum: 1\r\n\r\n",
              b, t);
  like(b->data, "\r\n\r\nb\r\nhello world\r\n0\r\n\r\n",
       "D2: a valid chunked body with extensions and a trailer, framed again "
       "(one chunk for what arrived together)");
  unlike(b->data, "X-Sum", "the trailer is not forwarded");
  close(c);
  close(s);

  /* A chunked response to an HTTP/1.0 client: the payload, then the
   * close, no chunked framing. */
  c = proxy_conn();
  s = -1;
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/old HTTP/1.0\r\n\r\n",
           tport);
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\nhello\r\n0\r\n\r\n",
              b, t);
  if (!b->eof)
    wait_message(m, c, b, 1, 1000);
  unlike(b->data, "Transfer-Encoding", "D2: an HTTP/1.0 client never gets "
                                       "chunked framing");
  like(b->data, "Connection: close\r\n\r\nhello", "but the payload");
  ok(b->eof, "framed by the close");
  close(c);
  close(s);

  /* Requests. */
  int opens = FC.opens;
  struct {
    const char *head_rest, *status, *name;
  } rq[] = {
      {"Transfer-Encoding: chunked\r\n\r\n52;\nGET /smuggled HTTP/1.1\r\n"
       "Host: x\r\n\r\n",
       "400", "a chunk size line ended by a bare LF (smuggling)"},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello", "400",
       "Transfer-Encoding with Content-Length"},
      {"Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", "501",
       "Transfer-Encoding: identity, chunked"},
  };
  for (size_t i = 0; i < sizeof(rq) / sizeof(rq[0]); i++) {
    char name[160];
    c = proxy_conn();
    snprintf(req, sizeof(req), "POST http://127.0.0.1:%u/s HTTP/1.1\r\n%s",
             tport, rq[i].head_rest);
    send_str(c, req);
    wait_message(m, c, b, 1, 1000);
    snprintf(name, sizeof(name), "D2: %s: %s", rq[i].name, rq[i].status);
    ok(strncmp(b->data + 9, rq[i].status, 3) == 0, name);
    s = target_accept(m, lfd, 200);
    if (s >= 0) {
      wait_message(m, s, t, 0, 300);
      snprintf(name, sizeof(name), "D2: %s: nothing smuggled upstream",
               rq[i].name);
      unlike(t->data, "smuggled", name);
      close(s);
    }
    close(c);
  }
  c = proxy_conn();
  snprintf(req, sizeof(req),
           "POST http://127.0.0.1:%u/s HTTP/1.0\r\n"
           "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
           tport);
  send_str(c, req);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 400 ", 13) == 0,
     "D2: HTTP/1.0 with Transfer-Encoding: 400 (RFC 9112 6.1)");
  close(c);
  is_int(FC.opens, opens + 1,
         "only the bare-LF body reached an open (refused before sending)");
}

/* D3: a reload that tightens the policy reaches kept upstreams: the next
 * request on a kept connection asks the connector again. */
static void test_reload_kept(ph_mock *m, int lfd, uint16_t tport, rbuf *b,
                             rbuf *t) {
  char req[256];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/k HTTP/1.1\r\n\r\n",
           tport);
  const char *answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nk1";
  int c = proxy_conn(), s = -1;
  answer_with(m, c, lfd, &s, req, answer, b, t);
  int opens = FC.opens;
  answer_with(m, c, lfd, &s, req, answer, b, t);
  is_int(FC.opens, opens, "D3: without a reload the upstream is reused");
  is_int(ph_mock_reload(m, NULL, NULL, 0), 0, "reload");
  int s2 = -1;
  answer_with(m, c, lfd, &s2, req, answer, b, t);
  ok(s2 >= 0 && FC.opens == opens + 1,
     "D3: after a reload the connector is asked again (its policy applies)");
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "and the request is served");
  ok(closed_by_peer(m, s, 500), "the old upstream is closed");
  close(c);
  close(s);
  close(s2);
}

/* D4: a client that filled its buffer during an open and then left is
 * noticed though it is not read: the open is cancelled and its slot
 * freed (TM-SEC-7, TM-P0-5). */
static void test_leave_full(ph_mock *m) {
  int cancels = FC.cancels;
  int c = proxy_conn();
  send_str(c, "POST http://hang.test/ HTTP/1.1\r\nContent-Length: 100000\r\n"
              "\r\n");
  char *body = repeat('b', 30000);
  send_str(c, body);
  free(body);
  ph_mock_run_for(m, 50);
  close(c);
  int waited = 0;
  while (FC.cancels == cancels && waited < 2000) {
    ph_mock_run_for(m, 10);
    waited += 10;
  }
  ok(FC.cancels == cancels + 1,
     "D4: a client leaving with a full buffer during an open cancels it "
     "(TM-SEC-7)");
  like(ph_mock_metrics_text(m), "\nproxyhost_http_proxy_clients 0\n",
       "and its slot is free");
}

static void test_hostile_peers(void) {
  /* buffer_size 4KiB: a client fills it quickly (D4). */
  ph_mock *m = start_proxy("header_timeout = 1s\nbuffer_size = 4KiB\n"
                           "max_request_line = 256\nmax_header_bytes = 1KiB\n",
                           0, 0);
  ok(m != NULL, "starts for the hostile-peer tests");
  if (!m)
    return;
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  test_bad_interim(m, lfd, tport, b, t);
  test_framing_attacks(m, lfd, tport, b, t);
  test_reload_kept(m, lfd, tport, b, t);
  test_leave_full(m);

  /* D5: half a request head does not hold the stop up. */
  int c = proxy_conn();
  send_str(c, "GET http://ok.te");
  ph_mock_run_for(m, 50);
  is_int(ph_mock_stop(m), 0, "D5: half a head does not delay the stop");
  ok(closed_by_peer(m, c, 500), "that client is closed");
  close(c);
  ph_mock_free(m);
  close(lfd);
  free(b);
  free(t);
}

/* Answers inside the call that asked (the guard rule under reentrancy):
 * the dispatcher runs the answer at once, nested, and the phase that
 * asked leaves the connection as the answer left it. Run under ASan. */
static void test_inside_answers(void) {
  ph_mock *m = start_proxy("auth = password\n", 1, 0);
  ok(m != NULL, "starts for the answers inside the call");
  if (!m)
    return;
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char req[512];
  const char *now_ok = "Proxy-Authorization: Basic bm93OnNlY3JldA==\r\n";

  /* A check and an open both answered inside: CONNECT, then the tunnel. */
  int cancels = FC.cancels;
  int c = proxy_conn();
  snprintf(req, sizeof(req),
           "CONNECT inside-ok.test:%u HTTP/1.1\r\n%s\r\nhello", tport,
           now_ok);
  send_str(c, req);
  int s = target_accept(m, lfd, 1000);
  ok(s >= 0, "inside: the open reached the target");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "inside: CONNECT gets 200");
  wait_message(m, s, t, 0, 300);
  like(t->data, "hello", "inside: the bytes after the head go first");
  send_str(s, "back");
  wait_message(m, c, b, 0, 300);
  like(b->data, "back", "inside: and the tunnel carries bytes down");
  close(s);
  close(c);
  ph_mock_run_for(m, 50);

  /* A forward on a check and an open answered inside. */
  c = proxy_conn();
  snprintf(req, sizeof(req),
           "GET http://inside-ok.test:%u/x HTTP/1.1\r\n%s\r\n", tport,
           now_ok);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  ok(s >= 0, "inside: the forward reached the target");
  wait_message(m, s, t, 0, 1000);
  like(t->data, "GET /x HTTP/1.1\r\n", "inside: the request went up");
  send_str(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 OK", 15) == 0 &&
         strstr(b->data, "\r\n\r\nok"),
     "inside: the response came down");
  close(s);

  /* A refusal answered inside, on the same connection: mapped, closed. */
  snprintf(req, sizeof(req),
           "GET http://inside-refused.test:%u/ HTTP/1.1\r\n%s\r\n", tport,
           now_ok);
  send_str(c, req);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 502 ", 13) == 0,
     "inside: a refused open answered inside gets 502");
  ok(closed_by_peer(m, c, 3000), "inside: and the connection closes");
  close(c);
  is_int(FC.cancels, cancels, "inside: no stale open id was cancelled");

  /* A denial answered inside check_password: 407, kept alive. */
  c = proxy_conn();
  send_str(c, "GET http://ok.test/ HTTP/1.1\r\n"
              "Proxy-Authorization: Basic bm93Ondyb25n\r\n\r\n");
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 407 ", 13) == 0,
     "inside: a denial answered inside gets 407");
  like(b->data, "Connection: keep-alive", "inside: and the connection stays");
  close(c);
  ph_mock_run_for(m, 50);
  like(ph_mock_metrics_text(m), "\nproxyhost_http_proxy_clients 0\n",
       "inside: every connection ended");
  ph_mock_stop(m);
  ph_mock_free(m);
  close(lfd);
  free(b);
  free(t);
}

/* Leases (connector.h minor 3). */
static void test_leases(void) {
  memset(&FC.lease, 0, sizeof(FC.lease));
  ph_mock *m = start_proxy("", 0, 0);
  ok(m != NULL, "lease: starts");
  if (!m)
    return;
  uint16_t tport;
  int lfd = target_listen(&tport);
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char req[512];
  const char *ok2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

  /* The request: the listener, the head's fields. */
  int c = proxy_conn(), s = -1;
  snprintf(req, sizeof(req),
           "GET http://127.0.0.1:%u/a HTTP/1.1\r\nX-Session:   abc  \r\n"
           "x-session: second\r\n"
           "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n",
           tport);
  answer_with(m, c, lfd, &s, req, ok2, b, t);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "lease: served");
  is_str(FC.last.listener, "http_proxy", "lease: the listener is http_proxy");
  is_str(FC.last.session, "[abc]",
         "lease: the first X-Session field, without its whitespace");
  is_int(FC.last.saw_proxy_authz, 0,
         "lease: Proxy-Authorization is never offered");
  is_int(FC.lease.n, 1, "lease: the open gave one");
  is_int(FC.lease.first_bytes, 1,
         "lease: first_byte once the response head went");
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/b HTTP/1.1\r\n\r\n",
           tport);
  answer_with(m, c, lfd, &s, req, ok2, b, t);
  ok(FC.lease.n == 1 && FC.lease.first_bytes == 1 &&
         fake_lease_live(&FC.lease) == 1,
     "lease: a second request on the kept upstream: the same lease, no "
     "second first_byte");
  close(c);
  ok(closed_by_peer(m, s, 1000), "lease: the client left: upstream closed");
  ok(FC.lease.ends[PH_LEASE_END_CLOSED] == 1 && fake_lease_live(&FC.lease) == 0,
     "lease: one end for both requests, CLOSED");
  close(s);

  /* A kept upstream the origin drops as it is reused: it ends CLOSED,
   * the retry gets a lease of its own. */
  c = proxy_conn();
  s = -1;
  answer_with(m, c, lfd, &s, req, ok2, b, t);
  send_str(c, req);
  wait_message(m, s, t, 0, 1000);
  close(s);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  send_str(s, ok2);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "lease: the retry served");
  ok(FC.lease.n == 3 && FC.lease.ends[PH_LEASE_END_CLOSED] == 2 &&
         fake_lease_live(&FC.lease) == 1,
     "lease: the dropped kept upstream ended CLOSED, the retry has its own");
  is_int(FC.lease.first_bytes, 3, "lease: first_byte once per upstream");
  close(c);
  closed_by_peer(m, s, 1000);
  close(s);

  /* A response that cannot be read one way only: 502, TARGET_ERROR. */
  c = proxy_conn();
  s = -1;
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
              "Content-Length: 2\r\n\r\nok",
              b, t);
  ok(strncmp(b->data, "HTTP/1.1 502 ", 13) == 0, "lease: ambiguous: 502");
  ok(closed_by_peer(m, s, 1000) &&
         FC.lease.ends[PH_LEASE_END_TARGET_ERROR] == 1,
     "lease: an unreadable response ends it TARGET_ERROR");
  is_int(FC.lease.first_bytes, 3,
         "lease: no first_byte: nothing of it reached "
         "the client");
  close(c);
  close(s);

  /* A request body that cannot be read: 400, CLIENT_ERROR. */
  c = proxy_conn();
  snprintf(req, sizeof(req),
           "POST http://127.0.0.1:%u/p HTTP/1.1\r\n"
           "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
           tport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, c, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 400 ", 13) == 0, "lease: bad chunked: 400");
  ok(closed_by_peer(m, s, 1000) &&
         FC.lease.ends[PH_LEASE_END_CLIENT_ERROR] == 1,
     "lease: a malformed request body ends it CLIENT_ERROR");
  close(c);
  close(s);

  /* At destroy: an exchange in progress, a CONNECT tunnel and a kept
   * idle upstream. */
  int ends_before = FC.lease.ends[PH_LEASE_END_CLIENT_ERROR];
  int busy = proxy_conn(), sb;
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/w HTTP/1.1\r\n\r\n",
           tport);
  send_str(busy, req);
  sb = target_accept(m, lfd, 1000);
  wait_message(m, sb, t, 0, 1000); /* read, never answered */
  int tun = proxy_conn(), st;
  snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", tport);
  send_str(tun, req);
  st = target_accept(m, lfd, 1000);
  wait_message(m, tun, b, 1, 1000);
  ok(strncmp(b->data, "HTTP/1.1 200 ", 13) == 0, "lease: CONNECT: 200");
  send_str(st, "down");
  wait_message(m, tun, b, 0, 300);
  int idle = proxy_conn(), si = -1;
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/i HTTP/1.1\r\n\r\n",
           tport);
  answer_with(m, idle, lfd, &si, req, ok2, b, t);
  int given = FC.lease.n, closed_before = FC.lease.ends[PH_LEASE_END_CLOSED];
  is_int(fake_lease_live(&FC.lease), 3, "lease: three live before the destroy");
  is_int(FC.lease.first_bytes, 5,
         "lease: the tunnel's first byte down told it");
  ph_mock_free(m);
  ok(FC.lease.ends[PH_LEASE_END_CLIENT_ERROR] == ends_before + 2 &&
         FC.lease.ends[PH_LEASE_END_CLOSED] == closed_before + 1,
     "lease: destroy ends the exchange and the tunnel CLIENT_ERROR, the "
     "kept one CLOSED");
  ok(fake_lease_live(&FC.lease) == 0 && FC.lease.n == given,
     "lease: none left, none new");
  is_int(FC.lease.broken, 0, "lease: never a second end or a late first_byte");
  close(busy);
  close(sb);
  close(tun);
  close(st);
  close(idle);
  close(si);
  close(lfd);
  free(b);
  free(t);
}

/* ---- an upstream HTTP forward proxy (issue 13) ------------------------- */

static int starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

#define UP_AUTH "Basic dXA6dXAtU2VjcmV0LTQy" /* the connector's value */

static void test_via_proxy(void) {
  memset(&FC.lease, 0, sizeof(FC.lease));
  ph_mock *m = start_proxy("", 0, 0);
  ok(m != NULL, "via proxy: starts");
  if (!m)
    return;
  uint16_t pport;
  int lfd = target_listen(&pport); /* the test plays the forward proxy */
  fc.as_proxy = 1;
  fc.upstream_port = pport;
  fc.proxy_auth = UP_AUTH;
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  const char *ok5 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

  int c = proxy_conn(), s = -1;
  answer_with(m, c, lfd, &s,
              "GET http://www.example.test:8080/a/b?x=1 HTTP/1.1\r\n"
              "Host: wrong\r\nProxy-Authorization: Basic Y2xpZW50OnB3\r\n"
              "Connection: X-Trace\r\nX-Trace: 1\r\nUser-Agent: unit\r\n\r\n",
              ok5, b, t);
  ok(fc.forward, "via proxy: a forwarded request's open asks "
                 "PH_OPEN_F_HTTP_FORWARD");
  ok(starts(t->data, "GET http://www.example.test:8080/a/b?x=1 HTTP/1.1\r\n"
                     "Host: www.example.test:8080\r\n"),
     "via proxy: the request line in absolute form, the Host from the "
     "target");
  like(t->data, "\r\nProxy-Authorization: " UP_AUTH "\r\n\r\n",
       "via proxy: the connector's Proxy-Authorization, last");
  is_int(count_of(t->data, "Proxy-Authorization"), 1,
         "via proxy: one Proxy-Authorization field");
  unlike(t->data, "Y2xpZW50OnB3", "via proxy: never the client's own");
  unlike(t->data, "wrong", "via proxy: the client's Host is dropped");
  unlike(t->data, "X-Trace", "via proxy: a Connection-listed header removed");
  like(t->data, "User-Agent: unit\r\n", "via proxy: end-to-end headers kept");
  like(t->data, "Via: 1.1 proxyhost\r\n", "via proxy: Via as always");
  ok(starts(b->data, "HTTP/1.1 200 OK\r\n") && strstr(b->data, "\r\n\r\nhello"),
     "via proxy: the client gets the response");
  is_int(FC.lease.first_bytes, 1, "via proxy: the lease heard first_byte");

  /* The same target: the kept connection, absolute form again, a body
   * framed again. */
  int opens = FC.opens;
  answer_with(m, c, lfd, &s,
              "POST http://www.example.test:8080/up HTTP/1.1\r\n"
              "Transfer-Encoding: chunked\r\n\r\n"
              "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n",
              ok5, b, t);
  is_int(FC.opens, opens,
         "via proxy: keep-alive reuses the connection for "
         "the same host:port");
  ok(starts(t->data, "POST http://www.example.test:8080/up HTTP/1.1\r\n") &&
         strstr(t->data, "\r\nProxy-Authorization: " UP_AUTH "\r\n"),
     "via proxy: the kept connection's request in absolute form, with the "
     "value");
  like(t->data, "\r\n\r\n9\r\nwikipedia\r\n0\r\n\r\n",
       "via proxy: the body framed again");
  ok(starts(b->data, "HTTP/1.1 200 "), "via proxy: answered");

  /* OPTIONS without a path: the authority alone (RFC 9112 3.2.4). */
  answer_with(m, c, lfd, &s,
              "OPTIONS http://www.example.test:8080 HTTP/1.1\r\n\r\n", ok5,
              b, t);
  ok(starts(t->data, "OPTIONS http://www.example.test:8080 HTTP/1.1\r\n"),
     "via proxy: OPTIONS without a path stays without one (not '*')");

  /* Another target (an IPv6 literal, port 80): a new open; the kept
   * connection, not its target's, is closed. */
  answer_with(m, c, lfd, &s, "GET http://[::1]/v6 HTTP/1.1\r\n\r\n", ok5, b,
              t);
  ok(t->len == 0, "via proxy: another target does not reuse the kept "
                  "connection");
  ok(closed_by_peer(m, s, 1000), "via proxy: ... which is closed");
  close(s);
  s = target_accept(m, lfd, 1000);
  wait_message(m, s, t, 0, 1000);
  send_str(s, ok5);
  wait_message(m, c, b, 1, 1000);
  is_int(FC.opens, opens + 1, "via proxy: a new open for [::1]:80");
  ok(starts(t->data, "GET http://[::1]/v6 HTTP/1.1\r\nHost: [::1]\r\n"),
     "via proxy: an IPv6 literal in brackets, port 80 left out");
  ok(starts(b->data, "HTTP/1.1 200 "), "via proxy: answered");
  ok(FC.lease.ends[PH_LEASE_END_CLOSED] == 1,
     "via proxy: the first lease ended "
     "CLOSED");
  close(c);
  closed_by_peer(m, s, 1000);
  close(s);

  /* The proxy refuses the connector's credentials: a 502 for the client,
   * not the 407 (nor its challenge), and the lease ends TARGET_ERROR with
   * no first_byte. */
  int first = FC.lease.first_bytes,
      terr = FC.lease.ends[PH_LEASE_END_TARGET_ERROR];
  c = proxy_conn();
  s = -1;
  answer_with(m, c, lfd, &s, "GET http://www.example.test/ HTTP/1.1\r\n\r\n",
              "HTTP/1.1 407 Proxy Authentication Required\r\n"
              "Proxy-Authenticate: Basic realm=\"up\"\r\n"
              "Content-Length: 0\r\n\r\n",
              b, t);
  ok(starts(b->data, "HTTP/1.1 502 "), "via proxy: the proxy's 407: 502");
  unlike(b->data, "Proxy-Authenticate", "via proxy: ... without its challenge");
  ok(closed_by_peer(m, s, 1000) &&
         FC.lease.ends[PH_LEASE_END_TARGET_ERROR] == terr + 1,
     "via proxy: ... the upstream closed, the lease ended TARGET_ERROR");
  is_int(FC.lease.first_bytes, first, "via proxy: ... and no first_byte");
  close(c);
  close(s);

  /* A 407 from an origin behind a tunnel (no flag) is the client's. */
  fc.as_proxy = 0;
  c = proxy_conn();
  s = -1;
  char req[256];
  snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/o HTTP/1.1\r\n\r\n",
           pport);
  answer_with(m, c, lfd, &s, req,
              "HTTP/1.1 407 Proxy Authentication Required\r\n"
              "Content-Length: 0\r\n\r\n",
              b, t);
  ok(starts(b->data, "HTTP/1.1 407 ") && starts(t->data, "GET /o HTTP/1.1\r\n"),
     "not via a proxy: origin-form, and a 407 is passed on");
  close(c);
  closed_by_peer(m, s, 1000);
  close(s);
  fc.as_proxy = 1;

  /* An HTTP proxy that takes no credentials: no field at all. */
  fc.proxy_auth = NULL;
  c = proxy_conn();
  s = -1;
  answer_with(m, c, lfd, &s, "GET http://www.example.test/n HTTP/1.1\r\n\r\n",
              ok5, b, t);
  ok(starts(t->data, "GET http://www.example.test/n HTTP/1.1\r\n") &&
         !strstr(t->data, "Proxy-Authorization"),
     "via proxy: no value given: absolute form without Proxy-Authorization");
  close(c);
  closed_by_peer(m, s, 1000);
  close(s);

  /* A value that could end its line: refused, nothing sent. */
  fc.proxy_auth = "Basic x\r\nX-Evil: 1";
  int cerr = FC.lease.ends[PH_LEASE_END_CLIENT_ERROR];
  c = proxy_conn();
  send_str(c, "GET http://www.example.test/e HTTP/1.1\r\n\r\n");
  s = target_accept(m, lfd, 1000);
  wait_message(m, c, b, 1, 1000);
  ok(starts(b->data, "HTTP/1.1 502 "), "via proxy: a value with CR LF: 502");
  wait_message(m, s, t, 0, 300);
  ok(t->len == 0 && t->eof &&
         FC.lease.ends[PH_LEASE_END_CLIENT_ERROR] == cerr + 1,
     "via proxy: ... nothing sent, the upstream closed and its lease ended");
  close(c);
  close(s);
  fc.proxy_auth = UP_AUTH;

  /* CONNECT never asks; a connector that says "HTTP proxy" to it anyway
   * gets no tunnel through that socket. */
  c = proxy_conn();
  snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", pport);
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, c, b, 1, 1000);
  ok(!fc.forward && starts(b->data, "HTTP/1.1 200 "),
     "via proxy: CONNECT does not ask PH_OPEN_F_HTTP_FORWARD: a tunnel");
  close(c);
  closed_by_peer(m, s, 1000);
  close(s);
  fc.flag_always = 1;
  c = proxy_conn();
  send_str(c, req);
  s = target_accept(m, lfd, 1000);
  wait_message(m, c, b, 1, 1000);
  ok(starts(b->data, "HTTP/1.1 502 "),
     "via proxy: PH_OPEN_R_HTTP_PROXY to a CONNECT (a connector's bug): 502");
  ok(closed_by_peer(m, s, 1000), "via proxy: ... that socket closed");
  close(c);
  close(s);
  fc.flag_always = 0;

  ph_mock_free(m);
  fc.as_proxy = 0;
  fc.proxy_auth = NULL;
  ok(fake_lease_live(&FC.lease) == 0 && FC.lease.broken == 0,
     "via proxy: every lease ended once, none used after");
  char *log = file_test_slurp(logpath);
  like(log, "upstream proxy refused its credentials",
       "via proxy: the debug log says why the 407 became a 502");
  unlike(log, "dXA6dXAtU2VjcmV0LTQy",
         "via proxy: the connector's credential is never logged");
  free(log);
  close(lfd);
  free(b);
  free(t);
}

int main(void) {
  plan_lazy();
  char so[512];
  snprintf(so, sizeof(so), "%s/http_proxy/.libs/http_proxy.so",
           PH_BUILD_MODULES);
  struct stat st;
  if (stat(so, &st) != 0) {
    printf("ok %d - # SKIP the http_proxy module was not built\n", ++tap_n_);
    return done_testing();
  }
  err[0] = '\0';
  snprintf(logpath, sizeof(logpath), "/tmp/test_http_proxy.%d.log",
           (int)getpid());
  test_forwarding();
  test_limits_module();
  test_auth();
  test_hostile_peers();
  test_inside_answers();
  test_leases();
  test_via_proxy();
  unlink(logpath);
  return done_testing();
}

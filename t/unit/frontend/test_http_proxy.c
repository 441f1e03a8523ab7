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
#include "frontend_script.h"
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
  *state = &FC;
  if (fake_connector_serve(&FC, a, ctx, connector_rows) < 0 ||
      listener_test_watch(ctx, a, &fc.proxy_port) != PH_OK)
    return PH_EINVAL;
  FC.prepare = fc_prepare;
  FC.decorate = fc_decorate;
  return PH_OK;
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
  *state = &FA;
  int rc = fake_authorizer_serve(&FA, a, ctx, authorizer_rows);
  FA.max_pending = 1;
  return rc < 0 ? PH_EINVAL : PH_OK;
}

static void fa_destroy(void *state) { fake_authorizer_free(state); }

MOCK_TEST_MODULE(fa_mod, "fake_authorizer", "1.0",
                 .provides = MOCK_TEST_NAMES(PH_AUTHORIZER_SERVICE),
                 .init = fa_init, .destroy = fa_destroy);

/* ---- sockets on the test's side ------------------------------------------------ */

/* What a socket delivered: frontend_script.h's buffer, whose
 * fs_http_whole says when it holds one whole HTTP message. */
typedef fs_rx rbuf;

/* Runs the loop until fd delivered a whole message (or EOF), at most ms. */
static void wait_message(ph_mock *m, int fd, rbuf *b, int response, int ms) {
  b->len = b->pos = 0;
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
    if (b->len > 0 && fs_http_whole(b, response))
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


/* A proxy started with extra and a target listening for it (*lfd,
 * *tport); NULL (not ok name) when it does not start. */
static ph_mock *proxy_case(const char *extra, int with_authorizer,
                           const char *name, int *lfd, uint16_t *tport) {
  ph_mock *m = start_proxy(extra, with_authorizer, 0);
  ok(m != NULL, name);
  *lfd = m ? target_listen(tport) : -1;
  return m;
}

/* Closes the target listener lfd, stops m (a TAP line, name: within
 * the drain deadline), frees it; what it logged (the caller frees it). */
static char *stop_and_log(ph_mock *m, int lfd, const char *name) {
  close(lfd);
  is_int(ph_mock_stop(m), 0, name);
  ph_mock_free(m);
  return file_test_slurp(logpath);
}

/* The driver's state for the next run against m (large: one, not on the
 * stack): the client dials the proxy, the connector dials lfd. */
static fs_ctx *script(ph_mock *m, int lfd, uint16_t tport) {
  static fs_ctx s;
  s.m = m;
  s.port = (uint16_t)fc.proxy_port;
  s.fc = &FC;
  s.target_l = lfd;
  s.target_port = tport;
  return &s;
}

/* What a kept client connection and its upstream carry, in order. */
static const fs_row keepalive_rows[] = {
    FS_CONNECT(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/a?b=1 HTTP/1.1\r\nHost: wrong\r\n"
                "Proxy-Connection: keep-alive\r\nConnection: X-Trace\r\n"
                "X-Trace: 1\r\nUser-Agent: unit\r\n\r\n"),
    FS_ACCEPT("the connector's connection reached the target"),
    FS_T_MSG(),
    FS_T_STARTS("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:$TPORT\r\n",
                "the origin gets origin-form with the target's Host first"),
    FS_T_LACKS("wrong", "the client's Host is dropped"),
    FS_T_LACKS("Proxy-Connection", "Proxy-Connection removed"),
    FS_T_LACKS("X-Trace", "a Connection-listed header removed"),
    FS_T_HAS("User-Agent: unit\r\n", "end-to-end headers kept"),
    FS_LAST_HOST("127.0.0.1", "the connector got the target host"),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                  "Keep-Alive: timeout=5\r\nConnection: keep-alive\r\n\r\nhello"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 OK\r\n", "client gets 200"),
    FS_HAS("\r\n\r\nhello", "and the body"),
    FS_LACKS("Keep-Alive", "hop-by-hop response header removed"),
    FS_LACKS("Connection: close", "the connection stays open"),

    /* Same client connection, same origin: no new open. */
    FS_SEND_STR("POST http://127.0.0.1:$TPORT/up HTTP/1.1\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
                "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n"),
    FS_T_MSG(),
    FS_OPENS(1, "keep-alive: the upstream connection is reused"),
    FS_T_HAS("Transfer-Encoding: chunked\r\n", "a chunked request stays chunked"),
    FS_T_HAS("\r\n\r\n9\r\nwikipedia\r\n0\r\n\r\n",
             "and its body arrives framed again by the proxy (one chunk)"),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabc\r\n0\r\n\r\n"),
    FS_MSG(),
    FS_HAS("Transfer-Encoding: chunked\r\n", "chunked response head"),
    FS_HAS("\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "chunked response body, framed again"),

    /* Pipelined requests are answered in order, one at a time. */
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/p1 HTTP/1.1\r\n\r\n"
                "GET http://127.0.0.1:$TPORT/p2 HTTP/1.1\r\n\r\n"),
    FS_T_MSG(),
    FS_T_STARTS("GET /p1 ", "pipelined: the first request alone goes upstream"),
    FS_T_LACKS("/p2", "(and not the second yet)"),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\np1"),
    FS_T_MSG(),
    FS_T_STARTS("GET /p2 ", "then the second"),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\np2"),
    FS_MSG(),
    FS_HAS("\r\n\r\np1", "first answer"),
    FS_UNTIL("p2", "second answer"),
    FS_OPENS(1, "on the same upstream connection"),

    /* The origin closes a kept connection: the next request still works,
     * on a new one. */
    FS_T_CLOSE(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/again HTTP/1.1\r\n\r\n"),
    FS_ACCEPT("a closed kept upstream is replaced"),
    FS_T_MSG(),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"),
    FS_MSG(),
    FS_HAS("\r\n\r\nagain", "and answers"),
    FS_OPENS(2, "through a second open"),

    /* The origin drops a kept connection after reading a request, without
     * answering (its idle timer raced ours): a request without a body is
     * sent again, once, on a new connection. */
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/retry HTTP/1.1\r\n\r\n"),
    FS_T_MSG(),
    FS_T_STARTS("GET /retry ", "the kept upstream got it"),
    FS_T_CLOSE(),
    FS_ACCEPT("dropped unanswered: a new connection"),
    FS_T_MSG(),
    FS_T_STARTS("GET /retry ", "carries the same request"),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nretry"),
    FS_MSG(),
    FS_HAS("\r\n\r\nretry", "and the client gets the answer"),
    FS_OPENS(3, "after one more open"),

    /* A response framed by close reaches an HTTP/1.1 client chunked: its
     * connection stays open. */
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/eof HTTP/1.1\r\n\r\n"),
    FS_T_MSG(),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\n\r\nuntil-close"),
    FS_RUN(20),
    FS_T_CLOSE(),
    FS_MSG(),
    FS_HAS("Transfer-Encoding: chunked\r\n",
           "close-framed: chunked for an HTTP/1.1 client"),
    FS_HAS("\r\n\r\nb\r\nuntil-close\r\n0\r\n\r\n",
           "the body until the origin closed, then the last chunk"),
    FS_OPEN("and the client connection stays open"),

    /* HTTP/1.0 client without keep-alive: answered and closed. */
    FS_CONNECT(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/old HTTP/1.0\r\n\r\n"),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_HAS("GET /old HTTP/1.1\r\n",
             "HTTP/1.0 forwarded with the proxy's version (RFC 9110 6.2)"),
    FS_T_SEND_STR("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    FS_MSG(),
    FS_HAS("Connection: close\r\n", "HTTP/1.0 client told close"),
    FS_CLOSED("and the connection closes"),
    FS_T_CLOSE(),

    /* HEAD: a Content-Length but no body. */
    FS_CONNECT(),
    FS_SEND_STR("HEAD http://127.0.0.1:$TPORT/h HTTP/1.1\r\n\r\n"),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
    FS_RUN(30),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/after HTTP/1.1\r\n\r\n"),
    FS_T_MSG(),
    FS_T_HAS("GET /after", "after a HEAD response the next request flows"),
    FS_T_SEND_STR("HTTP/1.1 204 No Content\r\n\r\n"),
    FS_MSG(),
    FS_HAS("HTTP/1.1 204", "and its response too"),
    FS_T_CLOSE(),
    FS_END};

/* Upstream misbehaviour: 502 before any byte went to the client, a
 * closed connection after; CONNECT; a client leaving during its open. */
static const fs_row upstream_rows[] = {
#define BAD_UPSTREAM(answer, n)                                                \
  FS_CONNECT(), FS_SEND_STR("GET http://127.0.0.1:$TPORT/bad HTTP/1.1\r\n\r\n"), \
      FS_ACCEPT(NULL), FS_T_MSG(), FS_T_SEND_STR(answer), FS_MSG(),            \
      FS_STARTS("HTTP/1.1 502 ", "bad upstream response " #n ": 502"),        \
      FS_T_CLOSE()
    BAD_UPSTREAM("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n"
                 "Connection: upgrade\r\n\r\n",
                 1),
    BAD_UPSTREAM("garbage\r\n\r\n", 2),
    BAD_UPSTREAM("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                 "Content-Length: 2\r\n\r\n",
                 3),
    BAD_UPSTREAM("HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", 4),
    BAD_UPSTREAM("HTTP/1.1 200 OK\rX: smuggled\r\n\r\n", 5),
#undef BAD_UPSTREAM
    FS_CONNECT(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/cut HTTP/1.1\r\n\r\n"),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\nzz\r\n"),
    FS_CLOSED("a broken chunked body after the head: the client connection "
              "closes"),

    /* CONNECT: 200 only after the open, then a byte relay; bytes sent
     * right after the head go first. */
    FS_CONNECT(),
    FS_SEND_STR("CONNECT 127.0.0.1:$TPORT HTTP/1.1\r\nHost: x\r\n\r\nEARLY"),
    FS_ACCEPT(NULL),
    FS_EXPECT_LIT("HTTP/1.1 200 Connection established\r\n\r\n",
                  "CONNECT answered 200 once open"),
    FS_T_EXPECT_LIT("EARLY", "pipelined bytes reached the target first"),
    FS_T_SEND_STR("from-target"),
    FS_EXPECT_LIT("from-target", "and the tunnel carries bytes back"),
    FS_CLOSE(),
    FS_T_CLOSED("closing the client ends the tunnel"),
    FS_END};

/* A client that goes away while its open is pending cancels it. */
static const fs_row leave_rows[] = {
    FS_CONNECT(),
    FS_SEND_STR("CONNECT hang.test:443 HTTP/1.1\r\n\r\n"),
    FS_RUN(30),
    FS_CLOSE(),
    FS_RUN(30),
    FS_CANCELS(1, "client gone: the open is cancelled"),
    FS_END};

/* Connector failures: a status, a fixed short body, Connection: close;
 * for a GET and a CONNECT to host. */
static void connector_failure(ph_mock *m, const char *host, const char *line) {
  char get[128], conn[128], name[2][128], body[64];
  snprintf(get, sizeof(get), "GET http://%s/ HTTP/1.1\r\n\r\n", host);
  snprintf(conn, sizeof(conn), "CONNECT %s:443 HTTP/1.1\r\n\r\n", host);
  snprintf(name[0], sizeof(name[0]), "GET %s -> %.12s", host, line + 9);
  snprintf(name[1], sizeof(name[1]), "CONNECT %s -> %.12s", host, line + 9);
  /* The body is the status line's text alone, with a LF. */
  snprintf(body, sizeof(body), "%s", line + 9);
  strcpy(strstr(body, "\r\n"), "\n");
  for (int i = 0; i < 2; i++) {
    const fs_row rows[] = {
        FS_CONNECT(),
        FS_SEND_STR(i ? conn : get),
        FS_MSG(),
        FS_STARTS(line, name[i]),
        FS_HAS("Connection: close\r\n", "  with Connection: close"),
        FS_BODY(body, "  and only the status in the body (no internal detail)"),
        FS_END};
    fs_run(script(m, -1, 0), rows);
  }
}

static void test_forwarding(void) {
  ph_mock *m = start_proxy("header_timeout = 300ms\n", 0, 0);
  ok(m != NULL, "http_proxy starts with a connector");
  if (!m)
    return;
  ok(fc.proxy_port > 0, "the listener announced its address");
  uint16_t tport;
  int lfd = target_listen(&tport);
  fs_run(script(m, lfd, tport), keepalive_rows);
  fs_run(script(m, lfd, tport), upstream_rows);
  connector_failure(m, "refused.test", "HTTP/1.1 502 Bad Gateway\r\n");
  connector_failure(m, "deny.test", "HTTP/1.1 403 Forbidden\r\n");
  connector_failure(m, "timeout.test", "HTTP/1.1 504 Gateway Timeout\r\n");
  connector_failure(m, "full.test", "HTTP/1.1 503 Service Unavailable\r\n");
  fs_run(script(m, lfd, tport), leave_rows);

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

  char *log = stop_and_log(m, lfd, "stops within the drain deadline");
  like(log, "module=http_proxy msg=access stream=", "access log lines");
  like(log, "method=GET status=2xx status_code=200 result=success",
       "with the method, the status and the result");
  like(log, "duration_us=", "with durations in microseconds");
  unlike(log, ".test", "no target at any level without log_target");
  free(log);
}


static void test_limits_module(void) {
  int lfd;
  uint16_t tport;
  ph_mock *m = proxy_case("header_timeout = 300ms\nmax_request_line = 1KiB\n"
                          "max_header_bytes = 2KiB\nmax_headers = 10\n",
                          0, "starts with small limits", &lfd, &tport);
  if (!m)
    return;
  static char long_line[2048], big_header[4096], many[1024];
  char *path = repeat('p', 1100), *v = repeat('v', 2100);
  snprintf(long_line, sizeof(long_line), "GET http://a/%s HTTP/1.1\r\n\r\n",
           path);
  snprintf(big_header, sizeof(big_header),
           "GET http://a/ HTTP/1.1\r\nX: %s\r\n\r\n", v);
  free(path);
  free(v);
  size_t n = (size_t)snprintf(many, sizeof(many), "GET http://a/ HTTP/1.1\r\n");
  for (int i = 0; i < 11; i++)
    n += (size_t)snprintf(many + n, sizeof(many) - n, "X-%d: %d\r\n", i, i);
  snprintf(many + n, sizeof(many) - n, "\r\n");
  const fs_row rows[] = {
      /* A good client, connected first, is served while bad ones are
       * refused on their own connections. */
      FS_C2_CONNECT(),
      FS_C2_SEND_STR("GET http://127.0.0.1:$TPORT/ok HTTP/1.1\r\n\r\n"),
      FS_CONNECT(),
      FS_SEND_STR(long_line),
      FS_MSG(),
      FS_STARTS("HTTP/1.1 414 ", "long request line: 414"),
      FS_CLOSED_WITHIN(3000, "and that connection closes"),
      FS_CONNECT(),
      FS_SEND_STR(big_header),
      FS_MSG(),
      FS_STARTS("HTTP/1.1 431 ", "big header section: 431"),
      FS_CONNECT(),
      FS_SEND_STR(many),
      FS_MSG(),
      FS_STARTS("HTTP/1.1 431 ", "too many headers: 431"),
      FS_CONNECT(),
      FS_SEND_STR("\x16\x03\x01\x02"), /* a TLS hello's start */
      FS_MSG(),
      FS_STARTS("HTTP/1.1 400 ", "garbage: 400"),
      FS_CONNECT(),
      FS_SEND_STR("GET https://a/ HTTP/1.1\r\n\r\n"),
      FS_MSG(),
      FS_STARTS("HTTP/1.1 501 ", "https:// forwarding: 501"),
      FS_ACCEPT(NULL),
      FS_T_MSG(),
      FS_T_HAS("GET /ok HTTP/1.1", "the good client's request went on"),
      FS_T_SEND_STR("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
      FS_C2_MSG(),
      FS_C2_STARTS("HTTP/1.1 200 ",
                   "a good client is served while bad ones are refused"),
      FS_C2_CLOSE(),
      FS_T_CLOSE(),

      FS_CONNECT(),
      FS_SEND_STR("GET http://a/ HTTP/1.1\r\nX-Slow: "),
      FS_MSG_WITHIN(1500),
      FS_STARTS("HTTP/1.1 408 ",
                "a head not finished within header_timeout: 408"),
      FS_CONNECT(),
      FS_MSG_WITHIN(1500),
      FS_STARTS("HTTP/1.1 408 ", "a client that sends nothing gets 408 as well"),
      FS_CLOSED_WITHIN(3000, "and is closed"),

      /* A slow client's head under the limit still works when complete. */
      FS_CONNECT(),
      FS_SEND_STR("GET http://127.0.0.1:"),
      FS_RUN(50),
      FS_SEND_STR("$TPORT/slow HTTP/1.1\r\n\r\n"),
      FS_ACCEPT(NULL),
      FS_T_MSG(),
      FS_T_HAS("GET /slow HTTP/1.1", "a head in two reads is assembled"),
      FS_CLOSE(),
      FS_T_CLOSE(),
      FS_METRIC_IS("proxyhost_http_proxy_requests_total",
                   "method_class=\"forward\",status_class=\"4xx\"", 6,
                   "refused heads counted as 4xx"),
      FS_METRIC_IS("proxyhost_http_proxy_requests_total",
                   "method_class=\"forward\",status_class=\"5xx\"", 1,
                   "and the https:// refusal (501) as 5xx"),
      FS_END};
  fs_run(script(m, lfd, tport), rows);
  close(lfd);
  is_int(ph_mock_stop(m), 0, "stops");
  ph_mock_free(m);
}

static int reload_ok(fs_ctx *s) {
  return ph_mock_reload(s->m, NULL, NULL, 0) == 0;
}

/* alice:secret */
#define ALICE_IN                                                               \
  "GET http://127.0.0.1:$TPORT/in HTTP/1.1\r\n"                                \
  "Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n"
#define OK2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

/* Basic credentials on one kept connection: none, wrong, right, again,
 * after a reload. */
static const fs_row auth_rows[] = {
    FS_CONNECT(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/ HTTP/1.1\r\n\r\n"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 407 ", "no credentials: 407"),
    FS_HAS("Proxy-Authenticate: Basic realm=\"proxyhost\"\r\n",
           "with the Basic challenge"),
    FS_HAS("Connection: keep-alive", "and the connection stays open"),
    FS_OPENS(0, "nothing was opened"),

    /* Wrong password on the same connection. */
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/ HTTP/1.1\r\n"
                "Proxy-Authorization: Basic YWxpY2U6d3Jvbmc=\r\n\r\n"),
    FS_MSG(), /* alice:wrong */
    FS_STARTS("HTTP/1.1 407 ", "bad credentials: 407"),
    FS_COUNTER_IS(&FA.checks, 1, "checked by the authorizer"),

    FS_SEND_STR(ALICE_IN),
    FS_ACCEPT("good credentials: the request goes on"),
    FS_T_MSG(),
    FS_T_LACKS("Proxy-Authorization", "credentials never forwarded"),
    FS_LAST_PRINCIPAL("alice", "the connector gets the principal"),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "and succeeds"),

    FS_SEND_STR(ALICE_IN),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "a second request"),
    FS_COUNTER_IS(&FA.checks, 2, "reuses the verification on the same connection"),

    /* Issue 7 D3: after a reload (the user may be gone) the same value on
     * the same connection is checked again, and the kept upstream is not
     * reused without asking the connector (the old one stays open). */
    FS_CHECK(reload_ok, "reload"),
    FS_SEND_STR(ALICE_IN),
    FS_ACCEPT(NULL),
    FS_COUNTER_IS(&FA.checks, 3,
                  "after a reload a verified credential is checked again"),
    FS_OPENS(2, "and the connector is asked again (a new upstream)"),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "allowed again"),
    FS_END};

/* Refusals that are not the client's credentials being wrong. */
static const fs_row auth_refusal_rows[] = {
    FS_CONNECT(),
    FS_SEND_STR("CONNECT 127.0.0.1:1 HTTP/1.1\r\n"
                "Proxy-Authorization: Basic ZG93bjp4\r\n\r\n"), /* down:x */
    FS_MSG(),
    FS_STARTS("HTTP/1.1 503 ", "authorizer unavailable: 503 (fail closed)"),
    FS_CONNECT(),
    FS_SEND_STR("CONNECT 127.0.0.1:1 HTTP/1.1\r\n"
                "Proxy-Authorization: Bearer abc\r\n\r\n"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 407 ", "not Basic: 407"),
    FS_METRIC_IS("tunnelmesh_stream_stage_duration_seconds_count",
                 "component=\"client\",stage=\"authorization\","
                 "result=\"rejected\",scope=\"local\"",
                 2, "authorization stage measured"),
    FS_END};

static void test_auth(void) {
  ph_mock *m = start_proxy("auth = password\n", 0, 1);
  ok(m == NULL, "auth = password without an authorizer: refused");
  like(err,
       "http_proxy.auth: password needs a module that provides the "
       "\"authorizer\" service",
       "by the module's check, naming the key, before any init");

  int lfd;
  uint16_t tport;
  m = proxy_case("auth = password\n", 1,
                 "auth = password with an authorizer starts", &lfd, &tport);
  if (!m)
    return;
  fs_run(script(m, lfd, tport), auth_rows);
  rbuf *b = calloc(1, sizeof(*b));
  int c;

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

  fs_run(script(m, lfd, tport), auth_refusal_rows);
  const char *mt = ph_mock_metrics_text(m);
  unlike(mt, "alice", "no user name in metrics");
  char *log = stop_and_log(m, lfd, "stops");
  unlike(log, "secret", "the password never reaches the log");
  unlike(log, "YWxpY2U6c2VjcmV0", "nor the encoded credentials");
  like(log, "user=alice", "the authenticated user is in the access line");
  free(log);
  free(b);
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

/* A request that works on a second client: the proxy is still serving
 * (one TAP line, w). */
#define STILL_SERVES(w)                                                        \
  FS_C2_CONNECT(),                                                             \
      FS_C2_SEND_STR("GET http://127.0.0.1:$TPORT/ok HTTP/1.1\r\n\r\n"),       \
      FS_ACCEPT(NULL), FS_T_MSG(), FS_T_SEND_STR(OK2), FS_C2_MSG(),            \
      FS_C2_STARTS("HTTP/1.1 200 ", w), FS_C2_HAS("\r\n\r\nok", NULL),         \
      FS_C2_CLOSE(), FS_T_CLOSE()

/* The target answers a GET of path with answer. */
#define GET_ANSWERED(path, answer)                                             \
  FS_CONNECT(), FS_SEND_STR("GET http://127.0.0.1:$TPORT" path "\r\n\r\n"),    \
      FS_ACCEPT(NULL), FS_T_MSG(), FS_T_SEND_STR(answer)

/* D1: malformed heads after interim responses. The client has read an
 * interim head already, so only closing can tell it; the proxy must not
 * touch the closed connection (the use-after-free ASan found). */
#define BAD_INTERIM(answer, what)                                              \
  GET_ANSWERED("/d1 HTTP/1.1", answer),                                        \
      FS_CLOSED_WITHIN(2000, "D1: " what ": the client connection closes"),    \
      STILL_SERVES("D1: " what ": and the proxy goes on serving")

#define CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

static const fs_row bad_interim_rows[] = {
    BAD_INTERIM(CONTINUE "HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok",
                "100 then a malformed status line"),
    BAD_INTERIM(CONTINUE CONTINUE CONTINUE CONTINUE CONTINUE CONTINUE CONTINUE
                    CONTINUE CONTINUE
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                "nine 100 Continue heads"),
    BAD_INTERIM(CONTINUE "HTTP/1.1 101 Switching Protocols\r\n"
                         "Upgrade: x\r\n\r\n",
                "100 then 101"),
    /* Before any response byte reached the client, it gets a 502. */
    GET_ANSWERED("/d1 HTTP/1.0", CONTINUE "HTTP/1.1 2OO OK\r\n\r\n"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 502 ",
              "D1: an HTTP/1.0 client (no interim forwarded) gets 502"),
    FS_END};

#define CHUNKED_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

/* D2: a chunked body two readers could take two ways: 502, nothing of
 * it to the client. */
#define BAD_CHUNKED(body, what)                                                \
  GET_ANSWERED("/a HTTP/1.1", CHUNKED_HEAD body), FS_MSG(),                    \
      FS_STARTS("HTTP/1.1 502 ", "D2: " what ": 502"),                         \
      FS_LACKS("injected", "D2: " what ": nothing of it reaches the client"),  \
      FS_LACKS("hello", NULL)

/* D2: framing an origin could make two readers take two ways. The proxy
 * refuses it; what it forwards is framed by itself. */
static const fs_row framing_rows[] = {
    BAD_CHUNKED("c;\nxxxxx\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: "
                "injected=1\r\nContent-Length: 2\r\n\r\nhi",
                "a size line ended by a bare LF (the response-injection "
                "attack)"),
    BAD_CHUNKED("5\r\nhelloXY0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: "
                "injected=1\r\n\r\n",
                "chunk data not followed by CRLF"),
    BAD_CHUNKED("5\rX\r\nhello\r\n0\r\n\r\n", "a bare CR in a size line"),
    BAD_CHUNKED("5 \r\nhello\r\n0\r\n\r\n", "a space after the size"),
    BAD_CHUNKED("5;a=b\nc\r\nhello\r\n0\r\n\r\n", "a bare LF in an extension"),
    BAD_CHUNKED("5\r\nhello\r\n0\r\nX: 1\n\r\n", "a bare LF in a trailer"),

    /* The same, once the head and a good chunk went to the client: the
     * client connection closes without a last chunk, so the client
     * knows. */
    GET_ANSWERED("/a HTTP/1.1", CHUNKED_HEAD "5\r\nhello\r\n"),
    FS_MSG(),
    FS_T_SEND_STR("3\r\nabcXY0\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: "
                  "injected=1\r\nContent-Length: 0\r\n\r\n"),
    FS_CLOSED_WITHIN(2000,
                     "D2: bad framing mid-body: the client connection closes"),
    FS_LACKS("XY", "without the bad bytes or a last chunk"),
    FS_LACKS("0\r\n\r\n", NULL),

    /* A good chunked response with extensions and trailers: framed anew,
     * the extensions and trailers dropped. */
    GET_ANSWERED("/a HTTP/1.1", CHUNKED_HEAD "5;name=\"a;b\";x\r\nhello\r\n"
                                             "06\r\n world\r\n0;end\r\n"
                                             "X-Sum: 1\r\n\r\n"),
    FS_MSG(),
    FS_HAS("\r\n\r\nb\r\nhello world\r\n0\r\n\r\n",
           "D2: a valid chunked body with extensions and a trailer, framed "
           "again (one chunk for what arrived together)"),
    FS_LACKS("X-Sum", "the trailer is not forwarded"),

    /* A chunked response to an HTTP/1.0 client: the payload, then the
     * close, no chunked framing. */
    GET_ANSWERED("/old HTTP/1.0", CHUNKED_HEAD "5\r\nhello\r\n0\r\n\r\n"),
    FS_MSG(),
    FS_UNTIL_EOF(NULL),
    FS_LACKS("Transfer-Encoding",
             "D2: an HTTP/1.0 client never gets chunked framing"),
    FS_HAS("Connection: close\r\n\r\nhello", "but the payload"),
    FS_EOF("framed by the close"),
    FS_END};

static void test_bad_interim(ph_mock *m, int lfd, uint16_t tport) {
  fs_run(script(m, lfd, tport), bad_interim_rows);
}

static void test_framing_attacks(ph_mock *m, int lfd, uint16_t tport,
                                 rbuf *b, rbuf *t) {
  fs_run(script(m, lfd, tport), framing_rows);
  char req[512];
  int c, s;

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

#define K1 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nk1"
#define GET_K "GET http://127.0.0.1:$TPORT/k HTTP/1.1\r\n\r\n"

/* D3: a reload that tightens the policy reaches kept upstreams: the next
 * request on a kept connection asks the connector again. */
static const fs_row reload_kept_rows[] = {
    FS_CONNECT(),
    FS_SEND_STR(GET_K),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR(K1),
    FS_MSG(),
    FS_SEND_STR(GET_K),
    FS_T_MSG(),
    FS_T_SEND_STR(K1),
    FS_MSG(),
    FS_OPENS(1, "D3: without a reload the upstream is reused"),
    FS_CHECK(reload_ok, "reload"),
    FS_SEND_STR(GET_K),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR(K1),
    FS_MSG(),
    FS_OPENS(2, "D3: after a reload the connector is asked again (its policy "
                "applies)"),
    FS_STARTS("HTTP/1.1 200 ", "and the request is served"),
    FS_KEPT_CLOSED(500, "the old upstream is closed"),
    FS_END};

static void test_reload_kept(ph_mock *m, int lfd, uint16_t tport) {
  fs_run(script(m, lfd, tport), reload_kept_rows);
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
  test_bad_interim(m, lfd, tport);
  test_framing_attacks(m, lfd, tport, b, t);
  test_reload_kept(m, lfd, tport);
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
#define NOW_OK "Proxy-Authorization: Basic bm93OnNlY3JldA==\r\n"

static const fs_row inside_rows[] = {
    /* A check and an open both answered inside: CONNECT, then the tunnel. */
    FS_CONNECT(),
    FS_SEND_STR("CONNECT inside-ok.test:$TPORT HTTP/1.1\r\n" NOW_OK
                "\r\nhello"),
    FS_ACCEPT("inside: the open reached the target"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "inside: CONNECT gets 200"),
    FS_T_EXPECT_LIT("hello", "inside: the bytes after the head go first"),
    FS_T_SEND_STR("back"),
    FS_EXPECT_LIT("back", "inside: and the tunnel carries bytes down"),
    FS_T_CLOSE(),
    FS_CLOSE(),
    FS_RUN(50),

    /* A forward on a check and an open answered inside. */
    FS_CONNECT(),
    FS_SEND_STR("GET http://inside-ok.test:$TPORT/x HTTP/1.1\r\n" NOW_OK
                "\r\n"),
    FS_ACCEPT("inside: the forward reached the target"),
    FS_T_MSG(),
    FS_T_HAS("GET /x HTTP/1.1\r\n", "inside: the request went up"),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 OK", "inside: the response came down"),
    FS_HAS("\r\n\r\nok", NULL),
    FS_T_CLOSE(),

    /* A refusal answered inside, on the same connection: mapped, closed. */
    FS_SEND_STR("GET http://inside-refused.test:$TPORT/ HTTP/1.1\r\n" NOW_OK
                "\r\n"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 502 ", "inside: a refused open answered inside gets 502"),
    FS_CLOSED_WITHIN(3000, "inside: and the connection closes"),
    FS_CANCELS(0, "inside: no stale open id was cancelled"),

    /* A denial answered inside check_password: 407, kept alive. */
    FS_CONNECT(),
    FS_SEND_STR("GET http://ok.test/ HTTP/1.1\r\n"
                "Proxy-Authorization: Basic bm93Ondyb25n\r\n\r\n"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 407 ", "inside: a denial answered inside gets 407"),
    FS_HAS("Connection: keep-alive", "inside: and the connection stays"),
    FS_CLOSE(),
    FS_RUN(50),
    FS_METRIC_IS("proxyhost_http_proxy_clients", "", 0,
                 "inside: every connection ended"),
    FS_END};

/* Answers inside the call that asked (the guard rule under reentrancy):
 * the dispatcher runs the answer at once, nested, and the phase that
 * asked leaves the connection as the answer left it. Run under ASan. */
static void test_inside_answers(void) {
  int lfd;
  uint16_t tport;
  ph_mock *m = proxy_case("auth = password\n", 1,
                          "starts for the answers inside the call", &lfd,
                          &tport);
  if (!m)
    return;
  fs_run(script(m, lfd, tport), inside_rows);
  ph_mock_stop(m);
  ph_mock_free(m);
  close(lfd);
}

static int lease_live_1(fs_ctx *s) {
  (void)s;
  return fake_lease_live(&FC.lease) == 1;
}
static int lease_live_0(fs_ctx *s) {
  (void)s;
  return fake_lease_live(&FC.lease) == 0;
}

#define GET_B "GET http://127.0.0.1:$TPORT/b HTTP/1.1\r\n\r\n"

/* The leases of forwarded requests: one per upstream connection, its
 * first_byte and its end. */
static const fs_row lease_rows[] = {
    /* The request: the listener, the head's fields. */
    FS_CONNECT(),
    FS_SEND_STR("GET http://127.0.0.1:$TPORT/a HTTP/1.1\r\n"
                "X-Session:   abc  \r\nx-session: second\r\n"
                "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n"),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "lease: served"),
    FS_LAST_LISTENER("http_proxy", "lease: the listener is http_proxy"),
    FS_LAST_SESSION("[abc]",
                    "lease: the first X-Session field, without its whitespace"),
    FS_COUNTER_IS(&FC.last.saw_proxy_authz, 0,
                  "lease: Proxy-Authorization is never offered"),
    FS_COUNTER_IS(&FC.lease.n, 1, "lease: the open gave one"),
    FS_COUNTER_IS(&FC.lease.first_bytes, 1,
                  "lease: first_byte once the response head went"),
    FS_SEND_STR(GET_B),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_COUNTER_IS(&FC.lease.n, 1,
                  "lease: a second request on the kept upstream: the same "
                  "lease, no second first_byte"),
    FS_COUNTER_IS(&FC.lease.first_bytes, 1, NULL),
    FS_CHECK(lease_live_1, NULL),
    FS_CLOSE(),
    FS_T_CLOSED_WITHIN(1000, "lease: the client left: upstream closed"),
    FS_COUNTER_IS(&FC.lease.ends[PH_LEASE_END_CLOSED], 1,
                  "lease: one end for both requests, CLOSED"),
    FS_CHECK(lease_live_0, NULL),
    FS_T_CLOSE(),

    /* A kept upstream the origin drops as it is reused: it ends CLOSED,
     * the retry gets a lease of its own. */
    FS_CONNECT(),
    FS_SEND_STR(GET_B),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_SEND_STR(GET_B),
    FS_T_MSG(),
    FS_T_CLOSE(),
    FS_ACCEPT(NULL),
    FS_T_MSG(),
    FS_T_SEND_STR(OK2),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 200 ", "lease: the retry served"),
    FS_COUNTER_IS(&FC.lease.n, 3,
                  "lease: the dropped kept upstream ended CLOSED, the retry "
                  "has its own"),
    FS_COUNTER_IS(&FC.lease.ends[PH_LEASE_END_CLOSED], 2, NULL),
    FS_CHECK(lease_live_1, NULL),
    FS_COUNTER_IS(&FC.lease.first_bytes, 3,
                  "lease: first_byte once per upstream"),
    FS_CLOSE(),
    FS_T_CLOSED_WITHIN(1000, NULL),
    FS_T_CLOSE(),

    /* A response that cannot be read one way only: 502, TARGET_ERROR. */
    GET_ANSWERED("/b HTTP/1.1", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                                "Content-Length: 2\r\n\r\nok"),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 502 ", "lease: ambiguous: 502"),
    FS_T_CLOSED_WITHIN(1000,
                       "lease: an unreadable response ends it TARGET_ERROR"),
    FS_COUNTER_IS(&FC.lease.ends[PH_LEASE_END_TARGET_ERROR], 1, NULL),
    FS_COUNTER_IS(&FC.lease.first_bytes, 3,
                  "lease: no first_byte: nothing of it reached the client"),
    FS_T_CLOSE(),

    /* A request body that cannot be read: 400, CLIENT_ERROR. */
    FS_CONNECT(),
    FS_SEND_STR("POST http://127.0.0.1:$TPORT/p HTTP/1.1\r\n"
                "Transfer-Encoding: chunked\r\n\r\nzz\r\n"),
    FS_ACCEPT(NULL),
    FS_MSG(),
    FS_STARTS("HTTP/1.1 400 ", "lease: bad chunked: 400"),
    FS_T_CLOSED_WITHIN(1000,
                       "lease: a malformed request body ends it CLIENT_ERROR"),
    FS_COUNTER_IS(&FC.lease.ends[PH_LEASE_END_CLIENT_ERROR], 1, NULL),
    FS_END};

/* Leases (connector.h minor 3). */
static void test_leases(void) {
  memset(&FC.lease, 0, sizeof(FC.lease));
  int lfd;
  uint16_t tport;
  ph_mock *m = proxy_case("", 0, "lease: starts", &lfd, &tport);
  if (!m)
    return;
  rbuf *b = calloc(1, sizeof(*b)), *t = calloc(1, sizeof(*t));
  char req[512];
  const char *ok2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

  fs_run(script(m, lfd, tport), lease_rows);

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
  int lfd;
  uint16_t pport; /* the test plays the forward proxy */
  ph_mock *m = proxy_case("", 0, "via proxy: starts", &lfd, &pport);
  if (!m)
    return;
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

/* SPDX-License-Identifier: BSD-2-Clause */
/* One real tm_session on each end of a real tm_ws connection (libws on
 * the mock host's loop): the capabilities come from the negotiated
 * subprotocol (tm_subproto_caps), the client opens a stream, the server
 * accepts it and echoes; 1 MiB goes through both ways (several windows:
 * the WINDOW_UPDATEs travel over lws too), half-close reaches both ends,
 * and closing one session ends the WebSocket and the peer's session.
 * The same against an old server (no subprotocol): legacy, no
 * OPEN_RESULT, no windows (TM-PROTO-16). A raw client's unmasked frame
 * closes with 1002 and ends the server's session as TM_CLOSE_PROTOCOL
 * (issue 22 item 6), counted and reported as the session's own protocol
 * errors are. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include <proxyhost/mock.h>

#include "host_test.h"
#include "loop_test.h"
#include "tap.h"
#include "tunnel_common/session/tm_session.h"
#include "tm_session_test.h"
#include "tunnel_common/session/tm_ws.h"

HOST_TEST_MODULE("tm_ws_session_host");

#define TOTAL (1024u * 1024u)

typedef struct end {
  tm_session *s;
  tm_ws_conn *c;
  unsigned caps;
  int closed, reason, transport_closed;
} end;

/* The server's echo of one stream. */
typedef struct echo {
  ph_stream *ps;
  size_t bytes;
  int eof, reset;
} echo;

/* The client's stream: writes TOTAL bytes, reads them back. */
typedef struct user {
  ph_stream *ps;
  size_t sent, got;
  uint32_t sum_sent, sum_got;
  int eof, reset, open_done, accepted, strict;
} user;

typedef struct world {
  end srv, cli;
  echo e;
  user u;
  int accepts, connected;
  const char *subproto;
} world;

static world W;

static uint8_t pattern(size_t i) { return (uint8_t)(i * 131 + (i >> 9)); }

static uint32_t mix(uint32_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

/* ---- server: accept every stream and echo it ------------------------- */

static void echo_cb(ph_stream *ps, int revents, void *arg) {
  echo *e = arg;
  (void)revents;
  for (int i = 0; i < 64; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(ps, &d);
    if (n == 0) {
      if (!e->eof)
        ph_stream_shutdown(ps);
      e->eof = 1;
      ph_stream_watch(ps, 0, echo_cb, e);
      return;
    }
    if (n < 0) {
      if (n != PH_EAGAIN)
        e->reset = 1;
      ph_stream_watch(ps, n == PH_EAGAIN ? PH_READ : 0, echo_cb, e);
      return;
    }
    ssize_t w = ph_stream_write(ps, d, (size_t)n);
    if (w > 0) {
      ph_stream_consume(ps, (size_t)w);
      e->bytes += (size_t)w;
    }
    if (w < n) {
      /* Full: wait for room, and stop reading until then. */
      ph_stream_watch(ps, w == PH_ERESET ? 0 : PH_WRITE, echo_cb, e);
      if (w == PH_ERESET)
        e->reset = 1;
      return;
    }
  }
  ph_stream_watch(ps, PH_READ, echo_cb, e);
}

static void srv_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  world *w = arg;
  (void)req;
  tm_stream_accept(st);
  w->e.ps = tm_stream_ph(st);
  ph_stream_watch(w->e.ps, PH_READ, echo_cb, &w->e);
}

static void srv_on_close(void *arg, int reason) {
  world *w = arg;
  w->srv.closed++;
  w->srv.reason = reason;
  w->srv.s = NULL;
}

static const tm_session_ops srv_ops = {.on_open = srv_on_open,
                                       .on_close = srv_on_close};

static void cli_on_close(void *arg, int reason) {
  world *w = arg;
  w->cli.closed++;
  w->cli.reason = reason;
  w->cli.s = NULL;
}

static const tm_session_ops cli_ops = {.on_close = cli_on_close};

static int on_accept(void *arg, tm_ws_conn *c, const char *bearer, size_t len,
                     const char *subproto, const char *peer) {
  world *w = arg;
  int caps = tm_subproto_caps(subproto);
  (void)bearer;
  (void)len;
  (void)peer;
  w->accepts++;
  if (caps < 0)
    return -1;
  tm_session_cfg cfg = tm_test_cfg(0, (unsigned)caps, NULL);
  w->srv.caps = (unsigned)caps;
  w->srv.c = c;
  w->srv.s = tm_session_new(api, hctx, &cfg, tm_ws_transport(), c, &srv_ops, w);
  if (!w->srv.s)
    return -1;
  tm_ws_conn_bind(c, w->srv.s);
  tm_ws_conn_resume(c);
  return 0;
}

static void on_connected(void *arg, tm_ws_conn *c, const char *subproto) {
  world *w = arg;
  int caps = tm_subproto_caps(subproto);
  w->connected++;
  w->subproto = subproto;
  tm_session_cfg cfg = tm_test_cfg(1, caps < 0 ? 0 : (unsigned)caps, NULL);
  w->cli.caps = cfg.caps;
  w->cli.c = c;
  w->cli.s = tm_session_new(api, hctx, &cfg, tm_ws_transport(), c, &cli_ops, w);
  tm_ws_conn_bind(c, w->cli.s);
}

static void on_connect_error(void *arg, tm_ws_conn *c) {
  (void)arg;
  (void)c;
}

static void on_closed(void *arg, tm_ws_conn *c) {
  world *w = arg;
  if (c == w->srv.c) {
    w->srv.transport_closed++;
    w->srv.c = NULL;
  } else if (c == w->cli.c) {
    w->cli.transport_closed++;
    w->cli.c = NULL;
  }
}

static const tm_ws_handlers handlers = {.on_accept = on_accept,
                                        .on_connected = on_connected,
                                        .on_connect_error = on_connect_error,
                                        .on_closed = on_closed};

/* ---- client: the stream user -------------------------------------------- */

static void user_cb(ph_stream *ps, int revents, void *arg) {
  user *u = arg;
  uint8_t buf[16384];
  (void)revents;
  while (u->sent < TOTAL) {
    size_t n = TOTAL - u->sent < sizeof(buf) ? TOTAL - u->sent : sizeof(buf);
    for (size_t i = 0; i < n; i++)
      buf[i] = pattern(u->sent + i);
    ssize_t w = ph_stream_write(ps, buf, n);
    if (w <= 0)
      break;
    u->sum_sent = mix(u->sum_sent, buf, (size_t)w);
    u->sent += (size_t)w;
    if (u->sent == TOTAL)
      ph_stream_shutdown(ps);
  }
  for (int i = 0; i < 64; i++) {
    const void *d;
    ssize_t n = ph_stream_peek(ps, &d);
    if (n == 0) {
      u->eof = 1;
      break;
    }
    if (n < 0) {
      if (n != PH_EAGAIN)
        u->reset = 1;
      break;
    }
    u->sum_got = mix(u->sum_got, d, (size_t)n);
    u->got += (size_t)n;
    ph_stream_consume(ps, (size_t)n);
  }
  int ev = 0;
  if (!u->eof && !u->reset)
    ev |= PH_READ;
  if (u->sent < TOTAL && !u->reset)
    ev |= PH_WRITE;
  ph_stream_watch(ps, ev, user_cb, u);
}

static void open_cb(void *arg, tm_stream *st, const tm_open_result *r,
                    int strict) {
  user *u = arg;
  u->open_done = 1;
  u->accepted = r->accepted;
  u->strict = strict;
  if (!r->accepted)
    return;
  u->ps = tm_stream_ph(st);
  ph_stream_watch(u->ps, PH_READ | PH_WRITE, user_cb, u);
}

/* ---- waits ----------------------------------------------------------------
 */

static int cond_connected(void *a) {
  (void)a;
  return W.connected && W.accepts;
}
static int cond_open(void *a) {
  (void)a;
  return W.u.open_done;
}
static int cond_echoed(void *a) {
  (void)a;
  return (W.u.got == TOTAL && W.u.eof) || W.u.reset;
}
static int cond_closed(void *a) {
  (void)a;
  return W.srv.closed && W.cli.closed && W.srv.transport_closed &&
         W.cli.transport_closed;
}

static void run_case(int legacy) {
  const char *err = NULL;
  memset(&W, 0, sizeof(W));
  tm_ws_cfg sc = {.listen = "127.0.0.1:0",
                  .caps = TM_CAP_ALL,
                  .max_message = TM_MAX_FRAME,
                  .path = "/tunnel",
                  .legacy_no_subprotocol = legacy};
  tm_ws_cfg cc = {.caps = TM_CAP_ALL, .max_message = TM_MAX_FRAME};
  tm_ws *sw = tm_ws_new(api, hctx, &sc, &handlers, &W, &err);
  tm_ws *cw = tm_ws_new(api, hctx, &cc, &handlers, &W, &err);
  if (!sw || !cw) {
    ok(0, "contexts");
    return;
  }
  char url[64];
  snprintf(url, sizeof(url), "ws://127.0.0.1:%d/tunnel", tm_ws_port(sw));
  tm_ws_connect(cw, url, "tok", &err);
  ok(poll_until(loop, cond_connected(NULL), 10000),
     legacy ? "legacy: a session on each end of a real WebSocket"
            : "a session on each end of a real WebSocket");
  if (legacy)
    ok(W.subproto == NULL && W.cli.caps == 0 && W.srv.caps == 0,
       "TM-PROTO-16: no subprotocol from the old server: capabilities 0");
  else
    ok(W.subproto && !strcmp(W.subproto, TM_SUBPROTO_TRACE) &&
           W.cli.caps == (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL |
                          TM_CAP_TRACE) &&
           W.srv.caps == W.cli.caps,
       "TM-PROTO-15: both ends run open-result + flow-control (+ the "
       "trace field)");

  tm_open_stream req;
  memset(&req, 0, sizeof(req));
  req.protocol = 1;
  req.port = 443;
  snprintf(req.host, sizeof(req.host), "echo.test");
  ok(tm_stream_open(W.cli.s, &req, 5000, open_cb, &W.u) != NULL,
     "the client opens a stream");
  ok(poll_until(loop, cond_open(NULL), 10000) && W.u.accepted &&
         W.u.strict == !legacy,
     legacy ? "legacy: open at once (no OPEN_RESULT)"
            : "strict: the server's OPEN_RESULT accepted it");
  ok(poll_until(loop, cond_echoed(NULL), 30000) && !W.u.reset,
     "1 MiB written, echoed and read back, then EOF");
  ok(W.u.got == TOTAL && W.u.sum_got == W.u.sum_sent && W.e.bytes == TOTAL,
     "every byte came back in order");
  ok(W.e.eof, "the server's end read EOF (half-close over the tunnel)");
  ph_stream_close(W.u.ps);
  ph_stream_close(W.e.ps);
  tm_session_close(W.cli.s);
  ok(poll_until(loop, cond_closed(NULL), 10000),
     "closing the client session ends the WebSocket and the server session");
  is_int(W.srv.reason, TM_CLOSE_TRANSPORT,
         "the server session ends with TM_CLOSE_TRANSPORT");
  tm_ws_free(cw);
  tm_ws_free(sw);
}

/* Reads from fd while running the loop until want bytes arrived (or EOF,
 * or the bound); the count. */
static size_t raw_read(int fd, uint8_t *buf, size_t cap, size_t want) {
  size_t got = 0;
  for (int i = 0; i < 1000 && got < want && got < cap; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) <= 0)
      continue;
    ssize_t n = read(fd, buf + got, cap - got);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  return got;
}

static int cond_srv_closed(void *a) {
  (void)a;
  return W.srv.closed && W.srv.transport_closed;
}

static void run_unmasked(void) {
  const char *err = NULL;
  memset(&W, 0, sizeof(W));
  tm_ws_cfg sc = {.listen = "127.0.0.1:0",
                  .caps = TM_CAP_ALL,
                  .max_message = TM_MAX_FRAME,
                  .path = "/tunnel"};
  tm_ws *sw = tm_ws_new(api, hctx, &sc, &handlers, &W, &err);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(sw ? tm_ws_port(sw) : 1)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  static const char req[] =
      "GET /tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " TM_SUBPROTO_BASE
      "\r\n\r\n";
  uint8_t ans[2048];
  size_t n = 0;
  if (sw && fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
      write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    n = raw_read(fd, ans, sizeof(ans) - 1, 129); /* the 101's length */
  }
  ans[n] = '\0';
  ok(n > 0 && strstr((char *)ans, " 101 ") && W.srv.s,
     "a raw client upgrades and the server binds a session");
  /* A whole, valid TunnelMesh-sized binary frame, but unmasked. */
  static const uint8_t unmasked[] = {0x82, 0x03, 1, 2, 3};
  ok(fd >= 0 && write(fd, unmasked, sizeof(unmasked)) == sizeof(unmasked),
     "the raw client sends an unmasked binary frame");
  uint8_t fr[64];
  size_t got = fd >= 0 ? raw_read(fd, fr, sizeof(fr), 4) : 0;
  ok(got >= 4 && fr[0] == 0x88 && ((fr[2] << 8) | fr[3]) == 1002,
     "issue 22 item 6: the server closes with 1002");
  ok(poll_until(loop, cond_srv_closed(NULL), 10000),
     "the server's session and connection end");
  is_int(W.srv.reason, TM_CLOSE_PROTOCOL,
         "the server session ends with TM_CLOSE_PROTOCOL (counted as "
         "reason=\"protocol\")");
  if (fd >= 0)
    close(fd);
  tm_ws_free(sw);
}

int main(void) {
  plan_lazy();
  ph_mock *m = host_test_start(&host_mod, "[proxyhost]\n");
  run_case(0);
  run_case(1);
  run_unmasked();
  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}

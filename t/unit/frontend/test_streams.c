/* SPDX-License-Identifier: BSD-2-Clause */
/* Streams without a socket (stream.h, SDK 1.2): the socks5 and
 * http_proxy modules through the mock host with the memconn test
 * connector (t/modules/memconn.c), whose streams are in-memory queues
 * with a window. The relay joins the client's socket and the stream:
 * bytes both ways, backpressure (no queue ever above its window, with a
 * client that does not read), half-close, a reset, a stream closed
 * exactly once; http_proxy forwards over a stream. And two mock hosts in
 * one process, each on its loop, one tunnelling into the other.
 *
 * Requirements: TM-SEC-1 (bounded queues), TM-SEC-7 (after a close
 * nothing of the stream remains). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "listener_test.h"
#include "mock_test.h"
#include "sock_test.h"
#include "tap.h"

/* ---- a module that learns the frontend's port ------------------------ */

static int proxy_port;

static int watcher_init(ph_ctx *ctx, const ph_api *a, void **state) {
  *state = NULL;
  return listener_test_watch(ctx, a, &proxy_port);
}

static const ph_module watcher = {
    PH_MODULE_HEADER("watcher", "1.0"),
    .init = watcher_init,
};

/* ---- the hosts and the client's side --------------------------------- */

/* The mock hosts alive: the waits below run each in turn. */
static ph_mock *hosts[2];

static void run(int ms) {
  for (int i = 0; i < ms; i++)
    for (int k = 0; k < 2; k++)
      if (hosts[k])
        ph_mock_run_for(hosts[k], 1);
}

static void stop_host(ph_mock *m, const char *name) {
  ok(ph_mock_stop(m) == 0, name);
  for (int k = 0; k < 2; k++)
    if (hosts[k] == m)
      hosts[k] = NULL;
  ph_mock_free(m);
}

/* A host with frontend and the memconn connector (or, with connector
 * "direct", the real dialer allowed to loopback). */
static ph_mock *start_with(const char *frontend, const char *connector,
                           const char *extra) {
  char mods[512], ini[1536];
  if (strcmp(connector, "direct") == 0)
    snprintf(mods, sizeof(mods), "%s/direct/.libs/direct.so\n[direct]\n"
             "allow_cidrs = 127.0.0.0/8\ndeny_ports =\n", PH_BUILD_MODULES);
  else
    snprintf(mods, sizeof(mods), "%s/memconn.so\n[memconn]\nwindow = 4KiB\n",
             PH_TEST_MODDIR);
  snprintf(ini, sizeof(ini),
           "[log]\nlevel = warn\n[%s]\nlisten = 127.0.0.1:0\n%s"
           "[proxyhost]\ndrain_timeout = 2s\nmodules = %s/%s/.libs/%s.so, %s",
           frontend, extra, PH_BUILD_MODULES, frontend, frontend, mods);
  char err[8192] = "";
  proxy_port = 0;
  ph_mock *m = mock_test_boot(ini, &watcher, err, sizeof err);
  if (!m) {
    printf("# setup failed: %s\n", err);
    m = NULL;
  }
  for (int k = 0; m && k < 2; k++)
    if (!hosts[k]) {
      hosts[k] = m;
      break;
    }
  return m;
}

static ph_mock *start(const char *frontend, const char *extra) {
  return start_with(frontend, "memconn", extra);
}

static int dial(void) { return sock_test_dial(proxy_port, 1); }

/* Sends what the socket takes, running the loop between tries, for at
 * most ms; the bytes sent. */
static size_t send_for(ph_mock *m, int fd, const char *p, size_t n, int ms) {
  size_t off = 0;
  for (int waited = 0; off < n && waited <= ms; waited += 2) {
    ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
    if (w > 0)
      off += (size_t)w;
    else
      run(2);
  }
  return off;
}

/* Reads until want bytes, EOF or ms; the bytes read (*eof set on EOF or
 * a reset). */
static size_t recv_for(ph_mock *m, int fd, char *p, size_t want, int ms,
                       int *eof) {
  size_t got = 0;
  *eof = 0;
  for (int waited = 0; got < want && waited <= ms; waited += 2) {
    ssize_t r = recv(fd, p + got, want - got, 0);
    if (r > 0) {
      got += (size_t)r;
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      *eof = 1;
      break;
    }
    run(2);
  }
  return got;
}

/* Waits for EOF (or a reset) within ms. */
static int eof_within(ph_mock *m, int fd, int ms) {
  char c[256];
  int eof = 0;
  for (int waited = 0; waited <= ms && !eof; waited += 10)
    if (recv_for(m, fd, c, sizeof(c), 10, &eof) == 0 && !eof)
      continue;
  return eof;
}

static double metric(ph_mock *m, const char *name) {
  double v;
  return ph_mock_metric(m, name, NULL, &v) == PH_OK ? v : -1;
}

/* SOCKS5 no-auth greeting and CONNECT to host:port; the reply's 10
 * bytes in rep (an IPv4 bound address). */
static int socks_connect(ph_mock *m, int fd, const char *host, int port,
                         unsigned char rep[10]) {
  /* The greeting (no auth), then CONNECT with a domain name. */
  unsigned char req[300] = {5, 1, 0, 5, 1, 0, 3};
  size_t hl = strlen(host), n = 7;
  req[n++] = (unsigned char)hl;
  memcpy(req + n, host, hl);
  n += hl;
  req[n++] = (unsigned char)(port >> 8);
  req[n++] = (unsigned char)port;
  if (send_for(m, fd, (char *)req, n, 500) != n)
    return -1;
  unsigned char method[2];
  int eof;
  if (recv_for(m, fd, (char *)method, 2, 1000, &eof) != 2)
    return -1;
  return recv_for(m, fd, (char *)rep, 10, 2000, &eof) == 10 ? 0 : -1;
}

static char *pattern_of(size_t n, uint64_t from) {
  char *p = malloc(n);
  for (size_t i = 0; i < n; i++)
    p[i] = (char)((from + i) % 251);
  return p;
}

/* ---- tests ------------------------------------------------------------ */

static void test_socks5_streams(void) {
  ph_mock *m = start("socks5", "");
  ok(m != NULL && proxy_port > 0, "socks5 with the memconn connector starts");
  if (!m)
    return;
  unsigned char rep[10];

  /* Echo, bigger than any window, both ways at once. */
  int c = dial();
  ok(socks_connect(m, c, "echo.mem", 7, rep) == 0 && rep[1] == 0,
     "CONNECT to a stream: succeeded");
  ok(rep[3] == 1 && memcmp(rep + 4, "\0\0\0\0\0\0", 6) == 0,
     "the bound address of a stream is 0.0.0.0:0");
  size_t n = 1 << 20;
  char *out = pattern_of(n, 7), *in = malloc(n);
  size_t sent = 0, got = 0;
  int eof = 0;
  for (int rounds = 0; rounds < 20000 && got < n && !eof; rounds++) {
    if (sent < n) {
      ssize_t w = send(c, out + sent, n - sent > 65536 ? 65536 : n - sent,
                       MSG_NOSIGNAL);
      if (w > 0)
        sent += (size_t)w;
    }
    got += recv_for(m, c, in + got, n - got, 1, &eof);
  }
  ok(got == n && memcmp(in, out, n) == 0,
     "1 MiB echoed through a 4 KiB-window stream, intact");
  ok(metric(m, "memconn_queue_max_bytes") > 0 &&
         metric(m, "memconn_queue_max_bytes") <= 4096,
     "no stream queue ever held more than its window (TM-SEC-1)");

  /* Half-close: the client's shutdown reaches the stream; the echo then
   * ends, and the client reads EOF after every byte. */
  send_for(m, c, "tail", 4, 500);
  shutdown(c, SHUT_WR);
  char tail[8];
  size_t tl = recv_for(m, c, tail, sizeof(tail), 2000, &eof);
  ok(tl == 4 && memcmp(tail, "tail", 4) == 0, "half-close: the last bytes");
  ok(eof_within(m, c, 2000), "then EOF");
  close(c);

  /* A client that does not read: the stream fills its window and stops;
   * the relay stops reading the client. Nothing is lost once it reads. */
  c = dial();
  socks_connect(m, c, "source.mem", 512, rep); /* 512 KiB */
  run(200);
  ok(metric(m, "memconn_queue_max_bytes") > 0 &&
         metric(m, "memconn_queue_max_bytes") <= 4096,
     "a client that does not read: the stream holds at most its window");
  char *buf = malloc(512 * 1024);
  got = recv_for(m, c, buf, 512 * 1024, 5000, &eof);
  char *want = pattern_of(512 * 1024, 0);
  ok(got == 512 * 1024 && memcmp(buf, want, got) == 0,
     "then all 512 KiB arrive, in order");
  ok(eof_within(m, c, 2000), "and the stream's EOF ends the connection");
  free(want);
  free(buf);
  close(c);

  /* A reset: the client connection is reset too, not closed as if the
   * data had ended (a body without a length would look complete). */
  c = dial();
  socks_connect(m, c, "reset.mem", 1, rep);
  send_for(m, c, "x", 1, 500);
  int reset = 0, closed = 0;
  for (int waited = 0; waited <= 2000 && !reset && !closed; waited += 10) {
    char b[256];
    ssize_t r = recv(c, b, sizeof(b), MSG_DONTWAIT);
    if (r < 0 && errno == ECONNRESET)
      reset = 1;
    else if (r == 0)
      closed = 1;
    else
      run(10);
  }
  ok(reset, "a reset stream resets the client connection (RST, not EOF)");
  close(c);

  /* The client leaves: the stream is closed, exactly once (memconn
   * aborts on a second close). */
  c = dial();
  socks_connect(m, c, "echo.mem", 7, rep);
  close(c);
  run(100);
  is_int((int)metric(m, "memconn_streams"), 0,
         "every stream closed when its client left (TM-SEC-7)");
  ok(metric(m, "memconn_streams_closed_total") >= 4, "each once");
  stop_host(m, "stops");
  free(out);
  free(in);
}

static void test_http_connect_streams(void) {
  ph_mock *m = start("http_proxy", "");
  ok(m != NULL && proxy_port > 0,
     "http_proxy with the memconn connector starts");
  if (!m)
    return;
  int c = dial();
  const char *req = "CONNECT echo.mem:7 HTTP/1.1\r\n\r\nearly";
  send_for(m, c, req, strlen(req), 500);
  char buf[256] = "";
  int eof;
  size_t want = strlen("HTTP/1.1 200 Connection established\r\n\r\n") + 5;
  size_t got = recv_for(m, c, buf, want, 2000, &eof);
  buf[got] = '\0';
  ok(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "CONNECT to a stream: 200");
  ok(got == want && memcmp(buf + got - 5, "early", 5) == 0,
     "bytes sent after the head went to the stream first");
  char *out = pattern_of(200000, 3), *in = malloc(200000);
  size_t sent = 0;
  got = 0;
  eof = 0;
  for (int rounds = 0; rounds < 20000 && got < 200000 && !eof; rounds++) {
    if (sent < 200000) {
      ssize_t w = send(c, out + sent, 200000 - sent, MSG_NOSIGNAL);
      if (w > 0)
        sent += (size_t)w;
    }
    got += recv_for(m, c, in + got, 200000 - got, 1, &eof);
  }
  ok(got == 200000 && memcmp(in, out, got) == 0,
     "the tunnel echoes 200 KB through the stream");
  close(c);

  /* Forwarding over a stream: the request head goes to the stream, the
   * response (made by http.mem) comes back reframed. 300 KiB through a
   * 4 KiB window. */
  c = dial();
  req = "GET http://http.mem:300/ HTTP/1.1\r\nHost: http.mem\r\n\r\n";
  send_for(m, c, req, strlen(req), 500);
  size_t cap = 400 * 1024;
  char *resp = malloc(cap + 1);
  got = 0;
  eof = 0;
  const char *end = NULL;
  for (int rounds = 0; rounds < 5000 && !eof; rounds++) {
    got += recv_for(m, c, resp + got, cap - got, 1, &eof);
    resp[got] = '\0';
    end = strstr(resp, "\r\n\r\n");
    if (end && got - (size_t)(end + 4 - resp) >= 300 * 1024)
      break;
  }
  ok(strncmp(resp, "HTTP/1.1 200 ", 13) == 0,
     "forwarding over a stream: 200");
  like(resp, "Content-Length: 307200\r\n", "with the stream's length");
  char *body = pattern_of(300 * 1024, 0);
  ok(end && got - (size_t)(end + 4 - resp) == 300 * 1024 &&
         memcmp(end + 4, body, 300 * 1024) == 0,
     "and its 300 KiB, intact, through a 4 KiB window");
  ok(metric(m, "memconn_queue_max_bytes") > 0 &&
         metric(m, "memconn_queue_max_bytes") <= 4096,
     "no queue above its window while forwarding (TM-SEC-1)");
  free(body);
  free(resp);
  close(c);
  run(100);
  is_int((int)metric(m, "memconn_streams"), 0, "no stream left open");
  stop_host(m, "stops");
  free(out);
  free(in);
}

/* Two hosts in one process, each on its own loop: A (socks5 + direct)
 * tunnels a client to B's http_proxy, which forwards over a memconn
 * stream. Both loops run in turn. */
static void test_two_hosts(void) {
  ph_mock *b = start("http_proxy", "");
  int b_port = proxy_port;
  ph_mock *a = start_with("socks5", "direct", "");
  int a_port = proxy_port;
  ok(a && b && a_port > 0 && b_port > 0 && a_port != b_port,
     "two mock hosts run in one process, each on its own loop");
  if (!a || !b) {
    if (a)
      stop_host(a, "A stops");
    if (b)
      stop_host(b, "B stops");
    return;
  }
  proxy_port = a_port;
  int c = dial();
  unsigned char rep[10];
  char target[32];
  snprintf(target, sizeof(target), "127.0.0.1");
  ok(socks_connect(a, c, target, b_port, rep) == 0 && rep[1] == 0,
     "A's socks5 opens a tunnel to B's http_proxy");
  const char *req = "GET http://http.mem:8/ HTTP/1.1\r\nHost: http.mem\r\n\r\n";
  send_for(a, c, req, strlen(req), 500);
  char *resp = malloc(16384 + 1);
  int eof = 0;
  size_t got = 0;
  const char *end = NULL;
  for (int rounds = 0; rounds < 2000 && !eof; rounds++) {
    got += recv_for(a, c, resp + got, 16384 - got, 1, &eof);
    resp[got] = '\0';
    end = strstr(resp, "\r\n\r\n");
    if (end && got - (size_t)(end + 4 - resp) >= 8192)
      break;
  }
  ok(strncmp(resp, "HTTP/1.1 200 ", 13) == 0 && end &&
         got - (size_t)(end + 4 - resp) == 8192,
     "through A and B, a client gets B's stream's 8 KiB response");
  free(resp);
  close(c);
  run(50);
  stop_host(a, "A stops");
  stop_host(b, "B stops");
}

int main(void) {
  plan_lazy();
  test_socks5_streams();
  test_http_connect_streams();
  test_two_hosts();
  return done_testing();
}

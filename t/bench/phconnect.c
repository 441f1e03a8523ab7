/* SPDX-License-Identifier: BSD-2-Clause */
/* phconnect: many cheap upstream proxies for the checker benchmark
 * (t/bench/checker.sh). One process, one libev (epoll) loop, listening on
 * COUNT loopback ports from BASE up:
 *
 *   phconnect --base PORT --count N
 *
 * Prints "ready" once every port listens. Each connection sends one
 * request head (anything up to "\r\n\r\n", at most 512 bytes), gets
 * "HTTP/1.1 200 Connection established" and is held until its client
 * closes: a BASIC check's CONNECT handshake and HAProxy's tcp-check alike.
 * The port given with --flaky answers every third handshake with 502
 * instead (the flaky proxy of the detection run). With --fail-every M,
 * one port in M (BASE, BASE + M, ...) answers every handshake with 502
 * while SIGUSR2 has toggled them failing (off at the start): the share
 * of the pool that t/bench/controller_scale.sh takes down and up again.
 * With --relay 1, a CONNECT to 127.0.0.1:PORT is relayed there once its
 * client sends (the EGRESS check's fetch of the echo module).
 * SIGUSR1 prints "conns=N" (handshakes answered so far) on stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ev.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQ_MAX 512

typedef struct conn {
  ev_io io;
  size_t len;
  int answered;
  int fail;
  int target_port;   /* the CONNECT's 127.0.0.1 port (--relay), or 0 */
  struct conn *peer; /* the relayed connection, once data came */
  char req[REQ_MAX];
} conn;

static struct ev_loop *loop;
static unsigned long answered;
static int flaky_port = -1;
static unsigned long flaky_seen;
static int base_port, fail_every, failing, relay;
static const char ok_head[] = "HTTP/1.1 200 Connection established\r\n\r\n";
static const char bad_head[] = "HTTP/1.1 502 Bad Gateway\r\n\r\n";

static void conn_close(conn *c) {
  if (c->peer) {
    c->peer->peer = NULL;
    conn_close(c->peer);
  }
  ev_io_stop(loop, &c->io);
  close(c->io.fd);
  free(c);
}

static void on_conn(struct ev_loop *l, ev_io *w, int revents);

/* --relay: the tunnel to the CONNECT's 127.0.0.1 port, opened when its
 * client first sends (a BASIC check never does: it costs no connection). */
static conn *relay_open(conn *c) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)c->target_port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
      fcntl(fd, F_SETFL, O_NONBLOCK)) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  conn *p = calloc(1, sizeof *p);
  if (!p) {
    close(fd);
    return NULL;
  }
  p->answered = 1;
  p->peer = c;
  c->peer = p;
  ev_io_init(&p->io, on_conn, fd, EV_READ);
  ev_io_start(loop, &p->io);
  return p;
}

/* Relayed bytes, written whole or the pair closed (small exchanges only). */
static void relay_data(conn *c, const char *buf, size_t n) {
  if (!c->peer && (!c->target_port || !relay_open(c))) {
    conn_close(c);
    return;
  }
  if (write(c->peer->io.fd, buf, n) != (ssize_t)n)
    conn_close(c);
}

static void on_conn(struct ev_loop *l, ev_io *w, int revents) {
  conn *c = (conn *)w;
  (void)l;
  (void)revents;
  if (c->answered && relay) {
    char buf[16384];
    ssize_t r = read(w->fd, buf, sizeof buf);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (r <= 0)
      conn_close(c);
    else
      relay_data(c, buf, (size_t)r);
    return;
  }
  ssize_t n = read(w->fd, c->req + c->len, REQ_MAX - 1 - c->len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0) {
    conn_close(c);
    return;
  }
  if (c->answered)
    return; /* a tunnel nobody uses: drop what comes */
  c->len += (size_t)n;
  c->req[c->len] = '\0';
  if (!strstr(c->req, "\r\n\r\n")) {
    if (c->len == REQ_MAX - 1)
      conn_close(c);
    return;
  }
  const char *h = c->fail ? bad_head : ok_head;
  size_t hl = c->fail ? sizeof bad_head - 1 : sizeof ok_head - 1;
  if (write(w->fd, h, hl) != (ssize_t)hl) {
    conn_close(c);
    return;
  }
  c->answered = 1;
  c->len = 0;
  answered++;
  int tp = 0;
  if (relay && sscanf(c->req, "CONNECT 127.0.0.1:%d ", &tp) == 1 && tp > 0 &&
      tp < 65536)
    c->target_port = tp;
}

static void on_accept(struct ev_loop *l, ev_io *w, int revents) {
  (void)revents;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      return;
    }
    int port = (int)(intptr_t)w->data;
    c->fail = (port == flaky_port && ++flaky_seen % 3 == 0) ||
              (failing && fail_every > 0 && (port - base_port) % fail_every == 0);
    ev_io_init(&c->io, on_conn, fd, EV_READ);
    ev_io_start(l, &c->io);
  }
}

static void on_usr1(struct ev_loop *l, ev_signal *w, int revents) {
  (void)l;
  (void)w;
  (void)revents;
  printf("conns=%lu\n", answered);
  fflush(stdout);
}

static void on_usr2(struct ev_loop *l, ev_signal *w, int revents) {
  (void)l;
  (void)w;
  (void)revents;
  failing = !failing;
  printf("failing=%d\n", failing);
  fflush(stdout);
}

static void on_term(struct ev_loop *l, ev_signal *w, int revents) {
  (void)w;
  (void)revents;
  ev_break(l, EVBREAK_ALL);
}

int main(int argc, char **argv) {
  int base = 0, count = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--base"))
      base = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--count"))
      count = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--flaky"))
      flaky_port = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--fail-every"))
      fail_every = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--relay"))
      relay = atoi(argv[i + 1]);
  }
  if (base <= 0 || count <= 0 || base + count > 65536 || fail_every < 0) {
    fprintf(stderr, "usage: phconnect --base PORT --count N [--flaky PORT] "
                    "[--fail-every M] [--relay 0|1]\n");
    return 2;
  }
  base_port = base;
  signal(SIGPIPE, SIG_IGN);
  loop = ev_default_loop(EVFLAG_AUTO);
  ev_io *ls = calloc((size_t)count, sizeof *ls);
  if (!ls)
    return 1;
  for (int i = 0; i < count; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)(base + i))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
        listen(fd, 128)) {
      fprintf(stderr, "phconnect: port %d: %s\n", base + i, strerror(errno));
      return 1;
    }
    ev_io_init(&ls[i], on_accept, fd, EV_READ);
    ls[i].data = (void *)(intptr_t)(base + i);
    ev_io_start(loop, &ls[i]);
  }
  ev_signal su, su2, st, si;
  ev_signal_init(&su, on_usr1, SIGUSR1);
  ev_signal_init(&su2, on_usr2, SIGUSR2);
  ev_signal_start(loop, &su2);
  ev_signal_init(&st, on_term, SIGTERM);
  ev_signal_init(&si, on_term, SIGINT);
  ev_signal_start(loop, &su);
  ev_signal_start(loop, &st);
  ev_signal_start(loop, &si);
  printf("ready\n");
  fflush(stdout);
  ev_run(loop, 0);
  printf("conns=%lu\n", answered);
  return 0;
}

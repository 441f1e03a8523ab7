/* SPDX-License-Identifier: BSD-2-Clause */
/* phtarget: the benchmark's loopback target. One process, one libev
 * (epoll) loop, non-blocking sockets, no allocation per connection once
 * warm (closed connections go to a free list).
 *
 *   phtarget [--listen 127.0.0.1:PORT]     (PORT 0: the kernel picks)
 *
 * Prints "port=N" once it listens. Each connection sends one request
 * head (up to "\r\n\r\n", at most 256 bytes) and gets:
 *   GET /r/N ...     exactly N bytes (an HTTP/1.0 200 response whose
 *                    body fills it up), then the target closes;
 *   GET /bulk/N ...  an HTTP/1.0 200 head and a body, N bytes in all, as
 *                    fast as the socket takes them (N 0: until the client
 *                    closes), then the target closes;
 *   anything else    a 400 response, then close.
 * A connection that sends nothing is held open until its client closes
 * (the idle-connection measurement relies on that). */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define REQ_MAX 256
#define BODY_CHUNK (256 * 1024)
#define MAX_RESPONSE (1u << 20) /* /r/N */
#define WRITES_PER_WAKEUP 16    /* fairness between bulk streams */
#define ACCEPTS_PER_WAKEUP 64

typedef struct conn {
  ev_io io;
  int fd;
  int writing;
  size_t req_len;
  char req[REQ_MAX];
  char head[96];
  size_t head_len, head_off;
  uint64_t body_left; /* UINT64_MAX: without end */
  struct conn *next_free;
} conn;

static struct ev_loop *loop;
static conn *free_list;
static char body[BODY_CHUNK];

static conn *conn_new(int fd) {
  conn *c = free_list;
  if (c)
    free_list = c->next_free;
  else if (!(c = malloc(sizeof *c)))
    return NULL;
  c->fd = fd;
  c->writing = 0;
  c->req_len = 0;
  c->head_len = c->head_off = 0;
  c->body_left = 0;
  return c;
}

static void conn_close(conn *c) {
  ev_io_stop(loop, &c->io);
  close(c->fd);
  c->next_free = free_list;
  free_list = c;
}

static unsigned digits(uint64_t v) {
  unsigned d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

/* A 200 response of exactly total bytes: head plus a body that fills it. */
static void respond_sized(conn *c, uint64_t total) {
  static const char pre[] = "HTTP/1.0 200 OK\r\nContent-Length: ";
  size_t fixed = sizeof pre - 1 + 4; /* + "\r\n\r\n" */
  for (unsigned d = 1; d < 20; d++) {
    if (total < fixed + d)
      break;
    uint64_t body_len = total - fixed - d;
    if (digits(body_len) == d) {
      c->head_len = (size_t)snprintf(c->head, sizeof c->head,
                                     "%s%" PRIu64 "\r\n\r\n", pre, body_len);
      c->body_left = body_len;
      return;
    }
  }
  c->head_len = (size_t)snprintf(c->head, sizeof c->head, "%.*s",
                                 (int)(total < sizeof c->head ? total : 0), pre);
  c->body_left = 0;
}

static void respond_bulk(conn *c, uint64_t total) {
  static const char head[] = "HTTP/1.0 200 OK\r\n\r\n";
  c->head_len = sizeof head - 1;
  memcpy(c->head, head, c->head_len);
  if (total == 0)
    c->body_left = UINT64_MAX;
  else
    c->body_left = total > c->head_len ? total - c->head_len : 0;
}

static void respond_bad(conn *c) {
  static const char bad[] = "HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
  c->head_len = sizeof bad - 1;
  memcpy(c->head, bad, c->head_len);
  c->body_left = 0;
}

static int parse_size(const char *p, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 10);
  if (end == p || errno || (*end != ' ' && *end != '\r'))
    return -1;
  *out = v;
  return 0;
}

static void choose_response(conn *c) {
  uint64_t n;
  if (!strncmp(c->req, "GET /r/", 7) && !parse_size(c->req + 7, &n) &&
      n <= MAX_RESPONSE)
    respond_sized(c, n);
  else if (!strncmp(c->req, "GET /bulk/", 10) && !parse_size(c->req + 10, &n))
    respond_bulk(c, n);
  else
    respond_bad(c);
}

/* Write the head and body; returns 1 when done, 0 to wait, -1 on error. */
static int write_some(conn *c) {
  for (int i = 0; i < WRITES_PER_WAKEUP; i++) {
    struct iovec iov[2];
    int n_iov = 0;
    if (c->head_off < c->head_len) {
      iov[n_iov].iov_base = c->head + c->head_off;
      iov[n_iov++].iov_len = c->head_len - c->head_off;
    }
    if (c->body_left) {
      iov[n_iov].iov_base = body;
      iov[n_iov++].iov_len = c->body_left < BODY_CHUNK ? c->body_left : BODY_CHUNK;
    }
    if (!n_iov)
      return 1;
    ssize_t n = writev(c->fd, iov, n_iov);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    size_t left = (size_t)n;
    size_t h = c->head_len - c->head_off;
    size_t from_head = left < h ? left : h;
    c->head_off += from_head;
    left -= from_head;
    if (c->body_left != UINT64_MAX)
      c->body_left -= left;
  }
  return c->head_off == c->head_len && !c->body_left ? 1 : 0;
}

static void conn_write(conn *c) {
  int r = write_some(c);
  if (r != 0) {
    conn_close(c); /* done (the kernel sends the rest, then FIN) or failed */
    return;
  }
  if (!c->writing) {
    c->writing = 1;
    ev_io_stop(loop, &c->io);
    ev_io_set(&c->io, c->fd, EV_WRITE);
    ev_io_start(loop, &c->io);
  }
}

/* Reads the request head, then answers it (or closes on EOF/error). */
static void conn_read(conn *c) {
  for (;;) {
    ssize_t n = recv(c->fd, c->req + c->req_len, REQ_MAX - 1 - c->req_len, 0);
    if (n > 0) {
      c->req_len += (size_t)n;
      c->req[c->req_len] = '\0';
      if (strstr(c->req, "\r\n\r\n")) {
        choose_response(c);
        conn_write(c);
        return;
      }
      if (c->req_len >= REQ_MAX - 1) {
        respond_bad(c);
        conn_write(c);
        return;
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!ev_is_active(&c->io))
        ev_io_start(loop, &c->io);
      return;
    }
    conn_close(c); /* closed before a complete request, or reset */
    return;
  }
}

static void on_conn(struct ev_loop *l, ev_io *w, int revents) {
  conn *c = (conn *)w;
  (void)l;
  (void)revents;
  if (c->writing)
    conn_write(c);
  else
    conn_read(c);
}

static void on_accept(struct ev_loop *l, ev_io *w, int revents) {
  (void)l;
  (void)revents;
  for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
    int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return; /* EAGAIN, or EMFILE and the like: try on the next wake-up */
    conn *c = conn_new(fd);
    if (!c) {
      close(fd);
      continue;
    }
    ev_io_init(&c->io, on_conn, fd, EV_READ);
    conn_read(c); /* the request has usually arrived with the handshake */
  }
}

static int listen_on(const char *spec) {
  char host[64] = "127.0.0.1";
  long port = 0;
  const char *colon = strrchr(spec, ':');
  if (colon && (size_t)(colon - spec) < sizeof host) {
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    port = strtol(colon + 1, NULL, 10);
  }
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_port = htons((uint16_t)port);
  if (port < 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    fprintf(stderr, "phtarget: bad address %s\n", spec);
    exit(2);
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = sizeof sa;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 4096) ||
      getsockname(fd, (struct sockaddr *)&sa, &len)) {
    perror("phtarget: listen");
    exit(2);
  }
  printf("port=%u\n", ntohs(sa.sin_port));
  fflush(stdout);
  return fd;
}

int main(int argc, char **argv) {
  const char *spec = "127.0.0.1:0";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
      spec = argv[++i];
    } else {
      fputs("usage: phtarget [--listen HOST:PORT]\n", stderr);
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  memset(body, 'x', sizeof body);
  loop = ev_default_loop(EVBACKEND_EPOLL);
  if (!loop) {
    fputs("phtarget: no epoll loop\n", stderr);
    return 2;
  }
  ev_io lw;
  ev_io_init(&lw, on_accept, listen_on(spec), EV_READ);
  ev_io_start(loop, &lw);
  ev_run(loop, 0);
  return 0;
}

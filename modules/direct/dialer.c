/* SPDX-License-Identifier: BSD-2-Clause */
#include "dialer.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/connector.h>

typedef struct attempt {
  dialer *d;
  int fd; /* -1 when not running */
  ph_io *io;
  int64_t deadline_ms;
} attempt;

struct dialer {
  const ph_api *api;
  ph_ctx *ctx;
  dialer_cb cb;
  void *arg;
  dialer_opts o;
  struct sockaddr_storage addrs[DIALER_MAX_ADDRS];
  size_t n_addrs, next; /* next address to try */
  attempt att[DIALER_MAX_ADDRS];
  size_t n_live;
  int64_t next_start_ms; /* when the next address starts anyway */
  ph_timer *timer;
  int code, err; /* most telling failure so far */
};

/* Higher is more telling for the client. */
static int code_rank(int code) {
  switch (code) {
  case PH_OPEN_CONNECTION_REFUSED:
    return 5;
  case PH_OPEN_HOST_UNREACHABLE:
    return 4;
  case PH_OPEN_TIMEOUT:
    return 3;
  case PH_OPEN_NETWORK_UNREACHABLE:
    return 2;
  default:
    return 1;
  }
}

int dialer_errno_code(int err) {
  switch (err) {
  case ECONNREFUSED:
    return PH_OPEN_CONNECTION_REFUSED;
  case ENETUNREACH:
  case ENETDOWN:
  case EAFNOSUPPORT:
    return PH_OPEN_NETWORK_UNREACHABLE;
  case EHOSTUNREACH:
  case EHOSTDOWN:
  case ECONNRESET:
  case EACCES:
  case EPERM:
    return PH_OPEN_HOST_UNREACHABLE;
  case ETIMEDOUT:
    return PH_OPEN_TIMEOUT;
  default:
    return PH_OPEN_INTERNAL_ERROR;
  }
}

static void note_failure(dialer *d, int code, int err) {
  if (code_rank(code) > code_rank(d->code)) {
    d->code = code;
    d->err = err;
  }
}

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
static int is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss->ss_family != AF_INET6)
    return 0;
  const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(a6) ||
         (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

static socklen_t sa_len(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                   : sizeof(struct sockaddr_in);
}

/* RFC 8305 section 4: alternate families, starting with the first one's,
 * keeping the order within each family. */
static size_t interleave(const struct sockaddr_storage *in, size_t n,
                         struct sockaddr_storage *out) {
  if (n == 0)
    return 0;
  sa_family_t first = in[0].ss_family;
  size_t ia = 0, ib = 0, k = 0; /* cursors: first family, the other */
  int turn_a = 1;
  while (k < DIALER_MAX_ADDRS) {
    while (ia < n && in[ia].ss_family != first)
      ia++;
    while (ib < n && in[ib].ss_family == first)
      ib++;
    if (ia >= n && ib >= n)
      break;
    if ((turn_a && ia < n) || ib >= n)
      out[k++] = in[ia++];
    else
      out[k++] = in[ib++];
    turn_a = !turn_a;
  }
  return k;
}

static void close_attempt(dialer *d, attempt *a) {
  if (a->fd < 0)
    return;
  d->api->io_free(a->io);
  close(a->fd);
  a->io = NULL;
  a->fd = -1;
  d->n_live--;
}

static void close_all(dialer *d) {
  for (size_t i = 0; i < d->n_addrs; i++)
    close_attempt(d, &d->att[i]);
  d->api->timer_set(d->timer, 0, 0);
}

/* Ends the dial; the callback may free d, so nothing follows it. */
static void succeed(dialer *d, attempt *win) {
  int fd = win->fd;
  d->api->io_free(win->io);
  win->io = NULL;
  win->fd = -1;
  d->n_live--;
  close_all(d);
  d->cb(d->arg, fd, PH_OPEN_OK, 0);
}

static void fail(dialer *d) {
  close_all(d);
  d->cb(d->arg, -1, d->code, d->err);
}

static void on_writable(ph_io *io, int fd, int revents, void *arg);

/* To a loopback address Linux runs the whole handshake inside the first
 * connect() (the SYN-ACK waits in the socket's backlog until connect
 * releases it), which still answers EINPROGRESS. A second connect()
 * tells the outcome at once: 0 when connected, the error when refused,
 * EALREADY when not done (a full accept queue: then the watcher waits as
 * usual). That one call replaces a watcher registration, a wake-up and
 * getsockopt(SO_ERROR), and the relay's watcher on the socket becomes an
 * EPOLL_CTL_ADD instead of a MOD away from EPOLLOUT. Elsewhere the
 * handshake takes a round trip and the call would only say EALREADY, so
 * it is not made. 0 when connected, else -1 with errno. */
static int connect_again(int fd, const struct sockaddr_storage *ss) {
  if (connect(fd, (const struct sockaddr *)ss, sa_len(ss)) == 0 ||
      errno == EISCONN)
    return 0;
  return -1;
}

/* Starts addresses until one is in progress (or connected); failures at
 * once move on to the next address. 1 when a connect completed at once
 * (then *won is set), else 0. */
static int launch_next(dialer *d, attempt **won) {
  while (d->next < d->n_addrs) {
    size_t i = d->next++;
    const struct sockaddr_storage *ss = &d->addrs[i];
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    IPPROTO_TCP);
    if (fd < 0) {
      note_failure(d, dialer_errno_code(errno), errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    attempt *a = &d->att[i];
    a->fd = fd;
    d->n_live++;
    int rc = connect(fd, (const struct sockaddr *)ss, sa_len(ss));
    if (rc < 0 && errno == EINPROGRESS && is_loopback(ss))
      rc = connect_again(fd, ss);
    if (rc == 0) {
      a->io = NULL;
      *won = a;
      return 1;
    }
    if (errno != EINPROGRESS && errno != EALREADY) {
      note_failure(d, dialer_errno_code(errno), errno);
      close(fd);
      a->fd = -1;
      d->n_live--;
      continue;
    }
    a->io = d->api->io_new(d->ctx, fd, PH_WRITE, on_writable, a);
    if (!a->io) {
      note_failure(d, PH_OPEN_INTERNAL_ERROR, ENOMEM);
      close(fd);
      a->fd = -1;
      d->n_live--;
      continue;
    }
    int64_t now = d->api->now_ms(d->ctx);
    a->deadline_ms = now + d->o.connect_timeout_ms;
    d->next_start_ms = now + d->o.delay_ms;
    return 0;
  }
  return 0;
}

/* Arms the timer for the nearest attempt deadline or next start. */
static void schedule(dialer *d) {
  int64_t when = INT64_MAX;
  for (size_t i = 0; i < d->n_addrs; i++)
    if (d->att[i].fd >= 0 && d->att[i].deadline_ms < when)
      when = d->att[i].deadline_ms;
  if (d->next < d->n_addrs && d->next_start_ms < when)
    when = d->next_start_ms;
  if (when == INT64_MAX) {
    d->api->timer_set(d->timer, 0, 0);
    return;
  }
  int64_t wait = when - d->api->now_ms(d->ctx);
  d->api->timer_set(d->timer, wait > 0 ? (uint64_t)wait : 1, 0);
}

/* After any event: start more, finish, or wait. */
static void advance(dialer *d, int start_now) {
  attempt *won = NULL;
  if ((start_now || d->n_live == 0) && launch_next(d, &won)) {
    succeed(d, won);
    return;
  }
  if (d->n_live == 0) {
    fail(d);
    return;
  }
  schedule(d);
}

static void on_writable(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)revents;
  attempt *a = arg;
  dialer *d = a->d;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    err = errno;
  if (err == 0) {
    succeed(d, a);
    return;
  }
  if (err == EINPROGRESS || err == EALREADY)
    return; /* spurious wake-up */
  note_failure(d, dialer_errno_code(err), err);
  close_attempt(d, a);
  advance(d, 1); /* a failure starts the next address at once */
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  dialer *d = arg;
  /* 1 ms of slack: the loop's timers run on its cached time. */
  int64_t now = d->api->now_ms(d->ctx) + 1;
  int timed_out = 0;
  for (size_t i = 0; i < d->n_addrs; i++) {
    attempt *a = &d->att[i];
    if (a->fd >= 0 && a->deadline_ms <= now) {
      note_failure(d, PH_OPEN_TIMEOUT, ETIMEDOUT);
      close_attempt(d, a);
      timed_out = 1;
    }
  }
  /* A timed-out attempt is a failure: the next address starts at once. */
  advance(d, timed_out || d->next_start_ms <= now);
}

dialer *dialer_new(const ph_api *api, ph_ctx *ctx,
                   const struct sockaddr_storage *addrs, size_t n,
                   const dialer_opts *o, dialer_cb cb, void *arg) {
  if (n == 0)
    return NULL;
  dialer *d = calloc(1, sizeof(*d));
  if (!d)
    return NULL;
  d->api = api;
  d->ctx = ctx;
  d->cb = cb;
  d->arg = arg;
  d->o = *o;
  d->code = PH_OPEN_INTERNAL_ERROR;
  d->n_addrs = interleave(addrs, n, d->addrs);
  for (size_t i = 0; i < DIALER_MAX_ADDRS; i++) {
    d->att[i].d = d;
    d->att[i].fd = -1;
  }
  d->timer = api->timer_new(ctx, on_timer, d);
  if (!d->timer) {
    free(d);
    return NULL;
  }
  return d;
}

void dialer_start(dialer *d) { advance(d, 1); }

void dialer_free(dialer *d) {
  if (!d)
    return;
  for (size_t i = 0; i < d->n_addrs; i++)
    close_attempt(d, &d->att[i]);
  d->api->timer_free(d->timer);
  free(d);
}

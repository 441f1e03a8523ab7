/* SPDX-License-Identifier: BSD-2-Clause */
/* echo: the endpoint a checker fetches through a proxy at the EGRESS tier
 * (issue 26, CP-6-4). An HTTP/1 listener (the frontend kit's listener)
 * that reads one request head (bounded, within read_timeout), answers it
 * with echo_answer.h's JSON (the peer address it sees, the request's
 * headers, the nonce the request carried) and closes. Nothing is logged
 * of a request (its headers are a client's); metrics count answers by
 * status class. Loop thread only. docs/user-guide/checker.md "The echo
 * endpoint". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <proxyhost/module.h>

#include "echo_answer.h"
#include "frontend/listener.h"
#include "lib/metric_table.h"

static const char *const class_names[] = {"ok", "client_error", "timeout",
                                          NULL};
enum { C_OK, C_CLIENT, C_TIMEOUT, N_CLASS };

typedef struct echo {
  ph_ctx *ctx;
  ph_listener *l;
  int64_t read_timeout_ms;
  ph_series *m_answers[N_CLASS];
} echo;

typedef struct echo_conn {
  echo *e;
  int fd;
  ph_io *io;
  ph_timer *timer;
  char peer[INET6_ADDRSTRLEN];
  size_t len, out_len, out_off;
  char in[ECHO_HEAD_MAX + 1];
  char *out;
} echo_conn;

static const ph_api *api;

static const ph_label_def class_label[] = {{"result", class_names}};
static const ph_metric_table echo_metrics[] = {
    PH_METRIC("proxyhost_echo_requests_total", PH_METRIC_COUNTER,
              "echo requests by result (ok: answered 200; client_error: "
              "a malformed, over-size or non-GET request; timeout: no "
              "whole head within read_timeout)",
              PH_METRIC_LABELS(class_label), PH_METRIC_NO_BUCKETS, echo,
              m_answers),
    PH_METRIC_END};

static void conn_end(echo_conn *c) {
  if (c->io)
    api->io_free(c->io);
  if (c->timer)
    api->timer_free(c->timer);
  close(c->fd);
  listener_release(c->e->l);
  free(c->out);
  free(c);
}

static void on_timeout(ph_timer *t, void *arg) {
  (void)t;
  echo_conn *c = arg;
  c->timer = NULL; /* freed below, from its own callback */
  api->timer_free(t);
  api->inc(c->e->m_answers[C_TIMEOUT], 1);
  conn_end(c);
}

static void write_some(echo_conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      api->io_set(c->io, PH_WRITE);
      return;
    }
    if (w <= 0)
      break;
    c->out_off += (size_t)w;
  }
  conn_end(c);
}

static void answer(echo_conn *c) {
  c->out = malloc(ECHO_ANSWER_MAX);
  if (!c->out) {
    conn_end(c);
    return;
  }
  int status = 0;
  c->out_len = echo_answer(c->in, c->len, c->peer, c->out, ECHO_ANSWER_MAX,
                           &status);
  api->inc(c->e->m_answers[status == 200 ? C_OK : C_CLIENT], 1);
  c->out_off = 0;
  write_some(c);
}

static void on_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  echo_conn *c = arg;
  if (c->out) {
    if (revents & PH_WRITE)
      write_some(c);
    return;
  }
  ssize_t n = recv(c->fd, c->in + c->len, ECHO_HEAD_MAX - c->len, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    conn_end(c);
    return;
  }
  c->len += (size_t)n;
  if (echo_head_complete(c->in, c->len) != ECHO_MORE ||
      c->len >= ECHO_HEAD_MAX)
    answer(c);
}

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  (void)peerlen;
  echo *e = arg;
  echo_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    listener_release(e->l);
    return;
  }
  c->e = e;
  c->fd = fd;
  if (peer->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr,
              c->peer, sizeof(c->peer));
  else if (peer->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr,
              c->peer, sizeof(c->peer));
  c->io = api->io_new(e->ctx, fd, PH_READ, on_io, c);
  c->timer = api->timer_new(e->ctx, on_timeout, c);
  if (!c->io || !c->timer) {
    conn_end(c);
    return;
  }
  api->timer_set(c->timer, (uint64_t)e->read_timeout_ms, 0);
}

/* The key table, generated from echo.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into echo_keys.c. */
extern const ph_conf_key echo_keys[];

static int echo_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  echo *e = calloc(1, sizeof(*e));
  if (!e)
    return PH_ENOMEM;
  *state = e;
  e->ctx = ctx;
  e->read_timeout_ms = a->conf_int(ctx, "read_timeout");
  return ph_metric_table_register(api, ctx, echo_metrics, e);
}

static int echo_start(void *state) {
  echo *e = state;
  char err[256];
  listener_opts o = {0};
  o.address = api->conf_str(e->ctx, "listen");
  o.backlog = 128;
  o.max_clients = (int)api->conf_int(e->ctx, "max_clients");
  o.on_accept = on_accept;
  o.arg = e;
  e->l = listener_open(api, e->ctx, &o, err, sizeof(err));
  if (!e->l) {
    PH_LOG(api, e->ctx, PH_LOG_ERROR, "echo listener not opened",
           PH_STR("reason", err));
    return PH_EINVAL;
  }
  listener_resume(e->l);
  PH_LOG(api, e->ctx, PH_LOG_INFO, "echo endpoint listening",
         PH_INT("port", listener_port(e->l)));
  return PH_OK;
}

static int echo_reload(void *state) {
  echo *e = state;
  e->read_timeout_ms = api->conf_int(e->ctx, "read_timeout");
  return PH_OK;
}

static int echo_stop(void *state) {
  echo *e = state;
  if (e->l)
    listener_pause(e->l);
  return PH_OK;
}

static void echo_destroy(void *state) {
  echo *e = state;
  if (!e)
    return;
  if (e->l)
    listener_close(e->l);
  free(e);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("echo", "1.0.0"),
    .description = "the checker's echo endpoint: answers GET with the "
                   "address it sees, the headers and the nonce",
    .config = echo_keys,
    .init = echo_init,
    .start = echo_start,
    .reload = echo_reload,
    .stop = echo_stop,
    .destroy = echo_destroy,
    .check = listener_check_listen,
};

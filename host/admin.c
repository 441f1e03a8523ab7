/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin HTTP listener (see admin.h).
 *
 * Everything runs on the loop thread. Each connection reads one request
 * head into a fixed 8 KiB buffer, answers it from memory, and closes:
 *
 *   READ  --head parsed or refused-->  WRITE  --all sent-->  DRAIN  --> closed
 *
 * A request for a module's route (ABI 1.3, routes.h) may carry a body
 * and is answered later by the module:
 *
 *   READ --> BODY (Content-Length bytes) --> WAIT (the module) --> WRITE
 *
 * In WAIT the socket is still read: end of file means the client went
 * away, and the module's request is cancelled. The deadline cancels it
 * too and answers 504.
 *
 * A single deadline (timeout_ms from accept) covers all three states; on
 * expiry the connection is closed wherever it is. A shorter one,
 * header_timeout_ms from accept, covers READ and BODY: a client that has
 * not sent its whole request by then is closed (issue 22 item 9: idle
 * connections are closed quickly).
 *
 * Slots (issue 22 item 9). The listener cannot tell, before a request has
 * arrived, whether it will be a health check or carry a valid token (the
 * token is checked by the module), so it keeps no fixed reserve. Instead
 * a slot held by a client that is not being served is always given up to
 * a newcomer: when all max_connections slots are taken, the new
 * connection replaces the one least worth keeping, in this order: one in
 * DRAIN (its response is already sent), one that has sent nothing, one
 * with a partial request (READ or BODY), and last one whose response the
 * client does not read (WRITE: a small response goes out at once, so only
 * a large one to a client that does not read stays there); the oldest
 * first within each. Idle connections thus cannot lock out /readyz,
 * /metrics or an authenticated API call, however fast they are re-opened:
 * the listener has TCP_DEFER_ACCEPT (a connection is handed to accept
 * only once its first bytes have come, or after header_timeout), and a
 * new connection is read at once when accepted, so a prompt client's
 * request is served before any later newcomer could take its slot. Only
 * when every slot is a request a module is working on (WAIT) is the
 * newcomer closed at once, without a response: that costs nothing and
 * cannot block (a 503 would need a write that might not complete). Each
 * such close is counted and logged (rate-limited).
 *
 * DRAIN is a lingering close: after the response, we shut down our side
 * and read and discard until the client closes. Closing a socket with
 * unread input makes the kernel send a reset, which can destroy the
 * response still queued at the client (for a 431 there always is unread
 * input). Draining is bounded by the deadline and by ADMIN_DRAIN_MAX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, SOCK_NONBLOCK, SOCK_CLOEXEC */
#endif
#include "admin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "admin_parse.h"
#include "log.h"
#include "routes.h"
#include "ui.h"

#define ADMIN_HEAD_MAX 8192
#define ADMIN_BACKLOG 64
#define ADMIN_ACCEPT_BATCH 64      /* accepts per callback, for fairness */
#define ADMIN_ACCEPT_PAUSE 0.1     /* seconds, after EMFILE and friends */
#define ADMIN_DRAIN_MAX (64 * 1024)
#define ADMIN_READY_MAX (64 * 1024)

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Why the listener closed a connection on its own (metric label). */
enum admin_close_reason {
  ADMIN_CLOSE_HEADER_TIMEOUT, /* no whole request within header_timeout */
  ADMIN_CLOSE_EVICTED,        /* its slot went to a new connection */
  ADMIN_CLOSE_FULL,           /* new, every slot a module's request */
  ADMIN_CLOSE_REASONS
};
static const char *const close_reasons[] = {"header_timeout", "evicted",
                                            "full", NULL};

typedef enum conn_state {
  CONN_READ,
  CONN_BODY,
  CONN_WAIT,
  CONN_WRITE,
  CONN_DRAIN
} conn_state;

typedef struct admin_conn {
  ph_admin *a;
  int fd;
  conn_state state;
  ev_io io;
  ev_timer deadline;
  ph_buf out; /* the whole response */
  size_t out_off;
  size_t drained;
  /* A module route's request: the head (pointing into in), its body,
   * the id routes gave it (0: none pending), and whether its answer came
   * while routes_dispatch was still running (then it is sent after). */
  admin_request req;
  char *body;
  size_t body_len, body_want;
  int64_t route_id;
  int dispatching, replied;
  int for_ui; /* the body is for the host's pages (ui.h), not a route */
  ev_tstamp opened; /* accepted at (loop time) */
  struct admin_conn *prev, *next;
  size_t in_len;
  char in[ADMIN_HEAD_MAX];
} admin_conn;

struct ph_admin {
  struct ev_loop *loop;
  int fd;
  int port;
  ev_io accept_io;
  ev_timer accept_pause;
  int max_connections;
  double timeout;
  double header_timeout;
  /* proxyhost_admin_connections_closed_total by reason; NULL: none. */
  ph_series *m_closed[ADMIN_CLOSE_REASONS];
  ph_ratelimit closed_rl;
  size_t max_body;
  ph_routes *routes;
  ph_ui *ui;
  ph_registry *registry;
  admin_ready_fn ready;
  void *ready_arg;
  admin_conn *conns;
  int n_conns;
};

/* ---- connections ------------------------------------------------------ */

/* Counts and logs (rate-limited) a connection the listener closed on its
 * own. Nothing from the request is logged: it may hold a token. */
static void count_close(ph_admin *a, enum admin_close_reason why) {
  if (a->m_closed[why])
    metrics_inc(a->m_closed[why], 1);
  ph_log_field f[] = {PH_STR("reason", close_reasons[why]),
                      PH_INT("max_connections", a->max_connections)};
  log_write_rl(NULL, &a->closed_rl, PH_LOG_WARN, "admin connection closed",
               f, 2);
}

static void conn_close(admin_conn *c) {
  ph_admin *a = c->a;
  if (c->route_id > 0) {
    int64_t id = c->route_id;
    c->route_id = 0;
    routes_cancel(a->routes, id); /* the client left, or we give up */
  }
  free(c->body);
  ev_io_stop(a->loop, &c->io);
  ev_timer_stop(a->loop, &c->deadline);
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    a->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  a->n_conns--;
  buf_free(&c->out);
  free(c);
}

/* Switches the io watcher to events (libev needs it stopped to change). */
static void conn_watch(admin_conn *c, int events) {
  if ((c->io.events & (EV_READ | EV_WRITE)) == events)
    return;
  ev_io_stop(c->a->loop, &c->io);
  ev_io_set(&c->io, c->fd, events);
  ev_io_start(c->a->loop, &c->io);
}

static void conn_drain(admin_conn *c) {
  char scratch[4096];
  for (;;) {
    ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0 || (c->drained += (size_t)n) > ADMIN_DRAIN_MAX) {
      conn_close(c);
      return;
    }
  }
}

static void conn_begin_drain(admin_conn *c) {
  buf_free(&c->out);
  c->state = CONN_DRAIN;
  shutdown(c->fd, SHUT_WR);
  conn_watch(c, EV_READ);
  conn_drain(c);
}

static void conn_write(admin_conn *c) {
  while (c->out_off < c->out.len) {
    ssize_t n = send(c->fd, c->out.data + c->out_off,
                     c->out.len - c->out_off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      conn_watch(c, EV_WRITE);
      return;
    }
    if (n < 0) {
      conn_close(c);
      return;
    }
    c->out_off += (size_t)n;
  }
  conn_begin_drain(c);
}

/* ---- responses -------------------------------------------------------- */

static const char *reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 204:
    return "No Content";
  case 303:
    return "See Other";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 409:
    return "Conflict";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 422:
    return "Unprocessable Content";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  case 505:
    return "HTTP Version Not Supported";
  }
  return "Unknown";
}

/* Formats the response into c->out. type NULL: no Content-Type. A 204
 * has neither a body nor a Content-Length (RFC 9110 8.6). -1 when it
 * did not fit. */
static int format_response(admin_conn *c, int status, const char *extra,
                           const char *type, const char *body,
                           size_t body_len, int head_only) {
  buf_printf(&c->out, "HTTP/1.1 %d %s\r\n", status, reason(status));
  if (type)
    buf_printf(&c->out, "Content-Type: %s\r\n", type);
  if (status != 204)
    buf_printf(&c->out, "Content-Length: %zu\r\n", body_len);
  buf_printf(&c->out, "%sConnection: close\r\n\r\n", extra);
  if (!head_only && status != 204)
    buf_append(&c->out, body, body_len);
  return c->out.overflow ? -1 : 0;
}

static void send_response(admin_conn *c) {
  if (c->out.overflow) {
    conn_close(c);
    return;
  }
  c->state = CONN_WRITE;
  conn_write(c);
}

/* Queues the response and starts sending it. head_only: HEAD, the
 * headers describe the body but it is left out. extra: more header
 * lines, each ending in CRLF, or "". */
static void respond(admin_conn *c, int status, const char *extra,
                    const char *type, const char *body, size_t body_len,
                    int head_only) {
  format_response(c, status, extra, type, body, body_len, head_only);
  send_response(c);
}

static void respond_text(admin_conn *c, int status, const char *text,
                         int head_only) {
  respond(c, status, "", TEXT_PLAIN, text, strlen(text), head_only);
}

static void serve_metrics(admin_conn *c, int head_only) {
  ph_buf body;
  buf_init(&body, 0);
  if (c->a->registry && metrics_render(c->a->registry, &body) < 0)
    respond_text(c, 500, "metrics rendering failed\n", head_only);
  else
    respond(c, 200, "", METRICS_TYPE, body.data ? body.data : "", body.len,
            head_only);
  buf_free(&body);
}

static void serve_ready(admin_conn *c, int head_only) {
  ph_admin *a = c->a;
  ph_buf why;
  buf_init(&why, ADMIN_READY_MAX);
  if (!a->ready || a->ready(a->ready_arg, &why) == 1) {
    respond_text(c, 200, "ready\n", head_only);
  } else {
    if (why.len == 0)
      buf_puts(&why, "not ready\n");
    else if (why.data[why.len - 1] != '\n')
      buf_puts(&why, "\n");
    /* A reason list past the limit is sent cut short, not dropped. */
    respond(c, 503, "", TEXT_PLAIN, why.data ? why.data : "", why.len,
            head_only);
  }
  buf_free(&why);
}

static int token_is(const char *p, size_t n, const char *want) {
  return n == strlen(want) && memcmp(p, want, n) == 0;
}

/* ---- modules' routes (ABI 1.3) ---------------------------------------- */

#define ROUTE_METHODS "GET, POST, PATCH, DELETE"

static int route_method(const admin_request *r) {
  return token_is(r->method, r->method_len, "GET") ||
         token_is(r->method, r->method_len, "POST") ||
         token_is(r->method, r->method_len, "PATCH") ||
         token_is(r->method, r->method_len, "DELETE");
}

/* The module's answer. While routes_dispatch runs (an answer inside the
 * handler) it is only formatted: the sending starts when dispatch has
 * returned, so that the connection cannot be freed under it. */
static void on_route_done(void *arg, int status, const char *type,
                          const char *body, size_t body_len) {
  admin_conn *c = arg;
  c->route_id = 0;
  format_response(c, status, "", type, body, body_len, 0);
  if (c->dispatching) {
    c->replied = 1;
    return;
  }
  send_response(c);
}

/* What a route or the host's pages get of a request. */
static routes_in request_in(const admin_conn *c, const admin_request *r) {
  routes_in in = {
      .method = r->method,
      .method_len = r->method_len,
      .path = r->path,
      .path_len = r->path_len,
      .query = r->query,
      .query_len = r->query_len,
      .authorization = r->authorization,
      .authorization_len = r->authorization_len,
      .content_type = r->content_type,
      .content_type_len = r->content_type_len,
      .body = c->body,
      .body_len = c->body_len,
  };
  return in;
}

/* The host's own pages (/ui/, /v1/status): answered at once. */
static void serve_ui(admin_conn *c, const admin_request *r) {
  ui_in in = {request_in(c, r), r->cookie, r->cookie_len};
  ui_out out = {0};
  buf_init(&out.head, 8192);
  buf_init(&out.body, 0);
  ui_serve(c->a->ui, &in, &out);
  free(c->body);
  c->body = NULL;
  respond(c, out.status, out.head.data ? out.head.data : "", out.type,
          out.body.data ? out.body.data : "", out.body.len,
          token_is(r->method, r->method_len, "HEAD"));
  buf_free(&out.head);
  buf_free(&out.body);
}

static void route_dispatch(admin_conn *c) {
  const admin_request *r = &c->req;
  if (c->for_ui) {
    serve_ui(c, r);
    return;
  }
  routes_in in = request_in(c, r);
  c->state = CONN_WAIT;
  conn_watch(c, EV_READ);
  c->dispatching = 1;
  int64_t id = routes_dispatch(c->a->routes, &in, on_route_done, c);
  c->dispatching = 0;
  free(c->body); /* routes copied it */
  c->body = NULL;
  if (id == PH_EFULL) {
    respond_text(c, 503, "too many requests in flight for this route\n", 0);
  } else if (id <= 0) {
    respond_text(c, 500, "the request could not be handed over\n", 0);
  } else if (c->replied) {
    send_response(c);
  } else {
    c->route_id = id;
  }
}

/* The head of a request for a module's route: check the method and the
 * framing, then read the body (part of it may have come with the head). */
static void route_module(admin_conn *c, const admin_request *r) {
  if (!c->for_ui && !route_method(r)) {
    const char *body = "method not allowed\n";
    respond(c, 405, "Allow: " ROUTE_METHODS "\r\n", TEXT_PLAIN, body,
            strlen(body), 0);
    return;
  }
  switch (admin_body_framing(r, c->a->max_body)) {
  case 400:
    respond_text(c, 400, "bad request: Transfer-Encoding with "
                         "Content-Length\n", 0);
    return;
  case 411:
    respond_text(c, 411, "length required: send the body with "
                         "Content-Length\n", 0);
    return;
  case 413:
    respond_text(c, 413, "content too large\n", 0);
    return;
  }
  c->req = *r;
  c->body_want = r->content_length > 0 ? (size_t)r->content_length : 0;
  c->body = malloc(c->body_want + 1);
  if (!c->body) {
    respond_text(c, 503, "out of memory\n", 0);
    return;
  }
  size_t have = c->in_len - r->head_len;
  if (have > c->body_want)
    have = c->body_want; /* a second request: not read (one per connection) */
  memcpy(c->body, c->in + r->head_len, have);
  c->body_len = have;
  if (c->body_len == c->body_want) {
    route_dispatch(c);
    return;
  }
  c->state = CONN_BODY;
}

static void conn_read_body(admin_conn *c) {
  ssize_t n = recv(c->fd, c->body + c->body_len, c->body_want - c->body_len,
                   0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    conn_close(c); /* the client left before its whole body */
    return;
  }
  c->body_len += (size_t)n;
  if (c->body_len == c->body_want)
    route_dispatch(c);
}

/* While the module works: anything more from the client is discarded
 * (bounded), and end of file is the client leaving. */
static void conn_read_wait(admin_conn *c) {
  char scratch[1024];
  ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0 || (c->drained += (size_t)n) > ADMIN_DRAIN_MAX)
    conn_close(c); /* cancels the module's request */
}

static int under_v1(const admin_request *r) {
  return r->path_len >= 4 && memcmp(r->path, "/v1/", 4) == 0;
}

/* Every resource takes the same methods, so the method is checked first:
 * POST to an unknown path is a 405, not a 404. */
static void route(admin_conn *c, const admin_request *r) {
  int head = token_is(r->method, r->method_len, "HEAD");
  if (!head && !token_is(r->method, r->method_len, "GET")) {
    const char *body = "method not allowed\n";
    respond(c, 405, "Allow: GET, HEAD\r\n", TEXT_PLAIN, body, strlen(body),
            0);
  } else if (token_is(r->path, r->path_len, "/metrics")) {
    serve_metrics(c, head);
  } else if (token_is(r->path, r->path_len, "/healthz")) {
    respond_text(c, 200, "ok\n", head);
  } else if (token_is(r->path, r->path_len, "/readyz")) {
    serve_ready(c, head);
  } else {
    respond_text(c, 404, "not found\n", head);
  }
}

/* ---- reading ---------------------------------------------------------- */

static void conn_read(admin_conn *c) {
  ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    conn_close(c); /* error, or the client left before a whole head */
    return;
  }
  c->in_len += (size_t)n;
  admin_request req;
  /* The buffer is never full while INCOMPLETE, so recv always has room. */
  switch (admin_parse_head(c->in, c->in_len, sizeof(c->in), &req)) {
  case ADMIN_PARSE_INCOMPLETE:
    break;
  case ADMIN_PARSE_DONE:
    if (c->a->ui && ui_owns(req.path, req.path_len)) {
      c->for_ui = ui_takes_body(req.method, req.method_len, req.path,
                                req.path_len);
      if (c->for_ui)
        route_module(c, &req); /* the body first, then serve_ui */
      else
        serve_ui(c, &req);
    } else if (under_v1(&req) && routes_match(c->a->routes, req.path, req.path_len))
      route_module(c, &req);
    else if (under_v1(&req) && route_method(&req))
      respond_text(c, 404, "not found\n", 0);
    else
      route(c, &req);
    break;
  case ADMIN_PARSE_BAD:
    respond_text(c, 400, "bad request\n", 0);
    break;
  case ADMIN_PARSE_TOO_LARGE:
    respond_text(c, 431, "request header fields too large\n", 0);
    break;
  case ADMIN_PARSE_VERSION:
    respond_text(c, 505, "http version not supported\n", 0);
    break;
  }
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop;
  (void)revents;
  admin_conn *c = w->data;
  switch (c->state) {
  case CONN_READ:
    conn_read(c);
    break;
  case CONN_BODY:
    conn_read_body(c);
    break;
  case CONN_WAIT:
    conn_read_wait(c);
    break;
  case CONN_WRITE:
    conn_write(c);
    break;
  case CONN_DRAIN:
    conn_drain(c);
    break;
  }
}

/* Seconds a 504 gets to be sent after the deadline cancelled a module's
 * request. */
#define ADMIN_LATE_WRITE 1.0

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)revents;
  admin_conn *c = w->data;
  ph_admin *a = c->a;
  if (c->state == CONN_READ || c->state == CONN_BODY) {
    if (a->header_timeout < a->timeout)
      count_close(a, ADMIN_CLOSE_HEADER_TIMEOUT);
    conn_close(c);
    return;
  }
  /* The timer first fires at header_timeout: a request that came whole
   * before it has the rest of the whole-request deadline. */
  double left = a->timeout - (ev_now(loop) - c->opened);
  if (left > 0.001) {
    ev_timer_set(&c->deadline, left, 0.);
    ev_timer_start(loop, &c->deadline);
    return;
  }
  if (c->state == CONN_WAIT && c->route_id > 0) {
    int64_t id = c->route_id;
    c->route_id = 0;
    routes_cancel(c->a->routes, id);
    ev_timer_set(&c->deadline, ADMIN_LATE_WRITE, 0.);
    ev_timer_start(loop, &c->deadline);
    respond_text(c, 504, "the module did not answer in time\n", 0);
    return;
  }
  conn_close(c);
}

static void conn_open(ph_admin *a, int fd) {
  admin_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    return;
  }
  c->a = a;
  c->fd = fd;
  c->state = CONN_READ;
  buf_init(&c->out, 0);
  ev_io_init(&c->io, on_conn_io, fd, EV_READ);
  c->io.data = c;
  c->opened = ev_now(a->loop);
  ev_timer_init(&c->deadline, on_deadline,
                a->header_timeout < a->timeout ? a->header_timeout
                                               : a->timeout,
                0.);
  c->deadline.data = c;
  c->next = a->conns;
  if (a->conns)
    a->conns->prev = c;
  a->conns = c;
  a->n_conns++;
  ev_io_start(a->loop, &c->io);
  ev_timer_start(a->loop, &c->deadline);
  conn_read(c); /* a prompt client's request is often there already */
}

/* How readily a connection gives its slot to a new one (lower first);
 * -1: a request being served, kept. See the top of the file. */
static int conn_rank(const admin_conn *c) {
  switch (c->state) {
  case CONN_DRAIN:
    return 0;
  case CONN_READ:
    return c->in_len == 0 ? 1 : 2;
  case CONN_BODY:
    return 2;
  case CONN_WRITE:
    return 3;
  case CONN_WAIT:
    break;
  }
  return -1;
}

/* The connection to close for a newcomer, or NULL. The list is newest
 * first, so "<=" leaves the oldest of the best rank. */
static admin_conn *pick_victim(ph_admin *a) {
  admin_conn *victim = NULL;
  int best = 4;
  for (admin_conn *c = a->conns; c; c = c->next) {
    int r = conn_rank(c);
    if (r >= 0 && r <= best) {
      victim = c;
      best = r;
    }
  }
  return victim;
}

/* ---- listener --------------------------------------------------------- */

/* Out of descriptors or memory: the listener would stay readable and spin
 * the loop, so stop accepting for a moment. */
static void pause_accept(ph_admin *a) {
  ev_io_stop(a->loop, &a->accept_io);
  ev_timer_set(&a->accept_pause, ADMIN_ACCEPT_PAUSE, 0.);
  ev_timer_start(a->loop, &a->accept_pause);
}

static void on_accept_pause(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)revents;
  ph_admin *a = w->data;
  ev_io_start(loop, &a->accept_io);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop;
  (void)revents;
  ph_admin *a = w->data;
  for (int i = 0; i < ADMIN_ACCEPT_BATCH; i++) {
    int fd = accept4(a->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM)
        pause_accept(a);
      return;
    }
    if (a->n_conns >= a->max_connections) {
      admin_conn *victim = pick_victim(a);
      if (!victim) {
        count_close(a, ADMIN_CLOSE_FULL);
        close(fd);
        continue;
      }
      count_close(a, ADMIN_CLOSE_EVICTED);
      conn_close(victim);
    }
    conn_open(a, fd);
  }
}

/* "1.2.3.4:port" or "[v6]:port", numeric only. */
static int bound_port(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
    return -1;
  if (ss.ss_family == AF_INET)
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

int admin_check_listen(const char *listen_on, char *why, size_t whylen) {
  struct sockaddr_storage ss;
  socklen_t len;
  return addr_parse_listen(listen_on, &ss, &len, why, whylen) ? -1 : 0;
}

static int open_listener(const char *listen_on, ph_buf *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  char why[160];
  if (addr_parse_listen(listen_on, &ss, &len, why, sizeof(why)) != 0) {
    buf_printf(err, "admin listen %s", why);
    return -1;
  }
  const char *step = "socket";
  int one = 1;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    goto fail;
  step = "setsockopt";
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
    goto fail;
  /* "[::]:PORT" means IPv6 only; IPv4 needs its own address. */
  if (ss.ss_family == AF_INET6 &&
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
    goto fail;
  step = "bind";
  if (bind(fd, (struct sockaddr *)&ss, len) < 0)
    goto fail;
  step = "listen";
  if (listen(fd, ADMIN_BACKLOG) < 0)
    goto fail;
  return fd;
fail:;
  int e = errno;
  buf_printf(err, "admin listen %s: %s: %s", listen_on, step, strerror(e));
  int port = ntohs(ss.ss_family == AF_INET6
                       ? ((struct sockaddr_in6 *)&ss)->sin6_port
                       : ((struct sockaddr_in *)&ss)->sin_port);
  if (strcmp(step, "bind") == 0 && e == EADDRINUSE)
    buf_printf(err, "; see who holds it: ss -ltnp 'sport = :%d'", port);
  else if (strcmp(step, "bind") == 0 && e == EACCES && port < 1024 &&
           geteuid() != 0)
    buf_puts(err, "; a port below 1024 needs root or CAP_NET_BIND_SERVICE "
                  "(or a lower net.ipv4.ip_unprivileged_port_start)");
  if (fd >= 0)
    close(fd);
  return -1;
}

/* Connections that have sent nothing wait in the kernel, not in a slot,
 * for up to header_timeout (whole seconds, at least 1). Best effort: a
 * system without it only loses that head start. */
static void defer_accept(int fd, double header_timeout) {
  int secs = (int)header_timeout + 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
}

static int check_opts(const ph_admin_opts *o, ph_buf *err) {
  if (!o || !o->listen || !o->listen[0]) {
    buf_puts(err, "admin listen: no address");
    return -1;
  }
  if (o->max_connections < 1) {
    buf_printf(err, "admin: max_connections must be at least 1, got %d",
               o->max_connections);
    return -1;
  }
  if (o->timeout_ms < 1) {
    buf_printf(err, "admin: timeout_ms must be at least 1, got %d",
               o->timeout_ms);
    return -1;
  }
  if (o->header_timeout_ms < 0) {
    buf_printf(err, "admin: header_timeout_ms must not be negative, got %d",
               o->header_timeout_ms);
    return -1;
  }
  return 0;
}

/* proxyhost_admin_connections_closed_total{reason}. Two listeners on one
 * registry share it: the same definition registered again gives the same
 * series. */
static void register_metrics(ph_admin *a) {
  if (!a->registry)
    return;
  static const ph_label_def reason_label[] = {{"reason", close_reasons}};
  ph_metric_def d = {"proxyhost_admin_connections_closed_total",
                     "Admin connections the listener closed on its own: no "
                     "whole request within header_timeout, slot given to a "
                     "new connection, or every slot a module's request",
                     PH_METRIC_COUNTER, reason_label, 1, NULL, 0};
  ph_buf err;
  buf_init(&err, 0);
  ph_metric *m = metrics_register(a->registry, &d, &err);
  buf_free(&err);
  for (int i = 0; m && i < ADMIN_CLOSE_REASONS; i++) {
    const char *v[] = {close_reasons[i]};
    a->m_closed[i] = metrics_series(m, v);
  }
}

ph_admin *admin_start(struct ev_loop *loop, const ph_admin_opts *o,
                      ph_buf *err) {
  if (check_opts(o, err) < 0)
    return NULL;
  int fd = open_listener(o->listen, err);
  if (fd < 0)
    return NULL;
  ph_admin *a = calloc(1, sizeof(*a));
  if (!a) {
    buf_puts(err, "admin: out of memory");
    close(fd);
    return NULL;
  }
  a->loop = loop;
  a->fd = fd;
  a->port = bound_port(fd);
  a->max_connections = o->max_connections;
  a->timeout = o->timeout_ms / 1000.0;
  /* 0: only the whole-request deadline. */
  a->header_timeout = o->header_timeout_ms > 0 ? o->header_timeout_ms / 1000.0
                                               : a->timeout;
  a->max_body = o->max_body;
  a->routes = o->routes;
  a->ui = o->ui;
  a->registry = o->registry;
  a->ready = o->ready;
  a->ready_arg = o->ready_arg;
  defer_accept(fd, a->header_timeout);
  register_metrics(a);
  ev_io_init(&a->accept_io, on_accept, fd, EV_READ);
  a->accept_io.data = a;
  ev_timer_init(&a->accept_pause, on_accept_pause, ADMIN_ACCEPT_PAUSE, 0.);
  a->accept_pause.data = a;
  ev_io_start(loop, &a->accept_io);
  return a;
}

int admin_port(const ph_admin *a) { return a ? a->port : -1; }

int admin_addr(const ph_admin *a, struct sockaddr_storage *ss,
               socklen_t *len) {
  *len = sizeof(*ss);
  return a && getsockname(a->fd, (struct sockaddr *)ss, len) == 0 ? 0 : -1;
}

void admin_stop(ph_admin *a) {
  if (!a)
    return;
  ev_io_stop(a->loop, &a->accept_io);
  ev_timer_stop(a->loop, &a->accept_pause);
  close(a->fd);
  while (a->conns)
    conn_close(a->conns);
  free(a);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: the dispatcher, the only file that acts on a connection.
 * Every event comes in here (the client's watcher, the timer, the
 * hangup probe, the check's, the open's and the relay's answers and the
 * stop, through the session skeleton; the upstream's watcher or stream
 * directly), is turned into a first action by the phase it belongs to,
 * and hp_conn_run carries the actions out, one phase function after the
 * other, each returning the next (enum hp_next), until the connection
 * waits (the watchers are set for its state) or is closed. */
#include <stdlib.h>

#include "http_proxy_int.h"

static void upstream_stream(ph_stream *s, int revents, void *arg);
static void upstream_io(ph_io *io, int fd, int revents, void *arg);

/* Asks the loop for the events the connection's state needs. */
static void update_io(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  int ce = 0, ue = 0;
  size_t max = hp_buf_max(h);
  switch (c->state) {
  case S_HEAD:
    ce = PH_READ;
    break;
  case S_AUTH:
  case S_OPEN:
    /* Watch for the client going away; keep what it sends (bounded).
     * With a full buffer the skeleton probes for its hangup instead; so
     * too once a read would compact cin: that would move the request
     * head, which the connector's open may still read (its headers). */
    if (hp_pending(&c->cin) < max &&
        !(c->cin.len == c->cin.cap && c->cin.off > 0))
      ce = PH_READ;
    break;
  case S_EXCHANGE:
    if (x->up_state != U_DONE && !x->req_body.done &&
        hp_pending(&c->cin) < max)
      ce |= PH_READ;
    if (hp_pending(&c->cout) || hp_forward_response_ready(c))
      ce |= PH_WRITE;
    if (x->up_state == U_HEAD || hp_forward_request_ready(c))
      ue |= PH_WRITE;
    if ((x->down_state == D_HEAD && !hp_pending(&c->cout)) ||
        (x->down_state == D_BODY && !x->resp_body.done &&
         hp_pending(&x->uin) < max))
      ue |= PH_READ;
    break;
  case S_REPLY:
    ce = PH_WRITE;
    break;
  case S_LINGER:
    ce = PH_READ;
    break;
  default: /* S_TUNNEL: the relay has both ends */
    break;
  }
  if (c->up.idle)
    ue = PH_READ; /* a kept upstream: notice it closing */
  frontend_session_watch(&c->fs, ce);
  if (c->up.io && ue != c->up.ev) {
    hp_api->io_set(c->up.io, ue);
    c->up.ev = ue;
  } else if (c->up.st && ue != c->up.ev) {
    ph_stream_watch(c->up.st, ue, upstream_stream, c);
    c->up.ev = ue;
  }
}

/* HP_PUMP: writes what the client should get, and moves on what that
 * frees: the end of our reply, or the next part of the response. */
static int pump(conn *c) {
  int f = hp_flush_client(c);
  if (f < 0)
    return HP_CLOSE;
  if (f == 0)
    return HP_WAIT;
  if (c->state == S_REPLY)
    return hp_reply_done(c);
  if (c->state == S_EXCHANGE)
    return hp_forward_response(c);
  return HP_WAIT;
}

/* HP_ATTACH: a socket upstream gets a watcher (a stream is watched with
 * ph_stream_watch in update_io). */
static int attach_upstream(conn *c) {
  if (!c->up.st &&
      !(c->up.io = hp_api->io_new(c->hp->ctx, c->up.fd, 0, upstream_io, c)))
    return hp_want_reply(c, 502, AFTER_CLOSE);
  return hp_open_attached(c);
}

/* Carries actions out until the connection waits or is gone. Each phase
 * function returns the next; none calls another phase back. */
static void hp_conn_run(conn *c, int next) {
  while (!hp_conn_dead(c)) {
    switch (next) {
    case HP_WAIT:
      update_io(c);
      return;
    case HP_CLOSE:
      frontend_session_close(&c->fs, FRONTEND_END_LOG); /* hp_conn_end */
      return;
    case HP_BEGIN:
      next = hp_request_begin(c);
      break;
    case HP_PARSE:
      next = hp_request_parse(c);
      break;
    case HP_AUTHORIZE:
      next = hp_auth_check(c);
      break;
    case HP_PROCEED:
      next = hp_open_proceed(c);
      break;
    case HP_OPEN:
      next = hp_open_start(c);
      break;
    case HP_ATTACH:
      next = attach_upstream(c);
      break;
    case HP_EXCHANGE:
      next = hp_forward_start(c);
      break;
    case HP_REPLY:
      next = hp_reply_start(c);
      break;
    case HP_PUMP:
      next = pump(c);
      break;
    case HP_TUNNEL:
      next = hp_tunnel_start(c);
      break;
    default: /* fail closed */
      next = HP_CLOSE;
      break;
    }
  }
}

/* ---- events in ---------------------------------------------------------- */

/* The client's socket is readable: what the state does with its bytes. */
static int client_read(conn *c) {
  hp *h = c->hp;
  size_t got = 0;
  int r;
  switch (c->state) {
  case S_HEAD:
    return hp_request_read(c);
  case S_AUTH:
  case S_OPEN: /* kept (bounded) for the request; EOF cancels */
    r = hp_buf_read(hp_client_end(c), &c->cin, hp_buf_max(h), &c->x.cdec,
                    &got);
    return r == RD_EOF || r == RD_ERROR ? HP_CLOSE : HP_WAIT;
  case S_EXCHANGE:
    r = hp_buf_read(hp_client_end(c), &c->cin, hp_buf_max(h), &c->x.cdec,
                    &got);
    if (r == RD_EOF || r == RD_ERROR)
      return HP_CLOSE; /* the request body was cut short */
    if (r != RD_DATA)
      return HP_WAIT;
    c->last_ms = hp_api->now_ms(h->ctx);
    return hp_forward_request_body(c);
  case S_LINGER:
    return hp_reply_linger_read(c);
  default:
    return HP_WAIT;
  }
}

static void on_client_io(void *owner, int revents) {
  conn *c = owner;
  int next = HP_WAIT;
  if (revents & PH_READ)
    next = client_read(c);
  if (next == HP_WAIT && (revents & PH_WRITE) &&
      (c->state == S_EXCHANGE || c->state == S_REPLY))
    next = HP_PUMP;
  hp_conn_run(c, next);
}

/* T_IDLE: idle_timeout since the last byte either way. */
static int idle_check(conn *c) {
  hp *h = c->hp;
  int64_t idle = hp_api->now_ms(h->ctx) - c->last_ms;
  if (idle < h->conf.idle_timeout_ms) {
    frontend_session_deadline(&c->fs, h->conf.idle_timeout_ms - idle);
    return HP_WAIT;
  }
  if (c->state == S_EXCHANGE || c->state == S_OPEN || c->state == S_AUTH)
    return hp_fail_exchange(c, 504, PH_LEASE_END_TIMEOUT);
  return HP_CLOSE;
}

static void on_deadline(void *owner) {
  conn *c = owner;
  hp *h = c->hp;
  int next = HP_WAIT;
  switch (c->timer_kind) {
  case T_HEADER:
    hp_request_guess_class(c);
    next = hp_want_reply(c, 408, AFTER_CLOSE);
    break;
  case T_NEXT:
    hp_arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
    next = HP_PARSE;
    break;
  case T_KEEPALIVE:
  case T_LINGER:
    next = HP_CLOSE;
    break;
  case T_IDLE:
    next = idle_check(c);
    break;
  default:
    break;
  }
  hp_conn_run(c, next);
}

/* The client left while it was not read (a full buffer during a check
 * or an open): closing cancels them. */
static void on_hangup(void *owner) { hp_conn_run(owner, HP_CLOSE); }

static void on_auth_done(void *owner, int verdict) {
  conn *c = owner;
  hp_conn_run(c, hp_auth_result(c, verdict));
}

static void on_open_done(void *owner, int code, int stage, stream_end up,
                         ph_open_lease *lease) {
  conn *c = owner;
  c->open_stage = stage;
  c->open_code = code;
  c->open_failed = code != PH_OPEN_OK;
  hp_conn_run(c, hp_open_result(c, code, up, lease));
}

static void on_relay_done(void *owner, const relay_stats *st, int end) {
  conn *c = owner;
  (void)end;
  hp_conn_run(c, hp_tunnel_done(c, st));
}

/* The module stops: the connections that wait for a request head (idle,
 * or with half a head: a client is not waited for) close; the others
 * finish their request (without keep-alive) or their tunnel. A complete
 * pipelined head (T_NEXT) is served. */
static void on_stop(void *owner) {
  conn *c = owner;
  if (c->state == S_HEAD && c->timer_kind != T_NEXT)
    hp_conn_run(c, HP_CLOSE);
}

/* Once per connection, before the skeleton releases its parts: the log
 * line, and what only http_proxy holds. */
static void hp_conn_end(void *owner, int how) {
  conn *c = owner;
  if (how == FRONTEND_END_LOG)
    hp_access_log(c);
  hp_close_upstream(c, c->up_how); /* the reason the phase gave */
  hp_buf_free(&c->cin);
  hp_buf_free(&c->cout);
  hp_buf_free(&c->x.uin);
  hp_buf_free(&c->x.uout);
  hp_buf_wipe(&c->x.upx);
  hp_head_free(&c->req);
  hp_head_free(&c->x.resp);
  hp_wipe_free(&c->cred.token, &c->cred.token_len);
  hp_wipe_free(&c->cred.pending_token, &c->cred.pending_len);
}

static void hp_conn_free(void *owner) { free(owner); }

const frontend_session_ops hp_conn_ops = {
    .client_io = on_client_io,
    .deadline = on_deadline,
    .hangup = on_hangup,
    .auth_done = on_auth_done,
    .open_done = on_open_done,
    .relay_done = on_relay_done,
    .stop = on_stop,
    .end = hp_conn_end,
    .free = hp_conn_free,
};

/* The upstream's events: entries of their own. */
static void upstream_event(conn *c, int revents) {
  frontend_session_enter(&c->fs);
  hp_conn_run(c, hp_forward_upstream(c, revents));
  frontend_session_leave(&c->fs);
}

static void upstream_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  upstream_event(arg, revents);
}

static void upstream_stream(ph_stream *s, int revents, void *arg) {
  (void)s;
  upstream_event(arg, revents);
}

void hp_conn_accept(hp *h, int fd, const struct sockaddr *peer,
                    socklen_t peerlen) {
  if (!frontend_server_admit(&h->fs, fd, peer))
    return; /* not in allow_clients: closed, nothing read */
  conn *c = calloc(1, sizeof(*c));
  if (!c) {
    frontend_server_refuse(&h->fs, fd);
    return;
  }
  c->hp = h;
  c->up.fd = -1;
  c->up_how = PH_LEASE_END_CLIENT_ERROR;
  c->first = 1;
  c->open_headers.get = hp_request_header;
  c->open_headers.arg = c;
  if (frontend_session_start(&h->fs, &c->fs, c, fd, peer, peerlen) !=
      PH_OK) {
    frontend_session_close(&c->fs, FRONTEND_END_QUIET);
    return;
  }
  c->fs.headers = &c->open_headers; /* every open offers the head's */
  frontend_session_enter(&c->fs);
  int next = hp_request_begin(c);
  if (next == HP_WAIT) {
    c->first = 0; /* later heads wait for idle_timeout first */
    /* A client usually sends its request right after connecting: read
     * it now rather than one loop iteration (and an epoll_wait) later. */
    next = client_read(c);
    if (next == HP_WAIT && c->state == S_HEAD && hp_pending(&c->cin) == 0)
      hp_buf_free(&c->cin); /* nothing yet: an idle connection holds no
                               buffer */
  }
  hp_conn_run(c, next);
  frontend_session_leave(&c->fs);
}

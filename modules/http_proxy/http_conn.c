/* http_proxy: a client connection's life. Accepting it, asking the loop
 * for the events its state needs, dispatching those events and its timer,
 * writing to the client, counting and logging each request, and freeing
 * it all at the end (http_proxy_int.h tells when). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hangup.h"
#include "http_proxy_int.h"

static int status_class(int status) {
  if (status < 300)
    return SC_2XX;
  if (status < 400)
    return SC_3XX;
  if (status < 500)
    return SC_4XX;
  return SC_5XX;
}

/* S_AUTH, S_OPEN: the client is not read (its buffer is full), so its
 * leaving is probed for (hangup.h). */
static int probing(const conn *c) {
  return (c->state == S_AUTH || c->state == S_OPEN) && !(c->cev & PH_READ);
}

void update_io(conn *c) {
  hp *h = c->hp;
  int ce = 0, ue = 0;
  size_t max = buf_max(h);
  switch (c->state) {
  case S_HEAD:
    ce = PH_READ;
    break;
  case S_AUTH:
  case S_OPEN:
    /* Watch for the client going away; keep what it sends (bounded). */
    if (pending(&c->cin) < max)
      ce = PH_READ;
    break;
  case S_EXCHANGE:
    if (c->up_state != U_DONE && !c->req_body.done &&
        pending(&c->cin) < max)
      ce |= PH_READ;
    if (pending(&c->cout) || response_body_ready(c))
      ce |= PH_WRITE;
    if (c->up_state == U_HEAD || request_body_ready(c))
      ue |= PH_WRITE;
    if ((c->down_state == D_HEAD && !pending(&c->cout)) ||
        (c->down_state == D_BODY && !c->resp_body.done &&
         pending(&c->uin) < max))
      ue |= PH_READ;
    break;
  case S_REPLY:
    ce = PH_WRITE;
    break;
  case S_LINGER:
    ce = PH_READ;
    break;
  default:
    break;
  }
  if (c->up_idle)
    ue = PH_READ; /* a kept upstream: notice it closing */
  if (c->cio && ce != c->cev) {
    int was_probing = probing(c);
    hp_api->io_set(c->cio, ce);
    c->cev = ce;
    if (probing(c) && !was_probing)
      hp_api->timer_set(c->timer, HANGUP_PROBE_MS, 0); /* T_IDLE goes on */
  }
  if (c->uio && ue != c->uev) {
    hp_api->io_set(c->uio, ue);
    c->uev = ue;
  } else if (c->ust && ue != c->uev) {
    ph_stream_watch(c->ust, ue, upstream_stream, c);
    c->uev = ue;
  }
}

void arm_timer(conn *c, int kind, int64_t ms) {
  if (!c->timer)
    return; /* closed */
  if (kind == T_IDLE && probing(c) && ms > HANGUP_PROBE_MS)
    ms = HANGUP_PROBE_MS; /* idle_check keeps counting idle_timeout */
  c->timer_kind = kind;
  c->last_ms = hp_api->now_ms(c->hp->ctx);
  hp_api->timer_set(c->timer, (uint64_t)(ms > 0 ? ms : 1), 0);
}

void close_upstream(conn *c) {
  if (c->uio) {
    hp_api->io_free(c->uio);
    c->uio = NULL;
    c->uev = 0;
  }
  if (c->ufd >= 0) {
    close(c->ufd);
    c->ufd = -1;
  }
  if (c->ust) {
    ph_stream_close(c->ust);
    c->ust = NULL;
    c->uev = 0;
  }
  if (c->up_active) {
    hp_api->gauge_add(c->hp->sm.active, -1);
    c->up_active = 0;
  }
  c->up_idle = 0;
  c->up_host[0] = '\0';
}

void wipe_free(char **p, size_t *len) {
  if (*p) {
    explicit_bzero(*p, *len);
    free(*p);
  }
  *p = NULL;
  *len = 0;
}

void count_status(conn *c, int status) {
  c->status = status;
  if (!c->counted) {
    c->counted = 1;
    hp_api->inc(c->hp->requests[c->method_class][status_class(status)], 1);
  }
}

void access_log(conn *c) {
  hp *h = c->hp;
  if (!c->counted)
    return;
  PH_LOG(hp_api, h->ctx, PH_LOG_INFO, "http request",
         PH_STR("method_class", hp_method_classes[c->method_class]),
         PH_INT("status", c->status), PH_UINT("bytes_up", c->bytes_up),
         PH_UINT("bytes_down", c->bytes_down),
         PH_UINT("duration_us", c->t_req_us ? now_us() - c->t_req_us : 0));
}

static void conn_unlink(conn *c) {
  hp *h = c->hp;
  if (c->prev)
    c->prev->next = c->next;
  else
    h->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  h->n_conns--;
  hp_api->gauge_add(h->m_clients, -1);
  if (h->listener)
    listener_release(h->listener);
  if (h->stopping && h->stop_pending && h->n_conns == 0) {
    h->stop_pending = 0;
    hp_api->stop_done(h->ctx);
  }
}

/* Everything but the memory: after this the conn is inert. */
static void conn_release(conn *c) {
  hp *h = c->hp;
  int64_t open_id = c->open_id, auth_id = c->auth_id;
  c->open_id = c->auth_id = 0;
  c->state = S_CLOSED;
  if (open_id > 0)
    h->connector->cancel(h->connector_self, open_id);
  if (auth_id > 0 && h->authorizer)
    h->authorizer->cancel(h->authorizer_self, auth_id);
  if (c->relay) {
    relay_abort(c->relay);
    c->relay = NULL;
  }
  close_upstream(c);
  if (c->cio)
    hp_api->io_free(c->cio);
  c->cio = NULL;
  c->cev = 0;
  if (c->cfd >= 0)
    close(c->cfd);
  c->cfd = -1;
  if (c->timer)
    hp_api->timer_free(c->timer);
  c->timer = NULL;
  buf_free(&c->cin);
  buf_free(&c->cout);
  buf_free(&c->uin);
  buf_free(&c->uout);
  hh_free(&c->req);
  hh_free(&c->resp);
  wipe_free(&c->token, &c->token_len);
  wipe_free(&c->pending_token, &c->pending_len);
  conn_unlink(c);
}

void conn_free(conn *c) {
  if (conn_dead(c))
    return;
  conn_release(c);
  if (guard_end(&c->g))
    free(c);
}

int conn_close(conn *c) {
  if (!conn_dead(c)) {
    access_log(c);
    conn_free(c);
  }
  return GONE;
}

void conn_enter(conn *c) { guard_enter(&c->g); }

void conn_leave(conn *c) {
  if (guard_leave(&c->g))
    free(c);
}

static int flush_cout(conn *c) {
  while (pending(&c->cout)) {
    ssize_t w = send_some(client_end(c), c->cout.data + c->cout.off,
                          pending(&c->cout));
    if (w < 0)
      return conn_close(c);
    if (w == 0)
      return 0;
    c->cout.off += (size_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    if (c->state == S_EXCHANGE) {
      c->resp_started = 1;
      c->bytes_down += (uint64_t)w;
      hp_api->inc(c->hp->sm.bytes[SM_DOWN], (uint64_t)w);
    }
  }
  c->cout.off = c->cout.len = 0;
  return 0;
}

/* Writes our reply, or the response, to the client, and moves the
 * exchange on when a part of it is out. */
int pump_client(conn *c) {
  for (;;) {
    if (conn_dead(c))
      return GONE;
    if (flush_cout(c) == GONE)
      return GONE;
    if (pending(&c->cout))
      return 0;
    if (c->state == S_REPLY)
      return reply_done(c);
    if (c->state != S_EXCHANGE)
      return 0;
    int r = forward_response(c);
    if (r != FORWARD_AGAIN)
      return r;
  }
}

int client_step(conn *c) {
  if (conn_dead(c) || pump_client(c) == GONE)
    return GONE;
  update_io(c);
  return 0;
}

static int client_readable(conn *c) {
  hp *h = c->hp;
  size_t got = 0;
  int r;
  switch (c->state) {
  case S_HEAD:
    r = buf_read(client_end(c), &c->cin, head_cap(h), NULL, &got);
    if (r == RD_AGAIN)
      return 0;
    if (r != RD_DATA) /* EOF or error: nothing to answer */
      return conn_close(c);
    if (c->timer_kind == T_KEEPALIVE)
      arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
    if (c->timer_kind == T_NEXT)
      return 0; /* the timer parses what is there */
    return parse_request(c);
  case S_AUTH:
  case S_OPEN:
    r = buf_read(client_end(c), &c->cin, buf_max(h), &c->cdec, &got);
    if (r == RD_EOF || r == RD_ERROR)
      return conn_close(c); /* cancels the open or the check */
    return 0;
  case S_EXCHANGE:
    r = buf_read(client_end(c), &c->cin, buf_max(h), &c->cdec, &got);
    if (r == RD_EOF || r == RD_ERROR)
      return conn_close(c); /* the request body was cut short */
    if (r != RD_DATA)
      return 0;
    c->last_ms = hp_api->now_ms(h->ctx);
    return forward_request_body(c);
  case S_LINGER: {
    char drop[4096];
    ssize_t n = recv(c->cfd, drop, sizeof(drop), 0);
    if (n > 0)
      c->lingered += (uint64_t)n;
    if (n == 0 || c->lingered > LINGER_BYTES ||
        (n < 0 && errno != EAGAIN && errno != EINTR))
      return conn_close(c);
    return 0;
  }
  default:
    return 0;
  }
}

static void client_event(conn *c, int revents) {
  if (c->state == S_TUNNEL) {
    relay_client_io(c->relay, revents); /* may close c */
    return;
  }
  if ((revents & PH_READ) && client_readable(c) == GONE)
    return;
  if ((revents & PH_WRITE) &&
      (c->state == S_EXCHANGE || c->state == S_REPLY) &&
      pump_client(c) == GONE)
    return;
  update_io(c);
}

static void client_io(ph_io *io, int fd, int revents, void *arg) {
  conn *c = arg;
  (void)io;
  (void)fd;
  conn_enter(c);
  client_event(c, revents);
  conn_leave(c);
}

/* T_IDLE: idle_timeout since the last byte either way; while the client
 * is not read, its leaving is probed for every HANGUP_PROBE_MS. */
static void idle_check(conn *c) {
  hp *h = c->hp;
  if (probing(c) && hangup_seen(c->cfd)) {
    conn_close(c); /* cancels the open or the check */
    return;
  }
  int64_t idle = hp_api->now_ms(h->ctx) - c->last_ms;
  if (idle < h->conf.idle_timeout_ms) {
    int64_t wait = h->conf.idle_timeout_ms - idle;
    if (probing(c) && wait > HANGUP_PROBE_MS)
      wait = HANGUP_PROBE_MS;
    hp_api->timer_set(c->timer, (uint64_t)wait, 0);
    return;
  }
  if (c->state == S_EXCHANGE || c->state == S_OPEN || c->state == S_AUTH)
    fail_exchange(c, 504);
  else
    conn_close(c);
}

static void timer_event(conn *c) {
  hp *h = c->hp;
  switch (c->timer_kind) {
  case T_HEADER:
    guess_class(c);
    reply(c, 408, AFTER_CLOSE);
    return;
  case T_NEXT:
    arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
    parse_request(c);
    return;
  case T_KEEPALIVE:
  case T_LINGER:
    conn_close(c);
    return;
  case T_IDLE:
    idle_check(c);
    return;
  default:
    return;
  }
}

static void timer_fired(ph_timer *t, void *arg) {
  conn *c = arg;
  (void)t;
  conn_enter(c);
  timer_event(c);
  conn_leave(c);
}

static void accept_event(conn *c) {
  if (begin_head(c) == GONE)
    return;
  c->first = 0; /* later heads wait for idle_timeout first */
  /* A client usually sends its request right after connecting: read it
   * now rather than one loop iteration (and an epoll_wait) later. */
  if (client_readable(c) == GONE)
    return;
  if (c->state == S_HEAD && pending(&c->cin) == 0)
    buf_free(&c->cin); /* nothing yet: an idle connection holds no buffer */
  update_io(c);
}

void conn_accept(hp *h, int fd) {
  conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(fd);
    listener_release(h->listener);
    return;
  }
  c->hp = h;
  c->cfd = fd;
  c->ufd = -1;
  c->first = 1;
  c->next = h->conns;
  if (h->conns)
    h->conns->prev = c;
  h->conns = c;
  h->n_conns++;
  hp_api->gauge_add(h->m_clients, 1);
  c->cio = hp_api->io_new(h->ctx, fd, 0, client_io, c);
  c->timer = hp_api->timer_new(h->ctx, timer_fired, c);
  if (!c->cio || !c->timer) {
    conn_free(c);
    return;
  }
  conn_enter(c);
  accept_event(c);
  conn_leave(c);
}

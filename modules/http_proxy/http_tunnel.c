/* http_proxy: CONNECT tunnels. Once the connector opened the stream and
 * the client got its 200, the shared relay takes both sockets and copies
 * bytes both ways; bytes the client sent after the head go first. */
#include "http_proxy_int.h"

static void tunnel_first_down(void *arg) {
  conn *c = arg;
  conn_enter(c);
  stream_metrics_stage(&c->hp->sm, SM_TTFB, SM_SUCCESS,
                       seconds_since(c->t_reply_us));
  conn_leave(c);
}

static void tunnel_done(void *arg, const relay_stats *st, int end) {
  conn *c = arg;
  hp *h = c->hp;
  (void)end;
  conn_enter(c);
  c->relay = NULL;
  c->bytes_up = st->up;
  c->bytes_down = st->down;
  hp_api->inc(h->sm.bytes[SM_UP], st->up);
  hp_api->inc(h->sm.bytes[SM_DOWN], st->down);
  conn_close(c);
  conn_leave(c);
}

int start_tunnel(conn *c) {
  hp *h = c->hp;
  relay_opts o = {
      .idle_timeout_ms = h->conf.idle_timeout_ms,
      .buffer_size = h->conf.buffer_size,
      .use_splice = h->conf.splice,
      .first_down = tunnel_first_down,
      .done = tunnel_done,
      .arg = c,
      .client_io = c->cio, /* handed over: client_io passes events on */
  };
  hp_api->io_free(c->uio); /* NULL for a stream */
  c->cio = c->uio = NULL;
  c->cev = c->uev = 0;
  hp_api->timer_set(c->timer, 0, 0);
  c->timer_kind = T_NONE;
  stream_end client = end_fd(c->cfd), up = {c->ufd, c->ust};
  c->cfd = c->ufd = -1; /* the relay owns them, or closed them */
  c->ust = NULL;
  c->state = S_TUNNEL;
  c->t_reply_us = now_us();
  /* Bytes the client sent after the head go to the target first. */
  c->relay = relay_start(hp_api, h->ctx, client, up, c->cin.data + c->cin.off,
                         pending(&c->cin), &o);
  buf_free(&c->cin);
  buf_free(&c->cout);
  hh_free(&c->req);
  if (!c->relay)
    return conn_close(c);
  return GONE; /* the conn lives on, but the caller must not touch it */
}

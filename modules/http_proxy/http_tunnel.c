/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: CONNECT tunnels. Once the connector opened the
 * stream and the client got its 200, the shared relay takes both ends
 * (through the session skeleton) and copies bytes both ways; bytes the
 * client sent after the head go first. Returns what comes next. */
#include "http_proxy_int.h"

int hp_tunnel_start(conn *c) {
  hp *h = c->hp;
  frontend_relay_opts o = {.idle_timeout_ms = h->conf.idle_timeout_ms,
                           .buffer_size = h->conf.buffer_size,
                           .use_splice = h->conf.splice};
  hp_api->io_free(c->up.io); /* NULL for a stream */
  c->up.io = NULL;
  c->up.ev = 0;
  c->timer_kind = T_NONE;
  stream_end up = hp_up_end(c);
  ph_open_lease *lease = c->up.lease;
  c->up.fd = -1; /* the relay owns them, or closed them */
  c->up.st = NULL;
  c->up.lease = NULL;
  c->state = S_TUNNEL;
  /* Bytes the client sent after the head go to the target first. */
  int r = frontend_session_relay(&c->fs, up, lease, c->cin.data + c->cin.off,
                                 hp_pending(&c->cin), &o);
  hp_buf_free(&c->cin);
  hp_buf_free(&c->cout);
  hp_head_free(&c->req);
  return r == PH_OK ? HP_WAIT : HP_CLOSE;
}

int hp_tunnel_done(conn *c, const relay_stats *st) {
  c->bytes_up = st->up;
  c->bytes_down = st->down;
  return HP_CLOSE;
}

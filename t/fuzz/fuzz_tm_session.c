/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer target for the TunnelMesh session layer's reader and writer
 * (modules/tunnel_common/session/tm_session.c, tm_stream.c, tm_writer.c): one
 * session over a fake transport, driven by a script of peer messages,
 * writable events, loop turns and the user's and role's calls, with a
 * minimal host API (a private libev loop for the timers; no metrics).
 *
 * Input byte 0: bit 0 open_result, bit 1 flow_control, bit 2 fair_writer,
 * bit 3 this side opens streams (else the peer does); byte 1: small
 * bounds (inbound/outbound/control queue sizes from it). Then records,
 * each an op byte, a length byte and that many bytes:
 *   op % 8 = 0  a message from the peer (the bytes, as they are)
 *            1  a message from the peer: a well-formed header in front of
 *               the bytes (type = first byte, id = second byte)
 *            2  a writable event
 *            3  one loop turn (the kick, timers due)
 *            4  the role answers the oldest open it holds (accept/reject)
 *            5  a user writes the bytes on the stream picked by byte 0
 *            6  a user reads (peek/consume), shuts down or closes
 *            7  this side opens a stream, or sends GOAWAY / metadata
 * Checks, after every step: every frame the session wrote decodes, its
 * DATA payload fits max_frame_payload, and the bounds hold (control queue
 * frames and bytes, each stream's inbound bytes and entries and outbound
 * bytes, live streams <= max_streams). At the end the session closes and
 * every user closes its streams: nothing may be left (LSan). */
#include <ev.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/session/tm_session_int.h"

static void check(int cond) {
  if (!cond)
    abort();
}

/* ---- a minimal host API ------------------------------------------------ */

static struct ev_loop *loop;

struct ph_timer {
  ev_timer w;
  ph_timer_fn fn;
  void *arg;
};

static void timer_cb(struct ev_loop *l, ev_timer *w, int revents) {
  (void)l;
  (void)revents;
  ph_timer *t = (ph_timer *)w;
  t->fn(t, t->arg);
}

static ph_timer *f_timer_new(ph_ctx *ctx, ph_timer_fn fn, void *arg) {
  (void)ctx;
  ph_timer *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->fn = fn;
  t->arg = arg;
  ev_timer_init(&t->w, timer_cb, 0., 0.);
  return t;
}

static void f_timer_set(ph_timer *t, uint64_t after, uint64_t repeat) {
  ev_timer_stop(loop, &t->w);
  if (!after && !repeat)
    return;
  ev_timer_set(&t->w, (double)after / 1000.0, (double)repeat / 1000.0);
  ev_timer_start(loop, &t->w);
}

static void f_timer_free(ph_timer *t) {
  ev_timer_stop(loop, &t->w);
  free(t);
}

static struct ev_loop *f_loop(ph_ctx *ctx) {
  (void)ctx;
  return loop;
}

static int64_t f_now_ms(ph_ctx *ctx) {
  (void)ctx;
  return (int64_t)(ev_now(loop) * 1000.0);
}

static int f_log_enabled(ph_ctx *ctx, int level) {
  (void)ctx;
  (void)level;
  return 0;
}

static ph_api fake_api;

/* ---- the transport and the role ---------------------------------------- */

typedef struct world {
  tm_session *s;
  int want, closed, session_gone;
  tm_stream *held[8];
  int nheld;
  tm_stream *streams[8]; /* the users' (accepted or opened) */
  int nstreams;
} world;

static void t_want_write(void *t) { ((world *)t)->want = 1; }

static int t_write(void *t, uint8_t *buf, size_t len) {
  world *w = t;
  tm_frame f;
  buf[-1] = 0; /* the headroom is there */
  check(tm_frame_decode(buf, len, &f) == TM_OK);
  check(tm_frame_known(f.type));
  if (f.type == TM_DATA)
    check(f.length <= w->s->cfg.max_frame_payload);
  return 0;
}

static void t_pause(void *t, int p) {
  (void)t;
  (void)p;
}

static void t_close(void *t) { ((world *)t)->closed = 1; }

static const tm_transport transport = {t_want_write, t_write, t_pause,
                                       t_close, 16};

static void add_stream(world *w, tm_stream *st) {
  if (w->nstreams < 8)
    w->streams[w->nstreams++] = st;
  else
    ph_stream_close(tm_stream_ph(st));
}

static void on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  world *w = arg;
  (void)req;
  if (w->nheld < 8)
    w->held[w->nheld++] = st;
  else
    tm_stream_reject(st, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 100);
}

static void on_abandon(void *arg, tm_stream *st) {
  world *w = arg;
  for (int i = 0; i < w->nheld; i++)
    if (w->held[i] == st) {
      w->held[i] = w->held[--w->nheld];
      return;
    }
  check(0); /* abandoned: only an open the role holds */
}

static void on_close(void *arg, int reason) {
  world *w = arg;
  check(reason >= TM_CLOSE_TRANSPORT && reason <= TM_CLOSE_GOAWAY_DONE);
  w->session_gone = 1;
  /* the opens still held were abandoned before this */
  check(w->nheld == 0);
}

static void open_cb(void *arg, tm_stream *st, const tm_open_result *r,
                    int strict) {
  world *w = arg;
  (void)strict;
  if (r->accepted)
    add_stream(w, st);
}

static const tm_session_ops ops = {.on_open = on_open,
                                   .on_abandon = on_abandon,
                                   .on_close = on_close};

static void invariants(world *w) {
  if (w->session_gone)
    return;
  tm_session *s = w->s;
  check(ilist_len(&s->cq) <= s->cfg.control_queue_frames);
  check(s->cq_bytes <= s->cfg.control_queue_bytes);
  check(s->live <= s->cfg.max_streams);
  for (ilist_node *n = ilist_first(&s->streams); n; n = ilist_next(n)) {
    const tm_stream *st = ILIST_ENTRY(n, tm_stream, slink);
    if (st->dead)
      continue;
    check(st->in_bytes <= s->cfg.inbound_buffer_bytes);
    check(ilist_len(&st->in) <= s->in_entries_max);
    check(st->out_len <= s->cfg.outbound_buffer_bytes);
  }
}

static void user_op(world *w, const uint8_t *p, size_t n) {
  if (w->nstreams == 0 || n == 0)
    return;
  int i = p[0] % w->nstreams;
  ph_stream *ps = tm_stream_ph(w->streams[i]);
  const void *d;
  switch ((p[0] >> 4) % 4) {
  case 0: {
    ssize_t r = ph_stream_peek(ps, &d);
    if (r > 0)
      ph_stream_consume(ps, (size_t)r / (n > 1 ? p[1] % 3 + 1 : 1));
    break;
  }
  case 1:
    ph_stream_shutdown(ps);
    break;
  case 2:
    ph_stream_watch(ps, PH_READ | PH_WRITE, NULL, NULL);
    ph_stream_watch(ps, 0, NULL, NULL);
    break;
  default:
    ph_stream_close(ps);
    w->streams[i] = w->streams[--w->nstreams];
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  if (!loop)
    loop = ev_loop_new(EVFLAG_AUTO);
  fake_api.size = sizeof(fake_api);
  fake_api.loop = f_loop;
  fake_api.now_ms = f_now_ms;
  fake_api.timer_new = f_timer_new;
  fake_api.timer_set = f_timer_set;
  fake_api.timer_free = f_timer_free;
  fake_api.log_enabled = f_log_enabled;
  uint8_t c0 = data[0], c1 = data[1];
  tm_session_cfg cfg = {
      .component = TM_COMPONENT_SERVER,
      .opener = (c0 & 8) != 0,
      .caps = c0 & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL),
      .local_caps = c0 & TM_CAP_FAIR_WRITER,
      .initial_window = 1024u << (c1 & 3),
      .window_update_threshold = 512,
      .max_frame_payload = 256u << (c1 >> 2 & 3),
      .inbound_buffer_bytes = 1024u << (c1 >> 4 & 3),
      .outbound_buffer_bytes = 2048,
      .max_streams = 4,
      .control_queue_frames = 16,
      .control_queue_bytes = 8192,
      .quantum = 512,
      .violation_limit = 4,
      .violation_window_ms = 60000,
      .ping_interval_ms = (c1 & 0x40) ? 1 : 0,
      .ping_timeout_ms = 1};
  world w;
  memset(&w, 0, sizeof(w));
  w.s = tm_session_new(&fake_api, NULL, &cfg, &transport, &w, &ops, &w);
  check(w.s != NULL);
  static uint8_t msg[TM_HEADER_LEN + 256];
  size_t at = 2;
  while (at + 2 <= size && !w.session_gone) {
    uint8_t op = data[at], n = data[at + 1];
    at += 2;
    if (n > size - at)
      n = (uint8_t)(size - at);
    const uint8_t *p = data + at;
    at += n;
    switch (op % 8) {
    case 0:
      tm_session_on_message(w.s, p, n);
      break;
    case 1:
      if (n >= 2) {
        tm_frame_header(msg, p[0] % 12, (op >> 3) & 1, p[1] % 8,
                        (uint32_t)(n - 2));
        memcpy(msg + TM_HEADER_LEN, p + 2, n - 2);
        tm_session_on_message(w.s, msg, TM_HEADER_LEN + (size_t)n - 2);
      }
      break;
    case 2:
      if (w.want && !w.closed) {
        w.want = 0;
        tm_session_on_writable(w.s);
      }
      break;
    case 3:
      ev_run(loop, EVRUN_NOWAIT);
      break;
    case 4:
      if (w.nheld) {
        tm_stream *st = w.held[0];
        w.held[0] = w.held[--w.nheld];
        if (op & 8) {
          tm_stream_accept(st);
          add_stream(&w, st);
        } else {
          tm_stream_reject(st, PH_STAGE_CONNECT,
                           PH_OPEN_CONNECTION_REFUSED, 0, 0);
        }
      }
      break;
    case 5:
      if (w.nstreams && n)
        ph_stream_write(tm_stream_ph(w.streams[p[0] % w.nstreams]), p, n);
      break;
    case 6:
      user_op(&w, p, n);
      break;
    default:
      if (op & 8) {
        tm_session_goaway(w.s);
      } else if (op & 16) {
        tm_metadata md = {.caps = TM_CAP_ALL};
        strcpy(md.agent_id, "agent-1");
        tm_session_send_metadata(w.s, &md, 0);
      } else {
        tm_open_stream req = {.protocol = 1, .port = 80};
        strcpy(req.host, "fuzz.test");
        tm_stream_open(w.s, &req, (op & 32) ? 1 : 0, open_cb, &w);
      }
      break;
    }
    invariants(&w);
  }
  if (!w.session_gone) {
    tm_session_close(w.s);
    for (int i = 0; i < 8 && !w.session_gone; i++)
      ev_run(loop, EVRUN_NOWAIT);
    check(w.session_gone);
  }
  check(w.nheld == 0);
  /* the users close what they hold: the husk goes with the last one */
  while (w.nstreams)
    ph_stream_close(tm_stream_ph(w.streams[--w.nstreams]));
  for (int i = 0; i < 4; i++)
    ev_run(loop, EVRUN_NOWAIT);
  return 0;
}

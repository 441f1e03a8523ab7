/* SPDX-License-Identifier: BSD-2-Clause */
/* A session's streams: the ph_stream each user holds (stream.h), its
 * bounded inbound queue and outbound ring, its windows, and the open as
 * the opener (tm_stream_open/cancel) and the acceptor (accept/reject)
 * see it. Frames from the reader arrive through the st_on_* functions;
 * user events are delivered from the session's kick, never from inside a
 * call the user made. */
#include <stdlib.h>
#include <string.h>

#include "tm_session_int.h"

/* The RESET code a stream sends when its user went away early (a close
 * before both directions finished, a cancelled open): no error on the
 * wire, the peer's user just reads PH_ERESET. */
#define TM_RESET_CANCEL PH_OPEN_OK

static int apply(tm_stream *st, int ev) {
  int n = tm_open_next(st->state, ev);
  if (n < 0)
    return -1;
  st->state = n;
  if (tm_open_terminal(n))
    sess_map_del(st->s, st);
  return 0;
}

static int can_write_state(int state) {
  return state == TM_ST_OPEN || state == TM_ST_HALF_CLOSED_REMOTE;
}

int st_writable(const tm_stream *st) {
  return st->owned && !st->user_closed && !st->reset && !st->shut &&
         can_write_state(st->state) &&
         st->out_len < st->s->cfg.outbound_buffer_bytes &&
         (!st->fc || st->win.send > 0);
}

static int readable(const tm_stream *st) {
  return st->reset || st->in_bytes > 0 || st->fin_rcvd;
}

static void drop_inbound(tm_stream *st) {
  ilist_node *n;
  while ((n = ilist_pop(&st->in)))
    free(ILIST_ENTRY(n, tm_chunk, link));
  st->in_bytes = 0;
}

static void drop_outbound(tm_stream *st) {
  tm_drr_remove(&st->s->drr, &st->drr);
  free(st->out);
  st->out = NULL;
  st->out_len = st->out_off = 0;
}

static void stop_open_timer(tm_stream *st) {
  if (st->open_timer) {
    st->s->api->timer_free(st->open_timer);
    st->open_timer = NULL;
  }
}

static const ph_stream_ops tm_stream_ops; /* below, with its functions */

tm_stream *st_new(tm_session *s, uint32_t id, int local) {
  tm_stream *st = calloc(1, sizeof(*st));
  if (!st)
    return NULL;
  st->base.ops = &tm_stream_ops;
  st->s = s;
  st->id = id;
  st->local = local ? 1 : 0;
  st->state = TM_ST_IDLE;
  st->reset_code = -1;
  st->close_code = TM_RESET_CANCEL;
  ilist_init(&st->in);
  ilist_push(&s->streams, &st->slink);
  return st;
}

static void kick_unlink(tm_stream *st) {
  if (!st->kicked)
    return;
  ilist_remove(&st->klink); /* from s->kicks or kick_cb's round */
  st->kicked = 0;
}

void st_settle(tm_stream *st) {
  if (!st->owes)
    return;
  st->owes = 0;
  st->s->owed--;
  cq_pressure(st->s);
}

void st_free_mem(tm_stream *st) {
  tm_session *s = st->s;
  if (st->owes) { /* never answered: nothing is owed any more */
    st->owes = 0;
    s->owed--;
  }
  ilist_remove(&st->slink);
  free(st);
}

void st_release(tm_stream *st) {
  tm_session *s = st->s;
  if (st->dead || (st->owned && !st->user_closed))
    return; /* its user still holds it */
  if (!s->closed && !tm_open_terminal(st->state) && st->answered &&
      st->user_closed)
    return; /* finished from the user's side: the FIN is on its way */
  if (st->link) {
    st->link->link = NULL;
    st->link = NULL;
  }
  sess_map_del(s, st);
  drop_outbound(st);
  drop_inbound(st);
  stop_open_timer(st);
  kick_unlink(st);
  st->dead = 1;
  st->fn = NULL;
  if (!guard_inside(&s->entries)) {
    st_free_mem(st);
    sess_maybe_free(s);
  } else {
    s->dead_streams = 1;
  }
}

/* The opener's answer when the session decided it. */
static void fail_open(tm_stream *st, int code) {
  tm_open_result r = {.accepted = 0, .stage = PH_STAGE_RELAY, .code = code,
                      .code_known = 1};
  st->answered = 1;
  st->legacy_cb = 0;
  if (st->cb)
    st->cb(st->cb_arg, st, &r, st->strict);
}

void st_reset(tm_stream *st, int code, int send, int bp_reason) {
  tm_session *s = st->s;
  if (st->dead || st->reset || st->state == TM_ST_RESET)
    return;
  if (send && st->id) {
    uint8_t c = (uint8_t)code;
    cq_must(s, TM_RESET, st->id, &c, 1);
  }
  st->reset_code = code;
  /* The linked stream's owner (a relay) closes it because this one
   * failed: its RESET says why this one did (issue 22 item 8). */
  if (st->link && !st->link->reset)
    st->link->close_code = code;
  if (bp_reason >= 0)
    tm_obs_backpressure(s->m, st->strict, bp_reason);
  st->state = TM_ST_RESET;
  sess_map_del(s, st);
  drop_outbound(st);
  drop_inbound(st);
  stop_open_timer(st);
  if (st->local && !st->answered) {
    fail_open(st, code);
    st_release(st);
  } else if (!st->local && !st->answered) {
    st->answered = 1;
    st_settle(st); /* the RESET above, if any, was its answer */
    if (s->ops.on_abandon)
      s->ops.on_abandon(s->arg, st);
    st_release(st);
  } else if (st->owned && !st->user_closed) {
    st->reset = 1;
    sess_kick(s, st);
  } else {
    st_release(st);
  }
  sess_drain_check(s);
}

void st_session_closed(tm_stream *st) {
  if (st->dead)
    return;
  if (st->state == TM_ST_CLOSED && st->owned && !st->user_closed) {
    /* Both directions finished before the session closed (the last
     * stream of a GOAWAY drain closes it): its user reads what is left
     * and EOF, as it would have, not a reset the close made. */
    sess_kick(st->s, st);
    return;
  }
  if (!st->answered || (st->owned && !st->user_closed)) {
    st_reset(st, PH_OPEN_AGENT_OFFLINE, 0, -1);
    return;
  }
  st->state = TM_ST_RESET;
  st_release(st);
}

/* ---- frames from the reader ------------------------------------------ */

static void violation(tm_stream *st, int bp_reason) {
  tm_session *s = st->s;
  st_reset(st, PH_OPEN_INTERNAL_ERROR, 1, bp_reason);
  sess_violation(s);
}

static int append(tm_stream *st, const uint8_t *p, uint32_t n) {
  ilist_node *last = ilist_last(&st->in);
  tm_chunk *t = last ? ILIST_ENTRY(last, tm_chunk, link) : NULL;
  if (t && t->cap - t->off - t->len >= n) {
    memcpy(t->data + t->off + t->len, p, n);
    t->len += n;
  } else {
    if (ilist_len(&st->in) >= st->s->in_entries_max)
      return -1;
    uint32_t cap = n > TM_CHUNK_MIN ? n : TM_CHUNK_MIN;
    tm_chunk *c = malloc(sizeof(*c) + cap);
    if (!c)
      return -1;
    ilist_node_init(&c->link);
    c->off = 0;
    c->len = n;
    c->cap = cap;
    memcpy(c->data, p, n);
    ilist_push(&st->in, &c->link);
  }
  st->in_bytes += n;
  return 0;
}

void st_on_data(tm_stream *st, const tm_frame *f) {
  tm_session *s = st->s;
  if (tm_open_next(st->state, TM_EV_DATA_RCVD) < 0 ||
      (!st->local && !st->answered && st->strict)) {
    violation(st, -1); /* DATA while opening (TM-P0-17), after FIN */
    return;
  }
  if (st->fc && tm_win_recv(&st->win, f->length) != TM_OK) {
    violation(st, TM_BP_WINDOW_VIOLATION); /* overrun (TM-P2-5/13) */
    return;
  }
  if (f->length) {
    if (st->in_bytes + (uint64_t)f->length > s->cfg.inbound_buffer_bytes ||
        append(st, f->payload, f->length) < 0) {
      /* legacy: the bounded queue is the only protection (TM-P2-6) */
      st_reset(st, PH_OPEN_QUEUE_FULL, 1,
               st->fc ? TM_BP_INBOUND_FULL : TM_BP_LEGACY);
      return;
    }
  }
  apply(st, TM_EV_DATA_RCVD);
  if (f->flags & TM_FLAG_FIN) {
    if (apply(st, TM_EV_FIN_RCVD) < 0) {
      violation(st, -1);
      return;
    }
    st->fin_rcvd = 1;
  }
  if (st->user_closed && st->fin_rcvd) {
    drop_inbound(st); /* nobody reads it: its owner already left */
    st_release(st);
    return;
  }
  sess_kick(s, st);
}

void st_on_window_update(tm_stream *st, const tm_frame *f) {
  uint32_t inc;
  if (!st->fc)
    return; /* no windows without flow control (TM-P2-15) */
  if (st->state == TM_ST_OPENING || tm_u32_decode(f->payload, f->length,
                                                  &inc) != TM_OK ||
      tm_win_credit(&st->win, inc) != TM_OK) {
    violation(st, TM_BP_WINDOW_VIOLATION); /* zero or overflow: TM-P2-13 */
    return;
  }
  if (st->stalled && st->win.send > 0) {
    st->stalled = 0;
    tm_obs_window_stall(st->s->m,
                        (uint64_t)(mono_us() - st->stall_since_us));
  }
  sess_kick(st->s, st);
}

void st_on_reset(tm_stream *st, int code) {
  if (code < 0 || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  st_reset(st, code, 0, -1);
}

void st_on_result(tm_stream *st, const tm_frame *f) {
  tm_session *s = st->s;
  tm_open_result r;
  if (!st->local || st->answered || st->state != TM_ST_OPENING ||
      tm_open_result_decode(f->payload, f->length, &r) != TM_OK) {
    violation(st, -1); /* duplicate or late (TM-PROTO-41), malformed */
    return;
  }
  if (!r.accepted) {
    stop_open_timer(st);
    apply(st, TM_EV_RESULT_FAIL_RCVD);
    st->state = TM_ST_RESET;
    st->answered = 1;
    if (st->cb)
      st->cb(st->cb_arg, st, &r, 1);
    st_release(st);
    return;
  }
  /* No "window": the seed's five fields only; the protocol's initial
   * window (docs/protocol/tunnel.md, OPEN_RESULT). */
  if (st->fc && tm_win_init(&st->win, r.window ? r.window : TM_WINDOW_DEFAULT,
                            s->cfg.initial_window,
                            s->cfg.window_update_threshold) != TM_OK) {
    violation(st, TM_BP_WINDOW_VIOLATION);
    return;
  }
  stop_open_timer(st);
  if (apply(st, TM_EV_RESULT_OK_RCVD) < 0) {
    violation(st, -1);
    return;
  }
  st->answered = 1;
  st->owned = 1;
  if (st->cb)
    st->cb(st->cb_arg, st, &r, 1);
  if (!st->dead)
    sess_kick(s, st);
}

void st_fin_sent(tm_stream *st) {
  st->fin_sent = 1;
  if (apply(st, TM_EV_FIN_SENT) < 0)
    st->state = TM_ST_CLOSED;
  if (tm_open_terminal(st->state))
    sess_map_del(st->s, st);
  if (st->user_closed)
    st_release(st);
  sess_drain_check(st->s);
}

/* ---- event delivery --------------------------------------------------- */

static int events_now(const tm_stream *st) {
  int ev = 0;
  /* A reset is told even to an owner that wants nothing now (a relay
   * whose other end cannot take bytes): like poll's POLLERR, so that it
   * learns at once that the stream is gone (issue 22 item 8). */
  if (st->reset && st->fn)
    return st->want ? st->want : PH_READ;
  if ((st->want & PH_READ) && readable(st))
    ev |= PH_READ;
  if ((st->want & PH_WRITE) && (st->reset || st_writable(st)))
    ev |= PH_WRITE;
  return ev;
}

void st_deliver(tm_stream *st) {
  if (st->dead)
    return;
  if (st->legacy_cb) {
    tm_open_result r = {.accepted = 1, .stage = PH_STAGE_CONNECT,
                        .code = PH_OPEN_OK, .code_known = 1};
    st->legacy_cb = 0;
    st->answered = 1;
    st->owned = 1;
    if (st->cb)
      st->cb(st->cb_arg, st, &r, 0);
    if (st->dead)
      return;
  }
  if (!st->owned || st->user_closed || !st->fn)
    return;
  int ev = events_now(st);
  if (!ev)
    return;
  st->fn(&st->base, ev, st->fn_arg);
  if (!st->dead && !st->user_closed && st->fn && events_now(st))
    sess_kick(st->s, st); /* level-triggered: again while it holds */
}

/* ---- the ph_stream ---------------------------------------------------- */

static tm_stream *ts(ph_stream *p) { return (tm_stream *)p; }

static void t_watch(ph_stream *p, int events, ph_stream_fn fn, void *arg) {
  tm_stream *st = ts(p);
  if (st->dead || st->user_closed)
    return;
  st->want = events;
  st->fn = fn;
  st->fn_arg = arg;
  if (events)
    sess_kick(st->s, st);
}

static ssize_t t_peek(ph_stream *p, const void **data) {
  tm_stream *st = ts(p);
  if (st->reset || st->dead)
    return PH_ERESET;
  ilist_node *first = ilist_first(&st->in);
  if (first) {
    const tm_chunk *c = ILIST_ENTRY(first, tm_chunk, link);
    *data = c->data + c->off;
    return (ssize_t)c->len;
  }
  return st->fin_rcvd ? 0 : PH_EAGAIN;
}

static void t_consume(ph_stream *p, size_t n) {
  tm_stream *st = ts(p);
  ilist_node *first = ilist_first(&st->in);
  if (st->reset || st->dead || !first)
    return;
  tm_chunk *c = ILIST_ENTRY(first, tm_chunk, link);
  if (n > c->len)
    n = c->len; /* more than peek showed: a caller bug, clamped */
  c->off += (uint32_t)n;
  c->len -= (uint32_t)n;
  st->in_bytes -= (uint32_t)n;
  if (c->len == 0) {
    ilist_remove(&c->link);
    free(c);
  }
  if (st->fc && n) {
    /* delivered bytes reopen the window (TM-P2-11), at the threshold
     * only (TM-P2-12) */
    uint32_t inc = tm_win_delivered(&st->win, (uint32_t)n);
    if (inc) {
      uint8_t b[4];
      tm_u32_encode(b, inc);
      cq_must(st->s, TM_WINDOW_UPDATE, st->id, b, 4);
    }
  }
}

static ssize_t t_write(ph_stream *p, const void *data, size_t len) {
  tm_stream *st = ts(p);
  tm_session *s = st->s;
  if (st->reset || st->dead)
    return PH_ERESET;
  if (st->shut)
    return PH_ESTATE;
  if (!can_write_state(st->state))
    return PH_EAGAIN;
  uint32_t cap = s->cfg.outbound_buffer_bytes;
  if (!st->out && !(st->out = malloc(cap)))
    return PH_EAGAIN;
  uint32_t room = cap - st->out_len;
  uint32_t n = len < room ? (uint32_t)len : room;
  if (st->fc) {
    uint32_t want = n;
    n = tm_win_take(&st->win, want); /* TM-P2-10 */
    if (n < want && !st->stalled) {
      st->stalled = 1; /* only this stream's producer pauses */
      st->stall_since_us = mono_us();
      tm_obs_backpressure(s->m, st->strict, TM_BP_WINDOW_STALL);
    }
  }
  if (n == 0)
    return PH_EAGAIN;
  uint32_t tail = (st->out_off + st->out_len) % cap;
  uint32_t first = cap - tail < n ? cap - tail : n;
  memcpy(st->out + tail, data, first);
  memcpy(st->out, (const uint8_t *)data + first, n - first);
  if (st->out_len == 0)
    st->out_since_us = mono_us();
  st->out_len += n;
  tm_drr_activate(&s->drr, &st->drr);
  wr_need(s);
  return (ssize_t)n;
}

static int t_shutdown(ph_stream *p) {
  tm_stream *st = ts(p);
  if (st->reset || st->dead)
    return PH_ERESET;
  if (st->shut)
    return PH_OK;
  st->shut = 1;
  tm_drr_activate(&st->s->drr, &st->drr); /* the FIN rides the ring */
  wr_need(st->s);
  return PH_OK;
}

static void t_close(ph_stream *p) {
  tm_stream *st = ts(p);
  if (st->dead || st->user_closed)
    return;
  st->user_closed = 1;
  st->fn = NULL;
  st->want = 0;
  if (st->s->closed || st->reset || tm_open_terminal(st->state)) {
    st_release(st);
  } else if (st->fin_rcvd && st->in_bytes == 0) {
    /* Like a socket's close after EOF: everything was read, so the close
     * finishes the other direction gracefully: what was written goes
     * out, then the FIN (the relay closes without a shutdown once both
     * ways ended). Then the stream is freed. */
    if (!st->shut) {
      st->shut = 1;
      tm_drr_activate(&st->s->drr, &st->drr);
      wr_need(st->s);
    }
    st_release(st);
  } else {
    /* stream.h: a close before both directions finished (the peer's
     * FIN not read, or bytes left unread) resets the stream; with
     * TM_RESET_CANCEL unless the owner or a linked stream gave a code */
    st_reset(st, st->close_code, 1, -1);
  }
}

static const ph_stream_ops tm_stream_ops = {
    .size = sizeof(ph_stream_ops),
    .watch = t_watch,
    .peek = t_peek,
    .consume = t_consume,
    .write = t_write,
    .shutdown = t_shutdown,
    .close = t_close,
};

/* ---- opener ----------------------------------------------------------- */

static void open_timeout_cb(ph_timer *t, void *arg) {
  (void)t;
  tm_stream *st = arg;
  tm_session *s = st->s;
  sess_enter(s);
  stop_open_timer(st);
  st_reset(st, PH_OPEN_TIMEOUT, 1, -1); /* TM-PROTO-38: only this one */
  sess_leave(s);
}

tm_stream *tm_stream_open(tm_session *s, const tm_open_stream *req,
                          uint32_t timeout_ms, tm_open_cb cb, void *arg) {
  if (!tm_session_can_open(s) || s->next_id == 0)
    return NULL;
  int strict = (s->cfg.caps & TM_CAP_OPEN_RESULT) != 0;
  int fc = strict && (s->cfg.caps & TM_CAP_FLOW_CONTROL);
  tm_open_stream o = *req;
  o.window = fc ? s->cfg.initial_window : 0;
  /* The trace field only where the peer said it knows it (TM_CAP_TRACE):
   * a peer strict about trailing bytes would refuse the open. */
  if (!(s->cfg.caps & TM_CAP_TRACE))
    o.trace[0] = '\0';
  /* The principal likewise (TM_CAP_PRINCIPAL, relay links), and only
   * after a trace. */
  if (!(s->cfg.caps & TM_CAP_PRINCIPAL) || !o.trace[0])
    o.principal[0] = '\0';
  uint8_t buf[TM_OPEN_STREAM_MAX];
  int len = tm_open_stream_encode(&o, buf, sizeof(buf));
  if (len < 0 || !cq_room(s, (size_t)len))
    return NULL;
  tm_stream *st = st_new(s, s->next_id, 1);
  if (!st)
    return NULL;
  if (strict && timeout_ms &&
      !(st->open_timer = s->api->timer_new(s->ctx, open_timeout_cb, st))) {
    st_free_mem(st);
    return NULL;
  }
  s->next_id++;
  st->strict = strict;
  st->fc = fc;
  st->cb = cb;
  st->cb_arg = arg;
  st->answered = 0;
  st->state = tm_open_next(TM_ST_IDLE,
                           strict ? TM_EV_OPEN_SENT : TM_EV_LEGACY_OPEN);
  if (st->state < 0)
    st->state = strict ? TM_ST_OPENING : TM_ST_OPEN;
  sess_map_add(s, st);
  cq_push(s, TM_OPEN_STREAM, st->id, buf, (size_t)len);
  if (st->open_timer)
    s->api->timer_set(st->open_timer, timeout_ms, 0);
  if (!strict) {
    st->legacy_cb = 1; /* accepted at once, told from the loop */
    sess_kick(s, st);
  }
  return st;
}

void tm_stream_cancel(tm_stream *st) { tm_stream_abort(st, TM_RESET_CANCEL); }

void tm_stream_abort(tm_stream *st, int code) {
  if (!st || st->dead || !st->local || st->answered)
    return;
  if (code < 0 || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  st->answered = 1; /* cb never runs */
  st->legacy_cb = 0;
  st_reset(st, code, 1, -1);
}

/* ---- acceptor --------------------------------------------------------- */

static void accept_as(tm_stream *st, int legacy_hop) {
  tm_session *s = st->s;
  if (st->dead || st->local || st->answered)
    return;
  if (st->strict) {
    if (st->fc && tm_win_init(&st->win, st->peer_window,
                              s->cfg.initial_window,
                              s->cfg.window_update_threshold) != TM_OK) {
      tm_stream_reject(st, PH_STAGE_PROTOCOL, PH_OPEN_INTERNAL_ERROR, 0, 0);
      return;
    }
    apply(st, TM_EV_RESULT_OK_SENT); /* open first (TM-P0-7/18) ... */
    st->answered = 1;
    st->owned = 1;
    tm_open_result r = {.accepted = 1,
                        .stage = legacy_hop ? PH_STAGE_RELAY : PH_STAGE_CONNECT,
                        .code = PH_OPEN_OK, .code_known = 1,
                        .window = st->fc ? s->cfg.initial_window : 0,
                        .legacy = legacy_hop ? 1 : 0};
    uint8_t buf[TM_OPEN_RESULT_MAX];
    int len = tm_open_result_encode(&r, buf, sizeof(buf));
    if (len >= 0)
      cq_must(s, TM_OPEN_RESULT, st->id, buf, (size_t)len); /* ... then */
  } else {
    st->answered = 1;
    st->owned = 1;
  }
  st_settle(st);
  sess_kick(s, st);
}

void tm_stream_accept(tm_stream *st) { accept_as(st, 0); }
void tm_stream_accept_legacy(tm_stream *st) { accept_as(st, 1); }

void tm_stream_reject(tm_stream *st, int stage, int code, int retryable,
                      uint32_t retry_after_ms) {
  tm_session *s = st->s;
  if (st->dead || st->local || st->answered)
    return;
  st->answered = 1;
  if (code <= PH_OPEN_OK || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  if (st->strict && st->state == TM_ST_OPENING) {
    tm_open_result r = {.accepted = 0, .stage = stage, .code = code,
                        .code_known = 1, .retryable = retryable ? 1 : 0,
                        .retry_after_ms = retry_after_ms};
    uint8_t buf[TM_OPEN_RESULT_MAX];
    int len = tm_open_result_encode(&r, buf, sizeof(buf));
    if (len >= 0)
      cq_must(s, TM_OPEN_RESULT, st->id, buf, (size_t)len);
    st_settle(st); /* before the reset, which may free st */
    st_reset(st, code, 0, -1);
  } else {
    st_settle(st);
    st_reset(st, code, 1, -1); /* legacy: a RESET is the refusal */
  }
}

/* ---- accessors -------------------------------------------------------- */

ph_stream *tm_stream_ph(tm_stream *st) { return &st->base; }
uint32_t tm_stream_id(const tm_stream *st) { return st->id; }
tm_session *tm_stream_session(const tm_stream *st) { return st->s; }
void tm_stream_set_user(tm_stream *st, void *user) { st->user = user; }
int tm_stream_reset_code(const tm_stream *st) { return st->reset_code; }

void tm_stream_set_close_code(tm_stream *st, int code) {
  if (code < 0 || code >= PH_OPEN_CODE_COUNT_)
    code = PH_OPEN_INTERNAL_ERROR;
  if (!st->dead && !st->reset)
    st->close_code = code;
}

void tm_stream_link(tm_stream *a, tm_stream *b) {
  if (a->dead || b->dead || a == b)
    return;
  a->link = b;
  b->link = a;
}
void *tm_stream_user(const tm_stream *st) { return st->user; }
int tm_stream_strict(const tm_stream *st) { return st->strict; }

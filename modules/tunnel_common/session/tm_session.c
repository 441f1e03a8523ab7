/* SPDX-License-Identifier: BSD-2-Clause */
/* A session's lifecycle, its one reader, errors and violations,
 * heartbeats and GOAWAY (tm_session.h). The streams are in tm_stream.c,
 * the writer in tm_writer.c. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/connector.h>
#include <proxyhost/log.h>

#include "lib/clocks.h"
#include "tm_session_int.h"

/* ---- the id map (idtab.h), sized by max_streams ----------------------- */

tm_stream *sess_lookup(tm_session *s, uint32_t id) {
  idtab_node *n = idtab_find(&s->ids, id);
  return n ? IDTAB_ENTRY(n, tm_stream, hn) : NULL;
}

void sess_map_add(tm_session *s, tm_stream *st) {
  idtab_put(&s->ids, &st->hn, st->id);
  s->live++;
}

void sess_map_del(tm_session *s, tm_stream *st) {
  if (!st->hn.linked)
    return;
  idtab_del(&s->ids, &st->hn);
  s->live--;
  sess_drain_check(s); /* GOAWAY: was it the last one? */
}

/* ---- lifetime ----------------------------------------------------------- */

static void sess_free(tm_session *s) {
  ev_timer_stop(s->loop, &s->kick);
  idtab_free(&s->ids);
  free(s->scratch);
  free(s);
}

void sess_enter(tm_session *s) { guard_enter(&s->entries); }

void sess_maybe_free(tm_session *s) {
  if (!guard_inside(&s->entries) && s->closed && ilist_empty(&s->streams))
    sess_free(s);
}

void sess_leave(tm_session *s) {
  (void)guard_leave(&s->entries); /* never dead: closed decides */
  if (guard_inside(&s->entries))
    return;
  if (s->dead_streams) {
    s->dead_streams = 0;
    ILIST_FOREACH_SAFE(&s->streams, n, nx) {
      tm_stream *st = ILIST_ENTRY(n, tm_stream, slink);
      if (st->dead)
        st_free_mem(st);
    }
  }
  sess_maybe_free(s);
}

static void teardown(tm_session *s) {
  int reason = s->close_reason ? s->close_reason : TM_CLOSE_LOCAL;
  s->close_reason = reason;
  s->closed = 1;
  if (s->ping_timer)
    s->api->timer_free(s->ping_timer);
  if (s->pong_timer)
    s->api->timer_free(s->pong_timer);
  s->ping_timer = s->pong_timer = NULL;
  cq_free_all(s);
  /* every stream: cb, on_abandon or PH_ERESET (st_session_closed); those
   * created meanwhile cannot exist (closed refuses opens) */
  for (ilist_node *n = ilist_first(&s->streams); n; n = ilist_next(n))
    st_session_closed(ILIST_ENTRY(n, tm_stream, slink));
  tm_obs_session(s->m, -1);
  tm_obs_session_closed(s->m, reason);
  if (s->ops.on_close)
    s->ops.on_close(s->arg, reason);
  if (!s->transport_gone) {
    s->transport_gone = 1;
    s->t.close(s->targ);
  }
}

/* The kick: stream events, legacy open answers and pending closes run
 * here, from the loop. */
static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  tm_session *s = (tm_session *)((char *)w - offsetof(tm_session, kick));
  s->kick_armed = 0;
  sess_enter(s);
  if (s->close_reason && !s->closed)
    teardown(s);
  /* this round's list; what it kicks again runs in the next round */
  ilist round;
  ilist_init(&round);
  ilist_node *n;
  while ((n = ilist_first(&s->kicks)))
    ilist_push(&round, n); /* moves it */
  while ((n = ilist_pop(&round))) {
    tm_stream *st = ILIST_ENTRY(n, tm_stream, klink);
    st->kicked = 0;
    st_deliver(st);
  }
  sess_leave(s);
}

static void arm_kick(tm_session *s) {
  if (s->kick_armed)
    return;
  s->kick_armed = 1;
  ev_timer_set(&s->kick, 0., 0.);
  ev_timer_start(s->loop, &s->kick);
}

void sess_kick(tm_session *s, tm_stream *st) {
  if (st->kicked || st->dead)
    return;
  st->kicked = 1;
  ilist_push(&s->kicks, &st->klink);
  arm_kick(s);
}

void sess_fail(tm_session *s, int reason) {
  if (s->close_reason || s->closed)
    return;
  s->close_reason = reason;
  arm_kick(s);
}

void sess_violation(tm_session *s) {
  int64_t now = s->api->now_ms(s->ctx);
  if (s->viol_count == 0 ||
      now - s->viol_start_ms >= (int64_t)s->cfg.violation_window_ms) {
    s->viol_start_ms = now;
    s->viol_count = 0;
  }
  if (++s->viol_count > s->cfg.violation_limit && !s->close_reason) {
    /* TM-FAIL-7: audited once, with the count only (never data) */
    PH_LOG(s->api, s->ctx, PH_LOG_WARN,
           "tunnel session closed: too many stream violations",
           PH_INT("violations", (int64_t)s->viol_count),
           PH_INT("window_ms", (int64_t)s->cfg.violation_window_ms));
    sess_fail(s, TM_CLOSE_ABUSE);
  }
}

void sess_drain_check(tm_session *s) {
  if ((s->goaway_sent || s->goaway_rcvd) && s->live == 0 &&
      ilist_empty(&s->cq) && !s->drr.head)
    sess_fail(s, TM_CLOSE_GOAWAY_DONE);
}

/* ---- heartbeat ---------------------------------------------------------- */

static void pong_timeout_cb(ph_timer *t, void *arg) {
  (void)t;
  tm_session *s = arg;
  sess_enter(s);
  sess_fail(s, TM_CLOSE_HEARTBEAT);
  sess_leave(s);
}

static void ping_cb(ph_timer *t, void *arg) {
  (void)t;
  tm_session *s = arg;
  if (s->ping_out || s->close_reason)
    return; /* the pong timer decides */
  sess_enter(s);
  uint8_t p[TM_PING_LEN];
  uint64_t seq = ++s->ping_seq;
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(seq >> (56 - 8 * i));
  s->ping_sent_us = mono_us();
  s->ping_out = 1;
  cq_must(s, TM_PING, 0, p, sizeof(p));
  s->api->timer_set(s->pong_timer, s->cfg.ping_timeout_ms, 0);
  sess_leave(s);
}

static void on_pong(tm_session *s, const tm_frame *f) {
  uint64_t seq = 0;
  if (!s->ping_out || f->length != TM_PING_LEN)
    return;
  for (int i = 0; i < 8; i++)
    seq = seq << 8 | f->payload[i];
  if (seq != s->ping_seq)
    return; /* not the one outstanding */
  s->ping_out = 0;
  s->rtt_us = (uint64_t)(mono_us() - s->ping_sent_us);
  if (s->rtt_us == 0)
    s->rtt_us = 1;
  s->api->timer_set(s->pong_timer, 0, 0);
}

/* ---- new / close ------------------------------------------------------ */

static int cfg_valid(const tm_session_cfg *c) {
  return c->max_frame_payload >= 1 && c->max_frame_payload <= TM_MAX_PAYLOAD &&
         c->initial_window >= 1 && c->initial_window <= TM_WINDOW_MAX &&
         c->window_update_threshold >= 1 &&
         c->window_update_threshold <= c->initial_window &&
         c->inbound_buffer_bytes >= 1 &&
         c->inbound_buffer_bytes <= TM_WINDOW_MAX &&
         c->outbound_buffer_bytes >= 1 &&
         c->outbound_buffer_bytes <= TM_WINDOW_MAX && c->max_streams >= 1 &&
         c->max_streams <= (1u << 20) && c->control_queue_frames >= 1 &&
         c->control_queue_bytes >= TM_HEADER_LEN + TM_METADATA_MAX &&
         c->quantum >= 1 && c->quantum <= TM_WINDOW_MAX &&
         c->violation_window_ms >= 1 &&
         (c->ping_interval_ms == 0 || c->ping_timeout_ms >= 1);
}

/* The largest answer to an open this side queues: an OPEN_RESULT with
 * every field at its widest, or a RESET. */
static uint32_t answer_frame_max(void) {
  tm_open_result fail = {.accepted = 0, .stage = PH_STAGE_COUNT_ - 1,
                         .code = PH_OPEN_CODE_COUNT_ - 1, .code_known = 1,
                         .retryable = 1, .retry_after_ms = 3600000};
  tm_open_result ok = {.accepted = 1, .stage = PH_STAGE_CONNECT,
                       .code = PH_OPEN_OK, .code_known = 1,
                       .window = TM_WINDOW_MAX};
  uint8_t buf[TM_OPEN_RESULT_MAX];
  int a = tm_open_result_encode(&fail, buf, sizeof(buf));
  int b = tm_open_result_encode(&ok, buf, sizeof(buf));
  int n = a > b ? a : b;
  return TM_HEADER_LEN + (uint32_t)(n > 1 ? n : 1);
}

tm_session *tm_session_new(const ph_api *api, ph_ctx *ctx,
                           const tm_session_cfg *cfg,
                           const tm_transport *t, void *targ,
                           const tm_session_ops *ops, void *arg) {
  if (!cfg_valid(cfg) || !t || !t->want_write || !t->write || !t->close)
    return NULL; /* fail closed: the roles validate their keys first */
  tm_session *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  ilist_init(&s->streams);
  ilist_init(&s->kicks);
  ilist_init(&s->cq);
  s->api = api;
  s->ctx = ctx;
  s->loop = api->loop(ctx);
  s->cfg = *cfg;
  s->t = *t;
  s->targ = targ;
  if (ops)
    s->ops = *ops;
  s->arg = arg;
  s->m = cfg->metrics;
  s->next_id = 1;
  /* chunks hold at least half of TM_CHUNK_MIN on average (tm_stream.c's
   * append), so this bound is never what an honest peer reaches first */
  s->in_entries_max = cfg->inbound_buffer_bytes / (TM_CHUNK_MIN / 2) + 4;
  s->owed_frame_bytes = answer_frame_max();
  int ids_rc = idtab_init(&s->ids, cfg->max_streams);
  s->scratch = malloc(t->headroom + TM_HEADER_LEN + cfg->max_frame_payload);
  tm_drr_init(&s->drr, (cfg->local_caps & TM_CAP_FAIR_WRITER)
                           ? cfg->quantum
                           : TM_WINDOW_MAX); /* legacy: stream by stream */
  ev_timer_init(&s->kick, kick_cb, 0., 0.);
  if (cfg->ping_interval_ms) {
    s->ping_timer = api->timer_new(ctx, ping_cb, s);
    s->pong_timer = api->timer_new(ctx, pong_timeout_cb, s);
  }
  if (ids_rc < 0 || !s->scratch ||
      (cfg->ping_interval_ms && (!s->ping_timer || !s->pong_timer))) {
    if (s->ping_timer)
      api->timer_free(s->ping_timer);
    if (s->pong_timer)
      api->timer_free(s->pong_timer);
    sess_free(s);
    return NULL;
  }
  if (s->ping_timer)
    api->timer_set(s->ping_timer, cfg->ping_interval_ms,
                   cfg->ping_interval_ms);
  tm_obs_session(s->m, 1);
  return s;
}

void tm_session_close(tm_session *s) { sess_fail(s, TM_CLOSE_LOCAL); }

void tm_session_on_transport_closed(tm_session *s) {
  if (s->closed) {
    s->transport_gone = 1;
    return;
  }
  s->transport_gone = 1;
  if (!s->close_reason)
    s->close_reason = TM_CLOSE_TRANSPORT;
  sess_enter(s);
  teardown(s);
  sess_leave(s);
}

/* ---- the reader ------------------------------------------------------- */

/* A frame for an id with no stream: a late one (the stream was reset or
 * timed out meanwhile) is dropped; one for an id never used is the
 * peer's violation, reset by id (TM-PROTO-41). */
static void unknown_stream(tm_session *s, const tm_frame *f) {
  if (f->type == TM_RESET)
    return;
  uint32_t known = s->cfg.opener ? s->next_id - 1 : s->peer_max_id;
  if (f->stream_id <= known)
    return;
  uint8_t c = PH_OPEN_INTERNAL_ERROR;
  cq_must(s, TM_RESET, f->stream_id, &c, 1);
  sess_violation(s);
}

static void refuse(tm_session *s, uint32_t id, int code) {
  uint8_t c = (uint8_t)code;
  cq_must(s, TM_RESET, id, &c, 1);
}

static void on_open_stream(tm_session *s, const tm_frame *f) {
  tm_open_stream req;
  if (s->cfg.opener || f->stream_id <= s->peer_max_id) {
    /* a duplicate id, or an open towards the side that opens: the stream
     * concerned is reset */
    tm_stream *old = sess_lookup(s, f->stream_id);
    if (old)
      st_reset(old, PH_OPEN_INTERNAL_ERROR, 1, -1);
    else
      refuse(s, f->stream_id, PH_OPEN_INTERNAL_ERROR);
    sess_violation(s);
    return;
  }
  s->peer_max_id = f->stream_id;
  if (tm_open_stream_decode(f->payload, f->length, &req) != TM_OK) {
    refuse(s, f->stream_id, PH_OPEN_INTERNAL_ERROR);
    sess_violation(s);
    return;
  }
  /* A principal is read only where it was negotiated (a relay link
   * between servers): a client's claim is dropped, never logged. */
  if (!(s->cfg.caps & TM_CAP_PRINCIPAL))
    req.principal[0] = '\0';
  int strict = (s->cfg.caps & TM_CAP_OPEN_RESULT) != 0;
  int fc = strict && (s->cfg.caps & TM_CAP_FLOW_CONTROL);
  if (fc && (req.window == 0 || req.window > TM_WINDOW_MAX)) {
    refuse(s, f->stream_id, PH_OPEN_INTERNAL_ERROR);
    sess_violation(s);
    return;
  }
  if (s->goaway_sent || s->goaway_rcvd) {
    refuse(s, f->stream_id, PH_OPEN_AGENT_OFFLINE);
    return;
  }
  if (s->live >= s->cfg.max_streams || !s->ops.on_open) {
    refuse(s, f->stream_id,
           s->ops.on_open ? PH_OPEN_QUEUE_FULL : PH_OPEN_INTERNAL_ERROR);
    return;
  }
  tm_stream *st = st_new(s, f->stream_id, 0);
  if (!st) {
    refuse(s, f->stream_id, PH_OPEN_INTERNAL_ERROR);
    return;
  }
  st->strict = strict;
  st->fc = fc;
  st->peer_window = req.window;
  st->owes = 1; /* until the role answers (st_settle) */
  s->owed++;
  int ns = tm_open_next(TM_ST_IDLE,
                        strict ? TM_EV_OPEN_RCVD : TM_EV_LEGACY_OPEN);
  st->state = ns >= 0 ? ns : (strict ? TM_ST_OPENING : TM_ST_OPEN);
  sess_map_add(s, st);
  s->ops.on_open(s->arg, st, &req);
}

static void on_stream_frame(tm_session *s, const tm_frame *f) {
  tm_stream *st = sess_lookup(s, f->stream_id);
  if (!st) {
    unknown_stream(s, f);
    return;
  }
  switch (f->type) {
  case TM_DATA:
    st_on_data(st, f);
    break;
  case TM_OPEN_RESULT:
    st_on_result(st, f);
    break;
  case TM_WINDOW_UPDATE:
    st_on_window_update(st, f);
    break;
  case TM_RESET:
    st_on_reset(st, f->length == 1 ? f->payload[0] : PH_OPEN_INTERNAL_ERROR);
    break;
  }
}

static void on_connection_frame(tm_session *s, const tm_frame *f) {
  switch (f->type) {
  case TM_PING:
    if (f->length != TM_PING_LEN) {
      sess_fail(s, TM_CLOSE_PROTOCOL);
      return;
    }
    cq_must(s, TM_PONG, 0, f->payload, f->length);
    break;
  case TM_PONG:
    on_pong(s, f);
    break;
  case TM_GOAWAY: {
    uint32_t last;
    if (tm_u32_decode(f->payload, f->length, &last) != TM_OK) {
      sess_fail(s, TM_CLOSE_PROTOCOL);
      return;
    }
    s->goaway_rcvd = 1;
    if (s->ops.on_goaway)
      s->ops.on_goaway(s->arg, last);
    sess_drain_check(s);
    break;
  }
  case TM_AGENT_METADATA:
  case TM_AGENT_METADATA_ACK: {
    tm_metadata m;
    if (tm_metadata_decode(f->payload, f->length, &m) != TM_OK) {
      sess_fail(s, TM_CLOSE_PROTOCOL);
      return;
    }
    if (s->ops.on_metadata)
      s->ops.on_metadata(s->arg, &m, f->type == TM_AGENT_METADATA_ACK);
    break;
  }
  }
}

void tm_session_on_message(tm_session *s, const uint8_t *msg, size_t len) {
  tm_frame f;
  if (s->closed || s->close_reason)
    return; /* closing: the rest of the connection is dropped */
  sess_enter(s);
  if (tm_frame_decode(msg, len, &f) != TM_OK) {
    sess_fail(s, TM_CLOSE_PROTOCOL);
  } else if (!tm_frame_known(f.type)) {
    /* ignored (docs/protocol/tunnel.md, "Unknown frames") */
  } else if (f.type == TM_OPEN_STREAM) {
    on_open_stream(s, &f);
  } else if (tm_frame_is_connection(f.type)) {
    on_connection_frame(s, &f);
  } else {
    on_stream_frame(s, &f);
  }
  cq_pressure(s);
  sess_leave(s);
}

void tm_session_on_writable(tm_session *s) {
  sess_enter(s);
  wr_one(s);
  sess_leave(s);
}

/* ---- the role's calls ------------------------------------------------- */

int tm_session_send_metadata(tm_session *s, const tm_metadata *m, int ack) {
  uint8_t buf[TM_METADATA_MAX];
  if (s->closed || s->close_reason)
    return PH_ESTATE;
  int len = tm_metadata_encode(m, ack, buf, sizeof(buf));
  if (len < 0)
    return PH_EINVAL;
  if (cq_push(s, ack ? TM_AGENT_METADATA_ACK : TM_AGENT_METADATA, 0, buf,
              (size_t)len) < 0)
    return PH_EFULL;
  return PH_OK;
}

void tm_session_goaway(tm_session *s) {
  if (s->goaway_sent || s->closed || s->close_reason)
    return;
  uint8_t b[4];
  tm_u32_encode(b, s->cfg.opener ? s->next_id - 1 : s->peer_max_id);
  s->goaway_sent = 1;
  cq_must(s, TM_GOAWAY, 0, b, 4);
  sess_drain_check(s);
}

uint32_t tm_session_streams(const tm_session *s) { return s->live; }

int tm_session_can_open(const tm_session *s) {
  return !s->closed && !s->close_reason && !s->goaway_sent &&
         !s->goaway_rcvd && s->cfg.opener && s->live < s->cfg.max_streams;
}

unsigned tm_session_caps(const tm_session *s) { return s->cfg.caps; }

int tm_session_narrow_caps(tm_session *s, unsigned caps) {
  /* Every stream reads the caps when it starts (strict, flow control):
   * before the first one, no stream can see them change. */
  if (s->live || s->next_id != 1 || s->peer_max_id)
    return PH_EINVAL;
  s->cfg.caps &= caps;
  return PH_OK;
}
uint64_t tm_session_rtt_us(const tm_session *s) { return s->rtt_us; }

void tm_session_take_writer_waits(tm_session *s, lat_window *into) {
  lat_window_merge(into, &s->wwait);
  lat_window_reset(&s->wwait);
}

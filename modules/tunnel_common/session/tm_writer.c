/* SPDX-License-Identifier: BSD-2-Clause */
/* The one writer of a session (TM-P2-16): one frame per transport
 * writable event, the control queue first (TM-P2-14/17), then DATA by
 * deficit round-robin over the streams with queued bytes (TM-P2-18/19).
 * Without the local fair_writer capability the ring runs with a quantum
 * as large as any window, so a stream keeps the turn until its queue is
 * empty: DATA goes out stream by stream in the order the streams started
 * writing, the old FIFO writer that the baselines measure.
 *
 * Frames are built behind `headroom` bytes (LWS_PRE) so the transport
 * sends them in place; DATA is copied once from the stream's ring into
 * the session's frame buffer. */
#include <stdlib.h>
#include <string.h>

#include "tm_session_int.h"

int cq_room(const tm_session *s, size_t len) {
  return ilist_len(&s->cq) < s->cfg.control_queue_frames &&
         s->cq_bytes + TM_HEADER_LEN + len <= s->cfg.control_queue_bytes;
}

int cq_push(tm_session *s, uint8_t type, uint32_t id, const uint8_t *p,
            size_t len) {
  if (s->closed || s->close_reason)
    return 0; /* going away: nothing more is sent */
  if (!cq_room(s, len))
    return -1;
  size_t hr = s->t.headroom;
  tm_fbuf *b = malloc(sizeof(*b) + hr + TM_HEADER_LEN + len);
  if (!b)
    return -1;
  ilist_node_init(&b->link);
  b->len = TM_HEADER_LEN + len;
  b->t_us = mono_us();
  tm_frame_header(b->data + hr, type, 0, id, (uint32_t)len);
  if (len)
    memcpy(b->data + hr + TM_HEADER_LEN, p, len);
  ilist_push(&s->cq, &b->link);
  s->cq_bytes += b->len;
  wr_need(s);
  return 0;
}

/* Whether the control queue lacks room for what it holds, the answers
 * owed and a margin of `sixteenths` of its size. */
static int short_of_room(const tm_session *s, uint32_t sixteenths) {
  uint64_t mf = (uint64_t)s->cfg.control_queue_frames * sixteenths / 16;
  uint64_t mb = (uint64_t)s->cfg.control_queue_bytes * sixteenths / 16;
  if (mf < 2)
    mf = 2;
  if (mb < 2u * s->owed_frame_bytes)
    mb = 2u * s->owed_frame_bytes;
  uint64_t f = (uint64_t)ilist_len(&s->cq) + s->owed + mf;
  uint64_t b = (uint64_t)s->cq_bytes + (uint64_t)s->owed * s->owed_frame_bytes +
               mb;
  return f > s->cfg.control_queue_frames || b > s->cfg.control_queue_bytes;
}

void cq_pressure(tm_session *s) {
  if (s->closed || s->close_reason || s->transport_gone || !s->t.pause_read)
    return;
  /* Paused with a margin of 1/8 of the queue, resumed at 1/4: a burst of
   * opens waits in the socket (the peer's TCP window) instead of
   * overflowing the queue, and every open gets its own answer
   * (issue 22 item 7). */
  int want = s->read_paused ? short_of_room(s, 4) : short_of_room(s, 2);
  if (want == (int)s->read_paused)
    return;
  s->read_paused = want ? 1 : 0;
  if (want) {
    tm_obs_backpressure(s->m, tm_session_caps(s) & TM_CAP_OPEN_RESULT,
                        TM_BP_READ_PAUSED);
    PH_LOG_RL(s->api, s->ctx, PH_LOG_WARN,
              "reading paused: the control queue could not take the "
              "answers owed (streams.control_queue_frames/_bytes)",
              PH_UINT("queued_frames", ilist_len(&s->cq)),
              PH_UINT("answers_owed", s->owed));
  }
  s->t.pause_read(s->targ, want);
}

void cq_must(tm_session *s, uint8_t type, uint32_t id, const uint8_t *p,
             size_t len) {
  if (cq_push(s, type, id, p, len) < 0) {
    tm_obs_backpressure(s->m, tm_session_caps(s) & TM_CAP_OPEN_RESULT,
                        TM_BP_CONTROL_FULL);
    sess_fail(s, TM_CLOSE_CONTROL_FULL); /* TM-P2-22, TM-FAIL-8 */
  }
}

void cq_free_all(tm_session *s) {
  ilist_node *n;
  while ((n = ilist_pop(&s->cq)))
    free(ILIST_ENTRY(n, tm_fbuf, link));
  s->cq_bytes = 0;
}

void wr_need(tm_session *s) {
  if (s->write_wanted || s->closed || s->close_reason || s->transport_gone)
    return;
  if (ilist_empty(&s->cq) && !s->drr.head)
    return;
  s->write_wanted = 1;
  s->t.want_write(s->targ);
}

static int send_control(tm_session *s) {
  tm_fbuf *b = ILIST_ENTRY(ilist_pop(&s->cq), tm_fbuf, link);
  s->cq_bytes -= b->len;
  uint64_t waited = (uint64_t)(mono_us() - b->t_us);
  tm_obs_queue_wait(s->m, TM_Q_WRITER, waited);
  lat_window_add(&s->wwait, waited);
  int rc = s->t.write(s->targ, b->data + s->t.headroom, b->len);
  free(b);
  return rc;
}

/* Copies n bytes from the head of st's ring to dst and drops them. */
static void ring_take(tm_stream *st, uint8_t *dst, uint32_t n) {
  uint32_t cap = st->s->cfg.outbound_buffer_bytes;
  uint32_t first = cap - st->out_off < n ? cap - st->out_off : n;
  memcpy(dst, st->out + st->out_off, first);
  memcpy(dst + first, st->out, n - first);
  st->out_off = (st->out_off + n) % cap;
  st->out_len -= n;
}

static int send_data(tm_session *s) {
  uint32_t budget;
  tm_drr_node *node = tm_drr_pick(&s->drr, &budget);
  if (!node)
    return 0;
  tm_stream *st =
      (tm_stream *)((char *)node - offsetof(tm_stream, drr)); /* container */
  uint32_t n = st->out_len;
  if (n > budget)
    n = budget;
  if (n > s->cfg.max_frame_payload)
    n = s->cfg.max_frame_payload;
  int fin = st->shut && !st->fin_sent && n == st->out_len;
  if (n == 0 && !fin) {
    tm_drr_sent(&s->drr, node, 0, 0); /* nothing to send after all */
    return 0;
  }
  uint8_t *hdr = s->scratch + s->t.headroom;
  if (n)
    ring_take(st, hdr + TM_HEADER_LEN, n);
  tm_frame_header(hdr, TM_DATA, fin ? TM_FLAG_FIN : 0, st->id, n);
  int64_t now = mono_us();
  tm_obs_queue_wait(s->m, TM_Q_WRITER, (uint64_t)(now - st->out_since_us));
  lat_window_add(&s->wwait, (uint64_t)(now - st->out_since_us));
  st->out_since_us = now;
  int more = st->out_len > 0 || (st->shut && !st->fin_sent && !fin);
  tm_drr_sent(&s->drr, node, n, more);
  int rc = s->t.write(s->targ, hdr, TM_HEADER_LEN + n);
  if (fin)
    st_fin_sent(st);
  else if (st_writable(st))
    sess_kick(s, st); /* room again: PH_WRITE */
  return rc;
}

void wr_one(tm_session *s) {
  s->write_wanted = 0;
  if (s->closed || s->close_reason || s->transport_gone)
    return;
  int control = !ilist_empty(&s->cq);
  int rc = control ? send_control(s) : send_data(s);
  if (rc < 0) {
    sess_fail(s, TM_CLOSE_TRANSPORT);
    return;
  }
  if (control)
    cq_pressure(s);
  wr_need(s);
  sess_drain_check(s);
}

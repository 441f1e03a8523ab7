/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow-control window arithmetic (tm_window.h). Sums are computed in 64
 * bits and checked against TM_WINDOW_MAX before anything is stored, so no
 * input can wrap a counter (TM-CFG-25).
 */
#include "tm_window.h"

#include "tm_proto.h"

int tm_win_init(tm_window *w, uint32_t send_initial, uint32_t recv_initial,
                uint32_t threshold) {
  if (w == NULL || send_initial < 1 || send_initial > TM_WINDOW_MAX ||
      recv_initial < 1 || recv_initial > TM_WINDOW_MAX || threshold < 1 ||
      threshold > recv_initial)
    return TM_EPROTO;
  w->send = send_initial;
  w->recv = recv_initial;
  w->recv_max = recv_initial;
  w->pending = 0;
  w->threshold = threshold;
  return TM_OK;
}

uint32_t tm_win_take(tm_window *w, uint32_t want) {
  uint32_t n = want < w->send ? want : w->send;
  w->send -= n;
  return n;
}

int tm_win_credit(tm_window *w, uint32_t inc) {
  if (inc == 0 || (uint64_t)w->send + inc > TM_WINDOW_MAX)
    return TM_EPROTO; /* TM-P2-13: zero increment, overflow */
  w->send += inc;
  return TM_OK;
}

int tm_win_recv(tm_window *w, uint32_t len) {
  if (len > w->recv)
    return TM_EPROTO; /* TM-P2-13: overrun */
  w->recv -= len;
  return TM_OK;
}

uint32_t tm_win_delivered(tm_window *w, uint32_t n) {
  /* Received and not yet delivered: what is neither open window nor
   * waiting to be given back. */
  uint32_t undelivered = w->recv_max - w->recv - w->pending;
  if (n > undelivered)
    n = undelivered;
  w->pending += n;
  /* TM-P2-12: the update goes once the delivered total reaches the
   * threshold, never per frame. */
  if (w->pending == 0 || w->pending < w->threshold)
    return 0;
  uint32_t inc = w->pending;
  w->pending = 0;
  w->recv += inc;
  return inc;
}

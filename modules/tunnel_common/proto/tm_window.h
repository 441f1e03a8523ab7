/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-stream flow-control windows (TM-P2-8..13), pure arithmetic.
 *
 * Each direction of a flow-controlled stream has a window: the bytes the
 * receiver can still take. The sender takes from its send window before
 * it queues DATA (tm_win_take: all or part of what it wants, 0 = stall);
 * WINDOW_UPDATE gives it back (tm_win_credit). The receiver counts DATA
 * against its receive window (tm_win_recv: a frame larger than what is
 * left is an overrun) and reopens it only for bytes delivered to the
 * socket they were for (tm_win_delivered), answering with the increment
 * to send once the delivered total reaches the threshold, never per
 * frame. Every violation is TM_EPROTO and leaves the window unchanged:
 * the caller resets that stream (TM-P2-13).
 */
#ifndef TM_WINDOW_H
#define TM_WINDOW_H

#include <stdint.h>

typedef struct tm_window {
  uint32_t send;      /* bytes we may still send */
  uint32_t recv;      /* bytes the peer may still send us */
  uint32_t recv_max;  /* our receive window: recv + undelivered + pending
                         update never exceeds it */
  uint32_t pending;   /* delivered, not yet given back */
  uint32_t threshold; /* give back once pending reaches it */
} tm_window;

/* send_initial: the peer's declared window; recv_initial: ours; both
 * 1..TM_WINDOW_MAX and threshold 1..recv_initial, else TM_EPROTO. */
int tm_win_init(tm_window *w, uint32_t send_initial, uint32_t recv_initial,
                uint32_t threshold);
/* Takes up to want bytes of send window; returns what was taken. */
uint32_t tm_win_take(tm_window *w, uint32_t want);
/* A WINDOW_UPDATE of inc: TM_OK, or TM_EPROTO for 0 (TM-P2-13) or a
 * window that would pass TM_WINDOW_MAX (overflow). */
int tm_win_credit(tm_window *w, uint32_t inc);
/* DATA of len bytes arrived: TM_OK, or TM_EPROTO when len > recv
 * (overrun). */
int tm_win_recv(tm_window *w, uint32_t len);
/* n received bytes were delivered. Returns the increment to send now in a
 * WINDOW_UPDATE (the whole pending amount, which then restarts from 0) or
 * 0 while pending is below the threshold. n beyond what was received and
 * not yet delivered is TM_EPROTO's caller bug: it is clamped. */
uint32_t tm_win_delivered(tm_window *w, uint32_t n);

#endif

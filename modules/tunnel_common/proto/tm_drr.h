/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Deficit round-robin over the streams that have DATA to send and window
 * to send it with (TM-P2-18/19), pure: the writer asks which stream sends
 * the next DATA frame and how many bytes it may put in it, and says what
 * it sent. Each stream in the ring gets `quantum` bytes of credit when its
 * turn begins and keeps the turn until the credit is spent or it has
 * nothing more, so per round every active stream sends at most one
 * quantum, and a bulk stream cannot hold a small one back for more than
 * one quantum per other active stream.
 *
 * Intrusive: a tm_drr_node is embedded in the caller's stream; the ring
 * never allocates. O(1) for every operation.
 */
#ifndef TM_DRR_H
#define TM_DRR_H

#include <stdint.h>

typedef struct tm_drr_node {
  struct tm_drr_node *next, *prev;
  uint32_t deficit;
  int linked;
} tm_drr_node;

typedef struct tm_drr {
  tm_drr_node *head; /* the stream whose turn it is; NULL: empty */
  uint32_t quantum;  /* bytes per turn, 1..TM_WINDOW_MAX */
  uint32_t count;
} tm_drr;

void tm_drr_init(tm_drr *d, uint32_t quantum);
/* The stream has bytes it can send: joins the ring's tail (no-op when it
 * is in the ring already). */
void tm_drr_activate(tm_drr *d, tm_drr_node *n);
/* Leaves the ring (it has nothing to send, stalled on its window, or is
 * going away); its credit is forgotten. No-op when not in the ring. */
void tm_drr_remove(tm_drr *d, tm_drr_node *n);
/* The stream to send from next and, in *budget, the most bytes it may
 * send now (1..quantum); NULL when the ring is empty. */
tm_drr_node *tm_drr_pick(tm_drr *d, uint32_t *budget);
/* n, the stream tm_drr_pick returned, sent `sent` bytes (0..budget);
 * more: whether it still has bytes it can send. Without more it leaves
 * the ring; with its credit spent its turn passes to the next stream. */
void tm_drr_sent(tm_drr *d, tm_drr_node *n, uint32_t sent, int more);

#endif

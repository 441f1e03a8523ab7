/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's observation queue (issue 26): a bounded ring of
 * observations waiting to be reported, and the one batch in flight
 * (sequence, packed bytes, digest) that is sent again byte for byte until
 * it is acknowledged (the outcome batches' rule, CP-5-15), or put back at
 * the queue's head for a new session, which numbers its batches from 1.
 * Pure (no I/O, no loop); loop thread. */
#ifndef PH_CHK_REPORT_H
#define PH_CHK_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "chk_wire.h"

typedef struct chk_report {
  chk_obs *ring;
  uint32_t cap, head, len; /* the waiting observations */
  chk_obs *batch;          /* the batch in flight (batch_max) */
  uint32_t batch_max, batch_n;
  uint64_t seq;  /* the last sequence cut in this session */
  cp_buf packed; /* the batch in flight's bytes (empty: none) */
  uint8_t digest[32];
  uint64_t dropped;
} chk_report;

int chk_report_init(chk_report *r, uint32_t cap, uint32_t batch_max);
void chk_report_free(chk_report *r);
/* Queues one; 0, or -1 when full (counted in dropped). */
int chk_report_push(chk_report *r, const chk_obs *o);
/* A new session: the batch in flight goes back to the queue's head, in
 * order, and sequences start again at 1. */
void chk_report_session(chk_report *r);
/* The batch to send: the one in flight, else a new one cut from the
 * queue (at most batch_max, the next sequence) packed for checker and
 * session. 1 with *bytes, 0 when nothing waits, -1 on no memory. */
int chk_report_next(chk_report *r, const char *checker, const char *session,
                    const cp_buf **bytes);
/* The controller acknowledged acked: the batch in flight is done when
 * acked reaches its sequence (1), else 0. */
int chk_report_ack(chk_report *r, uint64_t acked);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream open state machine (TM-PROTO-40/41), pure: a state and an
 * event give the next state or a violation. The session applies it to
 * every frame and every local action, so an illegal sequence is caught in
 * one place:
 *
 *   idle ──open_sent/open_rcvd──► opening ──result ok──► open
 *     └──legacy_open──► open       opening ──result fail/reset/timeout──► reset
 *   open ──fin_sent──► half_closed_local ──fin_rcvd──► closed
 *   open ──fin_rcvd──► half_closed_remote ──fin_sent──► closed
 *   open, half_closed_* ──reset──► reset
 *
 * DATA received in opening (TM-P0-17), an OPEN_RESULT received outside
 * opening (a duplicate or out of order), DATA after the peer's FIN and
 * anything on a closed or reset stream are violations: the session resets
 * that stream only.
 */
#ifndef TM_OPEN_H
#define TM_OPEN_H

enum tm_state {
  TM_ST_IDLE = 0,
  TM_ST_OPENING,
  TM_ST_OPEN,
  TM_ST_HALF_CLOSED_LOCAL,  /* we sent FIN */
  TM_ST_HALF_CLOSED_REMOTE, /* the peer sent FIN */
  TM_ST_CLOSED,
  TM_ST_RESET,
  TM_ST_COUNT_
};

enum tm_event {
  TM_EV_OPEN_SENT = 1,   /* we sent OPEN_STREAM, strict */
  TM_EV_OPEN_RCVD,       /* the peer's OPEN_STREAM, strict */
  TM_EV_LEGACY_OPEN,     /* either side, legacy: open at once */
  TM_EV_RESULT_OK_SENT,  /* we accepted (after installing the stream) */
  TM_EV_RESULT_OK_RCVD,
  TM_EV_RESULT_FAIL_SENT,
  TM_EV_RESULT_FAIL_RCVD,
  TM_EV_DATA_SENT,
  TM_EV_DATA_RCVD,
  TM_EV_FIN_SENT,
  TM_EV_FIN_RCVD,
  TM_EV_RESET_SENT,
  TM_EV_RESET_RCVD,
  TM_EV_TIMEOUT,         /* the open timed out (we reset it) */
  TM_EV_COUNT_
};

/* The state after ev in st, or -1 when ev is illegal in st (the state is
 * then unchanged: the caller resets the stream). */
int tm_open_next(int st, int ev);
/* Whether the stream is finished (closed or reset): its id may be
 * forgotten once nothing refers to it. */
int tm_open_terminal(int st);
/* Names for logs and tests: "idle", "opening", ... / "open_sent", ... */
const char *tm_state_name(int st);
const char *tm_event_name(int ev);

#endif

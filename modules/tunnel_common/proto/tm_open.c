/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream open state machine (tm_open.h): one table, written out so
 * that every (state, event) pair is decided here and nowhere else.
 * Anything not listed is -1: a violation that resets that stream.
 */
#include "tm_open.h"

#define X (-1)
/* next[state][event - 1] */
static const signed char next_tab[TM_ST_COUNT_][TM_EV_COUNT_ - 1] = {
    /*                 open_s open_r legacy ok_s  ok_r  fail_s fail_r
                       data_s data_r fin_s fin_r rst_s rst_r timeout */
    [TM_ST_IDLE] = {TM_ST_OPENING, TM_ST_OPENING, TM_ST_OPEN, X, X, X, X,
                    X, X, X, X, X, X, X},
    /* Opening: only the result, a reset or the timeout; DATA or FIN here
     * is TM-P0-17's violation. */
    [TM_ST_OPENING] = {X, X, X, TM_ST_OPEN, TM_ST_OPEN, TM_ST_RESET,
                       TM_ST_RESET, X, X, X, X, TM_ST_RESET, TM_ST_RESET,
                       TM_ST_RESET},
    /* Open: a second result is a duplicate (TM-PROTO-41). */
    [TM_ST_OPEN] = {X, X, X, X, X, X, X, TM_ST_OPEN, TM_ST_OPEN,
                    TM_ST_HALF_CLOSED_LOCAL, TM_ST_HALF_CLOSED_REMOTE,
                    TM_ST_RESET, TM_ST_RESET, X},
    /* We sent FIN: we send nothing more but may still receive. */
    [TM_ST_HALF_CLOSED_LOCAL] = {X, X, X, X, X, X, X, X,
                                 TM_ST_HALF_CLOSED_LOCAL, X, TM_ST_CLOSED,
                                 TM_ST_RESET, TM_ST_RESET, X},
    /* The peer sent FIN: DATA from it now is a violation. */
    [TM_ST_HALF_CLOSED_REMOTE] = {X, X, X, X, X, X, X,
                                  TM_ST_HALF_CLOSED_REMOTE, X, TM_ST_CLOSED,
                                  X, TM_ST_RESET, TM_ST_RESET, X},
    [TM_ST_CLOSED] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X},
    [TM_ST_RESET] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X},
};
#undef X

int tm_open_next(int st, int ev) {
  if (st < 0 || st >= TM_ST_COUNT_ || ev < TM_EV_OPEN_SENT ||
      ev >= TM_EV_COUNT_)
    return -1;
  return next_tab[st][ev - 1];
}

int tm_open_terminal(int st) { return st == TM_ST_CLOSED || st == TM_ST_RESET; }

const char *tm_state_name(int st) {
  static const char *const n[] = {"idle",
                                  "opening",
                                  "open",
                                  "half_closed_local",
                                  "half_closed_remote",
                                  "closed",
                                  "reset"};
  return st >= 0 && st < TM_ST_COUNT_ ? n[st] : "unknown";
}

const char *tm_event_name(int ev) {
  static const char *const n[] = {
      "open_sent",   "open_rcvd",   "legacy_open", "result_ok_sent",
      "result_ok_rcvd", "result_fail_sent", "result_fail_rcvd", "data_sent",
      "data_rcvd",   "fin_sent",    "fin_rcvd",    "reset_sent",
      "reset_rcvd",  "timeout"};
  return ev >= TM_EV_OPEN_SENT && ev < TM_EV_COUNT_ ? n[ev - 1] : "unknown";
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/tunnel_common/proto/tm_open.c: the stream open state machine
 * (TM-PROTO-40/41, TM-P0-17, TM-TEST-4). The whole 7 x 14 table is
 * asserted against the matrix written out below, every illegal pair
 * included; then the seed's sequences: duplicate and out-of-order
 * OPEN_RESULT, DATA while opening, reset, timeout, cancellation. */
#include <string.h>

#include "tap.h"
#include "tunnel_common/proto/tm_open.h"

/* expect[state] lists the next state per event, in enum order:
 *   open_sent open_rcvd legacy_open ok_sent ok_rcvd fail_sent fail_rcvd
 *   data_sent data_rcvd fin_sent fin_rcvd reset_sent reset_rcvd timeout
 * with i idle, o opening, P open, L half_closed_local, R
 * half_closed_remote, C closed, X reset, and '.' for illegal (-1). */
static const char *const expect[TM_ST_COUNT_] = {
    /* idle               */ "ooP...........",
    /* opening            */ "...PPXX....XXX",
    /* open               */ ".......PPLRXX.",
    /* half_closed_local  */ "........L.CXX.",
    /* half_closed_remote */ ".......R.C.XX.",
    /* closed             */ "..............",
    /* reset              */ "..............",
};

static int state_of(char c) {
  switch (c) {
  case 'i':
    return TM_ST_IDLE;
  case 'o':
    return TM_ST_OPENING;
  case 'P':
    return TM_ST_OPEN;
  case 'L':
    return TM_ST_HALF_CLOSED_LOCAL;
  case 'R':
    return TM_ST_HALF_CLOSED_REMOTE;
  case 'C':
    return TM_ST_CLOSED;
  case 'X':
    return TM_ST_RESET;
  default:
    return -1;
  }
}

static void test_matrix(void) {
  for (int st = 0; st < TM_ST_COUNT_; st++) {
    ok(strlen(expect[st]) == TM_EV_COUNT_ - 1, "matrix row has 14 events");
    for (int ev = TM_EV_OPEN_SENT; ev < TM_EV_COUNT_; ev++) {
      char name[128];
      int want = state_of(expect[st][ev - 1]);
      snprintf(name, sizeof name, "TM-PROTO-40 %s + %s -> %s", tm_state_name(st),
               tm_event_name(ev), want < 0 ? "illegal" : tm_state_name(want));
      is_int(tm_open_next(st, ev), want, name);
    }
  }
}

/* Applies a sequence; returns the final state, or -1 at the first illegal
 * event (the caller resets the stream). */
static int run(const int *evs, size_t n) {
  int st = TM_ST_IDLE;
  for (size_t i = 0; i < n; i++) {
    int nx = tm_open_next(st, evs[i]);
    if (nx < 0)
      return -1;
    st = nx;
  }
  return st;
}

#define RUN(...)                                                           \
  run((const int[]){__VA_ARGS__},                                          \
      sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

static void test_sequences(void) {
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_DATA_SENT,
             TM_EV_DATA_RCVD, TM_EV_FIN_SENT, TM_EV_DATA_RCVD,
             TM_EV_FIN_RCVD),
         TM_ST_CLOSED, "TM-PROTO-40 strict opener: open, data, FIN both ways");
  is_int(RUN(TM_EV_OPEN_RCVD, TM_EV_RESULT_OK_SENT, TM_EV_DATA_RCVD,
             TM_EV_FIN_RCVD, TM_EV_DATA_SENT, TM_EV_FIN_SENT),
         TM_ST_CLOSED, "TM-PROTO-40 strict acceptor: the peer closes first");
  is_int(RUN(TM_EV_LEGACY_OPEN, TM_EV_DATA_SENT, TM_EV_FIN_SENT,
             TM_EV_FIN_RCVD),
         TM_ST_CLOSED, "legacy: open at once, no result");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_FAIL_RCVD), TM_ST_RESET,
         "TM-PROTO-40 opening -> reset on a refusal");
  is_int(RUN(TM_EV_OPEN_RCVD, TM_EV_RESULT_FAIL_SENT), TM_ST_RESET,
         "the acceptor refusing: reset");
  is_int(RUN(TM_EV_OPEN_RCVD), TM_ST_OPENING,
         "TM-P0-15 a strict OPEN_STREAM received: the acceptor (the server) "
         "holds the stream in opening");
  is_int(tm_open_next(TM_ST_OPENING, TM_EV_DATA_SENT), -1,
         "TM-P0-15 ... where it sends no DATA before its OPEN_RESULT");

  /* TM-PROTO-41: once, and only in opening. */
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_RESULT_OK_RCVD), -1,
         "TM-PROTO-41 TM-TEST-4 duplicate OPEN_RESULT (ok, ok) is a violation");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_RESULT_FAIL_RCVD),
         -1, "TM-PROTO-41 TM-TEST-4 a refusal after an acceptance is a "
             "violation");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_FAIL_RCVD, TM_EV_RESULT_OK_RCVD),
         -1, "TM-PROTO-41 an acceptance after a refusal is a violation");
  is_int(RUN(TM_EV_RESULT_OK_RCVD), -1,
         "TM-PROTO-41 TM-TEST-4 out of order: OPEN_RESULT before OPEN_STREAM "
         "(unknown stream)");
  is_int(RUN(TM_EV_LEGACY_OPEN, TM_EV_RESULT_OK_RCVD), -1,
         "TM-PROTO-41 an OPEN_RESULT on a legacy stream is a violation");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_FIN_RCVD,
             TM_EV_RESULT_OK_RCVD),
         -1, "TM-PROTO-41 an OPEN_RESULT after the peer's FIN");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_TIMEOUT, TM_EV_RESULT_OK_RCVD), -1,
         "TM-PROTO-41 TM-TEST-4 a late OPEN_RESULT after the timeout");

  /* TM-P0-17: DATA while opening resets that stream. */
  is_int(RUN(TM_EV_OPEN_RCVD, TM_EV_DATA_RCVD), -1,
         "TM-P0-17 TM-TEST-4 DATA received while opening is a violation");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_DATA_SENT), -1,
         "TM-PROTO-37 the opener may not send DATA before the result");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_DATA_RCVD), -1,
         "TM-PROTO-37 the opener accepts no DATA before the result");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_FIN_RCVD), -1,
         "a FIN while opening is a violation");

  /* Reset, timeout, cancellation. */
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_TIMEOUT), TM_ST_RESET,
         "TM-PROTO-38 TM-TEST-4 the open timeout resets the stream");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_TIMEOUT), -1,
         "TM-TEST-4 no open timeout once open");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESET_SENT), TM_ST_RESET,
         "TM-TEST-4 cancellation while opening (the browser left): reset");
  is_int(RUN(TM_EV_OPEN_RCVD, TM_EV_RESET_RCVD), TM_ST_RESET,
         "TM-TEST-4 the opener cancels: the acceptor's stream is reset");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_RESET_RCVD),
         TM_ST_RESET, "TM-TEST-4 reset while open");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_FIN_SENT,
             TM_EV_RESET_SENT),
         TM_ST_RESET, "reset while half closed");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESET_SENT, TM_EV_RESET_RCVD), -1,
         "TM-TEST-4 anything on a reset stream (the peer's reset crossing "
         "ours) is for the session to drop");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_FIN_RCVD,
             TM_EV_DATA_RCVD),
         -1, "DATA after the peer's FIN is a violation");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_RESULT_OK_RCVD, TM_EV_FIN_SENT,
             TM_EV_DATA_SENT),
         -1, "DATA after our FIN is a caller bug");
  is_int(RUN(TM_EV_OPEN_SENT, TM_EV_OPEN_SENT), -1,
         "a second OPEN_STREAM on a stream id is a violation");
}

static void test_misc(void) {
  int term = 0;
  for (int st = 0; st < TM_ST_COUNT_; st++)
    term += tm_open_terminal(st) << st;
  is_int(term, 1 << TM_ST_CLOSED | 1 << TM_ST_RESET,
         "only closed and reset are terminal");
  ok(tm_open_next(-1, TM_EV_OPEN_SENT) == -1 &&
         tm_open_next(TM_ST_COUNT_, TM_EV_OPEN_SENT) == -1 &&
         tm_open_next(TM_ST_IDLE, 0) == -1 &&
         tm_open_next(TM_ST_IDLE, TM_EV_COUNT_) == -1 &&
         tm_open_next(TM_ST_OPEN, 1000) == -1,
     "out-of-range states and events are illegal");
  ok(strcmp(tm_state_name(TM_ST_HALF_CLOSED_REMOTE), "half_closed_remote") ==
             0 &&
         strcmp(tm_state_name(99), "unknown") == 0 &&
         strcmp(tm_event_name(TM_EV_TIMEOUT), "timeout") == 0 &&
         strcmp(tm_event_name(TM_EV_OPEN_SENT), "open_sent") == 0 &&
         strcmp(tm_event_name(0), "unknown") == 0,
     "state and event names");
}

int main(void) {
  plan_lazy();
  test_matrix();
  test_sequences();
  test_misc();
  return done_testing();
}

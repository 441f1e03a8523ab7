/* SPDX-License-Identifier: BSD-2-Clause */
/* The one bounded wait of the C unit tests: run a libev loop until a
 * condition holds or a bound passes. The same loop serves both kinds of
 * test: the real host parts' loop (bus, mailbox, pool: the loop the test
 * made) and the mock host's (api->loop(hctx) from host_test.h, or
 * ph_mock_loop(m)); ph_mock_run_for is nothing but a bounded run of it.
 *
 *   wait_until(loop, o.done, 2000);           a timeout is a TAP failure
 *   ok(poll_until(loop, o.done, 2000), "x");  the caller asserts it
 *   spin_for(loop, 50);                       a pause, nothing awaited
 *
 * What they wait for: cond, any C expression, is evaluated before each
 * loop iteration (ev_run EVRUN_ONCE) and once after the last; the wait
 * ends as soon as it holds.
 * The bound: ms milliseconds of loop time, enforced by a one-shot timer
 * on the same loop (a safety bound, never what a test asserts), so every
 * wait stops by itself however the code under test misbehaves.
 * A timeout: wait_until prints a TAP failure naming the condition and
 * where it was awaited ("not ok N - wait_until(o.done) within 2000 ms"
 * then "#   failed at t/unit/lib/x.c:123"); poll_until reports nothing, for
 * waits whose outcome the caller checks or for which a timeout is an
 * outcome. Both yield whether cond held. */
#ifndef PH_LOOP_TEST_H
#define PH_LOOP_TEST_H

#include <ev.h>
#include <stdio.h>

#include "tap.h"

typedef struct loop_wait_ {
  struct ev_loop *loop;
  ev_timer safety;
  int fired;
} loop_wait_;

static inline void loop_wait_fired_(struct ev_loop *lp, ev_timer *w,
                                    int revents) {
  (void)revents;
  *(int *)w->data = 1;
  ev_break(lp, EVBREAK_ALL);
}

static inline void loop_wait_begin_(loop_wait_ *w, struct ev_loop *lp, int ms) {
  w->loop = lp;
  w->fired = 0;
  ev_now_update(lp);
  ev_timer_init(&w->safety, loop_wait_fired_, ms / 1000.0, 0.);
  w->safety.data = &w->fired;
  ev_timer_start(lp, &w->safety);
}

/* One loop iteration; 0 once the bound has passed. */
static inline int loop_wait_step_(loop_wait_ *w) {
  if (w->fired)
    return 0;
  ev_run(w->loop, EVRUN_ONCE);
  return 1;
}

static inline int loop_wait_end_(loop_wait_ *w, int held, int report,
                                 const char *what, int ms, const char *file,
                                 int line) {
  ev_timer_stop(w->loop, &w->safety);
  if (!held && report) {
    char name[256];
    snprintf(name, sizeof(name), "wait_until(%s) within %d ms", what, ms);
    tap_ok_(0, name, file, line);
  }
  return held;
}

#define loop_wait_(loop, cond, ms, report)                                     \
  __extension__({                                                              \
    loop_wait_ lw_;                                                            \
    loop_wait_begin_(&lw_, (loop), (ms));                                      \
    while (!(cond) && loop_wait_step_(&lw_))                                   \
      ;                                                                        \
    loop_wait_end_(&lw_, !!(cond), (report), #cond, (ms), __FILE__, __LINE__); \
  })

#define wait_until(loop, cond, ms) loop_wait_((loop), cond, (ms), 1)
#define poll_until(loop, cond, ms) loop_wait_((loop), cond, (ms), 0)

/* A condition over an array, for the waits above: whether cond (an
 * expression in i) holds for every i in 0..n-1.
 *
 *   poll_until(loop, all_of(i, n, as[i].calls > 0), 5000);
 */
#define all_of(i, n, cond)                                                     \
  __extension__({                                                              \
    int all_ = 1;                                                              \
    for (int i = 0; all_ && i < (n); i++)                                      \
      all_ = !!(cond);                                                         \
    all_;                                                                      \
  })

/* Runs the loop for ms milliseconds of loop time. */
static inline void spin_for(struct ev_loop *lp, int ms) {
  loop_wait_ w;
  loop_wait_begin_(&w, lp, ms);
  while (loop_wait_step_(&w))
    ;
  ev_timer_stop(lp, &w.safety);
}

#endif

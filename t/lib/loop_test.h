/* SPDX-License-Identifier: BSD-2-Clause */
/* Bounded libev loop runs for unit tests of the host's loop-side parts
 * (bus, mailbox, pool): every run stops by itself. */
#ifndef PH_LOOP_TEST_H
#define PH_LOOP_TEST_H

#include <ev.h>

static inline void loop_test_safety_cb(struct ev_loop *loop, ev_timer *w,
                                       int revents) {
  (void)revents;
  *(int *)w->data = 1;
  ev_break(loop, EVBREAK_ALL);
}

/* Runs the loop until done(arg) or secs pass. Returns done(arg). */
static inline int run_until(struct ev_loop *loop, int (*done)(void *),
                            void *arg, double secs) {
  int fired = 0;
  ev_timer safety;
  ev_timer_init(&safety, loop_test_safety_cb, secs, 0.);
  safety.data = &fired;
  ev_timer_start(loop, &safety);
  while (!done(arg) && !fired)
    ev_run(loop, EVRUN_ONCE);
  ev_timer_stop(loop, &safety);
  return done(arg);
}

#endif

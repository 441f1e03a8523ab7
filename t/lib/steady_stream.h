/* SPDX-License-Identifier: BSD-2-Clause */
/* A loop that never idles, for the tests that answers a module already
 * knows keep coming while new checks keep arriving (a delivery timer
 * pushed back by each new check would never fire): a pipe that stays
 * readable, watched on the mock host's loop for ms milliseconds; on every
 * iteration start(arg) starts one check and says whether it did. The
 * answers are counted by the check's callback: in a counter the stream
 * reads (answers), or by calling steady_stream_answered.
 *
 *   static answer A;
 *   static int one_check(void *arg) { ... check_open(..., on_answer, &A); }
 *   static steady_stream S = {.start = one_check, .answers = &A.calls};
 *   if (steady_stream_run(&S, m, 100)) {
 *     ok(S.checks > 0, ...); ok(S.answered_during > 0, ...);
 *   }
 */
#ifndef PH_STEADY_STREAM_H
#define PH_STEADY_STREAM_H

#include <stdio.h>
#include <unistd.h>

#include <ev.h>
#include <proxyhost/mock.h>

#include "tap.h"

typedef struct steady_stream {
  int (*start)(void *arg); /* starts one check: nonzero when it did */
  void *arg;
  const int *answers; /* NULL: the callback calls steady_stream_answered */
  int running, ticks, checks, answered_during;
  ev_tstamp until;
  ev_io w;
} steady_stream;

/* From the check's callback: counts the answers that came while checks
 * were still being started. */
static inline void steady_stream_answered(steady_stream *s) {
  if (s->running)
    s->answered_during++;
}

static inline void steady_stream_tick(struct ev_loop *loop, ev_io *w,
                                      int revents) {
  steady_stream *s = w->data;
  (void)revents;
  s->ticks++;
  if (ev_now(loop) >= s->until) {
    s->running = 0;
    if (s->answers)
      s->answered_during = *s->answers - s->answered_during;
    ev_io_stop(loop, w);
    return;
  }
  if (s->start(s->arg))
    s->checks++;
}

/* Runs the stream for ms milliseconds (at most ms turns of 10 ms), then
 * 20 ms more for the answers in flight. Two TAP lines: "a readable pipe"
 * and that the watcher fired on every iteration; a diagnostic with the
 * counts. 0 (and only the first line) when there was no pipe. */
static inline int steady_stream_run(steady_stream *s, ph_mock *m, int ms) {
  int p[2];
  if (!ok(pipe(p) == 0 && write(p[1], "x", 1) == 1, "a readable pipe"))
    return 0;
  struct ev_loop *loop = ph_mock_loop(m);
  s->running = 1;
  s->ticks = s->checks = 0;
  s->answered_during = s->answers ? *s->answers : 0; /* from here */
  s->until = ev_now(loop) + ms / 1000.0;
  ev_io_init(&s->w, steady_stream_tick, p[0], EV_READ);
  s->w.data = s;
  ev_io_start(loop, &s->w);
  for (int i = 0; i < ms && s->running; i++)
    ph_mock_run_for(m, 10);
  ev_io_stop(loop, &s->w);
  ph_mock_run_for(m, 20);
  ok(s->ticks > 1,
     "a watcher that fires on every iteration");
  printf("# %d checks in %d ms, %d answered while they kept coming\n",
         s->checks, ms, s->answered_during);
  close(p[0]);
  close(p[1]);
  return 1;
}

#endif

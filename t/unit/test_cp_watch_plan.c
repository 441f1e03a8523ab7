/* SPDX-License-Identifier: BSD-2-Clause */
/* A WatchSnapshots stream's schedule (modules/controlplane_server/
 * cp_watch_plan.c): the first full snapshot at once (CP-1-14), a newer
 * one on a change no more often than min_interval, a refresh before the
 * last one runs out, and the end of the stream exactly at the last sent
 * snapshot's valid_until when nothing newer went out (CP-3-11), even with
 * a build under way (CP-3-10: what is built late is not sent on an ended
 * stream). */
#include "cp_watch_plan.h"
#include "tap.h"

static const cp_watch_limits L = {.min_interval_ms = 1000,
                                  .refresh_before_ms = 20000};

int main(void) {
  plan_lazy();
  cp_watch_state s = {0};
  int64_t at;
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 0, &at), CP_WATCH_BUILD,
         "CP-1-14: a new stream builds its first full snapshot at once");
  s.in_flight = 1;
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 0, &at), CP_WATCH_WAIT,
         "one build at a time");
  s = (cp_watch_state){.sent = 1, .last_sent_ms = 10000,
                       .last_valid_until_ms = 70000, .last_revision = 1,
                       .last_epoch = 1, .last_owned_digest = 1};
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 10500, &at), CP_WATCH_WAIT,
         "nothing changed: wait");
  is_int(at, 50000, "until the refresh point (valid_until - refresh_before)");
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 50000, &at), CP_WATCH_BUILD,
         "CP-3-10: a fresh snapshot before the last one runs out");
  is_int(cp_watch_next(&s, &L, 2, 1, 1, 10500, &at), CP_WATCH_WAIT,
         "a pool change within min_interval waits");
  is_int(at, 11000, "until min_interval has passed");
  is_int(cp_watch_next(&s, &L, 2, 1, 1, 11000, &at), CP_WATCH_BUILD,
         "then a newer snapshot");
  is_int(cp_watch_next(&s, &L, 1, 2, 1, 11000, &at), CP_WATCH_BUILD,
         "CP-2-6: an ownership epoch change too");
  is_int(cp_watch_next(&s, &L, 1, 1, 9, 11000, &at), CP_WATCH_BUILD,
         "CP-4-2: and a change of the worker's owned set");
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 69999, &at), CP_WATCH_BUILD,
         "a millisecond before valid_until a refresh is still tried");
  is_int(cp_watch_next(&s, &L, 1, 1, 1, 70000, &at), CP_WATCH_END,
         "CP-3-11: at the last sent snapshot's valid_until the stream ends");
  s.in_flight = 1;
  is_int(cp_watch_next(&s, &L, 2, 1, 1, 60000, &at), CP_WATCH_WAIT,
         "a build under way: wait");
  is_int(at, 70000, "at most until valid_until");
  is_int(cp_watch_next(&s, &L, 2, 1, 1, 70000, &at), CP_WATCH_END,
         "CP-3-11: the end is not held back by a late build");
  return done_testing();
}

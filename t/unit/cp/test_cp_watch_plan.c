/* SPDX-License-Identifier: BSD-2-Clause */
/* A WatchSnapshots stream's schedule (modules/controlplane_server/
 * cp_watch_plan.c): the first full snapshot at once (CP-1-14), a newer
 * one on a change no more often than min_interval, a refresh before the
 * last one runs out (of its validity or of its earliest usable_until),
 * no snapshot for a lease renewal alone before that point and none at it
 * when no lease was renewed, and the end of the stream exactly at the
 * last sent snapshot's valid_until when nothing newer went out (CP-3-11),
 * even with a build under way (CP-3-10: what is built late is not sent
 * on an ended stream). */
#include "controlplane_server/cp_watch_plan.h"
#include "tap.h"

static const cp_watch_limits L = {.min_interval_ms = 1000,
                                  .refresh_before_ms = 20000};

static cp_watch_step next(const cp_watch_state *s, uint64_t rev,
                          uint64_t epoch, uint64_t owned, uint64_t lease,
                          int64_t now, int64_t *at) {
  cp_watch_inputs in = {rev, epoch, owned, lease};
  return cp_watch_next(s, &L, &in, now, at);
}

/* The last snapshot: sent at 10 s, valid until 70 s, built from (1, 1,
 * 1, 1); bound and lease_bound as given. */
static cp_watch_state sent_at_10s(int64_t bound, int lease_bound) {
  return (cp_watch_state){.sent = 1,
                          .last_sent_ms = 10000,
                          .last_valid_until_ms = 70000,
                          .last_refresh_bound_ms = bound,
                          .last_lease_bound = lease_bound,
                          .last = {1, 1, 1, 1}};
}

static void test_changes_and_end(void) {
  cp_watch_state s = {0};
  int64_t at;
  is_int(next(&s, 1, 1, 1, 1, 0, &at), CP_WATCH_BUILD,
         "CP-1-14: a new stream builds its first full snapshot at once");
  s.in_flight = 1;
  is_int(next(&s, 1, 1, 1, 1, 0, &at), CP_WATCH_WAIT, "one build at a time");
  s = sent_at_10s(0, 0);
  is_int(next(&s, 1, 1, 1, 1, 10500, &at), CP_WATCH_WAIT,
         "nothing changed: wait");
  is_int(at, 50000, "until the refresh point (valid_until - refresh_before)");
  is_int(next(&s, 1, 1, 1, 1, 50000, &at), CP_WATCH_BUILD,
         "CP-3-10: a fresh snapshot before the last one runs out");
  is_int(next(&s, 2, 1, 1, 1, 10500, &at), CP_WATCH_WAIT,
         "a pool change within min_interval waits");
  is_int(at, 11000, "until min_interval has passed");
  is_int(next(&s, 2, 1, 1, 1, 11000, &at), CP_WATCH_BUILD,
         "then a newer snapshot");
  is_int(next(&s, 1, 2, 1, 1, 11000, &at), CP_WATCH_BUILD,
         "CP-2-6: an ownership epoch change too");
  is_int(next(&s, 1, 1, 9, 9, 11000, &at), CP_WATCH_BUILD,
         "CP-4-2: and a change of the worker's owned set");
  is_int(next(&s, 1, 1, 1, 1, 69999, &at), CP_WATCH_BUILD,
         "a millisecond before valid_until a refresh is still tried");
  is_int(next(&s, 1, 1, 1, 1, 70000, &at), CP_WATCH_END,
         "CP-3-11: at the last sent snapshot's valid_until the stream ends");
  s.in_flight = 1;
  is_int(next(&s, 2, 1, 1, 1, 60000, &at), CP_WATCH_WAIT,
         "a build under way: wait");
  is_int(at, 70000, "at most until valid_until");
  is_int(next(&s, 2, 1, 1, 1, 70000, &at), CP_WATCH_END,
         "CP-3-11: the end is not held back by a late build");
}

static void test_renewals(void) {
  int64_t at;
  /* Bound by leases: the earliest usable_until is 60 s. */
  cp_watch_state s = sent_at_10s(60000, 1);
  is_int(next(&s, 1, 1, 1, 2, 11000, &at), CP_WATCH_WAIT,
         "a lease renewal alone is no change: no snapshot per report");
  is_int(at, 40000, "... wait until the refresh point");
  is_int(next(&s, 1, 1, 1, 1, 39999, &at), CP_WATCH_WAIT,
         "the refresh point is the earliest usable_until - refresh_before");
  is_int(next(&s, 1, 1, 1, 2, 40000, &at), CP_WATCH_BUILD,
         "at it, leases renewed since: a snapshot that carries them");
  is_int(next(&s, 1, 1, 1, 1, 40000, &at), CP_WATCH_WAIT,
         "at it, no renewal: a build would carry the same leases");
  is_int(at, 70000, "... wait (rounds still read the leases) at most until valid_until");
  is_int(next(&s, 1, 1, 1, 2, 55000, &at), CP_WATCH_BUILD,
         "a renewal that arrives later builds at once");
  is_int(next(&s, 2, 1, 1, 1, 40000, &at), CP_WATCH_BUILD,
         "a change still builds past the refresh point");
  is_int(next(&s, 1, 1, 1, 1, 70000, &at), CP_WATCH_END,
         "CP-3-11: never renewed: the stream ends at valid_until");
  /* Bound by the validity: a build later always reaches further. */
  s = sent_at_10s(0, 0);
  is_int(next(&s, 1, 1, 1, 1, 50000, &at), CP_WATCH_BUILD,
         "a validity-bound snapshot is refreshed without a renewal");
  /* A bound beyond valid_until is valid_until. */
  s = sent_at_10s(90000, 1);
  is_int(next(&s, 1, 1, 1, 1, 49999, &at), CP_WATCH_WAIT, "bound past valid_until");
  is_int(at, 50000, "... is valid_until's refresh point");
}

int main(void) {
  plan_lazy();
  test_changes_and_end();
  test_renewals();
  return done_testing();
}

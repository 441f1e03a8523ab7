/* SPDX-License-Identifier: BSD-2-Clause */
/* A WatchSnapshots stream's next step (cp_watch_plan.h): pure. */
#include "cp_watch_plan.h"

cp_watch_step cp_watch_next(const cp_watch_state *s, const cp_watch_limits *l,
                            const cp_watch_inputs *in, int64_t now_ms,
                            int64_t *at_ms) {
  *at_ms = -1;
  if (!s->sent)
    return s->in_flight ? CP_WATCH_WAIT : CP_WATCH_BUILD; /* CP-1-14 */
  /* The end comes first, even with a build under way: nothing valid is
   * on the worker's side any more (CP-3-11). */
  if (now_ms >= s->last_valid_until_ms)
    return CP_WATCH_END;
  if (s->in_flight) {
    *at_ms = s->last_valid_until_ms;
    return CP_WATCH_WAIT;
  }
  int changed = in->revision != s->last.revision ||
                in->epoch != s->last.epoch ||
                in->owned_digest != s->last.owned_digest;
  /* A build at the refresh point helps only if it reaches further. */
  int refreshable = !s->last_lease_bound ||
                    in->lease_digest != s->last.lease_digest;
  int64_t bound = s->last_refresh_bound_ms > 0 &&
                          s->last_refresh_bound_ms < s->last_valid_until_ms
                      ? s->last_refresh_bound_ms
                      : s->last_valid_until_ms;
  int64_t earliest = s->last_sent_ms + (int64_t)l->min_interval_ms;
  int64_t refresh_at = bound - (int64_t)l->refresh_before_ms;
  /* Running out is never held back by min_interval; a change is. */
  if ((now_ms >= refresh_at && refreshable) || (changed && now_ms >= earliest))
    return CP_WATCH_BUILD;
  int64_t t = now_ms >= refresh_at ? s->last_valid_until_ms : refresh_at;
  if (changed && earliest < t)
    t = earliest;
  *at_ms = t;
  return CP_WATCH_WAIT;
}

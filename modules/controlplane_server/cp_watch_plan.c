/* SPDX-License-Identifier: BSD-2-Clause */
/* A WatchSnapshots stream's next step (cp_watch_plan.h): pure. */
#include "cp_watch_plan.h"

cp_watch_step cp_watch_next(const cp_watch_state *s, const cp_watch_limits *l,
                            uint64_t revision, uint64_t epoch,
                            uint64_t owned_digest, int64_t now_ms,
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
  int changed = revision != s->last_revision || epoch != s->last_epoch ||
                owned_digest != s->last_owned_digest;
  int64_t earliest = s->last_sent_ms + (int64_t)l->min_interval_ms;
  int64_t refresh_at = s->last_valid_until_ms - (int64_t)l->refresh_before_ms;
  /* Running out is never held back by min_interval; a change is. */
  if (now_ms >= refresh_at || (changed && now_ms >= earliest))
    return CP_WATCH_BUILD;
  int64_t t = refresh_at;
  if (changed && earliest < t)
    t = earliest;
  *at_ms = t;
  return CP_WATCH_WAIT;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When a WatchSnapshots stream gets its next snapshot, and when it ends
 * (CP-1-14, CP-3-10, CP-3-11): pure, one decision from the stream's state
 * and the time.
 *
 * A stream sends its first full snapshot at once. It sends a newer one
 * when what the worker may use changed (the pool's revision, the
 * ownership epoch, the worker's owned set), but not more often than
 * min_interval, and before the last one runs out: once less than
 * refresh_before of its validity is left. A snapshot is sent only while
 * it can be valid (the builder never makes an expired one). When the last
 * snapshot sent reaches its valid_until without a newer one having been
 * sent (Redis or the store did not answer, so nothing could be built),
 * the stream ends: the worker keeps its view until that same instant and
 * then has no candidates (CP-3-9), and registers again with backoff.
 */
#ifndef PH_CP_WATCH_PLAN_H
#define PH_CP_WATCH_PLAN_H

#include <stdint.h>

typedef struct cp_watch_limits {
  uint32_t min_interval_ms;  /* between two snapshots on one stream */
  uint32_t refresh_before_ms; /* resend when less validity than this is
                                 left (< the snapshots' validity) */
} cp_watch_limits;

typedef struct cp_watch_state {
  int sent;                   /* a snapshot went out on this stream */
  int64_t last_sent_ms;       /* when */
  int64_t last_valid_until_ms; /* its valid_until */
  uint64_t last_revision;     /* what it was built from: the pool's
                                 revision, */
  uint64_t last_epoch;        /* the ownership epoch, */
  uint64_t last_owned_digest; /* and a digest of the owned set */
  int in_flight;              /* a build or a send is under way */
} cp_watch_state;

typedef enum cp_watch_step {
  CP_WATCH_WAIT = 0, /* nothing now; ask again at *at_ms */
  CP_WATCH_BUILD,    /* build and send a snapshot now */
  CP_WATCH_END       /* end the stream (OK): the last snapshot expired */
} cp_watch_step;

/* The current inputs: the pool's revision, the epoch and the owned set's
 * digest as the controller last read them. *at_ms gets the next instant
 * worth asking again (CP_WATCH_WAIT), or -1 when only a change of the
 * inputs can make a difference. */
cp_watch_step cp_watch_next(const cp_watch_state *s, const cp_watch_limits *l,
                            uint64_t revision, uint64_t epoch,
                            uint64_t owned_digest, int64_t now_ms,
                            int64_t *at_ms);

#endif

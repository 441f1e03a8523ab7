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
 * refresh_before is left of its validity or of the earliest usable_until
 * it delivered that a lease sets (the refresh bound; a proxy whose own
 * expires_at sets it just expires, no renewal moves it).
 *
 * A lease renewal alone is not a change: every accepted runtime report
 * renews the leases, and the worker reports right after each ACK, so
 * resending on renewals made a loop (snapshot, ACK, report, renewal,
 * snapshot) that sent one snapshot per min_interval for ever. Renewals
 * reach the worker with the refresh instead. At the refresh point a
 * snapshot is built when leases were renewed since the last one, or when
 * its bound came from the validity and not from the leases (a build now
 * reaches further); otherwise a build would carry the same leases, so the
 * stream waits for a renewal.
 *
 * A snapshot is sent only while it can be valid (the builder never makes
 * an expired one). When the last snapshot sent reaches its valid_until
 * without a newer one having been sent (Redis or the store did not
 * answer, the worker stopped reporting), the stream ends: the worker
 * keeps its view until that same instant and then has no candidates
 * (CP-3-9), and registers again with backoff.
 */
#ifndef PH_CP_WATCH_PLAN_H
#define PH_CP_WATCH_PLAN_H

#include <stdint.h>

typedef struct cp_watch_limits {
  uint32_t min_interval_ms;  /* between two snapshots on one stream */
  uint32_t refresh_before_ms; /* resend when less than this is left of
                                 the refresh bound (< the validity) */
} cp_watch_limits;

/* What the controller last read; digests are any 64-bit hash. */
typedef struct cp_watch_inputs {
  uint64_t revision;     /* the pool's revision */
  uint64_t epoch;        /* the ownership epoch */
  uint64_t owned_digest; /* the worker's owned ids */
  uint64_t lease_digest; /* the owned ids with their lease expiries */
} cp_watch_inputs;

typedef struct cp_watch_state {
  int sent;                    /* a snapshot went out on this stream */
  int64_t last_sent_ms;        /* when it was built */
  int64_t last_valid_until_ms; /* its valid_until */
  int64_t last_refresh_bound_ms; /* min(valid_until, its earliest
                                    usable_until); 0: valid_until */
  int last_lease_bound;        /* that bound came from leases, not from
                                  the validity: only a renewal moves it */
  cp_watch_inputs last;        /* what it was built from */
  int in_flight;               /* a build or a send is under way */
} cp_watch_state;

typedef enum cp_watch_step {
  CP_WATCH_WAIT = 0, /* nothing now; ask again at *at_ms */
  CP_WATCH_BUILD,    /* build and send a snapshot now */
  CP_WATCH_END       /* end the stream (OK): the last snapshot expired */
} cp_watch_step;

/* in: the current inputs. *at_ms gets the next instant worth asking
 * again (CP_WATCH_WAIT), or -1 when only a change of the inputs can make
 * a difference. */
cp_watch_step cp_watch_next(const cp_watch_state *s, const cp_watch_limits *l,
                            const cp_watch_inputs *in, int64_t now_ms,
                            int64_t *at_ms);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The revision poll (TM-P1-26, 27, 30, 31): every revision_poll, one
 * SELECT of authorization_revision through the pool, its outcome handed
 * to az_revision (store_common), which answers revision() without I/O,
 * keeps the seed's two metrics and the module's readiness.
 *
 * One poll at a time: a poll still running when the timer fires again is
 * not doubled (it ends by its deadline, query_timeout, below the stale
 * window).
 *
 * The revision an access check read in its own pipeline (pg_access.c) is
 * a read of the row like a poll's and is handed over the same way
 * (poll_saw), as store_sqlite does with every call's read: a server that
 * answers checks learns a remote write's revision with the first check
 * that read it, not up to revision_poll later, so a cache in front of it
 * keeps the verdicts labelled with that revision (they match revision()).
 *
 * A local write's commit raises the revision at once (TM-P1-29). A read
 * sent before that commit may come back after it with the older value;
 * that is not a regression: az_revision compares with the floor taken
 * when the read was sent.
 *
 * The stale bound (TM-P1-31) holds whatever the reads do: after every
 * good read the stale timer is armed for last good read + stale_allow,
 * and when it fires with no good read since, the revision is marked
 * failing (revision() answers PH_ESTATE, the module is not ready) until
 * the next good read. So neither failing polls nor a poll that never
 * comes back (or a poll interval above stale_allow) let a stale value be
 * vouched for. */
#include "store_pg_int.h"

/* Both revisions in one round: the authorization one (statement 0) and
 * the pool's (1, for pool.store's revision(), pool_revision.h). */
static void p_begin(void *arg, pg_send *snd) {
  (void)arg;
  pg_exec(snd, Q_REVISION, 0, NULL);
  pg_exec(snd, Q_POOL_REVISION, 0, NULL);
}

static int p_result(void *arg, int i, PGresult *res) {
  spg *s = arg;
  if (i == 1) {
    s->poll_pool_what = res_revision(res, &s->poll_pool_value);
    return 0;
  }
  s->poll_what = res_revision(res, &s->poll_value);
  if (s->poll_what == AZ_REV_READ_FAILED)
    pg_pool_count_query_error(s->pool);
  return 0;
}

static void p_round_done(void *arg, pg_send *snd) {
  (void)arg;
  (void)snd;
}

/* The end of the stale window: stale_allow after the last good read
 * (+1 ms: az_revision vouches up to and including stale_ms). Armed after
 * every read that leaves the revision healthy, failed ones included (the
 * window runs from the last good one); stopped while it is unhealthy
 * (nothing is vouched for then anyway). */
static void arm_stale(spg *s) {
  if (!s->rev.t.healthy || !s->started) {
    s->api->timer_set(s->stale_timer, 0, 0);
    return;
  }
  int64_t left = s->rev.t.last_ok_ms + s->rev.t.stale_ms -
                 s->api->now_ms(s->ctx) + 1;
  s->api->timer_set(s->stale_timer, (uint64_t)(left > 1 ? left : 1), 0);
}

/* No good read for stale_allow: stop vouching (a failed read as far as
 * az_revision goes, not counted as a poll), whether the polls failed or
 * never came back. A good read since moved the window: armed again. */
static void on_stale(ph_timer *t, void *arg) {
  (void)t;
  spg *s = arg;
  if (!s->rev.t.healthy)
    return;
  if (s->api->now_ms(s->ctx) - s->rev.t.last_ok_ms <= s->rev.t.stale_ms) {
    arm_stale(s);
    return;
  }
  if (!s->rev.t.failing)
    PH_LOG_RL(s->api, s->ctx, PH_LOG_WARN,
              "store_pg: no good read of the revision within stale_allow; "
              "not vouching for it until the next one",
              PH_INT("revision", (int64_t)s->rev.t.value),
              PH_INT("poll_running", s->poll_task > 0));
  az_revision_observe_at(&s->rev, AZ_REV_READ_FAILED, 0,
                         az_revision_floor(&s->rev), 0);
}

static void observe(spg *s, az_rev_read what, int64_t value, uint64_t floor,
                    int poll) {
  int was = s->rev.t.healthy;
  az_revision_observe_at(&s->rev, what, value, floor, poll);
  if (what == AZ_REV_READ_MISSING || what == AZ_REV_READ_BAD ||
      (what == AZ_REV_READ_OK && !s->rev.t.healthy))
    PH_LOG_RL(s->api, s->ctx, PH_LOG_ERROR,
              "store_pg: authorization_revision is missing, lower than "
              "before or out of range; failing closed until a good read",
              PH_INT("read", what == AZ_REV_READ_OK ? value : -1),
              PH_INT("last_good", (int64_t)s->rev.t.value));
  else if (!was && s->rev.t.healthy)
    PH_LOG(s->api, s->ctx, PH_LOG_INFO, "store_pg: revision read",
           PH_INT("revision", (int64_t)s->rev.t.value));
  arm_stale(s);
}

static void p_done(void *arg, int status) {
  spg *s = arg;
  s->poll_task = 0;
  observe(s, status == PH_OK ? s->poll_what : AZ_REV_READ_FAILED,
          s->poll_value, s->poll_floor, 1);
  pool_revision_observe(&s->prev,
                        status == PH_OK ? s->poll_pool_what
                                        : AZ_REV_READ_FAILED,
                        s->poll_pool_value, s->poll_pool_floor);
}

static const pg_task_ops poll_ops = {p_begin, p_result, p_round_done, p_done};

static void poll_now(spg *s) {
  if (s->poll_task > 0)
    return;
  s->poll_what = AZ_REV_READ_FAILED;
  s->poll_value = 0;
  s->poll_floor = az_revision_floor(&s->rev);
  s->poll_pool_what = AZ_REV_READ_FAILED;
  s->poll_pool_value = 0;
  s->poll_pool_floor = s->prev.value;
  int64_t t = pg_pool_submit(s->pool, &poll_ops, s);
  if (t > 0) {
    s->poll_task = t;
  } else {
    observe(s, AZ_REV_READ_FAILED, 0, s->poll_floor, 1);
    pool_revision_observe(&s->prev, AZ_REV_READ_FAILED, 0, 0);
  }
}

static void on_poll(ph_timer *t, void *arg) {
  (void)t;
  poll_now(arg);
}

int poll_init(spg *s) {
  s->poll_timer = s->api->timer_new(s->ctx, on_poll, s);
  s->stale_timer = s->api->timer_new(s->ctx, on_stale, s);
  return s->poll_timer && s->stale_timer ? PH_OK : PH_ENOMEM;
}

/* The first poll soon after start (the pool is connecting: it waits in
 * the queue for the first connection), then every poll_ms. */
void poll_start(spg *s) {
  s->api->timer_set(s->poll_timer, 1, (uint64_t)s->poll_ms);
}

void poll_stop(spg *s) {
  if (s->poll_timer)
    s->api->timer_set(s->poll_timer, 0, 0);
  if (s->stale_timer)
    s->api->timer_set(s->stale_timer, 0, 0);
}

void poll_local_commit(spg *s, int64_t value) {
  az_revision_observe_at(&s->rev, AZ_REV_READ_OK, value,
                         az_revision_floor(&s->rev), 0);
  arm_stale(s);
}

void poll_saw(spg *s, az_rev_read what, int64_t value, uint64_t floor) {
  if (what == AZ_REV_READ_FAILED || !s->started)
    return; /* a failed statement: the polls judge the database */
  observe(s, what, value, floor, 0);
}

void poll_stale_changed(spg *s) { arm_stale(s); }

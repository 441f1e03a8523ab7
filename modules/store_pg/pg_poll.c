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
 * A local write's commit raises the revision at once (TM-P1-29). A poll
 * sent before that commit may come back after it with the older value;
 * that is not a regression: az_revision compares with the floor taken
 * when the poll was sent. */
#include "store_pg_int.h"

static void p_begin(void *arg, pg_send *snd) {
  (void)arg;
  pg_exec(snd, Q_REVISION, 0, NULL);
}

static int p_result(void *arg, int i, PGresult *res) {
  (void)i;
  spg *s = arg;
  s->poll_what = res_revision(res, &s->poll_value);
  if (s->poll_what == AZ_REV_READ_FAILED)
    pg_pool_count_query_error(s->pool);
  return 0;
}

static void p_round_done(void *arg, pg_send *snd) {
  (void)arg;
  (void)snd;
}

/* While reads fail, the revision stops being vouched for when stale_allow
 * has passed since the last good read: readiness follows then, not at the
 * next failed poll. */
static void arm_stale(spg *s) {
  if (!s->rev.failing || !s->rev.healthy)
    return;
  int64_t left = s->rev.last_ok_ms + s->rev.stale_ms -
                 s->api->now_ms(s->ctx) + 1;
  s->api->timer_set(s->stale_timer, (uint64_t)(left > 1 ? left : 1), 0);
}

static void on_stale(ph_timer *t, void *arg) {
  (void)t;
  spg *s = arg;
  if (s->rev.failing)
    az_revision_observe_at(&s->rev, AZ_REV_READ_FAILED, 0,
                        az_revision_floor(&s->rev), 0);
}

static void observe(spg *s, az_rev_read what, int64_t value,
                    uint64_t floor) {
  int was = s->rev.healthy;
  az_revision_observe_at(&s->rev, what, value, floor, 1);
  if (what == AZ_REV_READ_MISSING || what == AZ_REV_READ_BAD ||
      (what == AZ_REV_READ_OK && !s->rev.healthy))
    PH_LOG_RL(s->api, s->ctx, PH_LOG_ERROR,
              "store_pg: authorization_revision is missing, lower than "
              "before or out of range; failing closed until a good read",
              PH_INT("read", what == AZ_REV_READ_OK ? value : -1),
              PH_INT("last_good", (int64_t)s->rev.value));
  else if (!was && s->rev.healthy)
    PH_LOG(s->api, s->ctx, PH_LOG_INFO, "store_pg: revision read",
           PH_INT("revision", (int64_t)s->rev.value));
  arm_stale(s);
}

static void p_done(void *arg, int status) {
  spg *s = arg;
  s->poll_task = 0;
  observe(s, status == PH_OK ? s->poll_what : AZ_REV_READ_FAILED,
          s->poll_value, s->poll_floor);
}

static const pg_task_ops poll_ops = {p_begin, p_result, p_round_done, p_done};

static void poll_now(spg *s) {
  if (s->poll_task > 0)
    return;
  s->poll_what = AZ_REV_READ_FAILED;
  s->poll_value = 0;
  s->poll_floor = az_revision_floor(&s->rev);
  int64_t t = pg_pool_submit(s->pool, &poll_ops, s);
  if (t > 0)
    s->poll_task = t;
  else
    observe(s, AZ_REV_READ_FAILED, 0, s->poll_floor);
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
}

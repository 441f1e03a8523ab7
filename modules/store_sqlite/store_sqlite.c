/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite: the embedded authorization store. It provides "access"
 * (access.h: may this token open this target through this agent?) and
 * "authz.store" (authz_store.h: authenticate bearers, read and write
 * users, tokens, agents and policies) over one SQLite database in WAL
 * mode, created on first start with the schema of migrations/ddl.sql.
 *
 * Every SQLite call runs on the host's helper threads (api->submit), on a
 * connection borrowed from a small pool (sq_pool.h says why a pool); the
 * loop thread only keeps state. The authorization revision is read by
 * every call's transaction and by a safety poll every revision_recheck,
 * so a write by another process is seen within that time (TM-P1-6), and a
 * write made here is seen before its callback runs (TM-P1-29).
 *
 * Start-up (start): the one place that waits for a helper job. The loop
 * serves nothing yet, and waiting lets a database this build cannot use
 * (migrate = check on an old schema, a file that cannot be created) stop
 * the process with the reason, instead of a process that runs and is
 * never ready. The wait is bounded by busy_timeout plus a margin. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/module.h>

#include "lib/metric_table.h"
#include "store_sqlite.h"

#define START_MARGIN_MS 30000
#define STALE_MS 5000 /* TM-P1-31: no allow vouched for past this after a
                         failed read */

/* The key table, generated from store_sqlite.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into store_sqlite_keys.c. */
extern const ph_conf_key keys[];

static const ph_api *api;

/* ---- the start-up job and the poll ---------------------------------- */

typedef struct boot {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished, rc, create, migrate;
  char why[512];
  sq_call rev; /* its revision read, as any call's */
} boot;

static boot *boot_of(sq *s);

static void boot_work(void *arg) {
  sq *s = arg;
  boot *b = boot_of(s);
  int rc = sq_pool_prepare(s->pool, b->create, b->migrate, b->why,
                           sizeof(b->why));
  if (rc == 0) {
    sqlite3 *db = sq_pool_get(s->pool, b->why, sizeof(b->why));
    if (db) {
      sq_read_revision(&b->rev, db);
      sq_read_pool_revision(&b->rev, db);
      sq_pool_put(s->pool, db, b->rev.db_broken);
    }
  }
  pthread_mutex_lock(&b->mu);
  b->rc = rc;
  b->finished = 1;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void boot_done(void *arg, int status) {
  sq *s = arg;
  boot *b = boot_of(s);
  if (status == PH_OK && b->rc == 0) {
    az_revision_observe(&s->rev, b->rev.rev_what, b->rev.rev_value, 1);
    if (b->rev.pool_rev_set)
      pool_revision_observe(&s->prev, b->rev.pool_what, b->rev.pool_value,
                            0);
  }
}

typedef struct poll_call {
  sq_call c;
} poll_call;

/* Both revisions, each in its own statement (autocommit): the pool's
 * does not make the authorization poll fail, nor the other way round. */
static void poll_work(sq_call *c, sqlite3 *db) {
  sq_read_revision(c, db);
  sq_read_pool_revision(c, db);
}
static void poll_deliver(sq_call *c) { (void)c; }
static void poll_destroy(sq_call *c) {
  c->s->poll_in_flight = 0;
  free(c);
}

/* The poll is a call like the others (so cancel and destroy treat it the
 * same), except that its revision counts as a poll. job_done observes it
 * with poll 0; the poll counter is taken here. */
static void poll_count(sq_call *c) {
  sq *s = c->s;
  int ok = !c->no_db && c->rev_what == AZ_REV_READ_OK && s->rev.t.healthy;
  api->inc(ok ? s->rev.m_poll_ok : s->rev.m_poll_fail, 1);
}

static void poll_deliver_counted(sq_call *c) {
  poll_count(c);
  poll_deliver(c);
}

void sq_poll_now(sq *s) {
  if (s->poll_in_flight || s->stopping)
    return;
  poll_call *p = sq_call_new(s, sizeof(*p), poll_work, poll_deliver_counted,
                             poll_destroy);
  if (!p)
    return;
  s->poll_in_flight = 1;
  if (sq_call_submit(s, &p->c) < 0) {
    /* The host's queue is full: a failed poll, as TM-P1-31 counts it. */
    az_revision_observe(&s->rev, AZ_REV_READ_FAILED, 0, 0);
    api->inc(s->rev.m_poll_fail, 1);
    poll_destroy(&p->c);
  }
}

static void poll_tick(ph_timer *t, void *arg) {
  (void)t;
  sq_poll_now(arg);
}

/* ---- the module ------------------------------------------------------ */

typedef struct sq_state {
  sq s;
  boot b;
} sq_state;

static boot *boot_of(sq *s) { return &((sq_state *)s)->b; }

static void read_conf(sq *s) {
  s->positive_ms = (uint32_t)api->conf_int(s->ctx, "positive_ttl");
  s->negative_ms = (uint32_t)api->conf_int(s->ctx, "negative_ttl");
  s->recheck_ms = api->conf_int(s->ctx, "revision_recheck");
  s->max_pending = api->conf_int(s->ctx, "max_pending");
}

/* The values in sq_call_kind order. */
static const char *const calls[] = {"access",        "authenticate",
                                    "write",         "list",
                                    "pool_snapshot", "pool_write",
                                    "pool_list",     NULL};
static const ph_label_def call_label[] = {{"call", calls}};
static const ph_metric_table sq_metrics[] = {
    PH_METRIC("proxyhost_store_sqlite_calls_total", PH_METRIC_COUNTER,
              "Calls answered by the SQLite authorization store",
              PH_METRIC_LABELS(call_label), PH_METRIC_NO_BUCKETS, sq,
              m_calls),
    PH_METRIC_END};

static int declare_metrics(sq *s) {
  if (ph_metric_table_register(api, s->ctx, sq_metrics, s) != PH_OK)
    return PH_EINVAL;
  pool_revision_init(&s->prev, s->ctx, api, STALE_MS);
  return az_revision_init(&s->rev, s->ctx, api, STALE_MS);
}

static int sq_init(ph_ctx *ctx, const ph_api *host, void **state) {
  api = host;
  sq_state *st = calloc(1, sizeof(*st));
  if (!st)
    return PH_ENOMEM;
  *state = st;
  sq *s = &st->s;
  s->ctx = ctx;
  s->api = host;
  pthread_mutex_init(&st->b.mu, NULL);
  pthread_cond_init(&st->b.cv, NULL);
  st->b.rev.s = s;
  read_conf(s);
  s->pool = sq_pool_new(api->conf_str(ctx, "path"),
                        (int)api->conf_int(ctx, "connections"),
                        (int)api->conf_int(ctx, "busy_timeout"));
  s->ready_turn = api->defer_new(ctx, sq_ready_tick, s);
  s->poll_timer = api->timer_new(ctx, poll_tick, s);
  if (!s->pool || !s->ready_turn || !s->poll_timer)
    return PH_ENOMEM;
  int rc = declare_metrics(s);
  if (rc != PH_OK)
    return rc;
  rc = api->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                             PH_ACCESS_MINOR, &sq_access_vt, s);
  if (rc != PH_OK)
    return rc;
  rc = api->service_register(ctx, PH_AZ_STORE_SERVICE, PH_AZ_STORE_MAJOR,
                             PH_AZ_STORE_MINOR, &sq_store_vt, s);
  if (rc != PH_OK)
    return rc;
  /* The schema this build runs on is v10 (start refuses or upgrades an
   * older one), so the pool's tables are there whenever calls come. */
  return api->service_register(ctx, PH_POOL_STORE_SERVICE,
                               PH_POOL_STORE_MAJOR, PH_POOL_STORE_MINOR,
                               &sq_pool_vt, s);
}

static int sq_start(void *state) {
  sq_state *st = state;
  sq *s = &st->s;
  boot *b = &st->b;
  /* Not ready until the first revision read succeeds (TM-P1-26). */
  api->set_ready(s->ctx, 0);
  b->migrate = strcmp(api->conf_str(s->ctx, "migrate"), "auto") == 0;
  b->create = b->migrate;
  if (api->submit(s->ctx, boot_work, boot_done, s) <= 0) {
    PH_LOG(api, s->ctx, PH_LOG_ERROR, "store_sqlite cannot start",
           PH_STR("reason", "the host's job queue is full"));
    return PH_EFULL;
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  int64_t wait_ms = api->conf_int(s->ctx, "busy_timeout") + START_MARGIN_MS;
  until.tv_sec += wait_ms / 1000;
  until.tv_nsec += (wait_ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&b->mu);
  int timed_out = 0;
  while (!b->finished && !timed_out)
    timed_out = pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0;
  int rc = b->finished ? b->rc : -1;
  pthread_mutex_unlock(&b->mu);
  if (rc != 0) {
    PH_LOG(api, s->ctx, PH_LOG_ERROR, "store_sqlite cannot start",
           PH_STR("reason", timed_out ? "the database did not answer in time"
                                      : b->why));
    return PH_EINVAL;
  }
  s->started = 1;
  api->timer_set(s->poll_timer, (uint64_t)s->recheck_ms,
                 (uint64_t)s->recheck_ms);
  return PH_OK;
}

static int sq_reload(void *state) {
  sq *s = &((sq_state *)state)->s;
  int64_t old = s->recheck_ms;
  read_conf(s);
  if (s->started && old != s->recheck_ms)
    api->timer_set(s->poll_timer, (uint64_t)s->recheck_ms,
                   (uint64_t)s->recheck_ms);
  return PH_OK;
}

static void close_work(void *arg) {
  sq *s = arg;
  sq_pool_close(s->pool);
}

static void close_done(void *arg, int status) {
  (void)status;
  sq *s = arg;
  api->stop_done(s->ctx);
}

/* Calls in flight finish on their own (the host delivers every job's done
 * before destroy); the connections are closed on a helper thread. */
static int sq_stop(void *state) {
  sq *s = &((sq_state *)state)->s;
  s->stopping = 1;
  api->timer_set(s->poll_timer, 0, 0);
  if (api->submit(s->ctx, close_work, close_done, s) <= 0)
    return PH_OK;
  return PH_STOP_PENDING;
}

static void sq_destroy(void *state) {
  sq_state *st = state;
  if (!st)
    return;
  sq *s = &st->s;
  sq_call_drop_all(s);
  api->defer_free(s->ready_turn);
  if (s->poll_timer)
    api->timer_free(s->poll_timer);
  sq_pool_free(s->pool);
  pthread_cond_destroy(&st->b.cv);
  pthread_mutex_destroy(&st->b.mu);
  free(st);
}

static int store_cancel(void *self, int64_t id) {
  return sq_call_cancel(self, id);
}

const ph_az_store_v1 sq_store_vt = {sq_authenticate, sq_write, sq_list,
                                    store_cancel};

static int pool_revision_now(void *self, uint64_t *out) {
  sq *s = self;
  return pool_revision_get(&s->prev, out);
}

const ph_pool_store_v1 sq_pool_vt = {sq_pool_snapshot, pool_revision_now,
                                     sq_pool_write, sq_pool_list,
                                     store_cancel};

static const char *const provides[] = {PH_ACCESS_SERVICE, PH_AZ_STORE_SERVICE,
                                       PH_POOL_STORE_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("store_sqlite", "1.0.0"),
    .description = "the SQLite authorization and pool store (access, "
                   "authz.store, pool.store)",
    .provides = provides,
    .config = keys,
    .init = sq_init,
    .start = sq_start,
    .reload = sq_reload,
    .stop = sq_stop,
    .destroy = sq_destroy,
};

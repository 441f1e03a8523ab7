/* SPDX-License-Identifier: BSD-2-Clause */
/* store_pg: the PostgreSQL authorization store. It provides "access"
 * (access.h: may this token open this target through this agent) and
 * "authz.store" (authz_store.h: authentication of bearer tokens, reads and
 * writes of users, tokens, agents and policies) with the semantics of
 * store_sqlite, from the same engine-neutral code (store_common: az_eval,
 * az_token, az_validate, az_revision), over libpq driven asynchronously
 * on the host's loop (pg_pool.h).
 *
 * The schema is checked at start (migrate = check: the store refuses to
 * start unless it is current, and names proxyhost-migrate) or brought up
 * to date (migrate = auto), on a host helper thread with a blocking
 * connection (migrate_pg.h); start waits for that one job, bounded. Then
 * the pool connects and the revision poll begins; the module is ready
 * after the first good read of the revision (TM-P1-26). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/conf_values.h"
#include "store_common/migrate_pg.h"
#include "store_common/migrations.h"
#include "store_pg_int.h"

#define DSN_MAX 4096 /* dsn's bound in store_pg.ini.sample too */
/* How long start waits for the schema job: az_pg_connect's connect
 * timeout plus its lock timeout, and some. */
#define SCHEMA_WAIT_S 60

/* The key table, generated from store_pg.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into store_pg_keys.c. pool_size's and
 * max_pending's maxima there are PG_POOL_SIZE_MAX and PG_POOL_PENDING_MAX,
 * which pg_pool.c (conf_ok) checks again: a sample that allows more fails the
 * start, closed. */
extern const ph_conf_key keys[];

/* ---- the DSN ---------------------------------------------------------- */

/* The DSN from dsn or dsn_file into a new string (*out), checked to parse
 * (its text never goes into why). */
static int read_dsn(const ph_api *api, ph_ctx *ctx, char **out,
                    const char **key, char *why, size_t whylen) {
  const char *dsn = api->conf_str(ctx, "dsn");
  const char *file = api->conf_str(ctx, "dsn_file");
  int has_dsn = dsn && *dsn, has_file = file && *file;
  *out = NULL;
  if (has_dsn == has_file) {
    *key = "dsn";
    snprintf(why, whylen, "set exactly one of dsn and dsn_file");
    return PH_EINVAL;
  }
  char *text;
  if (has_dsn) {
    text = strdup(dsn);
  } else {
    *key = "dsn_file";
    FILE *f = fopen(file, "re");
    if (!f) {
      snprintf(why, whylen, "cannot read %s: %s", file, strerror(errno));
      return PH_EINVAL;
    }
    text = calloc(1, DSN_MAX + 2);
    size_t n = text ? fread(text, 1, DSN_MAX + 1, f) : 0;
    fclose(f);
    if (text && n > DSN_MAX) {
      explicit_bzero(text, DSN_MAX + 2);
      free(text);
      snprintf(why, whylen, "%s is longer than %d bytes", file, DSN_MAX);
      return PH_EINVAL;
    }
    if (text) {
      text[strcspn(text, "\r\n")] = '\0'; /* the first line */
      size_t l = strlen(text);
      while (l > 0 && (text[l - 1] == ' ' || text[l - 1] == '\t'))
        text[--l] = '\0';
    }
  }
  if (!text) {
    snprintf(why, whylen, "out of memory");
    return PH_ENOMEM;
  }
  char *perr = NULL;
  PQconninfoOption *opts = *text ? PQconninfoParse(text, &perr) : NULL;
  if (perr)
    PQfreemem(perr);
  if (!opts) {
    *key = has_dsn ? "dsn" : "dsn_file";
    snprintf(why, whylen,
             "not a libpq connection string or URI (the text is not shown)");
    explicit_bzero(text, strlen(text));
    free(text);
    return PH_EINVAL;
  }
  PQconninfoFree(opts);
  *out = text;
  return PH_OK;
}

static int spg_check(ph_ctx *ctx, const ph_api *api, const char **key,
                     char *why, size_t whylen) {
  char *dsn;
  int rc = read_dsn(api, ctx, &dsn, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  explicit_bzero(dsn, strlen(dsn));
  free(dsn);
  if (api->conf_int(ctx, "reconnect_min") >
      api->conf_int(ctx, "reconnect_max")) {
    *key = "reconnect_min";
    snprintf(why, whylen, "must not be above reconnect_max");
    return PH_EINVAL;
  }
  if (api->conf_int(ctx, "query_timeout") >= api->conf_int(ctx, "stale_allow")) {
    /* A poll must be able to fail (and be retried) inside the window. */
    *key = "query_timeout";
    snprintf(why, whylen, "must be below stale_allow");
    return PH_EINVAL;
  }
  return PH_OK;
}

/* ---- the schema at start ---------------------------------------------- */

typedef struct schema_job {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished, abandoned; /* abandoned: start stopped waiting */
  int apply;
  char *dsn;
  int version; /* afterwards; -1 on error */
  char why[512];
  char plan[512];
} schema_job;

static void schema_work(void *arg) {
  schema_job *j = arg;
  PGconn *c = az_pg_connect(j->dsn, "proxyhost-store_pg", j->why,
                            sizeof(j->why));
  int v = -1;
  if (c) {
    v = az_migrate(&az_pg_ops, c, j->apply, j->why, sizeof(j->why), j->plan,
                   sizeof(j->plan));
    PQfinish(c);
  }
  pthread_mutex_lock(&j->mu);
  j->version = v;
  j->finished = 1;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

static void schema_job_free(schema_job *j) {
  explicit_bzero(j->dsn, strlen(j->dsn));
  free(j->dsn);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

static void schema_done(void *arg, int status) {
  (void)status;
  schema_job_free(arg);
}

/* Runs the check or the migration on a helper thread and waits for it.
 * PH_OK when the schema is current afterwards. */
static int schema_at_start(spg *s) {
  schema_job *j = calloc(1, sizeof(*j));
  if (!j || !(j->dsn = strdup(s->dsn))) {
    free(j);
    return PH_ENOMEM;
  }
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->apply = s->migrate_auto;
  j->version = -1;
  if (s->api->submit(s->ctx, schema_work, schema_done, j) <= 0) {
    schema_job_free(j);
    PH_LOG(s->api, s->ctx, PH_LOG_ERROR,
           "store_pg: no helper thread for the schema check");
    return PH_EFULL;
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += SCHEMA_WAIT_S;
  pthread_mutex_lock(&j->mu);
  int rc = 0;
  while (!j->finished && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&j->cv, &j->mu, &until);
  int finished = j->finished, version = j->version;
  char why[512], plan[512];
  snprintf(why, sizeof(why), "%s", j->why);
  snprintf(plan, sizeof(plan), "%s", j->plan);
  pthread_mutex_unlock(&j->mu);
  /* The job is freed by its done, on the loop, whatever happened here. */
  if (!finished) {
    PH_LOG(s->api, s->ctx, PH_LOG_ERROR,
           "store_pg: the schema check did not finish in time");
    return PH_ESTATE;
  }
  if (version < 0) {
    PH_LOG(s->api, s->ctx, PH_LOG_ERROR,
           "store_pg: the schema could not be checked; see proxyhost-migrate",
           PH_STR("reason", why));
    return PH_EINVAL;
  }
  if (version != AZ_SCHEMA_VERSION) {
    PH_LOG(s->api, s->ctx, PH_LOG_ERROR,
           "store_pg: the database schema is not current: run "
           "proxyhost-migrate apply (or set migrate = auto)",
           PH_INT("schema_version", version), PH_INT("needed", AZ_SCHEMA_VERSION),
           PH_STR("pending", plan));
    return PH_EINVAL;
  }
  if (s->migrate_auto && plan[0])
    PH_LOG(s->api, s->ctx, PH_LOG_INFO, "store_pg: schema migrated",
           PH_STR("steps", plan));
  return PH_OK;
}

/* ---- lifecycle -------------------------------------------------------- */

static int store_cancel(void *self, int64_t id) { return req_cancel(self, id); }

static int pool_revision_now(void *self, uint64_t *out) {
  spg *s = self;
  return pool_revision_get(&s->prev, out);
}

const ph_pool_store_v1 spg_pool_vt = {spg_pool_snapshot, pool_revision_now,
                                      spg_pool_write, spg_pool_list,
                                      store_cancel};

const ph_az_store_v1 spg_store_vt = {spg_authenticate, spg_write, spg_list,
                                     store_cancel};

static int spg_init(ph_ctx *ctx, const ph_api *api, void **state) {
  spg *s = calloc(1, sizeof(*s));
  if (!s)
    return PH_ENOMEM;
  *state = s;
  s->ctx = ctx;
  s->api = api;
  const char *key = NULL;
  char why[256];
  if (read_dsn(api, ctx, &s->dsn, &key, why, sizeof(why)) != PH_OK)
    return ph_conf_refused(api, ctx, "store_pg: bad DSN", key, why);
  s->positive_ms = (uint32_t)api->conf_int(ctx, "positive_ttl");
  s->negative_ms = (uint32_t)api->conf_int(ctx, "negative_ttl");
  s->poll_ms = api->conf_int(ctx, "revision_poll");
  s->pool_size = (int)api->conf_int(ctx, "pool_size");
  s->max_pending = (int)api->conf_int(ctx, "max_pending");
  s->query_timeout_ms = api->conf_int(ctx, "query_timeout");
  s->reconnect_min_ms = api->conf_int(ctx, "reconnect_min");
  s->reconnect_max_ms = api->conf_int(ctx, "reconnect_max");
  s->migrate_auto = strcmp(api->conf_str(ctx, "migrate"), "auto") == 0;
  int rc;
  pool_revision_init(&s->prev, ctx, api, api->conf_int(ctx, "stale_allow"));
  if ((rc = az_revision_init(&s->rev, ctx, api,
                             api->conf_int(ctx, "stale_allow"))) != PH_OK ||
      (rc = pg_pool_metrics_init(ctx, api, &s->pool_metrics)) != PH_OK ||
      (rc = req_timer_init(s)) != PH_OK || (rc = poll_init(s)) != PH_OK ||
      (rc = tm_view_init(s)) != PH_OK)
    return rc;
  s->presence_poll_ms = api->conf_int(ctx, "presence_poll");
  s->presence_max_nodes = api->conf_int(ctx, "presence_max_nodes");
  s->presence_max_agents = api->conf_int(ctx, "presence_max_agents");
  size_t n;
  const pg_stmt *st = pg_sql_statements(&n);
  pg_pool_conf pc = {.dsn = s->dsn,
                     .size = s->pool_size,
                     .max_pending = s->max_pending,
                     .query_timeout_ms = s->query_timeout_ms,
                     .reconnect_min_ms = s->reconnect_min_ms,
                     .reconnect_max_ms = s->reconnect_max_ms,
                     .stmts = st,
                     .n_stmts = n};
  s->pool = pg_pool_new(ctx, api, &pc, &s->pool_metrics, why, sizeof(why));
  if (!s->pool) {
    PH_LOG(api, ctx, PH_LOG_ERROR, "store_pg: pool refused",
           PH_STR("reason", why));
    return PH_EINVAL;
  }
  if ((rc = api->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                                  PH_ACCESS_MINOR, &spg_access_vt, s)) !=
      PH_OK)
    return rc;
  if ((rc = api->service_register(ctx, PH_AZ_STORE_SERVICE,
                                  PH_AZ_STORE_MAJOR, PH_AZ_STORE_MINOR,
                                  &spg_store_vt, s)) != PH_OK)
    return rc;
  /* Start refuses (migrate = check) or upgrades (auto) a schema older
   * than v11, so the pool's and presence's tables are there whenever
   * calls come. */
  if ((rc = api->service_register(ctx, PH_POOL_STORE_SERVICE,
                                  PH_POOL_STORE_MAJOR, PH_POOL_STORE_MINOR,
                                  &spg_pool_vt, s)) != PH_OK)
    return rc;
  return api->service_register(ctx, TM_PRESENCE_SERVICE, TM_PRESENCE_MAJOR,
                               TM_PRESENCE_MINOR, &spg_presence_vt, s);
}

static int spg_start(void *state) {
  spg *s = state;
  s->api->set_ready(s->ctx, 0); /* until the first good read (TM-P1-26) */
  int rc = schema_at_start(s);
  if (rc != PH_OK)
    return rc;
  s->started = 1; /* the revision is followed (pg_poll.c) until stop */
  pg_pool_start(s->pool);
  poll_start(s);
  return PH_OK;
}

static int spg_reload(void *state) {
  spg *s = state;
  /* The verdict lifetimes and the stale window apply at once; the rest
   * (connections, queue, poll interval) after a restart. */
  s->positive_ms = (uint32_t)s->api->conf_int(s->ctx, "positive_ttl");
  s->negative_ms = (uint32_t)s->api->conf_int(s->ctx, "negative_ttl");
  s->rev.t.stale_ms = s->api->conf_int(s->ctx, "stale_allow");
  poll_stale_changed(s);
  return PH_OK;
}

void spg_maybe_stopped(spg *s) {
  if (s->stopping && ilist_empty(&s->live)) {
    s->stopping = 0;
    s->api->stop_done(s->ctx);
  }
}

static int spg_stop(void *state) {
  spg *s = state;
  s->started = 0; /* before poll_stop: nothing arms the stale timer again */
  poll_stop(s);
  tm_view_stop(s);
  if (ilist_empty(&s->live))
    return PH_OK;
  s->stopping = 1; /* calls in flight end by their deadline at the latest */
  return PH_STOP_PENDING;
}

static void spg_destroy(void *state) {
  spg *s = state;
  if (!s)
    return;
  pg_pool_free(s->pool); /* no task is called back */
  req_drop_all(s);
  tm_view_free(s);
  s->api->defer_free(s->lturn);
  if (s->poll_timer)
    s->api->timer_free(s->poll_timer);
  if (s->stale_timer)
    s->api->timer_free(s->stale_timer);
  if (s->dsn) {
    explicit_bzero(s->dsn, strlen(s->dsn));
    free(s->dsn);
  }
  free(s);
}

static const char *const provides[] = {PH_ACCESS_SERVICE, PH_AZ_STORE_SERVICE,
                                       PH_POOL_STORE_SERVICE,
                                       TM_PRESENCE_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("store_pg", "1.0.0"),
    .description = "PostgreSQL authorization and pool store (access, "
                   "authz.store, pool.store, tm.presence)",
    .provides = provides,
    .config = keys,
    .check = spg_check,
    .init = spg_init,
    .start = spg_start,
    .reload = spg_reload,
    .stop = spg_stop,
    .destroy = spg_destroy,
};

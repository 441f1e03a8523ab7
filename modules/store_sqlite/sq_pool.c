/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite's connection pool (sq_pool.h). */
#include "sq_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_common/migrate_sqlite.h"
#include "store_common/migrations.h"

#define POOL_MAX 16

struct sq_pool {
  pthread_mutex_t mu;
  pthread_cond_t back; /* a connection came back or a slot freed */
  char *path;
  int max, busy_ms;
  int open; /* connections that exist, idle or borrowed */
  sqlite3 *idle[POOL_MAX];
  int n_idle;
  int closing; /* sq_pool_close ran: give-backs close */
};

sq_pool *sq_pool_new(const char *path, int max, int busy_ms) {
  if (max < 1 || max > POOL_MAX)
    return NULL;
  sq_pool *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  p->path = strdup(path);
  if (!p->path || pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p->path);
    free(p);
    return NULL;
  }
  pthread_cond_init(&p->back, NULL);
  p->max = max;
  p->busy_ms = busy_ms;
  return p;
}

void sq_pool_free(sq_pool *p) {
  if (!p)
    return;
  for (int i = 0; i < p->n_idle; i++)
    sqlite3_close(p->idle[i]);
  pthread_cond_destroy(&p->back);
  pthread_mutex_destroy(&p->mu);
  free(p->path);
  free(p);
}

static sqlite3 *open_one(sq_pool *p, int create, char *why, size_t whylen) {
  sqlite3 *db = NULL;
  if (az_sqlite_open(p->path, create, &db, why, whylen) < 0)
    return NULL;
  sqlite3_busy_timeout(db, p->busy_ms);
  return db;
}

sqlite3 *sq_pool_get(sq_pool *p, char *why, size_t whylen) {
  pthread_mutex_lock(&p->mu);
  while (p->n_idle == 0 && p->open >= p->max)
    pthread_cond_wait(&p->back, &p->mu);
  if (p->n_idle > 0) {
    sqlite3 *db = p->idle[--p->n_idle];
    pthread_mutex_unlock(&p->mu);
    return db;
  }
  p->open++; /* the slot is ours while we open outside the lock */
  pthread_mutex_unlock(&p->mu);
  sqlite3 *db = open_one(p, 0, why, whylen);
  if (!db) {
    pthread_mutex_lock(&p->mu);
    p->open--;
    pthread_cond_signal(&p->back);
    pthread_mutex_unlock(&p->mu);
  }
  return db;
}

void sq_pool_put(sq_pool *p, sqlite3 *db, int broken) {
  if (!db)
    return;
  if (!sqlite3_get_autocommit(db)) /* never hand on an open transaction */
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  pthread_mutex_lock(&p->mu);
  if (broken || p->closing || p->n_idle >= POOL_MAX) {
    p->open--;
    pthread_mutex_unlock(&p->mu);
    sqlite3_close(db);
    pthread_mutex_lock(&p->mu);
  } else {
    p->idle[p->n_idle++] = db;
  }
  pthread_cond_signal(&p->back);
  pthread_mutex_unlock(&p->mu);
}

void sq_pool_close(sq_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->closing = 1;
  sqlite3 *idle[POOL_MAX];
  int n = p->n_idle;
  memcpy(idle, p->idle, sizeof(idle));
  p->n_idle = 0;
  p->open -= n;
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < n; i++)
    sqlite3_close(idle[i]);
}

/* PRAGMA journal_mode answers the mode now in force. */
static int wal_on(sqlite3 *db, char *why, size_t whylen) {
  sqlite3_stmt *st = NULL;
  int ok = 0;
  if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *mode = sqlite3_column_text(st, 0);
    ok = mode && strcmp((const char *)mode, "wal") == 0;
  }
  sqlite3_finalize(st);
  if (!ok)
    snprintf(why, whylen, "cannot turn on WAL mode: %s",
             sqlite3_errmsg(db));
  return ok ? 0 : -1;
}

int sq_pool_prepare(sq_pool *p, int create, int migrate, char *why,
                    size_t whylen) {
  sqlite3 *db = open_one(p, create, why, whylen);
  if (!db)
    return -1;
  int rc = -1;
  char plan[256];
  int v = az_migrate(&az_sqlite_ops, db, migrate, why, whylen, plan,
                     sizeof(plan));
  if (v < 0) {
    /* why says what is wrong and what to do */
  } else if (v != AZ_SCHEMA_VERSION) {
    snprintf(why, whylen,
             "the database is at schema version %d, this build needs %d: "
             "run proxyhost-migrate (or set migrate = auto)",
             v, AZ_SCHEMA_VERSION);
  } else {
    rc = wal_on(db, why, whylen);
  }
  pthread_mutex_lock(&p->mu);
  p->open++;
  pthread_mutex_unlock(&p->mu);
  sq_pool_put(p, db, rc != 0);
  return rc;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite through the mock host: the authorization store contract
 * suite (store_contract.c) on a real SQLite file in a temporary
 * directory, then what only SQLite has: creation on first start with mode
 * 0600, WAL mode, migrate = auto upgrading a v8 database and migrate =
 * check refusing one, and no SQLite call ever made on the loop thread.
 *
 * The loop-thread check interposes the SQLite functions the module calls
 * (this program is linked with -export-dynamic, so the module's calls
 * resolve to the wrappers below, which forward to libsqlite3): a call on
 * the loop thread is counted, and the count must stay 0 while the count
 * of calls on other threads grows, which shows the wrappers are in the
 * path. The test's own connection (the fault hooks) is left out by a flag
 * set around it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store_common/migrations.h"
#include <proxyhost/mock.h>
#include "tap.h"

#include "store_contract.c"
#include "pool_contract.c"

#define MODULE PH_BUILD_MODULES "/store_sqlite/.libs/store_sqlite.so"

/* ---- the loop-thread check ----------------------------------------------- */

static pthread_t loop_thread;
static int own_sql; /* the test's own connection is in use (loop thread) */
static int loop_sql_calls, helper_sql_calls;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

static void count_call(void) {
  pthread_mutex_lock(&count_mu);
  if (pthread_equal(pthread_self(), loop_thread)) {
    if (!own_sql)
      loop_sql_calls++;
  } else {
    helper_sql_calls++;
  }
  pthread_mutex_unlock(&count_mu);
}

#define NEXT(name, type)                                                     \
  static type next_##name;                                                   \
  if (!next_##name)                                                          \
    next_##name = (type)dlsym(RTLD_NEXT, #name);

int sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n,
                       sqlite3_stmt **st, const char **tail) {
  typedef int (*fn)(sqlite3 *, const char *, int, sqlite3_stmt **,
                    const char **);
  NEXT(sqlite3_prepare_v2, fn);
  count_call();
  return next_sqlite3_prepare_v2(db, sql, n, st, tail);
}

int sqlite3_step(sqlite3_stmt *st) {
  typedef int (*fn)(sqlite3_stmt *);
  NEXT(sqlite3_step, fn);
  count_call();
  return next_sqlite3_step(st);
}

int sqlite3_exec(sqlite3 *db, const char *sql,
                 int (*cb)(void *, int, char **, char **), void *arg,
                 char **errmsg) {
  typedef int (*fn)(sqlite3 *, const char *,
                    int (*)(void *, int, char **, char **), void *, char **);
  NEXT(sqlite3_exec, fn);
  count_call();
  return next_sqlite3_exec(db, sql, cb, arg, errmsg);
}

int sqlite3_open_v2(const char *path, sqlite3 **db, int flags,
                    const char *vfs) {
  typedef int (*fn)(const char *, sqlite3 **, int, const char *);
  NEXT(sqlite3_open_v2, fn);
  count_call();
  return next_sqlite3_open_v2(path, db, flags, vfs);
}

/* ---- the environment ------------------------------------------------------ */

static char dir[256];
static char db_path[320];
static int db_seq;
static char conf[2048];

/* The test's own connection to the current database. */
static int own_exec(const char *sql) {
  own_sql = 1;
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  }
  sqlite3_close(db);
  own_sql = 0;
  return rc == SQLITE_OK ? 0 : -1;
}

/* One integer or text answer of the test's own connection. */
static int own_query(const char *sql, char *out, size_t len) {
  own_sql = 1;
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int ok_ = -1;
  out[0] = '\0';
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) ==
          SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, len, "%s", t ? (const char *)t : "");
    ok_ = 0;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  own_sql = 0;
  return ok_;
}

/* Whether the test's own query of sql answers want. */
/* Stops and frees m (NULL: nothing). */
static void stop_free(ph_mock *m) {
  if (m) {
    ph_mock_stop(m);
    ph_mock_free(m);
  }
}

static int query_is(const char *sql, const char *want) {
  char v[64];
  return own_query(sql, v, sizeof(v)) == 0 && strcmp(v, want) == 0;
}

static const char *make_conf(const char *migrate, int max_pending) {
  snprintf(conf, sizeof(conf),
           "[proxyhost]\nmodules = %s\n"
           "[log]\nlevel = error\n"
           "[store_sqlite]\npath = %s\nmigrate = %s\nmax_pending = %d\n"
           "revision_recheck = 100ms\nbusy_timeout = 200ms\n",
           MODULE, db_path, migrate, max_pending);
  return conf;
}

static const char *setup(void *arg, int max_pending) {
  (void)arg;
  snprintf(db_path, sizeof(db_path), "%s/authz-%d.sqlite", dir, ++db_seq);
  return make_conf("auto", max_pending);
}

static int break_db(void *arg) {
  (void)arg;
  return own_exec("ALTER TABLE authorization_revision RENAME TO "
                  "authorization_revision_broken");
}

static int repair_db(void *arg) {
  (void)arg;
  return own_exec("ALTER TABLE authorization_revision_broken RENAME TO "
                  "authorization_revision");
}

static int revision_delete(void *arg) {
  (void)arg;
  return own_exec("DELETE FROM authorization_revision WHERE id = 1");
}

static int revision_set(void *arg, int64_t value) {
  (void)arg;
  char sql[256];
  snprintf(sql, sizeof(sql),
           "INSERT OR REPLACE INTO authorization_revision (id, revision, "
           "updated_at) VALUES (1, %lld, CURRENT_TIMESTAMP)",
           (long long)value);
  return own_exec(sql);
}

static int revision_bump(void *arg) {
  (void)arg;
  return own_exec("UPDATE authorization_revision SET revision = revision + "
                  "1 WHERE id = 1");
}

static int pool_exec(void *arg, const char *sql) {
  (void)arg;
  return own_exec(sql);
}

/* ---- SQLite-only cases ---------------------------------------------------- */

static char err[8192];

static ph_mock *start_with(const char *text, int *start_rc) {
  err[0] = '\0';
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  *start_rc = -1;
  if (!m)
    return NULL;
  if (ph_mock_init(m, err, sizeof err) < 0) {
    ph_mock_free(m);
    return NULL;
  }
  *start_rc = ph_mock_start(m, err, sizeof err);
  return m;
}

static int wait_ready(ph_mock *m) {
  for (int i = 0; i < 500; i++) {
    if (ph_mock_ready(m))
      return 1;
    ph_mock_run_for(m, 10);
  }
  return 0;
}

static void test_file_and_wal(void) {
  snprintf(db_path, sizeof(db_path), "%s/first.sqlite", dir);
  struct stat sb;
  ok(stat(db_path, &sb) != 0, "no database file before the first start");
  int rc;
  ph_mock *m = start_with(make_conf("auto", 8), &rc);
  ok(m && rc == 0, "store_sqlite starts on a missing file (migrate = auto)");
  ok(m && wait_ready(m), "TM-P1-26 and becomes ready");
  ok(stat(db_path, &sb) == 0, "the database file was created at start");
  is_int(sb.st_mode & 0777, 0600, "the database file has mode 0600");
  char v[64];
  ok(own_query("PRAGMA journal_mode", v, sizeof(v)) == 0 &&
         strcmp(v, "wal") == 0,
     "the database is in WAL mode");
  ok(own_query("SELECT version FROM schema_meta WHERE id = 1", v,
               sizeof(v)) == 0 &&
         atoi(v) == AZ_SCHEMA_VERSION,
     "the schema is the current version");
  ok(query_is("SELECT revision FROM authorization_revision WHERE id = 1", "1"),
     "TM-P1-14 authorization_revision exists with revision 1");
  stop_free(m);
  ok(stat(db_path, &sb) == 0 && (sb.st_mode & 0777) == 0600,
     "after the stop the file keeps mode 0600");
  m = start_with(make_conf("auto", 8), &rc);
  ok(m && rc == 0 && wait_ready(m), "a second start reuses the file");
  stop_free(m);
}

/* A v8 database made from the baseline, as an older release left it. */
static int make_v8(const char *name) {
  snprintf(db_path, sizeof(db_path), "%s/%s", dir, name);
  own_sql = 1;
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(db_path, &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, az_sql_baseline_v8(), NULL, NULL, NULL);
  sqlite3_close(db);
  own_sql = 0;
  return rc == SQLITE_OK ? 0 : -1;
}

static void test_migrate(void) {
  ok(make_v8("old-check.sqlite") == 0, "a v8 database from the baseline");
  int rc;
  ph_mock *m = start_with(make_conf("check", 8), &rc);
  ok(rc != 0, "TM-UPG migrate = check refuses to start on a v8 database");
  ph_mock_free(m);
  ok(query_is("SELECT version FROM schema_meta WHERE id = 1", "8"),
     "and leaves it at version 8");

  snprintf(db_path, sizeof(db_path), "%s/missing-check.sqlite", dir);
  m = start_with(make_conf("check", 8), &rc);
  ok(rc != 0, "migrate = check refuses to start without a database");
  ph_mock_free(m);
  struct stat sb;
  ok(stat(db_path, &sb) != 0, "and creates no file");

  ok(make_v8("old-auto.sqlite") == 0, "another v8 database");
  m = start_with(make_conf("auto", 8), &rc);
  ok(m && rc == 0 && wait_ready(m),
     "migrate = auto upgrades a v8 database at start and is ready");
  ok(query_is("SELECT version FROM schema_meta WHERE id = 1", "11"),
     "the upgraded database is at version 11");
  ok(query_is("SELECT revision FROM authorization_revision WHERE id = 1", "1"),
     "the upgrade created the revision row");
  stop_free(m);
  m = start_with(make_conf("check", 8), &rc);
  ok(m && rc == 0 && wait_ready(m),
     "migrate = check accepts the upgraded database");
  stop_free(m);

  snprintf(db_path, sizeof(db_path), "%s/no-such-dir/x.sqlite", dir);
  m = start_with(make_conf("auto", 8), &rc);
  ok(rc != 0, "a path that cannot be created fails the start");
  ph_mock_free(m);
}

static void test_metrics_and_sample(void) {
  int rc;
  snprintf(db_path, sizeof(db_path), "%s/metrics.sqlite", dir);
  ph_mock *m = start_with(make_conf("auto", 8), &rc);
  ok(m && rc == 0 && wait_ready(m), "started for the metrics");
  if (!m)
    return;
  ph_mock_run_for(m, 250); /* two polls */
  const char *t = ph_mock_metrics_text(m);
  like(t, "\ntunnelmesh_authorization_revision 1\n",
       "TM-OBS-7 tunnelmesh_authorization_revision shows the revision");
  like(t, "tunnelmesh_authorization_revision_poll_total{result=\"success\"}",
       "TM-OBS-8 the revision polls are counted by result");
  like(t, "tunnelmesh_authorization_revision_poll_total{result=\"failure\"} 0",
       "no failed poll");
  unlike(t, "authz", "no path or database detail in /metrics");
  ph_mock_stop(m);
  ph_mock_free(m);
}

int main(void) {
  plan_lazy();
  loop_thread = pthread_self();
  snprintf(dir, sizeof(dir), "/tmp/test_store_sqlite.XXXXXX");
  if (!mkdtemp(dir)) {
    ok(0, "a temporary directory");
    return done_testing();
  }
  STORE_CONTRACTS_RUN("store_sqlite");
  test_file_and_wal();
  test_migrate();
  test_metrics_and_sample();
  is_int(loop_sql_calls, 0, "no SQLite call ran on the loop thread");
  ok(helper_sql_calls > 100,
     "the SQLite calls were seen, on the helper threads (the check works)");
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    printf("# could not remove %s\n", dir);
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization store contract suite (store_contract.c, the cases
 * store_sqlite passes) against store_pg on a real PostgreSQL (TM-TEST-25,
 * TM-TEST-39): a fresh database per group of cases, and the fault hooks
 * as another session would cause them.
 *
 *  - break_db: the database refuses connections and its sessions are
 *    terminated (ALTER DATABASE ... ALLOW_CONNECTIONS false, then
 *    pg_terminate_backend): every call fails until repair_db allows them
 *    again and the pool reconnects by itself;
 *  - revision_set: the column is PostgreSQL's INTEGER, so a value above
 *    its top is stored as the top (2^31 - 1): the case "a revision at the
 *    top is healthy, a write past it fails whole" is the same there.
 *
 * Run by t/integration/store_pg.sh with PH_TEST_PG_DSN (no dbname). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "tap.h"

#include "store_contract.c"
#include "pool_contract.c"


static const char *base_dsn;
static char db[64];
static int db_seq;
static char conf[2048];

static int exec_on(const char *dbname, const char *sql) {
  return pg_test_exec(base_dsn, dbname, sql);
}

static const char *setup(void *arg, int max_pending) {
  (void)arg;
  snprintf(db, sizeof(db), "contract_%d", ++db_seq);
  char sql[128];
  snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
  if (exec_on("postgres", sql) != 0)
    return NULL;
  snprintf(conf, sizeof(conf),
           "[proxyhost]\nmodules = %s\ndrain_timeout = 3s\n"
           "[log]\nlevel = error\n"
           "[store_pg]\ndsn = %s dbname=%s\nmigrate = auto\n"
           "max_pending = %d\npositive_ttl = 5s\nnegative_ttl = 1s\n"
           "revision_poll = 100ms\nquery_timeout = 1s\n"
           "reconnect_min = 20ms\nreconnect_max = 100ms\npool_size = 2\n",
           PG_TEST_MODULE, base_dsn, db, max_pending);
  return conf;
}

static int break_db(void *arg) {
  (void)arg;
  char sql[256];
  snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS false", db);
  if (exec_on("postgres", sql) != 0)
    return -1;
  snprintf(sql, sizeof(sql),
           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
           "datname = '%s'",
           db);
  return exec_on("postgres", sql);
}

static int repair_db(void *arg) {
  (void)arg;
  char sql[128];
  snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS true", db);
  return exec_on("postgres", sql);
}

static int revision_delete(void *arg) {
  (void)arg;
  return exec_on(db, "DELETE FROM authorization_revision WHERE id = 1");
}

static int revision_set(void *arg, int64_t value) {
  (void)arg;
  if (value > 2147483647)
    value = 2147483647; /* the top of PostgreSQL's INTEGER */
  char sql[256];
  snprintf(sql, sizeof(sql),
           "INSERT INTO authorization_revision (id, revision, updated_at) "
           "VALUES (1, %lld, 'now') ON CONFLICT (id) DO UPDATE SET revision "
           "= EXCLUDED.revision",
           (long long)value);
  return exec_on(db, sql);
}

static int pool_exec(void *arg, const char *sql) {
  (void)arg;
  return exec_on(db, sql);
}

static int revision_bump(void *arg) {
  (void)arg;
  return exec_on(db, "UPDATE authorization_revision SET revision = revision "
                     "+ 1 WHERE id = 1");
}

int main(void) {
  plan_lazy();
  base_dsn = getenv("PH_TEST_PG_DSN");
  if (!base_dsn) {
    ok(0, "PH_TEST_PG_DSN is set (run through t/integration/store_pg.sh)");
    return done_testing();
  }
  STORE_CONTRACTS_RUN("store_pg");
  return done_testing();
}

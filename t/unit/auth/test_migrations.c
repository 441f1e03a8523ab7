/* SPDX-License-Identifier: BSD-2-Clause */
/* The migration driver and registry (modules/store_common/migrations.c):
 * the registry is whole (TM-P1-22), the embedded SQL is the files'
 * bytes, and the driver's decisions (fresh, steps, current, newer, no
 * chain, failures) through a fake engine; then the SQLite engine on real
 * files (migrate_sqlite.c): fresh creation with mode 0600, v8 -> v9, a
 * step failing halfway (TM-P1-23), the step refusing versions 7 and 9.
 * The catalog comparisons and PostgreSQL are t/integration/migrations.sh. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_test.h"
#include "store_common/migrations.h"
#include "tap.h"
#ifdef AZ_WITH_SQLITE
#include "store_common/migrate_sqlite.h"
#endif

/* ---- a fake engine: a version and a log of the scripts it ran --------- */
typedef struct fake {
  int version;     /* what version() reports */
  int fail_exec;   /* exec fails (and changes nothing) */
  int stuck;       /* exec succeeds but leaves the version */
  int raced;       /* exec fails, but another migrator did the step */
  int ran;         /* scripts run */
  const char *last;
} fake;

static int fake_version(void *db, char *why, size_t whylen) {
  fake *f = db;
  if (f->version < 0)
    snprintf(why, whylen, "fake: cannot read");
  return f->version;
}

static int fake_exec(void *db, const char *sql, char *why, size_t whylen) {
  fake *f = db;
  f->ran++;
  f->last = sql;
  if (f->raced) {
    f->version = f->version == 0 ? AZ_SCHEMA_VERSION : f->version + 1;
    snprintf(why, whylen, "fake: version check failed");
    return -1;
  }
  if (f->fail_exec) {
    snprintf(why, whylen, "fake: injected");
    return -1;
  }
  if (!f->stuck)
    f->version = f->version == 0 ? AZ_SCHEMA_VERSION : f->version + 1;
  return 0;
}

static const az_engine_ops fake_ops = {AZ_ENGINE_SQLITE, fake_version,
                                       fake_exec};

static void test_registry(void) {
  char why[256] = "";
  is_int(AZ_SCHEMA_VERSION, 11,
         "TM-P1-22, CP-3-1, TM-P2-29: the schema version is 11");
  ok(az_registry_check(why, sizeof(why)) == 0,
     "TM-P1-22: the registry is in order and ends at the schema version");
  size_t n;
  const az_step *s = az_steps(&n);
  int found = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i].from == 8 && s[i].to == 9)
      found = 1;
  ok(found, "TM-P1-22: v8 -> v9 is registered");
  ok(n == 3 && s[1].from == 9 && s[1].to == 10 &&
         strcmp(s[1].name, "v0009_to_v0010") == 0,
     "v9 -> v10 (the pool's tables) is registered after it");
  ok(s[2].from == 10 && s[2].to == 11 &&
         strcmp(s[2].name, "v0010_to_v0011") == 0,
     "TM-P2-29: v10 -> v11 (TunnelMesh presence) is registered after it");
  is_str(s[0].name, "v0008_to_v0009", "the step is named by its directory");
  ok(az_step_sql(&s[0], AZ_ENGINE_SQLITE) == s[0].sqlite &&
         az_step_sql(&s[0], AZ_ENGINE_POSTGRES) == s[0].postgres &&
         az_step_sql(&s[0], (az_engine)7) == NULL,
     "az_step_sql picks the engine's script");
  is_str(az_engine_name(AZ_ENGINE_POSTGRES), "postgres", "engine names");
}

/* The embedded strings are the files' exact bytes (TM-P1-24: the
 * embedding is updated with the files, by the build). */
static void test_embedded(void) {
  static const struct {
    const char *file;
    int which; /* 0 ddl, 1 baseline, 2 step sqlite, 3 step postgres */
  } files[] = {{"migrations/ddl.sql", 0},
               {"migrations/baseline/v0008.sql", 1},
               {"migrations/incremental/v0008_to_v0009/sqlite.sql", 2},
               {"migrations/incremental/v0008_to_v0009/postgres.sql", 3},
               {"migrations/incremental/v0009_to_v0010/sqlite.sql", 4},
               {"migrations/incremental/v0009_to_v0010/postgres.sql", 5},
               {"migrations/incremental/v0010_to_v0011/sqlite.sql", 6},
               {"migrations/incremental/v0010_to_v0011/postgres.sql", 7}};
  size_t n;
  const az_step *s = az_steps(&n);
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", AZ_TEST_SRCDIR, files[i].file);
    char *text = file_test_slurp(path);
    const char *emb = files[i].which == 0   ? az_sql_ddl()
                      : files[i].which == 1 ? az_sql_baseline_v8()
                      : files[i].which == 2 ? s[0].sqlite
                      : files[i].which == 3 ? s[0].postgres
                      : files[i].which == 4 ? s[1].sqlite
                      : files[i].which == 5 ? s[1].postgres
                      : files[i].which == 6 ? s[2].sqlite
                                            : s[2].postgres;
    char name[200];
    snprintf(name, sizeof(name), "TM-P1-24: embedded %s is the file",
             files[i].file);
    ok(text[0] && strcmp(text, emb) == 0, name);
    free(text);
  }
  /* Each step's text, SQLite's then PostgreSQL's: what it must hold. */
  static const char *const want[][2][2] = {
      {{"CREATE TABLE IF NOT EXISTS authorization_revision",
        "TM-P1-14: the SQLite step creates the table as the seed has it"},
       {"RAISE EXCEPTION",
        "TM-P1-23: the PostgreSQL step checks the version first"}},
      {{"CREATE TABLE IF NOT EXISTS pool_revision",
        "the v9 -> v10 SQLite step creates the pool revision"},
       {"the v9 -> v10 step needs 9",
        "the v9 -> v10 PostgreSQL step checks the version first"}},
      {{"CREATE TABLE IF NOT EXISTS tm_agent_presence",
        "TM-P2-29: the v10 -> v11 SQLite step creates agent presence"},
       {"the v10 -> v11 step needs 10",
        "the v10 -> v11 PostgreSQL step checks the version first"}}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    like(s[i].sqlite, want[i][0][0], want[i][0][1]);
    like(s[i].postgres, want[i][1][0], want[i][1][1]);
  }
}

/* TM-P1-24: what a new step must change in the same commit agrees: every
 * directory of migrations/incremental/ is registered, with both scripts
 * and in modules/store_common/local.mk; ddl.sql and the last step set AZ_SCHEMA_VERSION;
 * every script is one transaction. */
static void test_in_step(void) {
  size_t n;
  const az_step *s = az_steps(&n);
  char path[1024], want[128];
  snprintf(path, sizeof(path), "%s/migrations/incremental", AZ_TEST_SRCDIR);
  DIR *d = opendir(path);
  ok(d != NULL, "migrations/incremental/ can be read");
  size_t dirs = 0, registered = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    dirs++;
    for (size_t i = 0; i < n; i++)
      if (strcmp(s[i].name, e->d_name) == 0)
        registered++;
  }
  if (d)
    closedir(d);
  ok(dirs == n && registered == n,
     "TM-P1-24: every step directory is registered, and only those");
  snprintf(path, sizeof(path), "%s/modules/store_common/local.mk",
           AZ_TEST_SRCDIR);
  char *am = file_test_slurp(path);
  for (size_t i = 0; i < n; i++) {
    char name[200];
    int both = 1;
    static const char *const engines[] = {"sqlite", "postgres"};
    for (int k = 0; k < 2; k++) {
      snprintf(want, sizeof(want), "migrations/incremental/%s/%s.sql",
               s[i].name, engines[k]);
      if (!strstr(am, want))
        both = 0;
    }
    snprintf(name, sizeof(name),
             "TM-P1-24: store_common/local.mk installs and embeds both "
             "scripts of %s",
             s[i].name);
    ok(both, name);
  }
  free(am);
  snprintf(want, sizeof(want), "VALUES (1, %d, CURRENT_TIMESTAMP)",
           AZ_SCHEMA_VERSION);
  like(az_sql_ddl(), want, "TM-P1-24: ddl.sql sets the schema version");
  snprintf(want, sizeof(want), "SET version = %d,", AZ_SCHEMA_VERSION);
  like(s[n - 1].sqlite, want, "TM-P1-23: the last SQLite step sets it");
  like(s[n - 1].postgres, want, "TM-P1-23: the last PostgreSQL step sets it");
  for (size_t i = 0; i < n; i++) {
    const char *sql[] = {s[i].sqlite, s[i].postgres, az_sql_ddl()};
    for (int k = 0; k < 3; k++) {
      /* One BEGIN (first statement) and one COMMIT, the last line. */
      static const char commit[] = "\nCOMMIT;\n";
      /* (A PL/pgSQL block's BEGIN has no semicolon.) */
      const char *b = strstr(sql[k], "\nBEGIN;");
      if (!b)
        b = strstr(sql[k], "\nBEGIN IMMEDIATE;");
      const char *c = strstr(sql[k], "\nCOMMIT");
      size_t len = strlen(sql[k]), clen = sizeof(commit) - 1;
      ok(b && c && len > clen && c == sql[k] + len - clen &&
             !strstr(b + 1, "\nBEGIN;") &&
             !strstr(b + 1, "\nBEGIN IMMEDIATE;"),
         k == 2 ? "ddl.sql is one transaction"
                : "a step script is one transaction (BEGIN ... COMMIT)");
    }
  }
}

static void test_driver(void) {
  char why[512], plan[512];
  fake f = {0};
  int v;

  f = (fake){.version = 0};
  v = az_migrate(&fake_ops, &f, 0, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 0, "fresh, plan: version 0");
  is_int(f.ran, 0, "plan runs nothing");
  is_str(plan, "new database -> v11 (migrations/ddl.sql)\n",
         "fresh, plan: ddl.sql");
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 11, "fresh, apply: version 11");
  ok(f.ran == 1 && f.last == az_sql_ddl(), "fresh, apply: ran ddl.sql once");

  f = (fake){.version = 8};
  v = az_migrate(&fake_ops, &f, 0, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 8, "v8, plan: version 8");
  is_str(plan,
         "v8 -> v9 (migrations/incremental/v0008_to_v0009/sqlite.sql)\n"
         "v9 -> v10 (migrations/incremental/v0009_to_v0010/sqlite.sql)\n"
         "v10 -> v11 (migrations/incremental/v0010_to_v0011/sqlite.sql)\n",
         "v8, plan: every step");
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 11, "TM-P1-11: v8, apply: version 11");
  size_t n;
  ok(f.ran == 3 && f.last == az_steps(&n)[2].sqlite,
     "v8: ran every step, in order");

  f.ran = 0;
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 11, "idempotent: a second apply keeps version 11");
  is_int(f.ran, 0, "idempotent: and runs nothing");
  is_str(plan, "", "idempotent: an empty plan");

  const struct {
    int version;
    const char *name, *why, *why_name;
  } refused[] = {
      {12, "a newer version is refused",
       "schema version 12, newer than this build's 11",
       "and the message says so"},
      {7, "a version with no chain is refused",
       "no migration from it (its steps start at version 8)",
       "and the message says where the steps start"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    f = (fake){.version = refused[i].version};
    v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
    is_int(v, AZ_MIGRATE_REFUSED, refused[i].name);
    like(why, refused[i].why, refused[i].why_name);
    is_int(f.ran, 0, "and nothing runs");
  }

  f = (fake){.version = -1};
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, AZ_MIGRATE_ERROR, "an unreadable version is an error");
  is_str(why, "fake: cannot read", "with the engine's reason");

  f = (fake){.version = 8, .fail_exec = 1};
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, AZ_MIGRATE_ERROR, "a failing step is an error");
  like(why, "step v8 -> v9 (v0008_to_v0009/sqlite.sql) failed and was "
            "rolled back (the database is still at version 8): fake: "
            "injected",
       "and says which step and where the database is");

  f = (fake){.version = 8, .raced = 1};
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 11, "a step another migrator did meanwhile is success");
  f = (fake){.version = 0, .raced = 1};
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, 11, "so is a schema another migrator created meanwhile");

  f = (fake){.version = 8, .stuck = 1};
  v = az_migrate(&fake_ops, &f, 1, why, sizeof(why), plan, sizeof(plan));
  is_int(v, AZ_MIGRATE_ERROR, "a step that does not move the version fails");
  like(why, "the database is at version 8, not 9", "and says so");

  v = az_migrate(NULL, &f, 1, why, sizeof(why), NULL, 0);
  is_int(v, AZ_MIGRATE_ERROR, "no ops: an error, not a crash");
  char tiny[8];
  f = (fake){.version = 8};
  v = az_migrate(&fake_ops, &f, 0, why, sizeof(why), tiny, sizeof(tiny));
  ok(v == 8 && strlen(tiny) < sizeof(tiny), "a small plan buffer is cut");
}

#ifdef AZ_WITH_SQLITE
static long long q_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  long long v = -99;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  return v;
}

static sqlite3 *v8_db(const char *path) {
  char why[256];
  sqlite3 *db;
  unlink(path);
  if (az_sqlite_open(path, 1, &db, why, sizeof(why)) < 0)
    return NULL;
  if (az_sqlite_ops.exec(db, az_sql_baseline_v8(), why, sizeof(why)) < 0) {
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

#define HAS_REVISION                                                         \
  "SELECT count(*) FROM sqlite_master WHERE name = 'authorization_revision'"

static void test_sqlite(const char *dir) {
  char path[512], why[512], plan[512];
  sqlite3 *db;
  snprintf(path, sizeof(path), "%s/fresh.db", dir);

  ok(az_sqlite_open(path, 0, &db, why, sizeof(why)) < 0 && !db,
     "without create, a missing file is an error");
  like(why, "cannot open", "and says so");
  ok(az_sqlite_open(path, 1, &db, why, sizeof(why)) == 0, "create: opens");
  struct stat sb;
  ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600,
     "a new database file is mode 0600");
  is_int(az_sqlite_ops.version(db, why, sizeof(why)), 0,
         "an empty file is a fresh database (version 0)");
  is_int(q_int(db, "PRAGMA foreign_keys"), 1, "foreign keys are on");
  is_int(az_migrate(&az_sqlite_ops, db, 1, why, sizeof(why), plan,
                    sizeof(plan)),
         11, "a fresh database gets ddl.sql: version 11");
  is_int(q_int(db, "SELECT revision FROM authorization_revision WHERE id = 1"),
         1, "TM-P1-14: with the revision row id=1, revision 1");
  sqlite3_close(db);

  snprintf(path, sizeof(path), "%s/v8.db", dir);
  db = v8_db(path);
  ok(db != NULL, "a v8 database from the baseline");
  is_int(az_sqlite_ops.version(db, why, sizeof(why)), 8, "reads version 8");
  is_int(az_migrate(&az_sqlite_ops, db, 1, why, sizeof(why), plan,
                    sizeof(plan)),
         11, "TM-P1-11: v8 applied: version 11");
  is_int(q_int(db, "SELECT count(*) FROM authorization_revision"), 1,
         "TM-P1-15: one revision row");
  is_int(q_int(db, "SELECT id * 10 + revision FROM authorization_revision"),
         11, "TM-P1-14: id 1, revision 1");
  /* TM-P1-23: the step run again (by hand) refuses version 9. */
  size_t n;
  const az_step *s = az_steps(&n);
  ok(az_sqlite_ops.exec(db, s[0].sqlite, why, sizeof(why)) < 0,
     "TM-P1-23: the v8 -> v9 script refuses a database at version 11");
  like(why, "schema_meta_version_must_be_8", "naming the check");
  ok(sqlite3_get_autocommit(db), "and leaves no transaction open");
  ok(az_sqlite_ops.exec(db, s[1].sqlite, why, sizeof(why)) < 0,
     "the v9 -> v10 script refuses a database at version 11");
  like(why, "schema_meta_version_must_be_9", "naming its check");
  is_int(q_int(db, "SELECT count(*) FROM pool_revision"), 1,
         "and adds no pool revision row");
  ok(az_sqlite_ops.exec(db, s[2].sqlite, why, sizeof(why)) < 0,
     "the v10 -> v11 script refuses a database at version 11");
  like(why, "schema_meta_version_must_be_10", "naming its check");
  sqlite3_close(db);

  /* Version 7: the script itself refuses it. */
  db = v8_db(path);
  sqlite3_exec(db, "UPDATE schema_meta SET version = 7", NULL, NULL, NULL);
  ok(az_sqlite_ops.exec(db, s[0].sqlite, why, sizeof(why)) < 0,
     "TM-P1-23: the v8 -> v9 script refuses a database at version 7");
  is_int(q_int(db, HAS_REVISION), 0, "and creates nothing");
  is_int(az_migrate(&az_sqlite_ops, db, 1, why, sizeof(why), NULL, 0),
         AZ_MIGRATE_REFUSED, "the driver refuses version 7 (no chain)");
  sqlite3_close(db);

  /* Failing halfway: the version update (after CREATE and INSERT) is
   * refused by a trigger; the whole step rolls back. */
  db = v8_db(path);
  sqlite3_exec(db,
               "CREATE TRIGGER no_bump BEFORE UPDATE ON schema_meta BEGIN "
               "SELECT RAISE(ABORT, 'injected failure'); END",
               NULL, NULL, NULL);
  is_int(az_migrate(&az_sqlite_ops, db, 1, why, sizeof(why), NULL, 0),
         AZ_MIGRATE_ERROR, "TM-P1-23: a step failing halfway fails");
  like(why, "injected failure", "with the engine's message");
  like(why, "still at version 8", "saying the database is still at v8");
  is_int(q_int(db, "SELECT version FROM schema_meta"), 8,
         "TM-P1-23: the version stays 8");
  is_int(q_int(db, HAS_REVISION), 0,
         "TM-P1-23: and no authorization_revision table is left");
  ok(sqlite3_get_autocommit(db), "and no transaction is left open");
  sqlite3_close(db);

  /* A script that forgets its COMMIT is rolled back and fails. */
  db = v8_db(path);
  ok(az_sqlite_ops.exec(db, "BEGIN; CREATE TABLE x (a INTEGER);", why,
                        sizeof(why)) < 0,
     "a script that leaves its transaction open fails");
  is_int(q_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'x'"), 0,
         "and is rolled back");
  /* Tables of ours without schema_meta: not a fresh database. */
  sqlite3_exec(db, "DROP TABLE schema_meta", NULL, NULL, NULL);
  is_int(az_sqlite_ops.version(db, why, sizeof(why)), -1,
         "tables of the schema without schema_meta: unknown version");
  like(why, "no schema_meta", "and says so");
  sqlite3_close(db);
}
#endif

int main(void) {
  plan_lazy();
  test_registry();
  test_embedded();
  test_in_step();
  test_driver();
#ifdef AZ_WITH_SQLITE
  char dir[] = "/tmp/test_migrations.XXXXXX";
  if (mkdtemp(dir)) {
    test_sqlite(dir);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      printf("# could not remove %s\n", dir);
  } else {
    ok(0, "a temporary directory");
  }
#endif
  return done_testing();
}

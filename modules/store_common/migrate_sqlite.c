/* SPDX-License-Identifier: BSD-2-Clause */
/* The SQLite engine of the migration driver (migrate_sqlite.h). */
#include "migrate_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The tables of the schema other than schema_meta: a database with one
 * of them but no schema_meta is not ours to create into. */
#define AZ_OUR_TABLES                                                        \
  "'users', 'agents', 'service_tokens', 'agent_policies', "                 \
  "'authorization_revision'"

/* Runs a query whose answer is one integer; 1 and *val when it has a
 * row, 0 when it has none, -1 with why on an error. */
static int one_int(sqlite3 *db, const char *sql, long long *val, int *is_int,
                   char *why, size_t whylen) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(why, whylen, "sqlite: %s", sqlite3_errmsg(db));
    return -1;
  }
  int rc = sqlite3_step(st);
  int ret;
  if (rc == SQLITE_ROW) {
    if (is_int)
      *is_int = sqlite3_column_type(st, 0) == SQLITE_INTEGER;
    *val = sqlite3_column_int64(st, 0);
    ret = 1;
  } else if (rc == SQLITE_DONE) {
    ret = 0;
  } else {
    snprintf(why, whylen, "sqlite: %s", sqlite3_errmsg(db));
    ret = -1;
  }
  sqlite3_finalize(st);
  return ret;
}

static int sqlite_version(void *handle, char *why, size_t whylen) {
  sqlite3 *db = handle;
  long long n = 0;
  if (one_int(db,
              "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
              "AND name = 'schema_meta'",
              &n, NULL, why, whylen) < 0)
    return -1;
  if (n == 0) {
    if (one_int(db,
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                "AND name IN (" AZ_OUR_TABLES ")",
                &n, NULL, why, whylen) < 0)
      return -1;
    return az_version_none(n, why, whylen);
  }
  long long v = 0;
  int is_int = 0;
  int rc = one_int(db, "SELECT version FROM schema_meta WHERE id = 1", &v,
                   &is_int, why, whylen);
  return az_version_row(rc, v, is_int, why, whylen);
}

static int sqlite_exec(void *handle, const char *sql, char *why,
                       size_t whylen) {
  sqlite3 *db = handle;
  if (az_exec_before(!sqlite3_get_autocommit(db), why, whylen) < 0)
    return -1;
  char *err = NULL;
  if (sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, &err) !=
      SQLITE_OK) {
    snprintf(why, whylen, "sqlite: %s", err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    return -1;
  }
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  if (rc != SQLITE_OK) {
    /* The message names tables and constraints, never values. */
    snprintf(why, whylen, "sqlite: %s", err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    if (!sqlite3_get_autocommit(db))
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  int open = !sqlite3_get_autocommit(db);
  if (open)
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return az_exec_after(open, why, whylen);
}

const az_engine_ops az_sqlite_ops = {
    .engine = AZ_ENGINE_SQLITE,
    .version = sqlite_version,
    .exec = sqlite_exec,
};

int az_sqlite_open(const char *path, int create, sqlite3 **out, char *why,
                   size_t whylen) {
  *out = NULL;
  if (!path || !*path) {
    snprintf(why, whylen, "no SQLite database path");
    return -1;
  }
  if (create) {
    /* SQLite would create the file with the umask's mode (often 0644):
     * the database holds token hashes, so it is made 0600 here first. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
      return -1;
    }
    close(fd);
  }
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc != SQLITE_OK) {
    snprintf(why, whylen, "cannot open %s: %s", path,
             db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return -1;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, AZ_SQLITE_BUSY_MS);
  char *err = NULL;
  if (sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, &err) !=
      SQLITE_OK) {
    snprintf(why, whylen, "%s: %s", path, err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    sqlite3_close(db);
    return -1;
  }
  *out = db;
  return 0;
}

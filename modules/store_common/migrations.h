/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization schema's migrations: the SQL of migrations/ (embedded
 * at build time, so a store never depends on where the files were
 * installed), the registry of steps, and the one driver both engines and
 * proxyhost-migrate use. The driver is engine-neutral; each engine gives
 * it two operations on a synchronous connection (store_sqlite's helper
 * thread, store_pg's start-up thread, the command line tool). */
#ifndef PH_STORE_MIGRATIONS_H
#define PH_STORE_MIGRATIONS_H

#include <stddef.h>

/* The version this build reads and writes (TM-P1-22). */
#define AZ_SCHEMA_VERSION 9

typedef enum az_engine { AZ_ENGINE_SQLITE = 1, AZ_ENGINE_POSTGRES = 2 } az_engine;

/* migrations/ddl.sql: the full current schema, both engines. */
const char *az_sql_ddl(void);
/* migrations/baseline/v0008.sql (tests build v8 databases from it). */
const char *az_sql_baseline_v8(void);

/* One incremental step, migrations/incremental/vFROM_to_vTO/<engine>.sql. */
typedef struct az_step {
  int from, to;
  const char *sqlite;
  const char *postgres;
} az_step;
/* The registry, in order; *n steps. */
const az_step *az_steps(size_t *n);

/* What an engine does for the driver. why gets a one-line reason that
 * never carries a DSN, a password or row data. */
typedef struct az_engine_ops {
  az_engine engine;
  /* The schema version: > 0; 0 when the database has no schema_meta
   * table and no other table of ours (a fresh database); -1 on an error
   * (why), including a schema_meta without its row. */
  int (*version)(void *db, char *why, size_t whylen);
  /* Runs one script, which is one transaction (BEGIN ... COMMIT). On a
   * failure it rolls back and returns -1 with why; 0 on success. */
  int (*exec)(void *db, const char *sql, char *why, size_t whylen);
} az_engine_ops;

/* Brings db to AZ_SCHEMA_VERSION, or (apply 0) says what it would do.
 * A fresh database gets ddl.sql; version v < AZ_SCHEMA_VERSION gets every
 * step from v on, each in its own transaction; AZ_SCHEMA_VERSION: nothing
 * (idempotent). A newer version, or one with no chain of steps to the
 * current, is refused with a message saying what to do. Returns the
 * version the database is at afterwards (with apply 0: the version it
 * is at now), or -1 with why. plan, when not NULL, gets one line per step
 * done or to do ("v8 -> v9 (migrations/incremental/v0008_to_v0009)"). */
int az_migrate(const az_engine_ops *ops, void *db, int apply, char *why,
               size_t whylen, char *plan, size_t planlen);

#endif

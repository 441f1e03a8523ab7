/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization schema's migrations: the SQL of migrations/ (embedded
 * at build time, so a store never depends on where the files were
 * installed), the registry of steps, and the one driver both engines and
 * proxyhost-migrate use. The driver is engine-neutral; each engine gives
 * it two operations on a synchronous connection (store_sqlite's helper
 * thread, store_pg's start-up thread, the command line tool):
 * migrate_sqlite.h and migrate_pg.h. migrations/README.md says how the
 * chain works and what a new step must change. */
#ifndef PH_STORE_MIGRATIONS_H
#define PH_STORE_MIGRATIONS_H

#include <stddef.h>

/* The version this build reads and writes (TM-P1-22). */
#define AZ_SCHEMA_VERSION 11

typedef enum az_engine {
  AZ_ENGINE_SQLITE = 1,
  AZ_ENGINE_POSTGRES = 2
} az_engine;

/* "sqlite" or "postgres" (the file names of a step), "?" otherwise. */
const char *az_engine_name(az_engine engine);

/* migrations/ddl.sql: the full current schema, both engines. */
const char *az_sql_ddl(void);
/* migrations/baseline/v0008.sql (tests build v8 databases from it). */
const char *az_sql_baseline_v8(void);

/* One incremental step, migrations/incremental/<name>/<engine>.sql. */
typedef struct az_step {
  int from, to;
  const char *sqlite;
  const char *postgres;
  const char *name; /* "v0008_to_v0009" */
} az_step;
/* The registry, in order; *n steps. */
const az_step *az_steps(size_t *n);
/* The step's script for engine, NULL for an unknown engine. */
const char *az_step_sql(const az_step *step, az_engine engine);
/* Checks the registry: steps in order, each one version up from the one
 * before, every script present, the last ending at AZ_SCHEMA_VERSION.
 * 0, or -1 with why (a build whose registry fails this is broken; the
 * unit test runs it). */
int az_registry_check(char *why, size_t whylen);

/* What an engine does for the driver. why gets a one-line reason that
 * never carries a DSN, a password or row data. */
typedef struct az_engine_ops {
  az_engine engine;
  /* The schema version: > 0; 0 when the database has no schema_meta
   * table and no other table of ours (a fresh database); -1 on an error
   * (why), including a schema_meta without its row. */
  int (*version)(void *db, char *why, size_t whylen);
  /* Runs one script, which is one transaction (BEGIN ... COMMIT). On a
   * failure it rolls back and returns -1 with why; 0 on success. A
   * script that leaves a transaction open is a failure (rolled back). */
  int (*exec)(void *db, const char *sql, char *why, size_t whylen);
} az_engine_ops;

/* The engines' shared steps (migrations.c). Their version step once
 * schema_meta is known to be missing: 0 when none of our tables is
 * there either (ours, their count), else -1 with why. */
int az_version_none(long long ours, char *why, size_t whylen);
/* Their version step after reading schema_meta's row: rc of the read
 * (-1 failed, why set; 0 no row; 1 the value v, valid when it is an
 * integer): the version, or -1 with why. */
int az_version_row(int rc, long long v, int valid, char *why,
                   size_t whylen);
/* Their exec's check before a script (open: a transaction is open on
 * the connection) and after it (open: the script left its own open,
 * already rolled back): 0, or -1 with why. */
int az_exec_before(int open, char *why, size_t whylen);
int az_exec_after(int open, char *why, size_t whylen);

/* az_migrate's results below zero. Any negative value is a failure; the
 * two tell a broken database or connection from one this build must not
 * touch (proxyhost-migrate exits 1 and 3 for them). */
#define AZ_MIGRATE_ERROR (-1)   /* an engine error; nothing was changed by
                                   the step that failed (why) */
#define AZ_MIGRATE_REFUSED (-2) /* newer than AZ_SCHEMA_VERSION, or no
                                   chain of steps from its version (why) */

/* Brings db to AZ_SCHEMA_VERSION, or (apply 0) says what it would do.
 * A fresh database gets ddl.sql; version v < AZ_SCHEMA_VERSION gets every
 * step from v on, each in its own transaction, and the version is read
 * again after each (it must be the step's "to"); AZ_SCHEMA_VERSION:
 * nothing (idempotent). A newer version, or one with no chain of steps
 * to the current, is refused with a message saying what to do. Returns
 * the version the database is at afterwards (with apply 0: the version
 * it is at now, 0 for a fresh one), or AZ_MIGRATE_ERROR /
 * AZ_MIGRATE_REFUSED with why. plan, when not NULL, gets one line per
 * step done or to do, each ending in '\n', such as
 * "v8 -> v9 (migrations/incremental/v0008_to_v0009/sqlite.sql)"; it stays
 * empty when there is nothing to do.
 * Blocking (it waits for the database): call it on a helper or start-up
 * thread, never on the loop. It keeps no state, so any thread may call it
 * on its own connection; the caller owns db, why and plan. */
int az_migrate(const az_engine_ops *ops, void *db, int apply, char *why,
               size_t whylen, char *plan, size_t planlen);

#endif

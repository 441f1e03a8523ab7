/* SPDX-License-Identifier: BSD-2-Clause */
/* The SQLite engine of the migration driver (migrations.h), on a
 * synchronous sqlite3 connection: store_sqlite's helper thread and
 * proxyhost-migrate. Nothing here may run on the loop thread. */
#ifndef PH_STORE_MIGRATE_SQLITE_H
#define PH_STORE_MIGRATE_SQLITE_H

#include <stddef.h>

#include <sqlite3.h>

#include "migrations.h"

/* The ops; az_migrate's db is a sqlite3 *. exec turns on
 * PRAGMA foreign_keys (it cannot change inside a transaction, so it is
 * set before the script's BEGIN) and rolls back on any failure. */
extern const az_engine_ops az_sqlite_ops;

/* How long a connection opened here waits for another writer's lock
 * before a statement fails with SQLITE_BUSY. */
#define AZ_SQLITE_BUSY_MS 5000

/* Opens path read-write. With create, a missing file is created first
 * with mode 0600 (SQLite's journal and WAL files take the database
 * file's mode); without, a missing file is an error. The connection has
 * extended result codes, PRAGMA foreign_keys=ON and a busy timeout of
 * AZ_SQLITE_BUSY_MS. Returns 0 and *out, or -1 with why (*out NULL). */
int az_sqlite_open(const char *path, int create, sqlite3 **out, char *why,
                   size_t whylen);

#endif

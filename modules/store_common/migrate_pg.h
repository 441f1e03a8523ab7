/* SPDX-License-Identifier: BSD-2-Clause */
/* The PostgreSQL engine of the migration driver (migrations.h), on a
 * blocking libpq connection: store_pg's start-up thread and
 * proxyhost-migrate. Nothing here may run on the loop thread. Every why
 * written here is safe to log: it never carries the DSN or a password
 * (the SQLSTATE and the server's primary message are kept). */
#ifndef PH_STORE_MIGRATE_PG_H
#define PH_STORE_MIGRATE_PG_H

#include <stddef.h>

#include <libpq-fe.h>

#include "migrations.h"

/* The ops; az_migrate's db is a PGconn * with no transaction open. exec
 * runs the script with one blocking PQexec and rolls back on any
 * failure. */
extern const az_engine_ops az_pg_ops;

/* Seconds az_pg_connect waits for the server when the DSN does not say
 * (its connect_timeout wins). */
#define AZ_PG_CONNECT_TIMEOUT "10"
/* az_pg_connect's session: a statement of a step waits at most this long
 * for a lock another session holds (a running store, say), then fails. */
#define AZ_PG_LOCK_TIMEOUT_SQL "SET lock_timeout = '30s'"

/* A blocking connection for migrating: dsn is a libpq connection string
 * or URI. Server notices (CREATE ... IF NOT EXISTS) are not printed.
 * Returns the connection, or NULL with why: a DSN that does not parse is
 * reported without its text, and a connection error with every
 * occurrence of the DSN's password replaced by "***". */
PGconn *az_pg_connect(const char *dsn, const char *application_name,
                      char *why, size_t whylen);

/* The error of res as "SQLSTATE: primary message" (why). */
void az_pg_result_error(const PGresult *res, char *why, size_t whylen);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* store_sqlite's connections: a small pool that helper-thread jobs borrow
 * from and give back.
 *
 * Why a pool and not one connection per job or one writer thread: opening
 * a connection parses the schema and costs more than most of our
 * statements, so a job must not open its own; and a module may not start
 * a thread of its own for a writer queue when the host's helper threads
 * already run the jobs. SQLite serialises writers itself (BEGIN
 * IMMEDIATE, the busy timeout) and in WAL mode readers never wait for a
 * writer, so a few shared connections give every helper thread one to
 * use. A job holds a connection only for its work, so there are never
 * more in use than jobs running; at `connections` a borrower waits for
 * one to come back (the holders are running, so the wait is bounded by
 * their statements and the busy timeout). Every function here runs on a
 * helper thread, except sq_pool_new and sq_pool_free (no SQLite call). */
#ifndef PH_STORE_SQLITE_POOL_H
#define PH_STORE_SQLITE_POOL_H

#include <stddef.h>

#include <sqlite3.h>

typedef struct sq_pool sq_pool;

/* path is copied. max: 1..16 connections. No I/O. */
sq_pool *sq_pool_new(const char *path, int max, int busy_ms);
/* Frees the pool. Connections still idle (when stop did not run) are
 * closed here, on the loop: only after a failed start or an abort. */
void sq_pool_free(sq_pool *p);

/* Helper thread: a connection (opened on first need, with the busy
 * timeout and foreign keys on), or NULL with why. */
sqlite3 *sq_pool_get(sq_pool *p, char *why, size_t whylen);
/* Helper thread: gives it back; broken (1) closes it instead, for a
 * connection that met an I/O or corruption error. */
void sq_pool_put(sq_pool *p, sqlite3 *db, int broken);

/* Helper thread, the stop job: closes the idle connections, and from now
 * on every connection given back (the closing of SQLite's last
 * connection checkpoints the WAL: I/O the loop must not do). */
void sq_pool_close(sq_pool *p);

/* Helper thread, the start-up job: creates the file when create is set
 * (mode 0600), turns WAL on and brings the schema to the current version
 * (migrate 1) or checks it is current (migrate 0). 0, or -1 with why
 * naming what to do. */
int sq_pool_prepare(sq_pool *p, int create, int migrate, char *why,
                    size_t whylen);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* store_pg's connection layer: a bounded pool of libpq connections driven
 * asynchronously on the host's loop (PQconnectStart/PQconnectPoll, non-
 * blocking sends, PQconsumeInput/PQisBusy/PQgetResult), every connection
 * in pipeline mode with the caller's statements prepared after each
 * connect, a bounded FIFO of tasks waiting for a connection, a deadline per
 * task, and reconnection with bounded exponential backoff and jitter.
 *
 * A task owns one connection from begin to done and talks to it in
 * rounds: it sends statements (pg_exec, pg_exec_sql), the pool ends the
 * round with a sync, hands back one result per statement, then asks the
 * task for another round on the same connection (a transaction's COMMIT
 * or ROLLBACK after its changes) or ends it. So a read of several
 * statements costs one round trip, a write two.
 *
 * A deadline that passes closes the connection (PQcancel blocks; a closed
 * connection makes the server abort what it was running and roll back an
 * open transaction) and the pool reconnects at once.
 *
 * Loop thread only. Never blocks. Callbacks never run inside
 * pg_pool_submit or pg_pool_cancel, except begin (which only sends). */
#ifndef PH_STORE_PG_POOL_H
#define PH_STORE_PG_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include <proxyhost/module.h>

/* Bounds of the pool's keys (store_pg.ini.sample says the same). */
#define PG_POOL_SIZE_MAX 64
#define PG_POOL_PENDING_MAX 65536
#define PG_POOL_STMTS_MAX 64
#define PG_ROUND_MAX 32 /* statements in one round */

/* done statuses besides PH_OK. */
enum pg_pool_status {
  PG_ETIMEOUT = -100, /* the task's deadline passed (waiting or running) */
  PG_ELOST = -101     /* the connection failed while the task ran, or no
                         connection could be had (every one down) */
};

typedef struct pg_pool pg_pool;
typedef struct pg_conn pg_send; /* a task's connection, during callbacks */

/* A statement prepared on every connection: its index in the table is
 * what pg_exec takes. */
typedef struct pg_stmt {
  const char *name; /* unique, [a-z0-9_] */
  const char *sql;  /* $1..$nparams, parameters as text */
  int nparams;
} pg_stmt;

typedef struct pg_pool_conf {
  const char *dsn;          /* libpq connection string; copied, wiped at
                               free, never logged */
  int size;                 /* connections, 1..PG_POOL_SIZE_MAX */
  int max_pending;          /* tasks waiting, 1..PG_POOL_PENDING_MAX */
  int64_t query_timeout_ms; /* a task's deadline from submit, and the
                               bound on one connection attempt */
  int64_t reconnect_min_ms, reconnect_max_ms; /* backoff bounds */
  const pg_stmt *stmts;     /* kept by the caller while the pool lives */
  size_t n_stmts;           /* 0..PG_POOL_STMTS_MAX */
} pg_pool_conf;

/* What a task does. arg is the caller's, passed back untouched. */
typedef struct pg_task_ops {
  /* A connection is the task's: send the first round with pg_exec*.
   * Sending nothing ends the task (done(PH_OK) follows from the loop). */
  void (*begin)(void *arg, pg_send *s);
  /* Statement i's result (0-based, in sending order), also an error
   * (PGRES_FATAL_ERROR) or PGRES_PIPELINE_ABORTED for one skipped after an
   * earlier error of the round. Return 1 to keep res (the task PQclears
   * it later), 0 to let the pool clear it after the call. */
  int (*result)(void *arg, int i, PGresult *res);
  /* The round ended: send the next one with pg_exec* to go on, or send
   * nothing to end the task (done(PH_OK) follows at once). */
  void (*round_done)(void *arg, pg_send *s);
  /* Exactly once per task that was not cancelled while waiting: PH_OK,
   * PG_ETIMEOUT or PG_ELOST. After a failure the task may still have
   * reached the server: what it had sent is the task's to judge (a COMMIT
   * in flight). */
  void (*done)(void *arg, int status);
} pg_task_ops;

/* The pool's series (proxyhost_store_pg_*), registered once in init and
 * shared by the pools made later (and by instances: the gauges add up). */
typedef struct pg_pool_metrics {
  ph_series *conns[3]; /* state = up, connecting, down */
  ph_series *queue;    /* waiting tasks */
  ph_series *errors[6]; /* class = connect, prepare, lost, timeout,
                           queue_full, query */
} pg_pool_metrics;
/* Init only. PH_OK or PH_EINVAL (the registry refused them). */
int pg_pool_metrics_init(ph_ctx *ctx, const ph_api *api, pg_pool_metrics *m);

/* A pool that does not connect until pg_pool_start; m is kept (the
 * caller's, outliving the pool). NULL on a bad conf or no memory, with a
 * reason in why (never the DSN). */
pg_pool *pg_pool_new(ph_ctx *ctx, const ph_api *api, const pg_pool_conf *conf,
                     const pg_pool_metrics *m, char *why, size_t whylen);
/* Starts connecting every connection. */
void pg_pool_start(pg_pool *p);
/* Closes every connection and drops every task without calling it. NULL
 * is ignored. */
void pg_pool_free(pg_pool *p);

/* Queues a task. Returns its id > 0 (begin may run before this returns);
 * PH_EFULL when max_pending tasks wait already; PG_ELOST when every
 * connection is down (the last attempt of each failed: fail fast rather
 * than wait for the deadline); PH_ENOMEM. Only an id > 0 gets done. */
int64_t pg_pool_submit(pg_pool *p, const pg_task_ops *ops, void *arg);
/* PH_OK: the task was waiting and is gone (done is not called); PH_EBUSY:
 * it runs, and done will be called; PH_ENOENT: no such task. */
int pg_pool_cancel(pg_pool *p, int64_t id);

/* Inside begin or round_done: one statement of the round. values are
 * text (NULL: SQL NULL), copied before the call returns. PH_OK, PH_ELIMIT
 * (PG_ROUND_MAX), PH_EINVAL (bad index or count) or PG_ELOST (the send
 * failed: the task ends with done(PG_ELOST)). */
int pg_exec(pg_send *s, int stmt, int nparams, const char *const *values);
/* The same for a statement without parameters that is not prepared
 * (BEGIN, COMMIT, ROLLBACK). */
int pg_exec_sql(pg_send *s, const char *sql);

/* Connections up now (connected and prepared). */
int pg_pool_up(const pg_pool *p);
/* Counts a failed statement (an error result a task got) under the
 * "query" error class. */
void pg_pool_count_query_error(pg_pool *p);
/* Counts a call its user refused at its own bound under "queue_full". */
void pg_pool_count_queue_full(pg_pool *p);

#endif

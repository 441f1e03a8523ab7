/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool's insides, shared by pg_pool.c (queue, dispatch, deadlines,
 * metrics) and pg_conn.c (one connection's state machine). */
#ifndef PH_STORE_PG_POOL_INT_H
#define PH_STORE_PG_POOL_INT_H

#include "pg_pool.h"

typedef enum conn_state {
  C_DOWN = 0,   /* closed; the timer brings the next attempt */
  C_CONNECTING, /* PQconnectPoll in progress */
  C_PREPARING,  /* connected; its statements being prepared */
  C_IDLE,       /* ready for a task */
  C_BUSY,       /* running a task */
  C_NSTATES
} conn_state;

/* Error classes of proxyhost_store_pg_errors_total. */
typedef enum pg_errc {
  ERRC_CONNECT = 0, /* an attempt failed (refused, auth, timeout) */
  ERRC_PREPARE,     /* a statement could not be prepared */
  ERRC_LOST,        /* an up connection failed */
  ERRC_TIMEOUT,     /* a task's deadline passed */
  ERRC_QUEUE_FULL,  /* a task refused: max_pending */
  ERRC_QUERY,       /* a statement's error result */
  ERRC_N
} pg_errc;

typedef struct pg_task pg_task;
struct pg_task {
  int64_t id;
  const pg_task_ops *ops;
  void *arg;
  int64_t deadline_ms;
  pg_task *next; /* in the wait queue */
};

typedef struct pg_conn pg_conn;
struct pg_conn {
  pg_pool *pool;
  int index;
  conn_state state;
  PGconn *pq;
  ph_io *io;
  ph_timer *timer; /* attempt or task deadline, backoff, deferred failure */
  int failures;    /* consecutive failed attempts, for the backoff */
  int broken;      /* a send failed: the timer handles the loss */
  int prep_failed; /* a prepare of this attempt failed */
  pg_task *task;   /* C_BUSY */
  int n_sent;      /* statements of the round in flight */
  int n_done;      /* of those, results complete */
  int have_result; /* the current statement's result was handed over */
  int sending;     /* inside begin/round_done: a round being built */
  int in_round;    /* a sync is in flight */
};

struct pg_pool {
  ph_ctx *ctx;
  const ph_api *api;
  char *dsn;
  pg_pool_conf conf;
  pg_conn *conns;
  int started;
  pg_task *head, *tail; /* waiting, oldest first */
  int n_waiting;
  int64_t next_id;
  ph_timer *qtimer; /* the head's deadline */
  uint64_t rng;
  int n_state[C_NSTATES];
  const pg_pool_metrics *m;
};

/* pg_conn.c */
int conn_init(pg_pool *p, pg_conn *c, int index);
void conn_close(pg_conn *c);   /* PQfinish, watchers gone, state DOWN */
void conn_connect(pg_conn *c); /* starts an attempt now */
/* Gives c's connection to t: begin, then the first round (or done). */
void conn_run(pg_conn *c, pg_task *t);

/* pg_pool.c, for pg_conn.c */
void pool_set_state(pg_pool *p, pg_conn *c, conn_state s);
void pool_count(pg_pool *p, pg_errc e);
int64_t pool_backoff_ms(pg_pool *p, int failures);
/* c became idle: give it the next waiting task, if any. */
void pool_conn_idle(pg_pool *p, pg_conn *c);
/* c went down: when every connection is down, fail the waiting tasks. */
void pool_conn_down(pg_pool *p);
/* Ends t (no longer on any connection) with status. */
void pool_task_done(pg_pool *p, pg_task *t, int status);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* One pooled connection's state machine (pg_pool_int.h):
 *
 *   DOWN --timer--> CONNECTING --PQconnectPoll OK--> PREPARING --sync--> IDLE
 *   IDLE --task--> BUSY --last round--> IDLE
 *   any failure --> DOWN (backoff); a task deadline --> DOWN, at once again
 *
 * libpq may open a new socket during PQconnectPoll (it tries the next
 * address, or retries without SSL) and the new one often gets the same
 * fd number: the watcher is made anew after every poll, never kept by
 * comparing fds (libev would still watch the old, closed file).
 *
 * A failed send is never handled inside the call that made it (begin may
 * run inside pg_pool_submit): it marks the connection broken and the
 * connection's timer handles the loss from the loop. */
#include <stdio.h>
#include <string.h>

#include "pg_pool_int.h"

static void on_io(ph_io *io, int fd, int revents, void *arg);

/* libpq prints notices to stderr by default; the server's texts are not
 * for our log either (they may quote data). */
static void quiet_notice(void *arg, const PGresult *res) {
  (void)arg;
  (void)res;
}

/* A reason from a fixed set: PQerrorMessage can quote the connection
 * string (a parse error echoes the text around it, password included), so
 * it is never logged as such. */
static const char *classify(const PGconn *pq) {
  const char *m = pq ? PQerrorMessage(pq) : "";
  if (strstr(m, "refused"))
    return "connection refused";
  if (strstr(m, "authentication") || strstr(m, "password"))
    return "authentication failed";
  if (strstr(m, "does not exist"))
    return "database or role does not exist";
  if (strstr(m, "starting up") || strstr(m, "shutting down") ||
      strstr(m, "recovery"))
    return "server not accepting connections";
  if (strstr(m, "timeout") || strstr(m, "timed out"))
    return "timeout";
  if (strstr(m, "No such file") || strstr(m, "resolve") ||
      strstr(m, "translate host"))
    return "server address not found";
  return "connection failed";
}

void conn_close(pg_conn *c) {
  pg_pool *p = c->pool;
  if (c->io) {
    p->api->io_free(c->io);
    c->io = NULL;
  }
  if (c->pq) {
    PQfinish(c->pq);
    c->pq = NULL;
  }
  p->api->timer_set(c->timer, 0, 0);
  c->broken = c->prep_failed = c->in_round = c->sending = 0;
  c->n_sent = c->n_done = c->have_result = 0;
  pool_set_state(p, c, C_DOWN);
}

/* Schedules the next attempt after the backoff for c->failures. */
static void schedule(pg_conn *c) {
  int64_t ms = pool_backoff_ms(c->pool, c->failures);
  c->pool->api->timer_set(c->timer, (uint64_t)(ms > 0 ? ms : 1), 0);
}

static void attempt_failed(pg_conn *c, const char *reason, pg_errc e) {
  pg_pool *p = c->pool;
  pool_count(p, e);
  PH_LOG_RL(p->api, p->ctx, PH_LOG_WARN,
            "store_pg: connection attempt failed; retrying with backoff",
            PH_INT("connection", c->index), PH_STR("reason", reason),
            PH_INT("attempt", c->failures + 1));
  conn_close(c);
  c->failures++;
  schedule(c);
  pool_conn_down(p);
}

/* An up connection failed: its task (if any) ends with PG_ELOST. */
static void lost(pg_conn *c, const char *reason) {
  pg_pool *p = c->pool;
  pg_task *t = c->task;
  c->task = NULL;
  pool_count(p, ERRC_LOST);
  PH_LOG_RL(p->api, p->ctx, PH_LOG_WARN, "store_pg: connection lost",
            PH_INT("connection", c->index), PH_STR("reason", reason));
  conn_close(c);
  c->failures = 1; /* the first retry after reconnect_min, not at once */
  schedule(c);
  if (t)
    pool_task_done(p, t, PG_ELOST);
  pool_conn_down(p);
}

static void mark_broken(pg_conn *c) {
  c->broken = 1;
  c->pool->api->timer_set(c->timer, 1, 0);
}

/* Flushes what libpq holds; the write watcher only while some is left. */
static int flush(pg_conn *c) {
  int r = PQflush(c->pq);
  if (r < 0)
    return -1;
  c->pool->api->io_set(c->io, PH_READ | (r == 1 ? PH_WRITE : 0));
  return 0;
}

/* A new watcher for the socket libpq uses now, for events. */
static int rewatch(pg_conn *c, int events) {
  pg_pool *p = c->pool;
  if (c->io)
    p->api->io_free(c->io);
  c->io = NULL;
  int fd = PQsocket(c->pq);
  if (fd < 0)
    return -1;
  c->io = p->api->io_new(p->ctx, fd, events, on_io, c);
  return c->io ? 0 : -1;
}

/* Ends the round being built with a sync and sends it. */
static void send_round(pg_conn *c) {
  c->n_done = 0;
  c->have_result = 0;
  if (c->broken)
    return;
  if (PQpipelineSync(c->pq) != 1 || flush(c) < 0) {
    mark_broken(c);
    return;
  }
  c->in_round = 1;
}

static void start_prepare(pg_conn *c) {
  pg_pool *p = c->pool;
  if (PQsetnonblocking(c->pq, 1) != 0 || PQenterPipelineMode(c->pq) != 1 ||
      rewatch(c, PH_READ) < 0) {
    attempt_failed(c, "connection setup failed", ERRC_CONNECT);
    return;
  }
  for (size_t i = 0; i < p->conf.n_stmts; i++) {
    const pg_stmt *st = &p->conf.stmts[i];
    if (PQsendPrepare(c->pq, st->name, st->sql, st->nparams, NULL) != 1) {
      attempt_failed(c, "prepare could not be sent", ERRC_CONNECT);
      return;
    }
  }
  pool_set_state(p, c, C_PREPARING);
  c->n_sent = (int)p->conf.n_stmts;
  send_round(c);
}

static void connect_step(pg_conn *c) {
  PostgresPollingStatusType r = PQconnectPoll(c->pq);
  if (r == PGRES_POLLING_FAILED) {
    attempt_failed(c, classify(c->pq), ERRC_CONNECT);
    return;
  }
  if (r == PGRES_POLLING_OK) {
    start_prepare(c);
    return;
  }
  if (rewatch(c, r == PGRES_POLLING_READING ? PH_READ : PH_WRITE) < 0)
    attempt_failed(c, "no watcher for the socket", ERRC_CONNECT);
}

void conn_connect(pg_conn *c) {
  pg_pool *p = c->pool;
  /* The DSN is one parameter (expand_dbname): a URI or key=value text. */
  const char *const kw[] = {"dbname", "fallback_application_name", NULL};
  const char *const vals[] = {p->dsn, "proxyhost", NULL};
  c->pq = PQconnectStartParams(kw, vals, 1);
  if (!c->pq || PQstatus(c->pq) == CONNECTION_BAD) {
    attempt_failed(c, classify(c->pq), ERRC_CONNECT);
    return;
  }
  PQsetNoticeReceiver(c->pq, quiet_notice, NULL);
  pool_set_state(p, c, C_CONNECTING);
  p->api->timer_set(c->timer, (uint64_t)p->conf.query_timeout_ms, 0);
  if (rewatch(c, PH_WRITE) < 0)
    attempt_failed(c, "no watcher for the socket", ERRC_CONNECT);
}

static void finish_task(pg_conn *c, int status) {
  pg_pool *p = c->pool;
  pg_task *t = c->task;
  c->task = NULL;
  p->api->timer_set(c->timer, 0, 0);
  pool_set_state(p, c, C_IDLE);
  pool_task_done(p, t, status);
  if (c->state == C_IDLE)
    pool_conn_idle(p, c);
}

/* The sync of a round arrived. */
static void round_end(pg_conn *c) {
  pg_pool *p = c->pool;
  if (c->state == C_PREPARING) {
    if (c->prep_failed) {
      /* Our own SQL is wrong or the schema differs: retrying at once
       * would loop, so this backs off like a failed attempt. */
      PH_LOG_RL(p->api, p->ctx, PH_LOG_ERROR,
                "store_pg: a statement could not be prepared (is the schema "
                "current? see proxyhost-migrate)",
                PH_INT("connection", c->index));
      attempt_failed(c, "prepare failed", ERRC_PREPARE);
      return;
    }
    c->failures = 0;
    pool_set_state(p, c, C_IDLE);
    pool_conn_idle(p, c);
    return;
  }
  if (c->state != C_BUSY || !c->task)
    return;
  if (c->n_sent == 0) { /* begin sent nothing */
    finish_task(c, PH_OK);
    return;
  }
  c->n_sent = 0;
  c->sending = 1;
  c->task->ops->round_done(c->task->arg, c);
  c->sending = 0;
  if (c->state != C_BUSY)
    return;
  if (c->n_sent == 0 && !c->broken) {
    finish_task(c, PH_OK);
    return;
  }
  send_round(c);
}

/* Reads what has arrived, hands results over, ends rounds. */
static void read_results(pg_conn *c) {
  while (c->pq && c->in_round && !PQisBusy(c->pq)) {
    PGresult *res = PQgetResult(c->pq);
    if (!res) {
      if (c->n_done >= c->n_sent)
        break; /* nothing more now: the sync has not arrived */
      c->n_done++;
      c->have_result = 0;
      continue;
    }
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(res);
      c->in_round = 0;
      round_end(c);
      continue; /* a new round may have been sent */
    }
    if (c->state == C_PREPARING) {
      if (st != PGRES_COMMAND_OK)
        c->prep_failed = 1;
    } else if (c->state == C_BUSY && c->task && !c->have_result &&
               c->n_done < c->n_sent) {
      c->have_result = 1;
      if (c->task->ops->result(c->task->arg, c->n_done, res))
        continue; /* the task keeps it */
    }
    PQclear(res);
  }
  if (c->pq && PQstatus(c->pq) == CONNECTION_BAD)
    lost(c, "connection closed");
}

static void on_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  pg_conn *c = arg;
  if (c->state == C_CONNECTING) {
    connect_step(c);
    return;
  }
  if (!c->pq || c->broken)
    return;
  if ((revents & PH_WRITE) && flush(c) < 0) {
    lost(c, "write failed");
    return;
  }
  if (revents & PH_READ) {
    if (PQconsumeInput(c->pq) != 1) {
      lost(c, "server closed the connection");
      return;
    }
    read_results(c);
  }
}

static void on_timer(ph_timer *t, void *arg) {
  (void)t;
  pg_conn *c = arg;
  pg_pool *p = c->pool;
  if (c->broken) {
    lost(c, "send failed");
    return;
  }
  switch (c->state) {
  case C_DOWN:
    conn_connect(c);
    break;
  case C_CONNECTING:
  case C_PREPARING:
    attempt_failed(c, "timeout", ERRC_CONNECT);
    break;
  case C_BUSY: {
    /* The deadline: closing is the cancel (the server notices the closed
     * socket, stops and rolls back), then a fresh connection at once. */
    pg_task *task = c->task;
    c->task = NULL;
    pool_count(p, ERRC_TIMEOUT);
    conn_close(c);
    c->failures = 0;
    conn_connect(c);
    if (task)
      pool_task_done(p, task, PG_ETIMEOUT);
    break;
  }
  default:
    break;
  }
}

int conn_init(pg_pool *p, pg_conn *c, int index) {
  c->pool = p;
  c->index = index;
  c->state = C_DOWN;
  c->timer = p->api->timer_new(p->ctx, on_timer, c);
  return c->timer ? 0 : -1;
}

void conn_run(pg_conn *c, pg_task *t) {
  pg_pool *p = c->pool;
  c->task = t;
  pool_set_state(p, c, C_BUSY);
  int64_t left = t->deadline_ms - p->api->now_ms(p->ctx);
  p->api->timer_set(c->timer, (uint64_t)(left > 1 ? left : 1), 0);
  c->n_sent = 0;
  c->sending = 1;
  t->ops->begin(t->arg, c);
  c->sending = 0;
  send_round(c);
}

static int exec_ok(pg_send *c) {
  if (!c || !c->sending || c->state != C_BUSY)
    return PH_EINVAL;
  if (c->broken)
    return PG_ELOST;
  if (c->n_sent >= PG_ROUND_MAX)
    return PH_ELIMIT;
  return PH_OK;
}

int pg_exec(pg_send *c, int stmt, int nparams, const char *const *values) {
  int rc = exec_ok(c);
  if (rc != PH_OK)
    return rc;
  const pg_pool_conf *cf = &c->pool->conf;
  if (stmt < 0 || (size_t)stmt >= cf->n_stmts ||
      nparams != cf->stmts[stmt].nparams)
    return PH_EINVAL;
  if (PQsendQueryPrepared(c->pq, cf->stmts[stmt].name, nparams, values, NULL,
                          NULL, 0) != 1) {
    mark_broken(c);
    return PG_ELOST;
  }
  c->n_sent++;
  return PH_OK;
}

int pg_exec_sql(pg_send *c, const char *sql) {
  int rc = exec_ok(c);
  if (rc != PH_OK)
    return rc;
  if (PQsendQueryParams(c->pq, sql, 0, NULL, NULL, NULL, NULL, 0) != 1) {
    mark_broken(c);
    return PG_ELOST;
  }
  c->n_sent++;
  return PH_OK;
}

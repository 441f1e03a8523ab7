/* SPDX-License-Identifier: BSD-2-Clause */
/* store_pg's connection layer (modules/store_pg/pg_pool.h) against a real
 * PostgreSQL, through the mock host: connecting, rounds and pipelines,
 * transactions over two rounds, the wait queue and its bound, deadlines
 * (waiting and running), cancellation, and reconnection with the
 * statements prepared again after the server restarted.
 *
 * Run by t/integration/store_pg.sh, which starts the cluster and passes
 * PH_TEST_PG_DSN, and PH_TEST_PG_STOP / PH_TEST_PG_START (shell commands
 * that stop and start it). Without them this fails: a missing PostgreSQL
 * is never a skip. Every wait is bounded (wait_until, loop_test.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#define HOST_TEST_SETUP setup
#include "host_test.h"
#include "loop_test.h"
#include "store_pg/pg_pool.h"
#include "tap.h"

static pg_pool_metrics metrics;

static int setup(void) { return pg_pool_metrics_init(hctx, api, &metrics); }

HOST_TEST_MODULE("pgt");

enum { S_ADD1, S_SLEEP, S_DIV, S_INS, S_COUNT };
static const pg_stmt stmts[] = {
    {"add1", "SELECT $1::int + 1", 1},
    {"sleep", "SELECT pg_sleep($1::float8)", 1},
    {"div", "SELECT 10 / $1::int", 1},
    {"ins", "INSERT INTO pool_t (v) VALUES ($1::int)", 1},
    {"count", "SELECT count(*) FROM pool_t", 0},
};
#define N_STMTS (sizeof(stmts) / sizeof(stmts[0]))

/* One task: a script of rounds, what came back, how it ended. */
typedef struct job {
  int rounds[3][4]; /* per round: statement indexes, -1 ends; -2: SQL */
  const char *args[3][4];
  const char *sql[3][4];
  int round;
  int n_results;
  ExecStatusType st[12];
  char val[12][32];
  int done, status;
} job;

static void send_round(job *j, pg_send *s) {
  for (int i = 0; i < 4 && j->rounds[j->round][i] != -1; i++) {
    int k = j->rounds[j->round][i];
    if (k == -2) {
      pg_exec_sql(s, j->sql[j->round][i]);
    } else {
      const char *v[] = {j->args[j->round][i]};
      pg_exec(s, k, stmts[k].nparams, v);
    }
  }
}

static void j_begin(void *arg, pg_send *s) { send_round(arg, s); }

static int j_result(void *arg, int i, PGresult *res) {
  job *j = arg;
  (void)i;
  if (j->n_results >= 12)
    return 0;
  j->st[j->n_results] = PQresultStatus(res);
  if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0)
    snprintf(j->val[j->n_results], 32, "%s", PQgetvalue(res, 0, 0));
  j->n_results++;
  return 0;
}

static void j_round_done(void *arg, pg_send *s) {
  job *j = arg;
  if (j->round < 2 && j->rounds[j->round + 1][0] != -1) {
    j->round++;
    send_round(j, s);
  }
}

static void j_done(void *arg, int status) {
  job *j = arg;
  j->done++;
  j->status = status;
}

static const pg_task_ops job_ops = {j_begin, j_result, j_round_done, j_done};

static void job_one(job *j, int stmt, const char *arg) {
  memset(j, 0, sizeof(*j));
  memset(j->rounds, -1, sizeof(j->rounds));
  j->rounds[0][0] = stmt;
  j->args[0][0] = arg;
}

static ph_mock *m;

static pg_pool *pool;
static int all_up(void *arg) {
  return pg_pool_up(pool) == *(int *)arg;
}
static int none_up(void *arg) {
  (void)arg;
  return pg_pool_up(pool) == 0;
}
static int job_done(void *arg) { return ((job *)arg)->done > 0; }

/* A transaction over two rounds: BEGIN and an INSERT of value, then end
 * (COMMIT, ROLLBACK) in the second; run to its end. */
static void transaction(job *j, const char *value, const char *end) {
  job_one(j, -2, NULL);
  j->sql[0][0] = "BEGIN";
  j->rounds[0][1] = S_INS;
  j->args[0][1] = value;
  j->rounds[1][0] = -2;
  j->sql[1][0] = end;
  pg_pool_submit(pool, &job_ops, j);
  wait_until(loop, job_done(j), 5000);
}
static int jobs_done(void *arg) {
  job *j = arg;
  for (int i = 0; i < 10; i++)
    if (!j[i].done)
      return 0;
  return 1;
}

static pg_pool *make_pool(const char *dsn, int size, int pending,
                          int64_t timeout) {
  pg_pool_conf c = {.dsn = dsn,
                    .size = size,
                    .max_pending = pending,
                    .query_timeout_ms = timeout,
                    .reconnect_min_ms = 50,
                    .reconnect_max_ms = 400,
                    .stmts = stmts,
                    .n_stmts = N_STMTS};
  char why[256];
  pg_pool *p = pg_pool_new(hctx, api, &c, &metrics, why, sizeof(why));
  if (!p)
    printf("# pool: %s\n", why);
  return p;
}

static void shell(const char *what, const char *cmd) {
  int rc = system(cmd);
  ok(rc == 0, what);
}

static void prepare_table(const char *dsn) {
  PGconn *c = PQconnectdb(dsn);
  PGresult *r = PQexec(c, "SET client_min_messages = warning; "
                          "DROP TABLE IF EXISTS pool_t; "
                          "CREATE TABLE pool_t (v int NOT NULL)");
  ok(PQresultStatus(r) == PGRES_COMMAND_OK, "setup: table pool_t");
  PQclear(r);
  PQfinish(c);
}

int main(void) {
  plan_lazy();
  const char *dsn = getenv("PH_TEST_PG_DSN");
  const char *stop = getenv("PH_TEST_PG_STOP");
  const char *start = getenv("PH_TEST_PG_START");
  if (!dsn || !stop || !start) {
    ok(0, "PH_TEST_PG_DSN, PH_TEST_PG_STOP and PH_TEST_PG_START are set "
          "(run through t/integration/store_pg.sh)");
    return done_testing();
  }
  prepare_table(dsn);
  m = host_test_start(&host_mod, "[log]\nlevel = error\n");

  /* Bad configuration is refused with a reason, never the DSN. */
  {
    char why[256];
    pg_pool_conf c = {.dsn = dsn, .size = 0, .max_pending = 1,
                      .query_timeout_ms = 1, .reconnect_min_ms = 1,
                      .reconnect_max_ms = 1};
    ok(pg_pool_new(hctx, api, &c, &metrics, why, sizeof(why)) == NULL &&
           strstr(why, "pool_size") && !strstr(why, dsn),
       "conf: pool_size 0 refused with a reason");
  }

  pool = make_pool(dsn, 2, 3, 1000);
  ok(pool != NULL, "pool: made");
  job j;
  job_one(&j, S_ADD1, "41");
  is_int(pg_pool_submit(pool, &job_ops, &j), PG_ELOST,
         "submit before start: PG_ELOST (nothing can answer)");
  pg_pool_start(pool);
  int two = 2;
  wait_until(loop, all_up(&two), 5000);
  is_int(pg_pool_up(pool), 2, "start: both connections up and prepared");
  like(ph_mock_metrics_text(m), "proxyhost_store_pg_connections{state=\"up\"} 2",
       "metrics: two connections up");

  /* One statement, one round. */
  job_one(&j, S_ADD1, "41");
  ok(pg_pool_submit(pool, &job_ops, &j) > 0, "submit: accepted");
  wait_until(loop, job_done(&j), 5000);
  is_int(j.status, PH_OK, "task: done PH_OK");
  is_str(j.val[0], "42", "task: the prepared statement's result");
  is_int(j.done, 1, "task: done exactly once");

  /* Pipeline: three statements in one round, the middle one failing:
   * FATAL then ABORTED for the one after it, one done. */
  job_one(&j, S_ADD1, "1");
  j.rounds[0][1] = S_DIV;
  j.args[0][1] = "0";
  j.rounds[0][2] = S_ADD1;
  j.args[0][2] = "2";
  ok(pg_pool_submit(pool, &job_ops, &j) > 0, "pipeline: submitted");
  wait_until(loop, job_done(&j), 5000);
  is_int(j.n_results, 3, "pipeline: one result per statement");
  ok(j.st[0] == PGRES_TUPLES_OK && j.st[1] == PGRES_FATAL_ERROR &&
         j.st[2] == PGRES_PIPELINE_ABORTED,
     "pipeline: ok, error, aborted, in order");
  is_int(j.status, PH_OK, "pipeline: the task itself ends PH_OK");
  job_one(&j, S_ADD1, "5");
  pg_pool_submit(pool, &job_ops, &j);
  wait_until(loop, job_done(&j), 5000);
  is_str(j.val[0], "6", "pipeline: the connection is usable after an error");

  /* A transaction over two rounds: BEGIN + INSERT, then COMMIT; and one
   * rolled back. */
  transaction(&j, "7", "COMMIT");
  ok(j.status == PH_OK && j.n_results == 3 && j.st[2] == PGRES_COMMAND_OK,
     "transaction: BEGIN, INSERT, then COMMIT in a second round");
  transaction(&j, "8", "ROLLBACK");
  job_one(&j, S_COUNT, NULL);
  pg_pool_submit(pool, &job_ops, &j);
  wait_until(loop, job_done(&j), 5000);
  is_str(j.val[0], "1", "transaction: the rolled back row is not there");

  /* The queue: ten tasks on two connections all complete; a bound of
   * three waiting refuses the next. */
  {
    static job js[10];
    int accepted = 0, full = 0;
    for (int i = 0; i < 10; i++) {
      job_one(&js[i], S_SLEEP, "0.05");
      int64_t id = pg_pool_submit(pool, &job_ops, &js[i]);
      if (id > 0)
        accepted++;
      else if (id == PH_EFULL) {
        full++;
        js[i].done = 1; /* never called */
      }
    }
    is_int(accepted, 5, "queue: two running and three waiting accepted");
    is_int(full, 5, "queue: beyond max_pending PH_EFULL");
    like(ph_mock_metrics_text(m), "proxyhost_store_pg_queue_waiting 3",
         "metrics: three waiting");
    like(ph_mock_metrics_text(m),
         "proxyhost_store_pg_errors_total{class=\"queue_full\"} 5",
         "metrics: queue_full counted");
    wait_until(loop, jobs_done(js), 5000);
    int okc = 0;
    for (int i = 0; i < 10; i++)
      okc += js[i].status == PH_OK && js[i].done == 1;
    is_int(okc, 10, "queue: every accepted task done once with PH_OK");
  }

  /* Cancellation: a waiting task is dropped, a running one is busy. */
  {
    job a, b, c;
    job_one(&a, S_SLEEP, "0.2");
    job_one(&b, S_SLEEP, "0.2");
    job_one(&c, S_ADD1, "1");
    int64_t ia = pg_pool_submit(pool, &job_ops, &a);
    pg_pool_submit(pool, &job_ops, &b);
    int64_t ic = pg_pool_submit(pool, &job_ops, &c);
    is_int(pg_pool_cancel(pool, ic), PH_OK, "cancel: a waiting task");
    is_int(pg_pool_cancel(pool, ia), PH_EBUSY, "cancel: a running one");
    is_int(pg_pool_cancel(pool, ic), PH_ENOENT, "cancel: twice");
    wait_until(loop, job_done(&b), 5000);
    wait_until(loop, job_done(&a), 5000);
    ph_mock_run_for(m, 50);
    is_int(c.done, 0, "cancel: no done for the cancelled task");
    ok(a.done == 1 && a.status == PH_OK, "cancel: the running task ends");
  }
  pg_pool_free(pool);

  /* Deadlines, on a pool of one connection with 300 ms: the running task
   * and the one waiting behind it both time out; the connection is
   * closed (the server stops the statement) and made again at once. */
  pool = make_pool(dsn, 1, 4, 300);
  pg_pool_start(pool);
  int one = 1;
  wait_until(loop, all_up(&one), 5000);
  {
    job a, b;
    job_one(&a, S_SLEEP, "30");
    job_one(&b, S_ADD1, "1");
    pg_pool_submit(pool, &job_ops, &a);
    pg_pool_submit(pool, &job_ops, &b);
    wait_until(loop, job_done(&a), 5000);
    wait_until(loop, job_done(&b), 5000);
    is_int(a.status, PG_ETIMEOUT, "deadline: a running task times out");
    is_int(b.status, PG_ETIMEOUT, "deadline: a waiting task times out");
    wait_until(loop, all_up(&one), 5000);
    job_one(&a, S_ADD1, "9");
    pg_pool_submit(pool, &job_ops, &a);
    wait_until(loop, job_done(&a), 5000);
    is_str(a.val[0], "10", "deadline: a fresh connection serves next");
    like(ph_mock_metrics_text(m),
         "proxyhost_store_pg_errors_total{class=\"timeout\"} 2",
         "metrics: two timeouts");
  }
  pg_pool_free(pool);

  /* The server restarts: tasks fail fast while it is down, the pool
   * reconnects with backoff by itself and prepares its statements again. */
  pool = make_pool(dsn, 2, 4, 1000);
  pg_pool_start(pool);
  wait_until(loop, all_up(&two), 5000);
  shell("restart: server stopped", stop);
  wait_until(loop, none_up(NULL), 5000);
  is_int(pg_pool_up(pool), 0, "restart: the pool sees every connection go");
  job_one(&j, S_ADD1, "1");
  int64_t id = pg_pool_submit(pool, &job_ops, &j);
  if (id > 0)
    wait_until(loop, job_done(&j), 5000);
  ok(id == PG_ELOST || (j.done == 1 && j.status != PH_OK),
     "restart: a task while the server is down fails");
  shell("restart: server started", start);
  wait_until(loop, all_up(&two), 10000);
  is_int(pg_pool_up(pool), 2, "restart: both connections back by themselves");
  job_one(&j, S_ADD1, "99");
  pg_pool_submit(pool, &job_ops, &j);
  wait_until(loop, job_done(&j), 5000);
  is_str(j.val[0], "100", "restart: statements prepared again");
  like(ph_mock_metrics_text(m), "proxyhost_store_pg_errors_total{class=\"lost\"} 2",
       "metrics: two connections lost");
  pg_pool_free(pool);

  ph_mock_stop(m);
  ph_mock_free(m);
  return done_testing();
}

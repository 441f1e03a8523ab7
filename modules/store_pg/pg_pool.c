/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool (pg_pool.h): the wait queue, dispatch to idle connections,
 * deadlines of waiting tasks, the backoff and the metrics. One
 * connection's state machine is pg_conn.c.
 *
 * Waiting tasks are a FIFO and all have the same timeout, so the head has
 * the earliest deadline and one timer serves them all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/metric_table.h"
#include "pg_pool_int.h"

_Static_assert(ERRC_N == sizeof(((pg_pool_metrics *)0)->errors) /
                                sizeof(ph_series *),
               "one series per error class");

static const char *const conn_states[] = {"up", "connecting", "down", NULL};
static const char *const err_classes[] = {
    "connect", "prepare", "lost", "timeout", "queue_full", "query", NULL};

/* up, connecting or down, as the gauge shows a state. */
static int gauge_of(conn_state s) {
  switch (s) {
  case C_IDLE:
  case C_BUSY:
    return 0;
  case C_CONNECTING:
  case C_PREPARING:
    return 1;
  default:
    return 2;
  }
}

void pool_set_state(pg_pool *p, pg_conn *c, conn_state s) {
  if (c->state == s)
    return;
  p->n_state[c->state]--;
  p->n_state[s]++;
  int from = gauge_of(c->state), to = gauge_of(s);
  if (from != to) {
    p->api->gauge_add(p->m->conns[from], -1);
    p->api->gauge_add(p->m->conns[to], 1);
  }
  c->state = s;
}

void pool_count(pg_pool *p, pg_errc e) { p->api->inc(p->m->errors[e], 1); }

void pg_pool_count_query_error(pg_pool *p) { pool_count(p, ERRC_QUERY); }

void pg_pool_count_queue_full(pg_pool *p) { pool_count(p, ERRC_QUEUE_FULL); }

int pg_pool_up(const pg_pool *p) {
  return p->n_state[C_IDLE] + p->n_state[C_BUSY];
}

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* reconnect_min doubled per failed attempt up to reconnect_max, with
 * "equal jitter" (half the step fixed, half random): servers that lost
 * their database together do not come back in step, and no retry comes
 * sooner than half its step. */
int64_t pool_backoff_ms(pg_pool *p, int failures) {
  if (failures <= 0)
    return 0;
  int64_t step = p->conf.reconnect_min_ms, max = p->conf.reconnect_max_ms;
  for (int i = 1; i < failures && step < max; i++)
    step *= 2;
  if (step > max)
    step = max;
  uint64_t r = xorshift(&p->rng);
  return step / 2 + (int64_t)(r % (uint64_t)(step / 2 + 1));
}

static void set_queue_gauge(pg_pool *p, int delta) {
  p->n_waiting += delta;
  p->api->gauge_add(p->m->queue, delta);
}

static void arm_queue_timer(pg_pool *p) {
  if (!p->head) {
    p->api->timer_set(p->qtimer, 0, 0);
    return;
  }
  int64_t left = p->head->deadline_ms - p->api->now_ms(p->ctx);
  p->api->timer_set(p->qtimer, (uint64_t)(left > 1 ? left : 1), 0);
}

static pg_task *pop(pg_pool *p) {
  pg_task *t = p->head;
  if (!t)
    return NULL;
  p->head = t->next;
  if (!p->head)
    p->tail = NULL;
  t->next = NULL;
  set_queue_gauge(p, -1);
  return t;
}

void pool_task_done(pg_pool *p, pg_task *t, int status) {
  (void)p;
  t->ops->done(t->arg, status);
  free(t);
}

void pool_conn_idle(pg_pool *p, pg_conn *c) {
  if (c->state != C_IDLE || !p->head)
    return;
  pg_task *t = pop(p);
  arm_queue_timer(p);
  conn_run(c, t);
}

/* Every connection down: nobody will take the waiting tasks before their
 * deadline, so they fail now (fail fast, the caller answers at once). */
void pool_conn_down(pg_pool *p) {
  if (p->n_state[C_DOWN] != p->conf.size)
    return;
  pg_task *t;
  while ((t = pop(p)) != NULL)
    pool_task_done(p, t, PG_ELOST);
  arm_queue_timer(p);
}

static void on_queue_timer(ph_timer *tm, void *arg) {
  (void)tm;
  pg_pool *p = arg;
  int64_t now = p->api->now_ms(p->ctx);
  while (p->head && p->head->deadline_ms <= now) {
    pg_task *t = pop(p);
    pool_count(p, ERRC_TIMEOUT);
    pool_task_done(p, t, PG_ETIMEOUT);
  }
  arm_queue_timer(p);
}

int64_t pg_pool_submit(pg_pool *p, const pg_task_ops *ops, void *arg) {
  if (!p || !ops || !ops->begin || !ops->result || !ops->round_done ||
      !ops->done)
    return PH_EINVAL;
  if (!p->started || p->n_state[C_DOWN] == p->conf.size)
    return PG_ELOST;
  pg_conn *idle = NULL;
  for (int i = 0; i < p->conf.size && !idle; i++)
    if (p->conns[i].state == C_IDLE)
      idle = &p->conns[i];
  if (!idle && p->n_waiting >= p->conf.max_pending) {
    pool_count(p, ERRC_QUEUE_FULL);
    return PH_EFULL;
  }
  pg_task *t = calloc(1, sizeof(*t));
  if (!t)
    return PH_ENOMEM;
  t->id = ++p->next_id;
  t->ops = ops;
  t->arg = arg;
  t->deadline_ms = p->api->now_ms(p->ctx) + p->conf.query_timeout_ms;
  int64_t id = t->id;
  if (idle) {
    conn_run(idle, t);
    return id;
  }
  if (p->tail)
    p->tail->next = t;
  else
    p->head = t;
  p->tail = t;
  set_queue_gauge(p, 1);
  if (p->head == t)
    arm_queue_timer(p);
  return id;
}

int pg_pool_cancel(pg_pool *p, int64_t id) {
  for (pg_task **pp = &p->head, *prev = NULL; *pp;
       prev = *pp, pp = &(*pp)->next) {
    if ((*pp)->id != id)
      continue;
    pg_task *t = *pp;
    *pp = t->next;
    if (p->tail == t)
      p->tail = prev;
    set_queue_gauge(p, -1);
    free(t);
    arm_queue_timer(p);
    return PH_OK;
  }
  for (int i = 0; i < p->conf.size; i++)
    if (p->conns[i].task && p->conns[i].task->id == id)
      return PH_EBUSY;
  return PH_ENOENT;
}

static const ph_label_def state_l[] = {{"state", conn_states}};
static const ph_label_def class_l[] = {{"class", err_classes}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table pg_metrics[] = {
    PH_METRIC("proxyhost_store_pg_connections", PH_METRIC_GAUGE,
              "PostgreSQL connections of the pool by state",
              PH_METRIC_LABELS(state_l), PH_METRIC_NO_BUCKETS,
              pg_pool_metrics, conns),
    PH_METRIC("proxyhost_store_pg_queue_waiting", PH_METRIC_GAUGE,
              "Queries waiting for a free connection", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pg_pool_metrics, queue),
    PH_METRIC("proxyhost_store_pg_errors_total", PH_METRIC_COUNTER,
              "PostgreSQL failures by class", PH_METRIC_LABELS(class_l),
              PH_METRIC_NO_BUCKETS, pg_pool_metrics, errors),
    PH_METRIC_END};

int pg_pool_metrics_init(ph_ctx *ctx, const ph_api *api, pg_pool_metrics *m) {
  return ph_metric_table_register(api, ctx, pg_metrics, m);
}

static int conf_ok(const pg_pool_conf *c, char *why, size_t whylen) {
  if (!c->dsn || !*c->dsn)
    snprintf(why, whylen, "no DSN");
  else if (c->size < 1 || c->size > PG_POOL_SIZE_MAX)
    snprintf(why, whylen, "pool_size must be 1..%d", PG_POOL_SIZE_MAX);
  else if (c->max_pending < 1 || c->max_pending > PG_POOL_PENDING_MAX)
    snprintf(why, whylen, "max_pending must be 1..%d", PG_POOL_PENDING_MAX);
  else if (c->query_timeout_ms < 1)
    snprintf(why, whylen, "query_timeout must be positive");
  else if (c->reconnect_min_ms < 1 ||
           c->reconnect_max_ms < c->reconnect_min_ms)
    snprintf(why, whylen, "reconnect_min must be in 1..reconnect_max");
  else if (c->n_stmts > PG_POOL_STMTS_MAX)
    snprintf(why, whylen, "too many statements");
  else
    return 1;
  return 0;
}

pg_pool *pg_pool_new(ph_ctx *ctx, const ph_api *api, const pg_pool_conf *conf,
                     const pg_pool_metrics *m, char *why, size_t whylen) {
  if (!m) {
    snprintf(why, whylen, "no metrics");
    return NULL;
  }
  if (!conf_ok(conf, why, whylen))
    return NULL;
  pg_pool *p = calloc(1, sizeof(*p));
  if (!p) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  p->ctx = ctx;
  p->api = api;
  p->m = m;
  p->conf = *conf;
  p->dsn = strdup(conf->dsn);
  p->conf.dsn = NULL; /* only p->dsn holds it */
  p->rng = (uint64_t)api->now_ms(ctx) * 0x9E3779B97F4A7C15ull ^
           (uint64_t)getpid() ^ (uint64_t)(uintptr_t)p;
  if (!p->rng)
    p->rng = 1;
  p->conns = calloc((size_t)conf->size, sizeof(*p->conns));
  p->qtimer = api->timer_new(ctx, on_queue_timer, p);
  if (!p->dsn || !p->conns || !p->qtimer) {
    snprintf(why, whylen, "out of memory");
    pg_pool_free(p);
    return NULL;
  }
  for (int i = 0; i < conf->size; i++) {
    if (conn_init(p, &p->conns[i], i) < 0) {
      snprintf(why, whylen, "out of memory");
      pg_pool_free(p);
      return NULL;
    }
    p->n_state[C_DOWN]++;
    api->gauge_add(p->m->conns[2], 1);
  }
  return p;
}

void pg_pool_start(pg_pool *p) {
  if (p->started)
    return;
  p->started = 1;
  for (int i = 0; i < p->conf.size; i++)
    conn_connect(&p->conns[i]);
}

void pg_pool_free(pg_pool *p) {
  if (!p)
    return;
  if (p->conns) {
    for (int i = 0; i < p->conf.size; i++) {
      pg_conn *c = &p->conns[i];
      if (!c->timer)
        continue;
      free(c->task); /* dropped without a call */
      c->task = NULL;
      conn_close(c);
      p->api->timer_free(c->timer);
      p->api->gauge_add(p->m->conns[2], -1);
    }
    free(p->conns);
  }
  pg_task *t;
  while ((t = pop(p)) != NULL)
    free(t);
  if (p->qtimer)
    p->api->timer_free(p->qtimer);
  if (p->dsn) {
    explicit_bzero(p->dsn, strlen(p->dsn));
    free(p->dsn);
  }
  free(p);
}

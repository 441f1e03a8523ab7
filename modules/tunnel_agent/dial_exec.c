/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's bounded dial executor (dial_exec.h). */
#include "dial_exec.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/clocks.h"
#include "lib/ilist.h"

/* retry_after_ms hints on the failures the executor makes itself. */
#define RETRY_QUEUE_FULL_MS 100
#define RETRY_TIMEOUT_MS 1000

enum task_state { T_PENDING = 1, T_RUNNING, T_FAILING };

struct dial_task {
  ilist_node link; /* in x->pending or x->running */
  dial_exec *x;
  int state;
  int64_t conn_id;   /* the connector's open, while running */
  ph_timer *timer;   /* the nearer deadline; 0 ms to deliver a failure */
  int fail_stage, fail_code;
  uint64_t t_submit, t_dispatch; /* monotonic µs */
  uint64_t open_deadline;        /* µs */
  dial_done_fn done;
  void *arg;
  ph_open_addr_filter filter; /* cfg.addr_ok with this task as its arg */
  uint32_t addr_refused;
  uint16_t port;
  char host[256];
};

struct dial_exec {
  const ph_api *api;
  ph_ctx *ctx;
  const ph_connector_v1 *conn;
  void *cself;
  dial_exec_cfg cfg;
  /* A failing task stays in running: it holds its slot until its failure
   * is delivered (a dispatch the connector refused). */
  ilist pending, running;
  ph_defer *turn; /* the dispatch runs on the loop's next turn */
};

static dial_task *first(const ilist *l) {
  ilist_node *n = ilist_first(l);
  return n ? ILIST_ENTRY(n, dial_task, link) : NULL;
}

static void task_free(dial_task *t) {
  if (t->timer)
    t->x->api->timer_free(t->timer);
  free(t);
}

static uint32_t ms_until(uint64_t deadline_us, uint64_t now) {
  if (deadline_us <= now)
    return 0;
  uint64_t ms = (deadline_us - now + 999) / 1000;
  return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

static void fail_result(ph_open_result *r, int stage, int code) {
  memset(r, 0, sizeof(*r));
  r->size = sizeof(*r);
  r->stage = stage;
  r->code = code;
  r->fd = -1;
  r->retryable = code == PH_OPEN_TIMEOUT || code == PH_OPEN_QUEUE_FULL;
  r->retry_after_ms =
      code == PH_OPEN_QUEUE_FULL ? RETRY_QUEUE_FULL_MS
      : code == PH_OPEN_TIMEOUT  ? RETRY_TIMEOUT_MS
                                 : 0;
}

static void on_conn_result(void *arg, const ph_open_result *res);
static void on_timer(ph_timer *tm, void *arg);

/* The connector asks about an address of t's dial: cfg.addr_ok decides,
 * the task remembers a refusal for its owner (counted, logged). */
static int task_addr_ok(void *arg, const struct sockaddr *sa) {
  dial_task *t = arg;
  if (t->x->cfg.addr_ok(t->x->cfg.addr_arg, sa))
    return 1;
  t->addr_refused++;
  return 0;
}

/* Hands the connector every task a free slot allows, in FIFO order. */
static void pump(dial_exec *x) {
  while (ilist_len(&x->running) < x->cfg.max_concurrent &&
         !ilist_empty(&x->pending)) {
    dial_task *t = first(&x->pending);
    t->state = T_RUNNING;
    ilist_push(&x->running, &t->link); /* moves it */
    t->t_dispatch = mono_us();
    ph_open_request req;
    memset(&req, 0, sizeof(req));
    req.size = sizeof(req);
    req.protocol = PH_PROTO_TCP;
    req.port = t->port;
    req.host = t->host;
    req.principal = NULL;
    req.flags = 0; /* the agent relays a socket: no PH_OPEN_F_STREAM */
    if (x->cfg.addr_ok) {
      t->filter.allow = task_addr_ok;
      t->filter.arg = t;
      req.addr_filter = &t->filter;
    }
    int64_t id = x->conn->open(x->cself, &req, on_conn_result, t);
    if (id <= 0) {
      /* The connector refused the request itself (malformed, no memory):
       * answered from the loop, never from here. */
      t->state = T_FAILING;
      t->fail_stage = PH_STAGE_PROTOCOL;
      t->fail_code = PH_OPEN_INTERNAL_ERROR;
      x->api->timer_set(t->timer, 0, 1);
      continue;
    }
    t->conn_id = id;
    /* The nearer of the open deadline and the dial deadline. */
    uint64_t dial_deadline =
        t->t_dispatch + (uint64_t)x->cfg.connect_timeout_ms * 1000u;
    uint64_t d = dial_deadline < t->open_deadline ? dial_deadline
                                                   : t->open_deadline;
    uint32_t ms = ms_until(d, t->t_dispatch);
    x->api->timer_set(t->timer, ms ? ms : 1, 0);
  }
}

static void on_pump(ph_defer *d, void *arg) {
  (void)d;
  pump(arg);
}

/* The dispatch (the connector's open: its policy check, /etc/hosts, DNS
 * and connect) never runs on the caller's stack: submit, cancel and an
 * answer only ask for it, and it runs on the loop's next turn (TM-P0-2). */
static void kick(dial_exec *x) {
  if (!ilist_empty(&x->pending) &&
      ilist_len(&x->running) < x->cfg.max_concurrent)
    x->api->defer_post(x->turn);
}

/* Ends a task: out of its list, the next ones' dispatch asked for, then
 * its owner told (last: done may free the executor). */
static void finish(dial_task *t, const ph_open_result *res) {
  dial_exec *x = t->x;
  ilist_remove(&t->link);
  uint64_t now = mono_us();
  dial_times tm;
  if (t->t_dispatch) {
    tm.queue_us = t->t_dispatch - t->t_submit;
    tm.dial_us = now - t->t_dispatch;
  } else {
    tm.queue_us = now - t->t_submit;
    tm.dial_us = 0;
  }
  tm.addr_refused = t->addr_refused;
  dial_done_fn done = t->done;
  void *arg = t->arg;
  task_free(t);
  kick(x);
  done(arg, res, &tm);
}

/* The socket's peer must pass cfg.addr_ok too: a connector that does not
 * know ph_open_addr_filter (an older one) connected wherever DNS said.
 * Only an IP peer is judged: a socketpair from an in-process connector
 * has no address, and what it reaches is that connector's business. */
static int peer_refused(dial_task *t, const ph_open_result *res) {
  dial_exec *x = t->x;
  if (!x->cfg.addr_ok || res->code != PH_OPEN_OK || res->fd < 0)
    return 0;
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  memset(&ss, 0, sizeof(ss));
  int ok = getpeername(res->fd, (struct sockaddr *)&ss, &len) == 0 &&
           ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
            x->cfg.addr_ok(x->cfg.addr_arg, (const struct sockaddr *)&ss));
  if (ok)
    return 0;
  t->addr_refused++;
  return 1;
}

static void on_conn_result(void *arg, const ph_open_result *res) {
  dial_task *t = arg;
  if (peer_refused(t, res)) {
    ph_open_result r;
    close(res->fd);
    fail_result(&r, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN);
    finish(t, &r);
    return;
  }
  finish(t, res);
}

static void on_timer(ph_timer *tm, void *arg) {
  (void)tm;
  dial_task *t = arg;
  dial_exec *x = t->x;
  ph_open_result r;
  if (t->state == T_FAILING) {
    fail_result(&r, t->fail_stage, t->fail_code);
  } else if (t->state == T_PENDING) {
    /* Never got a slot within open_timeout. */
    fail_result(&r, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT);
  } else {
    /* The dial ran out of time: stop its DNS and connect. */
    x->conn->cancel(x->cself, t->conn_id);
    fail_result(&r, PH_STAGE_CONNECT, PH_OPEN_TIMEOUT);
  }
  finish(t, &r);
}

dial_exec *dial_exec_new(const ph_api *api, ph_ctx *ctx,
                         const ph_connector_v1 *c, void *cself,
                         const dial_exec_cfg *cfg) {
  dial_exec *x = calloc(1, sizeof(*x));
  if (!x)
    return NULL;
  ilist_init(&x->pending);
  ilist_init(&x->running);
  x->api = api;
  x->ctx = ctx;
  x->conn = c;
  x->cself = cself;
  x->cfg = *cfg;
  if (x->cfg.max_concurrent < 1)
    x->cfg.max_concurrent = 1;
  x->turn = api->defer_new(ctx, on_pump, x);
  if (!x->turn) {
    free(x);
    return NULL;
  }
  return x;
}

static void drop_all(dial_exec *x, ilist *l) {
  dial_task *t;
  while ((t = first(l))) {
    if (t->state == T_RUNNING)
      x->conn->cancel(x->cself, t->conn_id);
    ilist_remove(&t->link);
    task_free(t);
  }
}

void dial_exec_free(dial_exec *x) {
  if (!x)
    return;
  x->api->defer_free(x->turn);
  drop_all(x, &x->pending);
  drop_all(x, &x->running);
  free(x);
}

dial_task *dial_exec_submit(dial_exec *x, const char *host, uint16_t port,
                            dial_done_fn done, void *arg, int *code) {
  size_t hl = strlen(host);
  if (hl == 0 || hl > 255 || port == 0) {
    *code = PH_OPEN_INTERNAL_ERROR; /* the session validated: not reached */
    return NULL;
  }
  /* Full: the running slots and the pending queue both (TM-P0-3/4). A
   * task whose dispatch waits for the next turn counts as pending, so
   * the bound is the two together. */
  if ((uint64_t)ilist_len(&x->running) + ilist_len(&x->pending) >=
      (uint64_t)x->cfg.max_concurrent + x->cfg.max_pending) {
    *code = PH_OPEN_QUEUE_FULL;
    return NULL;
  }
  dial_task *t = calloc(1, sizeof(*t));
  if (!t) {
    *code = PH_OPEN_INTERNAL_ERROR;
    return NULL;
  }
  t->timer = x->api->timer_new(x->ctx, on_timer, t);
  if (!t->timer) {
    free(t);
    *code = PH_OPEN_INTERNAL_ERROR;
    return NULL;
  }
  t->x = x;
  memcpy(t->host, host, hl + 1);
  t->port = port;
  t->done = done;
  t->arg = arg;
  t->t_submit = mono_us();
  t->open_deadline = t->t_submit + (uint64_t)x->cfg.open_timeout_ms * 1000u;
  t->state = T_PENDING;
  ilist_push(&x->pending, &t->link);
  x->api->timer_set(t->timer, x->cfg.open_timeout_ms, 0);
  /* Only queued here: a free slot takes it on the loop's next turn. */
  kick(x);
  return t;
}

void dial_task_cancel(dial_task *t) {
  if (!t)
    return;
  dial_exec *x = t->x;
  if (t->state == T_RUNNING)
    x->conn->cancel(x->cself, t->conn_id);
  ilist_remove(&t->link);
  task_free(t);
  kick(x);
}

uint32_t dial_exec_running(const dial_exec *x) {
  return (uint32_t)ilist_len(&x->running);
}
uint32_t dial_exec_pending(const dial_exec *x) {
  return (uint32_t)ilist_len(&x->pending);
}

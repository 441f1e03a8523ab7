/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's dial executor (seed 001 "P0 Agent 有界拨号执行器",
 * TM-P0-1..6): one per agent session. Its only jobs are queueing,
 * limiting concurrency, cancelling and classifying results; the dial
 * itself (DNS, target policy, connect) is the named connector's
 * (`direct`), which never runs on the session's reader.
 *
 *   submit ─► pending (FIFO, at most max_pending) ─► running (at most
 *   max_concurrent; connector->open in flight) ─► done callback
 *
 * submit is the reader's one non-blocking enqueue (TM-P0-2): it either
 * takes the task (the callback comes later, from the loop, never from
 * inside submit) or refuses it at once because the queue is full
 * (TM-P0-3). Taking it only queues it: the connector's open (the target
 * policy, the /etc/hosts lookup, DNS, connect) starts on a later loop
 * turn (api->defer_post), never on submit's stack (the reader's) nor on
 * dial_task_cancel's, and tasks reach the connector in submit order. Each task has its own cancellation (TM-P0-5): dial_task_cancel
 * (the server's RESET, the session closing), the open deadline
 * (open_timeout from submit) and the dial deadline (connect_timeout from
 * the moment the connector got it) all cancel the connector's open, which
 * stops its DNS lookup and connect. After a cancel or a timeout the
 * connector's callback never reaches the task's owner.
 *
 * Loop thread only.
 */
#ifndef TM_DIAL_EXEC_H
#define TM_DIAL_EXEC_H

#include <stdint.h>
#include <sys/socket.h>

#include <proxyhost/connector.h>
#include <proxyhost/host.h>

typedef struct dial_exec dial_exec;
typedef struct dial_task dial_task;

/* Whether a dial may reach address sa: 1 yes, 0 no (target_guard.h). */
typedef int (*dial_addr_fn)(void *arg, const struct sockaddr *sa);

typedef struct dial_exec_cfg {
  uint32_t max_concurrent;     /* streams.max_concurrent_dials, >= 1 */
  uint32_t max_pending;        /* streams.max_pending_dials, >= 0 */
  uint32_t open_timeout_ms;    /* streams.open_timeout: submit to answer */
  uint32_t connect_timeout_ms; /* streams.connect_timeout: one dial */
  /* NULL: the connector decides alone. Otherwise asked by the connector
   * about every address before it connects (ph_open_addr_filter), and
   * again by the executor about the peer of the socket it got (a
   * connector that ignores the filter): a refused peer is closed and the
   * open fails policy/forbidden. */
  dial_addr_fn addr_ok;
  void *addr_arg;
} dial_exec_cfg;

/* What a task took, for the metrics and the stream's log line. */
typedef struct dial_times {
  uint64_t queue_us; /* submit to the connector's open (or to the end) */
  uint64_t dial_us;  /* the connector's open to its answer (0: never ran) */
  uint32_t addr_refused; /* addresses cfg.addr_ok refused for this open */
} dial_times;

/* The answer, exactly once per accepted task unless cancelled first:
 * res as the connector gave it (a success carries an fd or a stream the
 * callee now owns), or a failure the executor made (queue/timeout,
 * connect/timeout, or the connector's refusal of the request:
 * protocol/internal_error). The task is gone when this is called. */
typedef void (*dial_done_fn)(void *arg, const ph_open_result *res,
                             const dial_times *t);

/* A new executor over connector c (self cself). cfg is copied. NULL: no
 * memory. */
dial_exec *dial_exec_new(const ph_api *api, ph_ctx *ctx,
                         const ph_connector_v1 *c, void *cself,
                         const dial_exec_cfg *cfg);
/* Cancels every task (no callback runs) and frees the executor. NULL is
 * ignored. */
void dial_exec_free(dial_exec *x);

/* The one non-blocking enqueue. host: NUL-terminated, copied. Returns the
 * task, or NULL when the queue is full (*code = PH_OPEN_QUEUE_FULL) or
 * memory ran out (*code = PH_OPEN_INTERNAL_ERROR); done is then never
 * called. */
dial_task *dial_exec_submit(dial_exec *x, const char *host, uint16_t port,
                            dial_done_fn done, void *arg, int *code);
/* Abandons a task whose callback has not run: its connector open is
 * cancelled (DNS and connect stop), its slot is freed, done never runs. */
void dial_task_cancel(dial_task *t);

/* Counts (the pool's load and the tests). */
uint32_t dial_exec_running(const dial_exec *x);
uint32_t dial_exec_pending(const dial_exec *x);

#endif

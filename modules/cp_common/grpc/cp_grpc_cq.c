/* SPDX-License-Identifier: BSD-2-Clause */
/* The completion queue's bridge to the loop (cp_grpc.h, cp_grpc_int.h): a
 * host thread blocks in grpc_completion_queue_next and moves each
 * completed tag to the cq's list; one api->thread_post at a time wakes the
 * loop, which runs the tags' state machines in completion order. */
#include "cp_grpc_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>

/* How long the thread waits in next before it looks at stop: what a join
 * may take at most (gRPC core has no other way to wake a waiter than an
 * event). */
#define CQ_POLL_MS 200
/* cp_grpc_cq_free's bound on gRPC's own cancellation. */
#define CQ_DRAIN_MS 10000

grpc_call_error cp_batch(grpc_call *call, const grpc_op *ops, size_t n,
                         cp_tag *t) {
  return grpc_call_start_batch(call, ops, n, t, NULL);
}

grpc_call_error cp_batch_recv(grpc_call *call, grpc_byte_buffer **bb,
                              cp_tag *t) {
  grpc_op op;
  memset(&op, 0, sizeof(op));
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = bb;
  return cp_batch(call, &op, 1, t);
}

grpc_byte_buffer *cp_bb_new(const uint8_t *p, size_t n) {
  grpc_slice s = grpc_slice_from_copied_buffer((const char *)p, n);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
  grpc_slice_unref(s);
  return bb;
}

grpc_slice cp_bb_read(grpc_byte_buffer *bb) {
  grpc_byte_buffer_reader r;
  if (!grpc_byte_buffer_reader_init(&r, bb))
    return grpc_empty_slice();
  grpc_slice s = grpc_byte_buffer_reader_readall(&r);
  grpc_byte_buffer_reader_destroy(&r);
  return s;
}

int64_t cp_timespec_ms(gpr_timespec t) {
  gpr_timespec r = gpr_convert_clock_type(t, GPR_CLOCK_REALTIME);
  if (gpr_time_cmp(r, gpr_inf_future(GPR_CLOCK_REALTIME)) >= 0)
    return INT64_MAX;
  return (int64_t)r.tv_sec * 1000 + r.tv_nsec / 1000000;
}

/* Loop: run what completed, in order. A fn may free the object holding
 * its tag, so next is read first. */
static void run_list(cp_tag *t) {
  while (t) {
    cp_tag *next = t->next;
    t->next = NULL;
    t->fn(t, t->ok);
    t = next;
  }
}

static cp_tag *take_all(cp_grpc_cq *q) {
  pthread_mutex_lock(&q->mu);
  cp_tag *t = q->head;
  q->head = q->tail = NULL;
  q->wake_pending = 0;
  pthread_mutex_unlock(&q->mu);
  return t;
}

static void cq_wake(void *arg) {
  cp_grpc_cq *q = arg;
  run_list(take_all(q));
}

static void cq_run(void *arg) {
  cp_grpc_cq *q = arg;
  while (!atomic_load(&q->stop)) {
    grpc_event e = grpc_completion_queue_next(
        q->cq,
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                     gpr_time_from_millis(CQ_POLL_MS, GPR_TIMESPAN)),
        NULL);
    if (e.type == GRPC_QUEUE_SHUTDOWN)
      break;
    if (e.type != GRPC_OP_COMPLETE)
      continue;
    cp_tag *t = e.tag;
    pthread_mutex_lock(&q->mu);
    t->ok = e.success;
    t->next = NULL;
    if (q->tail)
      q->tail->next = t;
    else
      q->head = t;
    q->tail = t;
    int wake = !q->wake_pending;
    q->wake_pending = 1;
    pthread_mutex_unlock(&q->mu);
    /* t is the loop's now. The host's queue holds at most this one post,
     * so PH_EFULL means a queue of 0 (never): wait for room anyway. */
    while (wake && q->api->thread_post(q->thread, cq_wake, q, NULL) ==
                       PH_EFULL &&
           !atomic_load(&q->stop)) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

static void cq_stop(void *arg) {
  cp_grpc_cq *q = arg;
  atomic_store(&q->stop, 1);
}

cp_grpc_cq *cp_grpc_cq_new(ph_ctx *ctx, const ph_api *api,
                           const char *thread_name, const char **err) {
  cp_grpc_cq *q = calloc(1, sizeof(*q));
  if (!q) {
    *err = "out of memory";
    return NULL;
  }
  q->ctx = ctx;
  q->api = api;
  ilist_init(&q->channels);
  ilist_init(&q->ccalls);
  atomic_init(&q->stop, 0);
  pthread_mutex_init(&q->mu, NULL);
  grpc_init();
  q->cq = grpc_completion_queue_create_for_next(NULL);
  if (!q->cq) {
    *err = "gRPC refused a completion queue";
    goto fail;
  }
  q->thread = api->thread_start(ctx, thread_name, cq_run, cq_stop, q, 4);
  if (!q->thread) {
    *err = "the host refused the completion queue's thread";
    goto fail;
  }
  return q;
fail:
  if (q->cq) {
    grpc_completion_queue_shutdown(q->cq);
    while (grpc_completion_queue_next(q->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
                                      NULL)
               .type != GRPC_QUEUE_SHUTDOWN)
      ;
    grpc_completion_queue_destroy(q->cq);
  }
  grpc_shutdown();
  pthread_mutex_destroy(&q->mu);
  free(q);
  return NULL;
}

/* Runs completions on the loop thread itself (the cq thread is joined)
 * until no object has a tag in flight, or CQ_DRAIN_MS passed (-1). */
static int drain_until_idle(cp_grpc_cq *q) {
  gpr_timespec end = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                  gpr_time_from_millis(CQ_DRAIN_MS,
                                                       GPR_TIMESPAN));
  while (q->live > 0) {
    grpc_event e = grpc_completion_queue_next(q->cq, end, NULL);
    if (e.type == GRPC_QUEUE_TIMEOUT)
      return -1;
    if (e.type != GRPC_OP_COMPLETE)
      continue;
    cp_tag *t = e.tag;
    t->next = NULL;
    t->fn(t, e.success);
  }
  return 0;
}

void cp_grpc_cq_free(cp_grpc_cq *q) {
  if (!q)
    return;
  q->closing = 1;
  /* The thread first: from here on only this thread touches the queue. */
  q->api->thread_join(q->thread);
  q->thread = NULL;
  run_list(take_all(q));
  cp_server_close_all(q);
  cp_client_close_all(q);
  if (drain_until_idle(q) < 0) {
    /* gRPC did not finish its own cancellations in time: leave the queue
     * and its objects (a leak) rather than destroy what gRPC still uses. */
    PH_LOG(q->api, q->ctx, PH_LOG_ERROR,
           "grpc completion queue did not drain", PH_INT("live", q->live));
    return;
  }
  grpc_completion_queue_shutdown(q->cq);
  while (grpc_completion_queue_next(q->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
                                    NULL)
             .type != GRPC_QUEUE_SHUTDOWN)
    ;
  grpc_completion_queue_destroy(q->cq);
  pthread_mutex_destroy(&q->mu);
  free(q);
  grpc_shutdown();
}

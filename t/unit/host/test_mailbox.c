/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/mailbox.c. */
#include <ev.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "mailbox.h"
#include "counter_test.h"
#include "loop_test.h"
#include "metrics.h"
#include "producers_test.h"
#include "tap.h"

/* ---- FIFO order and free_arg ------------------------------------------- */

static int order_log[16];
static int order_n;
static int frees_seen;

static void record_fn(void *arg) { order_log[order_n++] = *(int *)arg; }

static void record_free(void *arg) {
  /* free_arg runs after fn: the value must already be logged. */
  int v = *(int *)arg;
  if (order_n > 0 && order_log[order_n - 1] == v)
    frees_seen++;
  free(arg);
}

static int *new_int(int v) {
  int *p = malloc(sizeof(*p));
  *p = v;
  return p;
}

static int order_done(void *arg) { return order_n >= *(int *)arg; }

static void test_fifo(struct ev_loop *loop) {
  ph_mailbox *mb = mailbox_new(loop, 8, NULL);
  ok(mb != NULL, "mailbox_new");
  order_n = 0;
  frees_seen = 0;
  for (int i = 1; i <= 5; i++)
    is_int(mailbox_post(mb, record_fn, new_int(i), record_free), PH_OK,
           "post accepted");
  is_int(mailbox_pending(mb), 5, "five pending");
  int want = 5;
  ok(poll_until(loop, order_done(&want), 5000), "loop ran the calls");
  int in_order = 1;
  for (int i = 0; i < 5; i++)
    in_order &= order_log[i] == i + 1;
  ok(in_order && order_n == 5, "calls ran once each in posting order");
  is_int(frees_seen, 5, "free_arg ran after each fn");
  is_int(mailbox_pending(mb), 0, "nothing pending after the run");
  is_int(mailbox_post(mb, NULL, NULL, NULL), PH_EINVAL, "NULL fn refused");
  mailbox_free(mb);
  ok(mailbox_new(loop, 0, NULL) == NULL, "capacity 0 refused");
}

/* ---- full mailbox -------------------------------------------------------- */

static int never_runs;

static void count_fn(void *arg) {
  (void)arg;
  never_runs++;
}

static void test_full(struct ev_loop *loop) {
  ph_series *full = counter("test_mailbox_full_total");
  ok(full != NULL, "counter registered");
  ph_mailbox *mb = mailbox_new(loop, 2, full);
  never_runs = 0;
  is_int(mailbox_post(mb, count_fn, new_int(1), free), PH_OK, "post 1/2");
  is_int(mailbox_post(mb, count_fn, new_int(2), free), PH_OK, "post 2/2");
  int *mine = new_int(3);
  is_int(mailbox_post(mb, count_fn, mine, free), PH_EFULL,
         "third post on a capacity-2 mailbox is PH_EFULL");
  is_int(mailbox_post(mb, count_fn, mine, free), PH_EFULL, "still full");
  is_int(mailbox_full_count(mb), 2, "mailbox counted both refusals");
  is_int(series_value(full), 2, "full counter incremented");
  is_int(mailbox_pending(mb), 2, "refused posts were not queued");
  /* PH_EFULL leaves ownership with the caller: freeing it here must be the
   * only free (ASan would report a double free or a leak otherwise). */
  free(mine);
  mailbox_drain(mb);
  is_int(never_runs, 2, "drain ran the two accepted calls");
  is_int(mailbox_post(mb, count_fn, new_int(4), free), PH_OK,
         "room again after the drain");
  mailbox_drain(mb);
  mailbox_free(mb);
}

/* ---- free with pending calls -------------------------------------------- */

static int pending_freed;

static void pending_free(void *arg) {
  pending_freed++;
  free(arg);
}

static void test_free_pending(struct ev_loop *loop) {
  ph_mailbox *mb = mailbox_new(loop, 4, NULL);
  never_runs = 0;
  pending_freed = 0;
  for (int i = 0; i < 3; i++)
    mailbox_post(mb, count_fn, new_int(i), pending_free);
  mailbox_free(mb);
  is_int(never_runs, 0, "mailbox_free does not run pending calls");
  is_int(pending_freed, 3, "mailbox_free calls free_arg for each pending");
}

/* ---- bounded drain -------------------------------------------------------- */

typedef struct repost {
  ph_mailbox *mb;
  int runs;
} repost;

/* Re-posts itself: an unbounded drain would spin here (up to 1000). */
static void repost_fn(void *arg) {
  repost *r = arg;
  r->runs++;
  if (r->runs < 1000)
    mailbox_post(r->mb, repost_fn, r, NULL);
}

static int repost_done(void *arg) { return ((repost *)arg)->runs >= 3; }

static void test_bounded_drain(struct ev_loop *loop) {
  ph_mailbox *mb = mailbox_new(loop, 4, NULL);
  repost r = {mb, 0};
  mailbox_post(mb, repost_fn, &r, NULL);
  mailbox_drain(mb);
  is_int(r.runs, 1, "a call posted while draining waits for the next drain");
  is_int(mailbox_pending(mb), 1, "the re-posted call is pending");
  ok(poll_until(loop, repost_done(&r), 5000),
     "the drain re-signalled the loop for what was left");
  r.runs = 1000; /* stop re-posting */
  mailbox_free(mb);
}

/* ---- cross-thread producers --------------------------------------------- */

#define N_THREADS 4
#define N_PER_THREAD 10000

typedef struct xstate {
  ph_mailbox *mb;
  _Atomic int freed;
} xstate;

static xstate xs;
static producers P;

static void msg_fn(void *arg) { producers_got(&P, arg); }

static void msg_free(void *arg) {
  atomic_fetch_add(&xs.freed, 1);
  free(arg);
}

static int x_post(producers_msg *m) {
  return mailbox_post(xs.mb, msg_fn, m, msg_free);
}

static producers P = {.post = x_post, .n = N_THREADS, .per = N_PER_THREAD};

static void test_threads(struct ev_loop *loop) {
  ph_series *full = counter("test_threads_full_total");
  xs = (xstate){0};
  xs.mb = mailbox_new(loop, 256, full);
  producers_run(&P, loop, 60000);
  mailbox_drain(xs.mb); /* anything extra would show up below */
  is_int(P.received, N_THREADS * N_PER_THREAD,
         "every message delivered exactly once");
  is_int(P.out_of_order, 0, "per-thread order preserved");
  is_int(P.bad, 0, "no corrupted message");
  is_int(atomic_load(&xs.freed), N_THREADS * N_PER_THREAD,
         "every message freed once");
  is_int(mailbox_full_count(xs.mb), atomic_load(&P.efull),
         "each PH_EFULL seen by a producer was counted");
  is_int(series_value(full), atomic_load(&P.efull),
         "full counter matches the refusals");
  printf("# %d posts refused with PH_EFULL and retried\n",
         atomic_load(&P.efull));
  mailbox_free(xs.mb);
}

int main(void) {
  plan_lazy();
  reg = metrics_new();
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  test_fifo(loop);
  test_full(loop);
  test_free_pending(loop);
  test_bounded_drain(loop);
  test_threads(loop);
  ev_loop_destroy(loop);
  metrics_free(reg);
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/pool.c. */
#include <errno.h>
#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "loop_test.h"
#include "pool.h"
#include "tap.h"

static pthread_t loop_thread;

/* ---- bounded waits ----------------------------------------------------- */

static struct timespec deadline(double secs) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long ns = ts.tv_nsec + (long)((secs - (long)secs) * 1e9);
  ts.tv_sec += (time_t)secs + ns / 1000000000L;
  ts.tv_nsec = ns % 1000000000L;
  return ts;
}

/* ---- a gate that blocks workers (always with a timeout) ----------------- */

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered; /* workers inside gate_work */
  int open;
} gate;

static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void gate_reset(void) {
  pthread_mutex_lock(&g.mu);
  g.entered = 0;
  g.open = 0;
  pthread_mutex_unlock(&g.mu);
}

static void gate_open(void) {
  pthread_mutex_lock(&g.mu);
  g.open = 1;
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
}

/* Waits (at most secs) until n workers are blocked in the gate. */
static int gate_wait_entered(int n, double secs) {
  struct timespec ts = deadline(secs);
  pthread_mutex_lock(&g.mu);
  int rc = 0;
  while (g.entered < n && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&g.cv, &g.mu, &ts);
  int got = g.entered >= n;
  pthread_mutex_unlock(&g.mu);
  return got;
}

/* ---- jobs ------------------------------------------------------------------ */

typedef struct job_rec {
  int use_gate;
  _Atomic int worked;
  _Atomic int on_worker_thread;
  _Atomic int signals_blocked;
  int done_calls;
  int status;
  int done_on_loop;
} job_rec;

static void job_work(void *arg) {
  job_rec *r = arg;
  atomic_store(&r->on_worker_thread,
               !pthread_equal(pthread_self(), loop_thread));
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  atomic_store(&r->signals_blocked, sigismember(&cur, SIGTERM) &&
                                        sigismember(&cur, SIGINT) &&
                                        sigismember(&cur, SIGHUP));
  if (r->use_gate) {
    struct timespec ts = deadline(10.0);
    pthread_mutex_lock(&g.mu);
    g.entered++;
    pthread_cond_broadcast(&g.cv);
    int rc = 0;
    /* Bounded: a broken test must not hang the worker forever. */
    while (!g.open && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&g.cv, &g.mu, &ts);
    pthread_mutex_unlock(&g.mu);
  }
  atomic_fetch_add(&r->worked, 1);
}

static void job_done(void *arg, int status) {
  job_rec *r = arg;
  r->done_calls++;
  r->status = status;
  r->done_on_loop = pthread_equal(pthread_self(), loop_thread);
}

static int pool_idle(void *arg) { return pool_outstanding(arg) == 0; }

/* ---- tests ------------------------------------------------------------ */

static void test_args(struct ev_loop *loop) {
  ok(pool_new(loop, 0, 4) == NULL, "0 threads refused");
  ok(pool_new(loop, 65, 4) == NULL, "65 threads refused");
  ok(pool_new(loop, 1, 0) == NULL, "queue_cap 0 refused");
}

#define N_JOBS 20

static void test_delivery(struct ev_loop *loop) {
  ph_pool *p = pool_new(loop, 4, 64);
  ok(p != NULL, "pool_new");
  static job_rec recs[N_JOBS];
  int ids_ok = 1;
  for (int i = 0; i < N_JOBS; i++) {
    recs[i] = (job_rec){0};
    int64_t id = pool_submit(p, NULL, job_work, job_done, &recs[i]);
    ids_ok &= id == i + 1;
  }
  ok(ids_ok, "job ids are 1, 2, 3...");
  ok(poll_until(loop, pool_idle(p), 10000), "all jobs delivered in time");
  int once = 1, status_ok = 1, on_loop = 1, on_worker = 1, blocked = 1;
  for (int i = 0; i < N_JOBS; i++) {
    once &= recs[i].done_calls == 1 && atomic_load(&recs[i].worked) == 1;
    status_ok &= recs[i].status == PH_OK;
    on_loop &= recs[i].done_on_loop;
    on_worker &= atomic_load(&recs[i].on_worker_thread);
    blocked &= atomic_load(&recs[i].signals_blocked);
  }
  ok(once, "each job worked once and got exactly one done");
  ok(status_ok, "done status is PH_OK");
  ok(on_loop, "done ran on the loop thread");
  ok(on_worker, "work ran on a helper thread");
  ok(blocked, "helper threads block SIGTERM, SIGINT and SIGHUP");
  pool_free(p);
}

static void test_full_and_cancel(struct ev_loop *loop) {
  gate_reset();
  ph_pool *p = pool_new(loop, 1, 2);
  job_rec blocker = {.use_gate = 1}, a = {0}, b = {0}, c = {0};
  int64_t id_blocker = pool_submit(p, NULL, job_work, job_done, &blocker);
  ok(id_blocker > 0, "blocker accepted");
  ok(gate_wait_entered(1, 10.0), "the only worker is blocked");

  int owner_a, owner_x;
  int64_t id_a = pool_submit(p, &owner_a, job_work, job_done, &a);
  int64_t id_b = pool_submit(p, NULL, job_work, job_done, &b);
  ok(id_a > 0 && id_b > id_a, "two jobs queued behind the blocker");
  is_int(pool_submit(p, NULL, job_work, job_done, &c), PH_EFULL,
         "third queued job is PH_EFULL");
  is_int(c.done_calls, 0, "a refused job gets no done");
  is_int(pool_outstanding(p), 3, "three jobs outstanding");

  is_int(pool_cancel(p, &owner_x, id_a), POOL_EFOREIGN,
         "another owner cannot cancel a queued job (POOL_EFOREIGN)");
  is_int(pool_cancel(p, NULL, id_a), POOL_EFOREIGN, "nor can no owner");
  is_int(pool_cancel(p, &owner_x, id_blocker), POOL_EFOREIGN,
         "nor a running job of another owner");
  is_int(a.done_calls, 0, "the queued job was left alone");
  is_int(pool_cancel(p, &owner_a, id_a), PH_OK, "cancel a queued job");
  is_int(a.done_calls, 1, "its done ran before pool_cancel returned");
  is_int(a.status, PH_ECANCELED, "with PH_ECANCELED");
  ok(a.done_on_loop, "on the loop thread");
  is_int(pool_cancel(p, &owner_a, id_a), PH_ENOENT, "cancelled job is gone");
  is_int(pool_cancel(p, NULL, id_blocker), PH_EBUSY, "running job is PH_EBUSY");
  is_int(pool_cancel(p, NULL, 9999), PH_ENOENT, "unknown id is PH_ENOENT");
  is_int(pool_cancel(p, NULL, 0), PH_ENOENT, "id 0 is PH_ENOENT");
  ok(pool_submit(p, NULL, job_work, job_done, &c) > id_b,
     "room in the queue again after the cancel");

  gate_open();
  ok(poll_until(loop, pool_idle(p), 10000), "remaining jobs delivered");
  is_int(atomic_load(&a.worked), 0, "the cancelled job never worked");
  is_int(a.done_calls, 1, "the cancelled job got one done only");
  ok(blocker.done_calls == 1 && blocker.status == PH_OK, "blocker done OK");
  ok(b.done_calls == 1 && b.status == PH_OK, "queued job done OK");
  ok(c.done_calls == 1 && c.status == PH_OK, "late job done OK");
  is_int(pool_cancel(p, NULL, id_b), PH_ENOENT, "delivered job is gone");
  pool_free(p);
}

static int worked(void *arg) { return atomic_load(&((job_rec *)arg)->worked); }

static void test_cancel_completed(struct ev_loop *loop) {
  ph_pool *p = pool_new(loop, 1, 4);
  job_rec r = {0};
  int64_t id = pool_submit(p, NULL, job_work, job_done, &r);
  /* Spin without running the loop, so the completion cannot be delivered;
   * bounded by the deadline. */
  struct timespec end = deadline(10.0), now;
  do {
    clock_gettime(CLOCK_REALTIME, &now);
  } while (!worked(&r) && now.tv_sec <= end.tv_sec);
  ok(worked(&r), "the job worked");
  is_int(pool_cancel(p, NULL, id), PH_EBUSY,
         "finished but undelivered job is PH_EBUSY");
  is_int(r.done_calls, 0, "not delivered yet");
  struct timespec end2 = deadline(10.0);
  while (pool_outstanding(p) && now.tv_sec <= end2.tv_sec) {
    pool_drain(p);
    clock_gettime(CLOCK_REALTIME, &now);
  }
  is_int(r.done_calls, 1, "pool_drain delivered it");
  is_int(r.status, PH_OK, "with PH_OK");
  pool_free(p);
}

/* pool_cancel of a job from inside its own done: it has finished. */
typedef struct self_cancel {
  job_rec r;
  ph_pool *p;
  int64_t id;
  int rc;
} self_cancel;

static void self_cancel_done(void *arg, int status) {
  self_cancel *sc = arg;
  job_done(&sc->r, status);
  sc->rc = pool_cancel(sc->p, NULL, sc->id);
}

static void test_cancel_in_done(struct ev_loop *loop) {
  ph_pool *p = pool_new(loop, 1, 4);
  self_cancel sc = {.p = p, .rc = 1};
  sc.id = pool_submit(p, NULL, job_work, self_cancel_done, &sc);
  ok(poll_until(loop, pool_idle(p), 10000), "job delivered");
  is_int(sc.rc, PH_EBUSY, "cancel from its own done is PH_EBUSY");
  is_int(sc.r.done_calls, 1, "and does not call done again");
  pool_free(p);
}

/* pool_free with queued jobs: the first cancelled done opens the gate, so
 * the running blocker can finish while pool_free waits for it. */
typedef struct free_rec {
  job_rec r;
  int opened;
} free_rec;

static ph_pool *closing_pool;
static int64_t submit_while_closing;

static void opener_done(void *arg, int status) {
  free_rec *f = arg;
  job_done(&f->r, status);
  submit_while_closing = pool_submit(closing_pool, NULL, job_work, job_done, f);
  if (!f->opened) {
    f->opened = 1;
    gate_open();
  }
}

static void test_free_with_queued(struct ev_loop *loop) {
  gate_reset();
  ph_pool *p = pool_new(loop, 1, 8);
  job_rec blocker = {.use_gate = 1};
  free_rec q[3] = {{{0}, 0}, {{0}, 0}, {{0}, 0}};
  pool_submit(p, NULL, job_work, job_done, &blocker);
  ok(gate_wait_entered(1, 10.0), "worker blocked before pool_free");
  for (int i = 0; i < 3; i++)
    pool_submit(p, NULL, job_work, opener_done, &q[i]);
  closing_pool = p;
  submit_while_closing = 0;
  pool_free(p);
  is_int(submit_while_closing, PH_ESTATE,
         "pool_submit from a done run by pool_free is refused");
  int cancelled = 1;
  for (int i = 0; i < 3; i++)
    cancelled &= q[i].r.done_calls == 1 && q[i].r.status == PH_ECANCELED &&
                 atomic_load(&q[i].r.worked) == 0;
  ok(cancelled, "queued jobs got PH_ECANCELED and never worked");
  is_int(blocker.done_calls, 1, "running job's done delivered by pool_free");
  is_int(blocker.status, PH_OK, "with PH_OK");
  ok(blocker.done_on_loop, "on the loop thread");
}

int main(void) {
  plan_lazy();
  loop_thread = pthread_self();
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  test_args(loop);
  test_delivery(loop);
  test_full_and_cancel(loop);
  test_cancel_completed(loop);
  test_cancel_in_done(loop);
  test_free_with_queued(loop);
  ev_loop_destroy(loop);
  return done_testing();
}

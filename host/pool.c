/* SPDX-License-Identifier: BSD-2-Clause */
/* The helper thread pool. A job lives in exactly one of three lists, all
 * guarded by one mutex: queued (not started, bounded by queue_cap), running
 * (a worker is in work()), completed (work done, done() not yet run on the
 * loop). The job node itself moves from list to list, so finishing a job
 * never allocates and never has to be refused: the completion room is
 * reserved by the accepted job.
 *
 * A job may hold a reference to a configuration generation (the one in
 * force when it was submitted): the worker running it publishes it in a
 * thread-local for the conf_* getters, and the pool drops the reference
 * on the loop thread after the job's done ran. */
#include "pool.h"

#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "threads.h"

#define POOL_MAX_THREADS 64

typedef struct job job;
struct job {
  int64_t id;
  const void *owner; /* who submitted it: only they may cancel it */
  ph_work_fn work;
  ph_done_fn done;
  void *arg;
  ph_conf *conf; /* a held reference, or NULL */
  job *prev, *next;
};

typedef struct job_list {
  job *head, *tail;
  size_t n;
} job_list;

struct ph_pool {
  struct ev_loop *loop;
  ev_async wake;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* workers wait here for queued jobs or stop */
  job_list queued, running, completed; /* guarded by mu */
  size_t queue_cap;
  int stopping;           /* guarded by mu: workers exit when set */
  int closing;            /* loop thread: pool_free has begun */
  int64_t next_id;        /* loop thread */
  int64_t delivering_id;  /* loop thread: job whose done() is running */
  const void *delivering_owner; /* loop thread: and its owner */
  _Atomic size_t outstanding;
  pthread_t threads[POOL_MAX_THREADS];
  unsigned n_threads;
};

/* ---- intrusive doubly-linked lists ----------------------------------- */

static void list_push(job_list *l, job *j) {
  j->next = NULL;
  j->prev = l->tail;
  if (l->tail)
    l->tail->next = j;
  else
    l->head = j;
  l->tail = j;
  l->n++;
}

static void list_remove(job_list *l, job *j) {
  if (j->prev)
    j->prev->next = j->next;
  else
    l->head = j->next;
  if (j->next)
    j->next->prev = j->prev;
  else
    l->tail = j->prev;
  j->prev = j->next = NULL;
  l->n--;
}

static job *list_pop(job_list *l) {
  job *j = l->head;
  if (j)
    list_remove(l, j);
  return j;
}

static job *list_find(const job_list *l, int64_t id) {
  for (job *j = l->head; j; j = j->next)
    if (j->id == id)
      return j;
  return NULL;
}

/* ---- helper threads -------------------------------------------------- */

/* The configuration of the job this thread is running, NULL between jobs
 * and on every other thread. Written only by its own thread. */
static _Thread_local const ph_conf *running_conf;

const ph_conf *pool_job_conf(void) { return running_conf; }

static void *pool_worker(void *arg) {
  ph_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->queued.head && !p->stopping)
      pthread_cond_wait(&p->work_cv, &p->mu);
    job *j = list_pop(&p->queued);
    if (!j)
      break; /* stopping and nothing left to start */
    list_push(&p->running, j);
    pthread_mutex_unlock(&p->mu);

    running_conf = j->conf;
    j->work(j->arg);
    running_conf = NULL;

    pthread_mutex_lock(&p->mu);
    list_remove(&p->running, j);
    list_push(&p->completed, j);
    ev_async_send(p->loop, &p->wake);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void pool_stop_threads(ph_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->n_threads; i++)
    pthread_join(p->threads[i], NULL);
  p->n_threads = 0;
}

static int pool_start_threads(ph_pool *p, unsigned threads) {
  /* Helper threads never take process signals: a new thread inherits its
   * creator's mask (threads_block_signals). */
  sigset_t saved;
  threads_block_signals(&saved);
  int rc = 0;
  for (unsigned i = 0; i < threads; i++) {
    if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0) {
      rc = -1;
      break;
    }
    p->n_threads++;
  }
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  return rc;
}

/* ---- loop thread ------------------------------------------------------ */

static void pool_wake_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop;
  (void)revents;
  pool_drain(w->data);
}

ph_pool *pool_new(struct ev_loop *loop, unsigned threads, size_t queue_cap) {
  if (!loop || threads < 1 || threads > POOL_MAX_THREADS || queue_cap < 1)
    return NULL;
  ph_pool *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p);
    return NULL;
  }
  if (pthread_cond_init(&p->work_cv, NULL) != 0) {
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
  }
  p->loop = loop;
  p->queue_cap = queue_cap;
  p->next_id = 1;
  atomic_init(&p->outstanding, 0);
  ev_async_init(&p->wake, pool_wake_cb);
  p->wake.data = p;
  ev_async_start(loop, &p->wake);
  if (pool_start_threads(p, threads) != 0) {
    pool_stop_threads(p);
    ev_async_stop(loop, &p->wake);
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
  }
  return p;
}

int64_t pool_submit(ph_pool *p, const void *owner, ph_work_fn work,
                    ph_done_fn done, void *arg) {
  return pool_submit_conf(p, owner, work, done, arg, NULL);
}

int64_t pool_submit_conf(ph_pool *p, const void *owner, ph_work_fn work,
                         ph_done_fn done, void *arg, ph_conf *conf) {
  if (!p || !work)
    return PH_EINVAL;
  if (p->closing)
    return PH_ESTATE;
  job *j = calloc(1, sizeof(*j));
  if (!j)
    return PH_ENOMEM;
  j->owner = owner;
  j->work = work;
  j->done = done;
  j->arg = arg;

  pthread_mutex_lock(&p->mu);
  if (p->queued.n >= p->queue_cap) {
    pthread_mutex_unlock(&p->mu);
    free(j);
    return PH_EFULL;
  }
  j->id = p->next_id++;
  j->conf = conf ? conf_hold(conf) : NULL;
  list_push(&p->queued, j);
  pthread_cond_signal(&p->work_cv);
  pthread_mutex_unlock(&p->mu);

  atomic_fetch_add(&p->outstanding, 1);
  return j->id;
}

/* Runs a job's done callback on the loop thread and retires the job. Its
 * configuration is released after done, so that what work read from it
 * is still valid in done. */
static void pool_finish(ph_pool *p, job *j, int status) {
  int64_t outer = p->delivering_id;
  const void *outer_owner = p->delivering_owner;
  p->delivering_id = j->id;
  p->delivering_owner = j->owner;
  if (j->done)
    j->done(j->arg, status);
  p->delivering_id = outer;
  p->delivering_owner = outer_owner;
  if (j->conf)
    conf_free(j->conf);
  atomic_fetch_sub(&p->outstanding, 1);
  free(j);
}

int pool_cancel(ph_pool *p, const void *owner, int64_t id) {
  if (!p || id <= 0)
    return PH_ENOENT;
  /* Inside its own done() a job counts as finished. */
  if (id == p->delivering_id)
    return p->delivering_owner == owner ? PH_EBUSY : POOL_EFOREIGN;
  pthread_mutex_lock(&p->mu);
  job *j = list_find(&p->queued, id);
  if (j && j->owner == owner) {
    list_remove(&p->queued, j);
    pthread_mutex_unlock(&p->mu);
    pool_finish(p, j, PH_ECANCELED);
    return PH_OK;
  }
  if (!j)
    j = list_find(&p->running, id);
  if (!j)
    j = list_find(&p->completed, id);
  int rc = !j ? PH_ENOENT : j->owner == owner ? PH_EBUSY : POOL_EFOREIGN;
  pthread_mutex_unlock(&p->mu);
  /* A job that was already delivered or cancelled is no longer tracked. */
  return rc;
}

static job *pool_take_completed(ph_pool *p) {
  pthread_mutex_lock(&p->mu);
  job *j = list_pop(&p->completed);
  pthread_mutex_unlock(&p->mu);
  return j;
}

void pool_drain(ph_pool *p) {
  if (!p)
    return;
  /* Deliver only what had completed when the drain started, one job at a
   * time so the others stay visible to pool_cancel (PH_EBUSY) meanwhile.
   * A later completion sends its own wakeup. */
  pthread_mutex_lock(&p->mu);
  size_t budget = p->completed.n;
  pthread_mutex_unlock(&p->mu);
  job *j;
  while (budget > 0 && (j = pool_take_completed(p)) != NULL) {
    budget--;
    pool_finish(p, j, PH_OK);
  }
}

size_t pool_outstanding(ph_pool *p) {
  return p ? atomic_load(&p->outstanding) : 0;
}

void pool_free(ph_pool *p) {
  if (!p)
    return;
  p->closing = 1;

  /* Take every queued job out and tell the workers to stop in the same
   * critical section, so no worker starts one of them. */
  job_list cancelled = {0};
  pthread_mutex_lock(&p->mu);
  job *j;
  while ((j = list_pop(&p->queued)) != NULL)
    list_push(&cancelled, j);
  p->stopping = 1;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);

  while ((j = list_pop(&cancelled)) != NULL)
    pool_finish(p, j, PH_ECANCELED);

  /* Running jobs finish; joining waits for them. */
  pool_stop_threads(p);
  while ((j = pool_take_completed(p)) != NULL)
    pool_finish(p, j, PH_OK);

  ev_async_stop(p->loop, &p->wake);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

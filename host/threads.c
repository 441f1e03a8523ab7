/* SPDX-License-Identifier: BSD-2-Clause */
/* Module threads (threads.h). Each ph_thread owns a mailbox: the same
 * bounded ring and ev_async as the shared one, so delivery to the loop,
 * its order, PH_EFULL and the shutdown rule (free_arg only) are the
 * mailbox's, and one thread's backlog never takes room from anybody else.
 *
 * Lifetime: thread_start creates the OS thread, which first waits for
 * `released` (set after the module's init or start callback returned, so
 * the handle the module stored is visible to run). Joining calls stop(arg)
 * and waits on `exited` with a deadline; a thread that misses it may still
 * be using the module's state, so the process exits (5) rather than
 * destroy the module under it. */
#include "threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core_types.h"
#include "log.h"
#include "mailbox.h"
#include "metrics.h"

#define OS_NAME_MAX 15 /* the kernel's comm, without the NUL */

struct ph_thread {
  ph_ctx *ctx;
  char name[PH_THREAD_NAME_MAX + 1];
  char os_name[OS_NAME_MAX + 1];
  ph_thread_fn run;
  ph_call_fn stop;
  void *arg;
  ph_mailbox *mb;
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* CLOCK_MONOTONIC; released and exited change */
  int released;      /* mu: run may start */
  int skip_run;      /* mu: joined before it was released: no run */
  int exited;        /* mu: past run, about to end */
  int joining;       /* loop thread: a join has begun */
  ph_thread *next;   /* loop thread: the module's list */
};

/* ---- signals (shared with the helper pool) ------------------------------ */

void threads_block_signals(sigset_t *saved) {
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  pthread_sigmask(SIG_BLOCK, &all, saved);
}

/* ---- the thread itself -------------------------------------------------- */

static void *thread_main(void *arg) {
  ph_thread *t = arg;
  pthread_setname_np(pthread_self(), t->os_name);
  pthread_mutex_lock(&t->mu);
  while (!t->released)
    pthread_cond_wait(&t->cv, &t->mu);
  int skip = t->skip_run;
  pthread_mutex_unlock(&t->mu);
  if (!skip)
    t->run(t->arg);
  pthread_mutex_lock(&t->mu);
  t->exited = 1;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

/* ---- start -------------------------------------------------------------- */

static int name_valid(const char *s) {
  if (!s)
    return 0;
  size_t n = strnlen(s, PH_THREAD_NAME_MAX + 1);
  if (n < 1 || n > PH_THREAD_NAME_MAX)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '-'))
      return 0;
  return 1;
}

static ph_thread *find(ph_ctx *ctx, const char *name) {
  for (ph_thread *t = ctx->threads; t; t = t->next)
    if (strcmp(t->name, name) == 0)
      return t;
  return NULL;
}

/* NULL when the request is fine, else why not. */
static const char *refusal(ph_ctx *ctx, const char *name, ph_thread_fn run,
                           ph_call_fn stop, size_t queue) {
  if (!run || !stop)
    return "run and stop are required";
  if (!name_valid(name))
    return "invalid name (use [a-z0-9_-], 1-32 bytes)";
  if (queue < 1 || queue > PH_THREAD_QUEUE_MAX)
    return "queue out of range (1-65536)";
  if (ctx->n_threads >= PH_THREAD_MAX)
    return "too many threads";
  if (find(ctx, name))
    return "name in use";
  return NULL;
}

/* "ph-<module>-<name>", cut to what the kernel keeps. */
static void os_name(char out[OS_NAME_MAX + 1], const char *module,
                    const char *name) {
  size_t n = 0;
  const char *parts[] = {"ph-", module, "-", name};
  for (size_t i = 0; i < 4; i++)
    for (const char *p = parts[i]; *p && n < OS_NAME_MAX; p++)
      out[n++] = *p;
  out[n] = '\0';
}

static void thread_free(ph_thread *t) {
  if (t->mb)
    mailbox_free(t->mb);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static ph_thread *thread_new(ph_ctx *ctx, const char *name, ph_thread_fn run,
                             ph_call_fn stop, void *arg, size_t queue) {
  ph_thread *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->ctx = ctx;
  memcpy(t->name, name, strlen(name) + 1);
  os_name(t->os_name, ctx->name, name);
  t->run = run;
  t->stop = stop;
  t->arg = arg;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int ok = pthread_mutex_init(&t->mu, NULL) == 0;
  if (ok && pthread_cond_init(&t->cv, &ca) != 0) {
    pthread_mutex_destroy(&t->mu);
    ok = 0;
  }
  pthread_condattr_destroy(&ca);
  if (!ok) {
    free(t);
    return NULL;
  }
  t->mb = mailbox_new(ctx->core->loop, queue, ctx->m_thread_full);
  if (!t->mb) {
    thread_free(t);
    return NULL;
  }
  return t;
}

static void count_threads(ph_ctx *ctx) {
  if (ctx->m_threads)
    metrics_gauge_set(ctx->m_threads, (double)ctx->n_threads);
}

ph_thread *threads_start(ph_ctx *ctx, const char *name, ph_thread_fn run,
                         ph_call_fn stop, void *arg, size_t queue,
                         const char **why) {
  *why = refusal(ctx, name, run, stop, queue);
  if (*why)
    return NULL;
  ph_thread *t = thread_new(ctx, name, run, stop, arg, queue);
  if (!t) {
    *why = "out of memory";
    return NULL;
  }
  sigset_t saved;
  threads_block_signals(&saved);
  int rc = pthread_create(&t->tid, NULL, thread_main, t);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (rc != 0) {
    thread_free(t);
    *why = "cannot create the thread";
    return NULL;
  }
  t->next = ctx->threads;
  ctx->threads = t;
  ctx->n_threads++;
  count_threads(ctx);
  ph_log_field f[] = {PH_STR("thread", t->name), PH_UINT("queue", queue)};
  log_write(ctx->name, PH_LOG_INFO, "module thread started", f, 2);
  return t;
}

/* Lets run start, or (skip) makes sure it never will. */
static void release(ph_thread *t, int skip) {
  pthread_mutex_lock(&t->mu);
  if (!t->released) {
    t->skip_run = skip;
    t->released = 1;
    pthread_cond_broadcast(&t->cv);
  }
  pthread_mutex_unlock(&t->mu);
}

void threads_release(ph_ctx *ctx) {
  for (ph_thread *t = ctx->threads; t; t = t->next)
    release(t, 0);
}

/* ---- delivery ----------------------------------------------------------- */

int threads_post(ph_thread *t, ph_call_fn fn, void *arg, ph_free_fn free_arg) {
  return mailbox_post(t->mb, fn, arg, free_arg);
}

ph_ctx *threads_ctx(const ph_thread *t) { return t->ctx; }

/* ---- join --------------------------------------------------------------- */

static int64_t join_budget_ms(ph_ctx *ctx) {
  int64_t ms = conf_int(ctx->core->conf, "proxyhost", "drain_timeout");
  return ms < THREADS_JOIN_MIN_MS ? THREADS_JOIN_MIN_MS : ms;
}

static struct timespec deadline_in(int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* The thread may still be inside the module: freeing the module (or even
 * returning from main, which unmaps it) could crash anywhere, later. An
 * immediate exit with a clear line is the one safe ending. */
static void stuck(ph_thread *t, int64_t waited_ms) {
  ph_log_field f[] = {PH_STR("thread", t->name),
                      PH_INT("waited_ms", waited_ms)};
  log_write(t->ctx->name, PH_LOG_ERROR,
            "module thread did not return by the drain deadline; exiting "
            "without destroying modules",
            f, 2);
  _exit(PH_EXIT_DRAIN);
}

static void ask_to_stop(ph_thread *t) {
  t->joining = 1;
  release(t, 1); /* not released yet: run never starts */
  t->stop(t->arg);
}

static void wait_exited(ph_thread *t, const struct timespec *deadline,
                        int64_t budget_ms) {
  pthread_mutex_lock(&t->mu);
  int rc = 0;
  while (!t->exited && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&t->cv, &t->mu, deadline);
  int exited = t->exited;
  pthread_mutex_unlock(&t->mu);
  if (!exited)
    stuck(t, budget_ms);
  pthread_join(t->tid, NULL);
}

static void unlink_thread(ph_thread *t) {
  ph_ctx *ctx = t->ctx;
  for (ph_thread **p = &ctx->threads; *p; p = &(*p)->next)
    if (*p == t) {
      *p = t->next;
      ctx->n_threads--;
      break;
    }
  count_threads(ctx);
}

/* The OS thread is gone: discard the queue (free_arg only) and free t. */
static void finish(ph_thread *t) {
  size_t discarded = mailbox_pending(t->mb);
  unlink_thread(t);
  ph_log_field f[] = {PH_STR("thread", t->name),
                      PH_UINT("discarded", discarded)};
  log_write(t->ctx->name, PH_LOG_INFO, "module thread joined", f, 2);
  thread_free(t);
}

void threads_join(ph_thread *t) {
  if (!t || t->joining)
    return;
  ask_to_stop(t);
  int64_t budget = join_budget_ms(t->ctx);
  struct timespec deadline = deadline_in(budget);
  wait_exited(t, &deadline, budget);
  finish(t);
}

void threads_join_all(ph_ctx *ctx) {
  ph_thread *batch[PH_THREAD_MAX];
  size_t n = 0;
  /* Taken first: a stop callback may call thread_join on any of them,
   * which then finds it joining and leaves it to us. */
  for (ph_thread *t = ctx->threads; t && n < PH_THREAD_MAX; t = t->next)
    if (!t->joining) {
      t->joining = 1;
      batch[n++] = t;
    }
  if (n == 0)
    return;
  for (size_t i = 0; i < n; i++)
    ask_to_stop(batch[i]);
  int64_t budget = join_budget_ms(ctx);
  struct timespec deadline = deadline_in(budget);
  for (size_t i = 0; i < n; i++)
    wait_exited(batch[i], &deadline, budget);
  for (size_t i = 0; i < n; i++)
    finish(batch[i]);
}

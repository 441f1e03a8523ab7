/* SPDX-License-Identifier: BSD-2-Clause */
/* Module threads (ABI 1.2) through the mock host, with two test modules
 * linked into this program (tmod and tmod_b): start, OS name, delivery in
 * order on the loop through each thread's own queue, a full queue, one
 * module's queue not refusing another's, stop and join at the module's
 * stop, join with calls still queued, the drain deadline, the loop-thread
 * assertion on every loop-thread-only function (debug: abort, in a child;
 * release: refusal), and ids owned by the ctx that got them. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "loop_test.h"
#include "mock_core.h"
#include "mock_test.h"
#include "tap.h"

/* ---- the test modules --------------------------------------------------- */

typedef struct tmod_state tm;

typedef struct item {
  tm *m;
  int seq;
} item;

#define TM_RC_MAX 32
#define TM_EXTRA_MAX 16

struct tmod_state {
  /* The plan, set by the test before mock_init. */
  int when; /* 0: no thread; 1: started in init; 2: in start */
  const char *name;
  size_t queue;
  int posts;       /* run posts items 1..posts through thread_post */
  int retry;       /* retry a full queue (bounded) rather than give up */
  int ignore_stop; /* run does not return after stop (deadline test) */
  int fail_init;
  int stop_delay_ms; /* the module's stop drains this long */
  int check_starts;  /* the check callback tries thread_start */
  void (*init_hook)(tm *m);
  void (*run_hook)(tm *m);         /* on the module thread, before posting */
  long long (*misuse_call)(tm *m); /* what call_one_misuse calls */
  /* The module. */
  ph_ctx *ctx;
  const ph_api *api;
  ph_thread *t;
  ph_timer *timer, *stop_timer;
  ph_io *io;
  int pipefd[2];
  ph_topic *topic;
  int sub_id;
  ph_thread *extra[TM_EXTRA_MAX];
  long long rc[TM_RC_MAX]; /* results the hooks record */
  ph_thread *check_thread;
  /* The thread's side. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop_flag; /* under mu */
  _Atomic int running, posted, returned, posts_ok, posts_full, stops;
  _Atomic int frees, runs;
  /* The loop's side. */
  int delivered, order_errors, off_loop, pings, timer_fired, io_fired;
  int seq, done_at, thread_stop_at, destroyed;
  int returned_at_destroy, stops_at_destroy, payload_frees;
};

static tm tms[2];
static pthread_t main_thread;

static void tm_reset(void) {
  for (int i = 0; i < 2; i++) {
    memset(&tms[i], 0, sizeof(tms[i]));
    pthread_mutex_init(&tms[i].mu, NULL);
    pthread_cond_init(&tms[i].cv, NULL);
    tms[i].pipefd[0] = tms[i].pipefd[1] = -1;
  }
}

static struct timespec in_ms(long ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Loop side: checks order and thread, counts. */
static void tm_deliver(void *arg) {
  item *it = arg;
  tm *m = it->m;
  if (!pthread_equal(pthread_self(), main_thread))
    m->off_loop++;
  if (it->seq != m->delivered + 1)
    m->order_errors++;
  m->delivered++;
}

static void tm_item_free(void *arg) {
  item *it = arg;
  atomic_fetch_add(&it->m->frees, 1);
  free(it);
}

/* Posts one item; on a full queue retries (bounded) when asked to. */
static void tm_post_one(tm *m, int seq) {
  item *it = malloc(sizeof(*it));
  *it = (item){m, seq};
  for (long tries = 0;; tries++) {
    int rc = m->api->thread_post(m->t, tm_deliver, it, tm_item_free);
    if (rc == PH_OK) {
      atomic_fetch_add(&m->posts_ok, 1);
      return;
    }
    atomic_fetch_add(&m->posts_full, 1);
    if (!m->retry || tries > 10000000L)
      break;
    sched_yield();
  }
  free(it);
}

/* Waits for stop (at most 10 s, so that every run ends). */
static void tm_wait_stop(tm *m) {
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < 100 && (!m->stop_flag || m->ignore_stop); i++) {
    struct timespec ts = in_ms(100);
    pthread_cond_timedwait(&m->cv, &m->mu, &ts);
  }
  pthread_mutex_unlock(&m->mu);
}

static void tm_run(void *arg) {
  tm *m = arg;
  atomic_fetch_add(&m->runs, 1);
  atomic_store(&m->running, 1);
  if (m->run_hook)
    m->run_hook(m);
  for (int i = 1; i <= m->posts; i++)
    tm_post_one(m, i);
  atomic_store(&m->posted, 1);
  tm_wait_stop(m);
  atomic_store(&m->returned, 1);
}

static void tm_thread_stop(void *arg) {
  tm *m = arg;
  atomic_fetch_add(&m->stops, 1);
  m->thread_stop_at = ++m->seq;
  pthread_mutex_lock(&m->mu);
  m->stop_flag = 1;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
}

static ph_thread *tm_start_thread(tm *m) {
  m->t = m->api->thread_start(m->ctx, m->name ? m->name : "worker", tm_run,
                              tm_thread_stop, m, m->queue ? m->queue : 16);
  return m->t;
}

static void tm_io_cb(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  (void)revents;
  ((tm *)arg)->io_fired++;
}

static void tm_timer_cb(ph_timer *t, void *arg) {
  (void)t;
  ((tm *)arg)->timer_fired++;
}

static void tm_ping(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  (void)payload;
  ((tm *)arg)->pings++;
}

static int svc_answer(void *self) { return self != NULL; }
static const struct { int (*answer)(void *); } svc_vt = {svc_answer};

static tm *tm_of(ph_ctx *ctx, const ph_api *api) {
  return strcmp(api->module_name(ctx), "tmod") == 0 ? &tms[0] : &tms[1];
}

static int tm_check(ph_ctx *ctx, const ph_api *api, const char **key, char *why,
                    size_t whylen) {
  (void)key;
  (void)why;
  (void)whylen;
  tm *m = tm_of(ctx, api);
  if (m->check_starts)
    m->check_thread =
        api->thread_start(ctx, "checked", tm_run, tm_thread_stop, m, 4);
  return PH_OK;
}

static int tm_init(ph_ctx *ctx, const ph_api *api, void **state) {
  tm *m = tm_of(ctx, api);
  *state = m;
  m->ctx = ctx;
  m->api = api;
  if (pipe(m->pipefd) < 0 || write(m->pipefd[1], "x", 1) != 1)
    return PH_EINVAL; /* readable: a started watcher would fire */
  m->io = api->io_new(ctx, m->pipefd[0], 0, tm_io_cb, m);
  m->timer = api->timer_new(ctx, tm_timer_cb, m);
  m->topic = api->topic(ctx, "tm.ping", "tm.ping/1");
  m->sub_id = m->topic ? api->subscribe(ctx, m->topic, tm_ping, m) : -1;
  if (!m->io || !m->timer || m->sub_id <= 0)
    return PH_EINVAL;
  if (m == &tms[0] &&
      api->service_register(ctx, "tm.svc", 1, 0, &svc_vt, m) != PH_OK)
    return PH_EINVAL;
  if (m->init_hook)
    m->init_hook(m);
  if (m->when == 1 && !tm_start_thread(m))
    return PH_EINVAL;
  return m->fail_init ? PH_EINVAL : PH_OK;
}

static int tm_start(void *state) {
  tm *m = state;
  if (m->when == 2 && !tm_start_thread(m))
    return PH_EINVAL;
  return PH_OK;
}

static void tm_stop_timer_cb(ph_timer *t, void *arg) {
  (void)t;
  tm *m = arg;
  m->done_at = ++m->seq;
  m->api->stop_done(m->ctx);
}

static int tm_stop(void *state) {
  tm *m = state;
  if (m->stop_delay_ms <= 0)
    return PH_OK;
  m->stop_timer = m->api->timer_new(m->ctx, tm_stop_timer_cb, m);
  m->api->timer_set(m->stop_timer, (uint64_t)m->stop_delay_ms, 0);
  return PH_STOP_PENDING;
}

static void tm_destroy(void *state) {
  tm *m = state;
  m->returned_at_destroy = atomic_load(&m->returned);
  m->stops_at_destroy = atomic_load(&m->stops);
  m->destroyed = 1;
  if (m->api) {
    m->api->io_free(m->io);
    m->api->timer_free(m->timer);
    m->api->timer_free(m->stop_timer);
  }
  for (int i = 0; i < 2; i++)
    if (m->pipefd[i] >= 0)
      close(m->pipefd[i]);
  PH_LOG(m->api, m->ctx, PH_LOG_INFO, "tm destroyed");
}

/* tmod provides tm.svc; tmod_b, the same module under another name,
 * nothing. */
#define TM_CALLBACKS                                                           \
  .init = tm_init, .check = tm_check, .start = tm_start, .stop = tm_stop,      \
  .destroy = tm_destroy
MOCK_TEST_MODULE(mod_a, "tmod", "1.0", .provides = MOCK_TEST_NAMES("tm.svc"),
                 TM_CALLBACKS);
MOCK_TEST_MODULE(mod_b, "tmod_b", "1.0", TM_CALLBACKS);

/* ---- helpers ------------------------------------------------------------ */

static char err[8192];
static char log_path[256];

/* A mock host with tmod (and tmod_b when both), logging to log_path
 * (emptied first). started: through start; else only through new/add. */
static ph_mock *setup_mock(int both, const char *extra, int init, int start) {
  char text[1024];
  snprintf(text, sizeof(text),
           "[proxyhost]\nthreads = 1\n%s[log]\nfile = %s\nlevel = info\n",
           extra ? extra : "", log_path);
  if (strcmp(log_path, "-") != 0 && truncate(log_path, 0) < 0)
    printf("# cannot empty %s\n", log_path);
  err[0] = '\0';
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  if (!m || ph_mock_add(m, &mod_a, err, sizeof err) < 0 ||
      (both && ph_mock_add(m, &mod_b, err, sizeof err) < 0) ||
      (init && ph_mock_init(m, err, sizeof err) < 0) ||
      (start && ph_mock_start(m, err, sizeof err) < 0)) {
    printf("# setup failed: %s\n", err);
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

static ph_mock *started_mock(int both, const char *extra) {
  return setup_mock(both, extra, 1, 1);
}

/* The log written so far (static buffer). */
static const char *log_text(void) {
  static char buf[1 << 16];
  buf[0] = '\0';
  FILE *f = fopen(log_path, "r");
  if (!f)
    return buf;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Waits (at most 5 s) for an atomic flag set by a module thread. */
static int wait_atomic(_Atomic int *p, int want) {
  for (int i = 0; i < 500; i++) {
    if (atomic_load(p) >= want)
      return 1;
    usleep(10000);
  }
  return atomic_load(p) >= want;
}

/* How many of this process's threads have comm equal to name. */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[320], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    if (fgets(comm, sizeof(comm), f))
      comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    n += strcmp(comm, name) == 0;
  }
  closedir(d);
  return n;
}

/* The count of threads named name once it is zero, or after 2 s: the
 * kernel removes an exited thread's /proc entry just after the join that
 * waited for it may have returned (the thread cleared its tid first). */
static int threads_named_after_join(const char *name) {
  int n = threads_named(name);
  for (int i = 0; n > 0 && i < 200; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    n = threads_named(name);
  }
  return n;
}

/* Runs fn(arg) in a child process with stderr in a file; returns the
 * wait status and the child's stderr in out. alarm bounds the child. */
static int in_child(void (*fn)(void *), void *arg, char *out, size_t outlen) {
  char path[256];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof(path), "%s/ph-test-threads-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  unlink(path);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    alarm(20);
    fn(arg);
    _exit(0);
  }
  int status = -1;
  if (pid > 0)
    waitpid(pid, &status, 0);
  out[0] = '\0';
  ssize_t n = pread(fd, out, outlen - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  return status;
}

/* ---- start, name, log, join at stop ------------------------------------- */

static void test_start_and_name(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].name = "worker";
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL, "a module starts a thread in start");
  if (!m)
    return;
  ok(tms[0].t != NULL, "thread_start returns the thread");
  ok(wait_atomic(&tms[0].running, 1), "run runs on the new thread");
  is_int(threads_named("ph-tmod-worker"), 1,
         "the OS thread is named ph-<module>-<name>");
  like(log_text(), "module=tmod msg=\"module thread started\" thread=worker",
       "the start is logged with the module and thread names");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"tmod\"} 1",
       "proxyhost_module_threads counts it");
  is_int(atomic_load(&tms[0].stops), 0, "stop not called while running");
  is_int(ph_mock_stop(m), 0, "the module stops");
  is_int(atomic_load(&tms[0].stops), 1, "the thread's stop ran once");
  is_int(atomic_load(&tms[0].returned), 1,
         "run returned: the host joined the thread at the module's stop");
  is_int(threads_named_after_join("ph-tmod-worker"), 0, "the OS thread is gone");
  like(log_text(), "module=tmod msg=\"module thread joined\" thread=worker",
       "the join is logged");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"tmod\"} 0",
       "and no longer counted");
  ph_mock_free(m);
  is_int(atomic_load(&tms[0].stops), 1, "stop is not called again at free");
}

static void test_long_name(void) {
  tm_reset();
  tms[0].when = 1;
  tms[0].name = "abcdefghijklmnopqrstuvwxyz012345"; /* 32 bytes */
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL && tms[0].t != NULL, "a 32-byte name is accepted in init");
  if (!m)
    return;
  ok(wait_atomic(&tms[0].running, 1), "a thread started in init runs");
  is_int(threads_named("ph-tmod-abcdefg"), 1,
         "the OS name is truncated to 15 bytes");
  like(log_text(), "thread=abcdefghijklmnopqrstuvwxyz012345",
       "the log has the whole name");
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* ---- delivery ----------------------------------------------------------- */

static void test_post_order(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].queue = 64;
  tms[0].posts = 5000;
  tms[0].retry = 1; /* the loop drains while the thread posts */
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL, "a thread posting 5000 calls through a 64-call queue");
  if (!m)
    return;
  ok(poll_until(ph_mock_loop(m), tms[0].delivered >= 5000, 5000),
     "every call delivered");
  is_int(tms[0].order_errors, 0, "in posting order");
  is_int(tms[0].off_loop, 0, "on the loop thread");
  is_int(atomic_load(&tms[0].frees), 5000, "free_arg after each call");
  printf("# %d posts refused with PH_EFULL and retried\n",
         atomic_load(&tms[0].posts_full));
  char want[128];
  snprintf(want, sizeof(want),
           "proxyhost_thread_queue_full_total{module=\"tmod\"} %d",
           atomic_load(&tms[0].posts_full));
  like(ph_mock_metrics_text(m), want, "each refusal counted");
  ph_mock_stop(m);
  ph_mock_free(m);
}

static void test_full_queue(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].queue = 4;
  tms[0].posts = 10;
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL, "a thread posting 10 calls into a 4-call queue");
  if (!m)
    return;
  /* The loop does not run until the test says so: nothing drains. */
  ok(wait_atomic(&tms[0].posted, 1), "the thread finished posting");
  is_int(atomic_load(&tms[0].posts_ok), 4, "4 posts accepted");
  is_int(atomic_load(&tms[0].posts_full), 6, "6 refused with PH_EFULL");
  like(ph_mock_metrics_text(m),
       "proxyhost_thread_queue_full_total{module=\"tmod\"} 6",
       "proxyhost_thread_queue_full_total{module} counts them");
  unlike(ph_mock_metrics_text(m), "proxyhost_mailbox_full_total 1",
         "the shared mailbox is not involved");
  ok(poll_until(ph_mock_loop(m), tms[0].delivered >= 4, 5000),
     "the accepted 4 run");
  is_int(tms[0].order_errors, 0, "in order");
  is_int(atomic_load(&tms[0].frees), 4,
         "the refused ones stayed the poster's (freed by it)");
  ph_mock_stop(m);
  ph_mock_free(m);
}

static int shared_runs;
static void shared_fn(void *arg) {
  (void)arg;
  shared_runs++;
}

static void test_isolation(void) {
  tm_reset();
  tms[0].when = tms[1].when = 2;
  tms[0].queue = 2;
  tms[0].posts = 10; /* fills its queue */
  tms[1].queue = 8;
  tms[1].posts = 5;
  ph_mock *m = started_mock(1, "mailbox_size = 1\n");
  ok(m != NULL, "two modules with a thread each");
  if (!m)
    return;
  ok(wait_atomic(&tms[0].posted, 1) && wait_atomic(&tms[1].posted, 1),
     "both threads posted");
  is_int(atomic_load(&tms[0].posts_full), 8, "tmod's queue is full");
  is_int(atomic_load(&tms[1].posts_ok), 5,
         "tmod_b's posts are all accepted meanwhile");
  is_int(atomic_load(&tms[1].posts_full), 0, "none refused");
  shared_runs = 0;
  is_int(ph_host_api.post(tms[1].ctx, shared_fn, NULL, NULL), PH_OK,
         "api->post (the shared mailbox, size 1) is not refused either");
  is_int(ph_host_api.post(tms[1].ctx, shared_fn, NULL, NULL), PH_EFULL,
         "the shared mailbox is full on its own terms");
  like(ph_mock_metrics_text(m),
       "proxyhost_thread_queue_full_total{module=\"tmod_b\"} 0",
       "tmod_b counts no refusal");
  ok(poll_until(ph_mock_loop(m), tms[1].delivered >= 5, 5000),
     "tmod_b's calls run");
  ok(poll_until(ph_mock_loop(m), tms[0].delivered >= 2, 5000),
     "and tmod's accepted two");
  is_int(shared_runs, 1, "and the shared mailbox's call");
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* ---- join --------------------------------------------------------------- */

static void test_join_with_queued(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].queue = 8;
  tms[0].posts = 5;
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL, "a thread with 5 calls queued");
  if (!m)
    return;
  ok(wait_atomic(&tms[0].posted, 1), "posted");
  ph_host_api.thread_join(tms[0].t);
  tms[0].t = NULL;
  is_int(atomic_load(&tms[0].stops), 1, "thread_join calls stop");
  is_int(atomic_load(&tms[0].returned), 1, "and joins: run has returned");
  is_int(atomic_load(&tms[0].frees), 5,
         "the queued calls' free_arg ran (ASan: none leaks)");
  ph_mock_run_for(m, 20);
  is_int(tms[0].delivered, 0, "and their fn never runs");
  like(log_text(), "module=tmod msg=\"module thread joined\" thread=worker",
       "the join is logged");
  like(log_text(), "discarded=5", "with the number of calls discarded");
  is_int(threads_named_after_join("ph-tmod-worker"), 0, "the OS thread is gone");
  ph_host_api.thread_join(NULL);
  ok(1, "thread_join(NULL) is ignored");
  ph_mock_stop(m);
  is_int(atomic_load(&tms[0].stops), 1, "the module's stop joins nothing more");
  ph_mock_free(m);
}

static void test_join_after_pending_stop(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].stop_delay_ms = 50;
  ph_mock *m = started_mock(0, "drain_timeout = 5s\n");
  ok(m != NULL, "a module that drains asynchronously");
  if (!m)
    return;
  is_int(ph_mock_stop(m), 0, "it drains");
  ok(tms[0].done_at > 0 && tms[0].thread_stop_at > tms[0].done_at,
     "its thread is stopped after stop_done, not while it drains");
  is_int(atomic_load(&tms[0].returned), 1, "and joined");
  ph_mock_free(m);
}

static void test_join_when_init_fails(void) {
  tm_reset();
  tms[0].when = 1;
  tms[1].fail_init = 1;
  ph_mock *m = setup_mock(1, NULL, 0, 0);
  ok(m != NULL, "tmod starts a thread in init, tmod_b's init fails");
  if (!m)
    return;
  is_int(ph_mock_init(m, err, sizeof err), -1, "init fails");
  ph_mock_free(m);
  is_int(tms[0].stops_at_destroy, 1,
         "the thread was stopped before tmod's destroy");
  is_int(tms[0].returned_at_destroy, 1, "and joined before it");
  ok(atomic_load(&tms[0].runs) <= 1, "run ran at most once");
}

/* ---- limits and bad arguments ------------------------------------------- */

static void dummy_run(void *arg) { (void)arg; }
static void dummy_stop(void *arg) { (void)arg; }

static void bad_args_hook(tm *m) {
  const ph_api *a = m->api;
  ph_ctx *c = m->ctx;
  long long *rc = m->rc;
  rc[0] = a->thread_start(c, "", dummy_run, dummy_stop, m, 1) != NULL;
  rc[1] = a->thread_start(c, "abcdefghijklmnopqrstuvwxyz0123456", dummy_run,
                          dummy_stop, m, 1) != NULL; /* 33 bytes */
  rc[2] = a->thread_start(c, "Upper", dummy_run, dummy_stop, m, 1) != NULL;
  rc[3] = a->thread_start(c, "a.b", dummy_run, dummy_stop, m, 1) != NULL;
  rc[4] = a->thread_start(c, NULL, dummy_run, dummy_stop, m, 1) != NULL;
  rc[5] = a->thread_start(c, "x", NULL, dummy_stop, m, 1) != NULL;
  rc[6] = a->thread_start(c, "x", dummy_run, NULL, m, 1) != NULL;
  rc[7] = a->thread_start(c, "x", dummy_run, dummy_stop, m, 0) != NULL;
  rc[8] = a->thread_start(c, "x", dummy_run, dummy_stop, m,
                          PH_THREAD_QUEUE_MAX + 1) != NULL;
  /* Eight threads are fine, the ninth is over the limit. */
  char name[16];
  int n_ok = 0;
  for (int i = 0; i < PH_THREAD_MAX; i++) {
    snprintf(name, sizeof(name), "t-%d_x", i);
    m->extra[i] = a->thread_start(c, name, dummy_run, dummy_stop, m,
                                  i == 0 ? PH_THREAD_QUEUE_MAX : 1);
    n_ok += m->extra[i] != NULL;
  }
  rc[9] = n_ok;
  rc[10] = a->thread_start(c, "ninth", dummy_run, dummy_stop, m, 1) != NULL;
  a->thread_join(m->extra[1]); /* joined before init returned: run skipped */
  m->extra[1] = NULL;
  rc[11] = a->thread_start(c, "t-0_x", dummy_run, dummy_stop, m, 1) != NULL;
  m->extra[8] = a->thread_start(c, "t-1_x", dummy_run, dummy_stop, m, 1);
  rc[12] = m->extra[8] != NULL; /* its name and room are free again */
  rc[13] = a->thread_post(NULL, tm_deliver, NULL, NULL);
  rc[14] = a->thread_post(m->extra[0], NULL, NULL, NULL);
}

static void test_bad_arguments(void) {
  tm_reset();
  tms[0].init_hook = bad_args_hook;
  tms[0].check_starts = 1;
  ph_mock *m = started_mock(0, NULL);
  ok(m != NULL, "a module trying bad thread arguments in init");
  if (!m)
    return;
  ok(tms[0].check_thread == NULL, "no thread in check");
  long long *rc = tms[0].rc;
  ok(!rc[0], "empty name refused");
  ok(!rc[1], "33-byte name refused");
  ok(!rc[2], "upper case refused");
  ok(!rc[3], "a dot refused");
  ok(!rc[4], "NULL name refused");
  ok(!rc[5], "NULL run refused");
  ok(!rc[6], "NULL stop refused");
  ok(!rc[7], "queue 0 refused");
  ok(!rc[8], "queue above PH_THREAD_QUEUE_MAX refused");
  is_int(rc[9], PH_THREAD_MAX, "PH_THREAD_MAX threads start");
  ok(!rc[10], "one more is refused");
  ok(!rc[11], "a name in use is refused");
  ok(rc[12], "a joined thread's name and room are free again");
  is_int(rc[13], PH_EINVAL, "thread_post(NULL) is PH_EINVAL");
  is_int(rc[14], PH_EINVAL, "thread_post without fn is PH_EINVAL");
  like(log_text(), "msg=\"module thread refused\"", "refusals are logged");
  like(log_text(), "reason=\"too many threads\"", "with the reason");
  ok(ph_host_api.thread_start(tms[0].ctx, "late", dummy_run, dummy_stop, NULL,
                              1) == NULL,
     "thread_start after start (outside init and start) is refused");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"tmod\"} 8",
       "8 running");
  is_int(ph_mock_stop(m), 0, "the module stops");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"tmod\"} 0",
       "all of them joined");
  ph_mock_free(m);
}

/* ---- the drain deadline ------------------------------------------------- */

static void child_stuck(void *arg) {
  (void)arg;
  tm_reset();
  tms[0].when = 2;
  tms[0].ignore_stop = 1;
  snprintf(log_path, sizeof(log_path), "-"); /* stderr: the file */
  ph_mock *m = started_mock(0, "drain_timeout = 100ms\n");
  if (!m)
    _exit(90);
  wait_atomic(&tms[0].running, 1);
  ph_mock_stop(m); /* the host exits here */
  _exit(91);
}

static void test_drain_deadline(void) {
  char out[1 << 14];
  char saved[sizeof(log_path)];
  memcpy(saved, log_path, sizeof(saved));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = in_child(child_stuck, NULL, out, sizeof(out));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  memcpy(log_path, saved, sizeof(saved));
  double secs =
      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 5,
     "a thread that ignores stop: the host exits 5");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 5)
    printf("# status 0x%x\n%s", st, out);
  like(out,
       "module=tmod msg=\"module thread did not return by the drain "
       "deadline",
       "and says why, naming the module");
  like(out, "thread=worker", "and the thread");
  unlike(out, "tm destroyed", "without destroying the module under it");
  ok(secs >= 0.9 && secs < 10, "after at least 1 s (drain_timeout 100ms)");
}

/* ---- the loop-thread assertion ------------------------------------------ */

static void nop_work(void *arg) { (void)arg; }
static void nop_done(void *arg, int status) {
  (void)arg;
  (void)status;
}

static void count_payload_free(void *p) {
  tms[0].payload_frees++;
  free(p);
}

typedef struct misuse {
  const char *fn;
  long long (*call)(tm *m);
  long long refused; /* the documented result of a refused call */
} misuse;

#define M(name) static long long mu_##name(tm *m)
M(set_ready) {
  m->api->set_ready(m->ctx, 0);
  return 0;
}
M(stop_done) {
  m->api->stop_done(m->ctx);
  return 0;
}
M(stopping) { return m->api->stopping(m->ctx); }
M(loop) { return m->api->loop(m->ctx) != NULL; }
M(io_new) {
  return m->api->io_new(m->ctx, m->pipefd[0], PH_READ, tm_io_cb, m) != NULL;
}
M(io_set) {
  m->api->io_set(m->io, PH_READ);
  return 0;
}
M(io_free) {
  m->api->io_free(m->io);
  return 0;
}
M(timer_new) { return m->api->timer_new(m->ctx, tm_timer_cb, m) != NULL; }
M(timer_set) {
  m->api->timer_set(m->timer, 1, 0);
  return 0;
}
M(timer_free) {
  m->api->timer_free(m->timer);
  return 0;
}
M(submit) { return m->api->submit(m->ctx, nop_work, nop_done, m); }
M(job_cancel) { return m->api->job_cancel(m->ctx, 1); }
M(service_register) {
  return m->api->service_register(m->ctx, "tm.other", 1, 0, &svc_vt, m);
}
M(service_get) {
  void *self;
  return m->api->service_get(m->ctx, "tm.svc", 1, 0, &self) != NULL;
}
M(service_release) {
  m->api->service_release(m->ctx, "tm.svc");
  return 0;
}
M(service_unregister) { return m->api->service_unregister(m->ctx, "tm.svc"); }
M(topic) { return m->api->topic(m->ctx, "tm.other", "x/1") != NULL; }
M(subscribe) { return m->api->subscribe(m->ctx, m->topic, tm_ping, m); }
M(unsubscribe) { return m->api->unsubscribe(m->ctx, m->sub_id); }
M(publish) {
  return m->api->publish(m->ctx, m->topic, strdup("x"), count_payload_free);
}
M(metric) {
  ph_metric_def d = {
      "tm_other_total", "x", PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  return m->api->metric(m->ctx, &d) != NULL;
}
M(service_provided) { return m->api->service_provided(m->ctx, "tm.svc"); }
M(thread_start) {
  return m->api->thread_start(m->ctx, "other", dummy_run, dummy_stop, m, 1) !=
         NULL;
}
M(thread_join) {
  m->api->thread_join(m->t);
  return 0;
}
#undef M

#define MU(name, refused)                                                      \
  { #name, mu_##name, refused }
static const misuse misuses[] = {
    MU(set_ready, 0),
    MU(stop_done, 0),
    MU(stopping, PH_ESTATE),
    MU(loop, 0),
    MU(io_new, 0),
    MU(io_set, 0),
    MU(io_free, 0),
    MU(timer_new, 0),
    MU(timer_set, 0),
    MU(timer_free, 0),
    MU(submit, PH_ESTATE),
    MU(job_cancel, PH_ESTATE),
    MU(service_register, PH_ESTATE),
    MU(service_get, 0),
    MU(service_release, 0),
    MU(service_unregister, PH_ESTATE),
    MU(topic, 0),
    MU(subscribe, PH_ESTATE),
    MU(unsubscribe, PH_ESTATE),
    MU(publish, PH_ESTATE),
    MU(metric, 0),
    MU(service_provided, 0),
    MU(thread_start, 0),
    MU(thread_join, 0),
};
#undef MU
#define N_MISUSES (sizeof(misuses) / sizeof(misuses[0]))

/* Release: every call is refused, nothing happens, the process goes on. */
static void call_every_misuse(tm *m) {
  for (size_t i = 0; i < N_MISUSES && i < TM_RC_MAX; i++)
    m->rc[i] = misuses[i].call(m);
}

static void test_release_refusals(void) {
  tm_reset();
  tms[0].when = 2;
  tms[0].run_hook = call_every_misuse;
  ph_mock *m = setup_mock(0, NULL, 0, 0);
  ok(m != NULL, "a module thread calling every loop-thread-only function");
  if (!m)
    return;
  debug_checks = 0; /* as in a release build (mock_new turned it on) */
  if (ph_mock_init(m, err, sizeof err) < 0 ||
      ph_mock_start(m, err, sizeof err) < 0) {
    ok(0, "init and start");
    ph_mock_free(m);
    debug_checks = 1;
    return;
  }
  ok(wait_atomic(&tms[0].posted, 1), "the calls returned");
  ph_mock_run_for(m, 50);
  for (size_t i = 0; i < N_MISUSES; i++) {
    char name[96];
    snprintf(name, sizeof(name), "release: %s from a module thread refused",
             misuses[i].fn);
    is_int(tms[0].rc[i], misuses[i].refused, name);
  }
  is_int(tms[0].io_fired + tms[0].timer_fired, 0,
         "no watcher or timer was started by a refused call");
  ok(ph_mock_ready(m), "set_ready(0) was refused");
  is_int(tms[0].payload_frees, 1, "a refused publish still frees its payload");
  is_int(ph_mock_publish(m, "tm.ping", "tm.ping/1", NULL, NULL), PH_OK,
         "publish");
  is_int(tms[0].pings, 1,
         "the handler ran once: neither unsubscribed nor subscribed twice");
  ok(ph_host_api.service_provided(tms[0].ctx, "tm.svc") == 1,
     "on the loop thread the same call answers");
  like(log_text(), "msg=\"API misuse by a module\"", "each misuse is logged");
  like(log_text(), "misuse=\"set_ready: loop thread only\"",
       "naming the function and the rule");
  is_int(ph_mock_stop(m), 0, "the module still stops");
  is_int(atomic_load(&tms[0].returned), 1, "its thread is joined");
  debug_checks = 1;
  ph_mock_free(m);
}

static void call_one_misuse(tm *m) { m->misuse_call(m); }

static void child_misuse(void *arg) {
  const misuse *mc = arg;
  tm_reset();
  tms[0].when = 2;
  tms[0].run_hook = call_one_misuse;
  tms[0].misuse_call = mc->call;
  snprintf(log_path, sizeof(log_path), "-");
  ph_mock *m = started_mock(0, NULL);
  if (!m)
    _exit(90);
  for (int i = 0; i < 200; i++)
    ph_mock_run_for(m, 10); /* the thread's call aborts the process */
  _exit(0);
}

static void test_debug_aborts(void) {
  char saved[sizeof(log_path)];
  memcpy(saved, log_path, sizeof(saved));
  for (size_t i = 0; i < N_MISUSES; i++) {
    char out[1 << 14], name[128], want[96];
    int st = in_child(child_misuse, (void *)&misuses[i], out, sizeof(out));
    snprintf(name, sizeof(name),
             "debug: %s from a module thread aborts (SIGABRT)", misuses[i].fn);
    ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, name);
    snprintf(want, sizeof(want), "misuse=\"%s: loop thread only\"",
             misuses[i].fn);
    snprintf(name, sizeof(name), "debug: %s: the message names it",
             misuses[i].fn);
    like(out, want, name);
  }
  memcpy(log_path, saved, sizeof(saved));
}

/* ---- ids belong to the ctx that got them -------------------------------- */

static _Atomic int gate;
static int done_status[4], done_calls[4];

static void gate_work(void *arg) {
  (void)arg;
  for (int i = 0; i < 500 && !atomic_load(&gate); i++)
    usleep(10000);
}

static void rec_done(void *arg, int status) {
  int i = (int)(intptr_t)arg;
  done_status[i] = status;
  done_calls[i]++;
}

static void test_foreign_ids(void) {
  tm_reset();
  ph_mock *m = started_mock(1, NULL);
  ok(m != NULL, "two modules (one helper thread)");
  if (!m)
    return;
  debug_checks = 0; /* the refusal path, as in release */
  memset(done_status, 0, sizeof(done_status));
  memset(done_calls, 0, sizeof(done_calls));
  atomic_store(&gate, 0);
  ph_ctx *a = tms[0].ctx, *b = tms[1].ctx;
  int64_t running = ph_host_api.submit(a, gate_work, rec_done, (void *)0);
  int64_t queued = ph_host_api.submit(a, gate_work, rec_done, (void *)1);
  ok(running > 0 && queued > 0, "tmod submits two jobs");
  is_int(ph_host_api.job_cancel(b, queued), PH_ENOENT,
         "tmod_b cannot cancel tmod's queued job (PH_ENOENT)");
  is_int(ph_host_api.job_cancel(b, running), PH_ENOENT, "nor its running one");
  is_int(done_calls[1], 0, "the queued job was not touched");
  like(log_text(), "misuse=\"job_cancel: the job belongs to another module\"",
       "the misuse is logged");
  is_int(ph_host_api.job_cancel(a, queued), PH_OK, "tmod can");
  is_int(done_status[1], PH_ECANCELED, "its done ran with PH_ECANCELED");
  atomic_store(&gate, 1);
  ok(poll_until(ph_mock_loop(m), done_calls[0] >= 1, 5000),
     "the running job finishes");
  is_int(done_status[0], PH_OK, "normally");

  is_int(ph_host_api.unsubscribe(b, tms[0].sub_id), PH_ENOENT,
         "tmod_b cannot unsubscribe tmod's handler (PH_ENOENT)");
  like(log_text(),
       "misuse=\"unsubscribe: the subscription belongs to another module\"",
       "the misuse is logged");
  ph_mock_publish(m, "tm.ping", "tm.ping/1", NULL, NULL);
  is_int(tms[0].pings, 1, "tmod's handler still runs");
  is_int(ph_host_api.unsubscribe(a, tms[0].sub_id), PH_OK, "tmod can");
  ph_mock_publish(m, "tm.ping", "tm.ping/1", NULL, NULL);
  is_int(tms[0].pings, 1, "then it no longer runs");
  is_int(tms[1].pings, 2, "tmod_b's own handler ran both times");
  debug_checks = 1;
  ph_mock_stop(m);
  ph_mock_free(m);
}

static void child_foreign(void *arg) {
  int which = (int)(intptr_t)arg;
  tm_reset();
  snprintf(log_path, sizeof(log_path), "-");
  ph_mock *m = started_mock(1, NULL);
  if (!m)
    _exit(90);
  if (which == 0) {
    atomic_store(&gate, 0);
    int64_t id = ph_host_api.submit(tms[0].ctx, gate_work, rec_done, NULL);
    ph_host_api.job_cancel(tms[1].ctx, id);
    atomic_store(&gate, 1);
  } else {
    ph_host_api.unsubscribe(tms[1].ctx, tms[0].sub_id);
  }
  _exit(0);
}

static void test_foreign_ids_debug(void) {
  char saved[sizeof(log_path)], out[1 << 14];
  memcpy(saved, log_path, sizeof(saved));
  int st = in_child(child_foreign, (void *)0, out, sizeof(out));
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
     "debug: cancelling another module's job aborts");
  like(out, "job_cancel: the job belongs to another module",
       "debug: with the message");
  st = in_child(child_foreign, (void *)1, out, sizeof(out));
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
     "debug: unsubscribing another module's handler aborts");
  like(out, "unsubscribe: the subscription belongs to another module",
       "debug: with the message");
  memcpy(log_path, saved, sizeof(saved));
}

int main(void) {
  plan_lazy();
  main_thread = pthread_self();
  const char *tmp = getenv("TMPDIR");
  snprintf(log_path, sizeof(log_path), "%s/ph-test-threads-log-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(log_path);
  if (fd < 0) {
    printf("Bail out! cannot create a log file\n");
    return 1;
  }
  close(fd);
  err[0] = '\0';
  test_start_and_name();
  test_long_name();
  test_post_order();
  test_full_queue();
  test_isolation();
  test_join_with_queued();
  test_join_after_pending_stop();
  test_join_when_init_fails();
  test_bad_arguments();
  test_drain_deadline();
  /* Before the release refusals: debug_misuse's log is rate-limited. */
  test_foreign_ids();
  test_foreign_ids_debug();
  test_release_refusals();
  test_debug_aborts();
  unlink(log_path);
  return done_testing();
}

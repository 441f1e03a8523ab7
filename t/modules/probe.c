/* SPDX-License-Identifier: BSD-2-Clause */
/* probe: a test module that exercises the SDK from the module side. The
 * integration tests and the mock-host test drive it through its config:
 * readiness, slow drains, failing init/start, helper-thread jobs, bus
 * traffic, a service for probe_user, a check callback for a value only it
 * judges (word), module threads (ABI 1.2) posting back to the loop, an
 * admin route (ABI 1.3: route, route_delay) that echoes what it got, and
 * metrics that report what happened. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/module.h>

typedef struct probe_echo_v1 {
  int (*echo)(void *self, int x);
} probe_echo_v1;

typedef struct probe probe;

/* One module thread: posts thread_posts calls, then waits for stop. */
typedef struct probe_thread {
  probe *p;
  ph_thread *t;
  int64_t posts;
  int ignore_stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop; /* under mu */
} probe_thread;

#define PROBE_THREADS 8
#define PROBE_ROUTE_PENDING 4

/* A route request waiting for route_delay. */
typedef struct probe_pending {
  int64_t id; /* 0: free */
  const ph_http_request *r;
} probe_pending;

struct probe {
  ph_ctx *ctx;
  const ph_api *api;
  int started;
  ph_timer *stop_timer;
  ph_topic *reload_topic, *ping_topic;
  ph_series *reloads, *jobs_done, *reload_msgs, *pings;
  ph_series *thread_calls, *thread_full, *thread_stops;
  int64_t jobs_left;
  probe_thread threads[PROBE_THREADS];
  int n_threads;
  ph_timer *route_timer;
  probe_pending pending[PROBE_ROUTE_PENDING];
  ph_series *route_requests, *route_cancels;
};

static const ph_api *api;

static const ph_conf_key probe_keys[] = {
    PH_CONF_KEY("greeting", PH_CONF_STRING, "hello", 1, 64, 0, NULL,
     "logged at start and on reload", NULL),
    PH_CONF_KEY("secret", PH_CONF_STRING, "", 0, 128, PH_CONF_SENSITIVE,
     "PROBE_SECRET", "a secret that must never be printed", NULL),
    /* A key with a command-line flag (ABI 1.4): proxyhost -probe-count N. */
    PH_CONF_KEY_FLAG("probe-count", "count", PH_CONF_INT, "3", 0, 100, 0, NULL,
     "a bounded integer", NULL),
    PH_CONF_KEY("ready", PH_CONF_BOOL, "true", 0, 0, 0, NULL,
     "whether the module reports ready", NULL),
    PH_CONF_KEY("stop_delay", PH_CONF_DURATION, "0", 0, 60000, 0, NULL,
     "how long stop takes to drain", NULL),
    PH_CONF_KEY("fail_init", PH_CONF_BOOL, "false", 0, 0, 0, NULL, "init fails", NULL),
    PH_CONF_KEY("fail_start", PH_CONF_BOOL, "false", 0, 0, 0, NULL, "start fails",
     NULL),
    PH_CONF_KEY("fail_reload", PH_CONF_BOOL, "false", 0, 0, 0, NULL, "reload fails",
     NULL),
    PH_CONF_KEY("jobs", PH_CONF_INT, "0", 0, 1000, 0, NULL,
     "helper-thread jobs submitted at start", NULL),
    PH_CONF_KEY("tags", PH_CONF_LIST, "a,b", 0, 8, 0, NULL, "a list", NULL),
    PH_CONF_KEY("mode", PH_CONF_ENUM, "fast", 0, 0, 0, NULL, "an enum", "fast|safe"),
    PH_CONF_KEY("fixed", PH_CONF_INT, "1", 0, 9, PH_CONF_RESTART, NULL,
     "read at start only", NULL),
    PH_CONF_KEY("buffer", PH_CONF_SIZE, "64KiB", 1024, 1 << 30, 0, NULL, "a size",
     NULL),
    PH_CONF_KEY("word", PH_CONF_STRING, "probe", 0, 32, 0, NULL,
     "lower-case letters only: a value only the module's check judges",
     NULL),
    PH_CONF_KEY("threads", PH_CONF_INT, "0", 0, PROBE_THREADS, 0, NULL,
     "module threads started at start (t0, t1, ...)", NULL),
    PH_CONF_KEY("thread_posts", PH_CONF_INT, "0", 0, 100000, 0, NULL,
     "calls each thread posts back to the loop", NULL),
    PH_CONF_KEY("thread_queue", PH_CONF_INT, "64", 1, PH_THREAD_QUEUE_MAX, 0, NULL,
     "each thread's delivery queue", NULL),
    PH_CONF_KEY("route", PH_CONF_STRING, "", 0, 64, PH_CONF_RESTART, NULL,
                "an admin route prefix to serve (ABI 1.3), e.g. /v1/probe",
                NULL),
    PH_CONF_KEY("route_delay", PH_CONF_DURATION, "0", 0, 600000, 0, NULL,
                "answer route requests after this long (0: at once)", NULL),
    PH_CONF_KEY("thread_ignore_stop", PH_CONF_BOOL, "false", 0, 0, 0, NULL,
     "threads do not return when stopped (the host's drain deadline)", NULL),
    PH_CONF_KEY("panel_text", PH_CONF_STRING, "", 0, 512, 0, NULL,
                "with panel_rows > 0 or not empty: a status panel (ABI 1.7) "
                "\"probe\" showing this text as its field \"text\"",
                NULL),
    PH_CONF_KEY("panel_rows", PH_CONF_INT, "0", 0, 100000, 0, NULL,
                "rows of the panel's table \"items\" (name item-NNNNN, "
                "n numeric)",
                NULL),
    PH_CONF_END};

/* The status panel (ABI 1.7): what the config says, read at each fill. */
static void panel_fill(void *arg, ph_panel *pn) {
  probe *p = arg;
  const char *text = api->conf_str(p->ctx, "panel_text");
  int64_t rows = api->conf_int(p->ctx, "panel_rows");
  api->status_field(pn, "text", text);
  api->status_field_int(pn, "rows", rows);
  static const char *const cols[] = {"name", "n", "note"};
  if (api->status_table(pn, "items", cols, 3, PH_STATUS_COL_NUM(1)) != PH_OK)
    return;
  for (int64_t i = 0; i < rows; i++) {
    char name[32], n[24];
    snprintf(name, sizeof(name), "item-%05lld", (long long)i);
    snprintf(n, sizeof(n), "%lld", (long long)i);
    const char *cells[] = {name, n, text};
    if (api->status_row(pn, cells, 3) == PH_ELIMIT)
      break;
  }
}

/* The rule for "word", shared by check and init. */
static int word_valid(const char *w, char *why, size_t whylen) {
  for (const char *p = w; p && *p; p++)
    if (*p < 'a' || *p > 'z') {
      snprintf(why, whylen, "\"%s\" is not lower-case letters", w);
      return 0;
    }
  return 1;
}

/* Reads its configuration only (ABI 1.1). */
static int probe_check(ph_ctx *ctx, const ph_api *a, const char **key,
                       char *why, size_t whylen) {
  if (word_valid(a->conf_str(ctx, "word"), why, whylen))
    return PH_OK;
  *key = "word";
  return PH_EINVAL;
}

static int echo(void *self, int x) {
  probe *p = self;
  return p->started ? x + 1 : -1;
}

static const probe_echo_v1 echo_vt = {echo};

static void on_reload_msg(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  (void)payload;
  probe *p = arg;
  api->inc(p->reload_msgs, 1);
}

static void on_ping(const ph_topic *t, const void *payload, void *arg) {
  (void)t;
  probe *p = arg;
  api->inc(p->pings, 1);
  PH_LOG(api, p->ctx, PH_LOG_INFO, "ping", PH_STR("payload", payload));
}

static ph_series *counter(probe *p, const char *name, const char *help) {
  ph_metric_def d = {name, help, PH_METRIC_COUNTER, NULL, 0, NULL, 0};
  ph_metric *m = api->metric(p->ctx, &d);
  return m ? api->series(m, NULL) : NULL;
}

/* ---- the admin route (ABI 1.3) ---------------------------------------- */

/* Echoes what the host handed over; the Authorization value itself is
 * never echoed (a module must not show credentials), only whether it
 * came. */
static void route_answer(probe *p, int64_t id, const ph_http_request *r) {
  char out[2048];
  int n = snprintf(out, sizeof(out),
                   "method=%s path=%s query=%s auth=%s type=%s len=%zu "
                   "body=%.1024s\n",
                   r->method, r->path, r->query,
                   r->authorization ? "present" : "absent",
                   r->content_type ? r->content_type : "-", r->body_len,
                   r->body);
  api->route_reply(p->ctx, id, 200, "text/plain; charset=utf-8", out,
                   (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

static void route_timer_cb(ph_timer *t, void *arg) {
  (void)t;
  probe *p = arg;
  for (int i = 0; i < PROBE_ROUTE_PENDING; i++)
    if (p->pending[i].id) {
      int64_t id = p->pending[i].id;
      p->pending[i].id = 0;
      route_answer(p, id, p->pending[i].r);
    }
}

static void route_handle(void *arg, int64_t id, const ph_http_request *r) {
  probe *p = arg;
  api->inc(p->route_requests, 1);
  int64_t delay = api->conf_int(p->ctx, "route_delay");
  if (delay == 0) {
    route_answer(p, id, r);
    return;
  }
  for (int i = 0; i < PROBE_ROUTE_PENDING; i++)
    if (!p->pending[i].id) {
      p->pending[i].id = id;
      p->pending[i].r = r;
      api->timer_set(p->route_timer, (uint64_t)delay, 0);
      return;
    }
  api->route_reply(p->ctx, id, 503, "text/plain", "busy\n", 5);
}

static void route_cancel(void *arg, int64_t id) {
  probe *p = arg;
  for (int i = 0; i < PROBE_ROUTE_PENDING; i++)
    if (p->pending[i].id == id)
      p->pending[i].id = 0;
  api->inc(p->route_cancels, 1);
}

static int probe_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  probe *p = calloc(1, sizeof(*p));
  if (!p)
    return PH_ENOMEM;
  *state = p;
  p->ctx = ctx;
  p->reloads = counter(p, "probe_reloads_total", "reload callbacks");
  p->jobs_done = counter(p, "probe_jobs_done_total", "jobs completed");
  p->reload_msgs =
      counter(p, "probe_reload_messages_total", "host.reload messages seen");
  p->pings = counter(p, "probe_pings_total", "probe.ping messages seen");
  p->thread_calls = counter(p, "probe_thread_calls_total",
                            "calls posted by module threads, run on the loop");
  p->thread_full = counter(p, "probe_thread_full_total",
                           "thread_post refusals (PH_EFULL) seen");
  p->thread_stops =
      counter(p, "probe_thread_stops_total", "module thread stop callbacks");
  if (!p->reloads || !p->jobs_done || !p->reload_msgs || !p->pings ||
      !p->thread_calls || !p->thread_full || !p->thread_stops)
    return PH_EINVAL;
  p->reload_topic = api->topic(ctx, "host.reload", "ph.reload/1");
  p->ping_topic = api->topic(ctx, "probe.ping", "probe.ping/1");
  if (!p->reload_topic || !p->ping_topic ||
      api->subscribe(ctx, p->reload_topic, on_reload_msg, p) <= 0 ||
      api->subscribe(ctx, p->ping_topic, on_ping, p) <= 0)
    return PH_EINVAL;
  if (api->service_register(ctx, "probe.echo", 1, 0, &echo_vt, p) != PH_OK)
    return PH_EINVAL;
  const char *route = api->conf_str(ctx, "route");
  if (route && *route) {
    p->route_requests =
        counter(p, "probe_route_requests_total", "admin route requests");
    p->route_cancels = counter(p, "probe_route_cancels_total",
                               "admin route requests cancelled");
    p->route_timer = api->timer_new(ctx, route_timer_cb, p);
    if (api->route_register(ctx, route, route_handle, route_cancel, p,
                            PROBE_ROUTE_PENDING) != PH_OK)
      return PH_EEXIST;
  }
  const char *ptext = api->conf_str(ctx, "panel_text");
  if (((ptext && *ptext) || api->conf_int(ctx, "panel_rows") > 0) &&
      (api->size <= offsetof(ph_api, status_row) ||
       api->status_register(ctx, "probe", "Probe <panel>", panel_fill, p) !=
           PH_OK))
    return PH_EINVAL;
  if (!api->conf_int(ctx, "ready"))
    api->set_ready(ctx, 0);
  if (api->conf_int(ctx, "fail_init"))
    return PH_EINVAL;
  char why[128];
  if (!word_valid(api->conf_str(ctx, "word"), why, sizeof(why))) {
    /* Unreachable through the host, which ran probe_check first. */
    PH_LOG(api, ctx, PH_LOG_ERROR, "init: word refused", PH_STR("why", why));
    return PH_EINVAL;
  }
  return PH_OK;
}

static void job_work(void *arg) {
  (void)arg;
  usleep(1000); /* stands for blocking work */
}

static void job_done(void *arg, int status) {
  probe *p = arg;
  if (status == PH_OK)
    api->inc(p->jobs_done, 1);
}

/* ---- module threads ---------------------------------------------------- */

static void thread_call(void *arg) {
  probe_thread *pt = arg;
  api->inc(pt->p->thread_calls, 1);
}

/* On a full queue the thread waits for the loop to drain (bounded). */
static void thread_post_one(probe_thread *pt) {
  for (int tries = 0; tries < 1000; tries++) {
    if (api->thread_post(pt->t, thread_call, pt, NULL) == PH_OK)
      return;
    api->inc(pt->p->thread_full, 1);
    usleep(1000);
  }
}

static void thread_run(void *arg) {
  probe_thread *pt = arg;
  PH_LOG(api, pt->p->ctx, PH_LOG_INFO, "probe thread running",
         PH_INT("posts", pt->posts));
  for (int64_t i = 0; i < pt->posts; i++)
    thread_post_one(pt);
  pthread_mutex_lock(&pt->mu);
  /* Ignoring stop still ends after a minute: every test run is bounded. */
  for (int waits = 0; (!pt->stop || pt->ignore_stop) && waits < 60; waits++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&pt->cv, &pt->mu, &ts);
  }
  pthread_mutex_unlock(&pt->mu);
}

/* Loop thread: the host calls it when the thread must end. */
static void thread_stop(void *arg) {
  probe_thread *pt = arg;
  api->inc(pt->p->thread_stops, 1);
  pthread_mutex_lock(&pt->mu);
  pt->stop = 1;
  pthread_cond_signal(&pt->cv);
  pthread_mutex_unlock(&pt->mu);
}

/* The host joins them when the module's stop ends: probe never does. */
static int start_threads(probe *p) {
  int64_t n = api->conf_int(p->ctx, "threads");
  for (int64_t i = 0; i < n && i < PROBE_THREADS; i++) {
    probe_thread *pt = &p->threads[i];
    pt->p = p;
    pt->posts = api->conf_int(p->ctx, "thread_posts");
    pt->ignore_stop = (int)api->conf_int(p->ctx, "thread_ignore_stop");
    pthread_mutex_init(&pt->mu, NULL);
    pthread_cond_init(&pt->cv, NULL);
    p->n_threads++;
    char name[8];
    snprintf(name, sizeof(name), "t%d", (int)i);
    pt->t = api->thread_start(p->ctx, name, thread_run, thread_stop, pt,
                              (size_t)api->conf_int(p->ctx, "thread_queue"));
    if (!pt->t)
      return PH_ELIMIT;
  }
  return PH_OK;
}

static int probe_start(void *state) {
  probe *p = state;
  if (api->conf_int(p->ctx, "fail_start"))
    return PH_EINVAL;
  if (start_threads(p) != PH_OK)
    return PH_ELIMIT;
  p->started = 1;
  PH_LOG(api, p->ctx, PH_LOG_INFO, "probe started",
         PH_STR("greeting", api->conf_str(p->ctx, "greeting")),
         PH_STR("secret", api->conf_str(p->ctx, "secret")));
  int64_t jobs = api->conf_int(p->ctx, "jobs");
  for (int64_t i = 0; i < jobs; i++)
    if (api->submit(p->ctx, job_work, job_done, p) <= 0)
      return PH_EFULL;
  return PH_OK;
}

static int probe_reload(void *state) {
  probe *p = state;
  api->inc(p->reloads, 1);
  PH_LOG(api, p->ctx, PH_LOG_INFO, "probe reloaded",
         PH_STR("greeting", api->conf_str(p->ctx, "greeting")));
  return api->conf_int(p->ctx, "fail_reload") ? PH_EINVAL : PH_OK;
}

static void stop_timer_cb(ph_timer *t, void *arg) {
  (void)t;
  probe *p = arg;
  PH_LOG(api, p->ctx, PH_LOG_INFO, "probe drained");
  api->stop_done(p->ctx);
}

static int probe_stop(void *state) {
  probe *p = state;
  int64_t delay = api->conf_int(p->ctx, "stop_delay");
  if (delay <= 0)
    return PH_OK;
  p->stop_timer = api->timer_new(p->ctx, stop_timer_cb, p);
  if (!p->stop_timer)
    return PH_OK;
  api->timer_set(p->stop_timer, (uint64_t)delay, 0);
  return PH_STOP_PENDING;
}

static void probe_destroy(void *state) {
  probe *p = state;
  if (!p)
    return;
  api->timer_free(p->stop_timer);
  if (p->route_timer)
    api->timer_free(p->route_timer);
  for (int i = 0; i < p->n_threads; i++) {
    pthread_mutex_destroy(&p->threads[i].mu);
    pthread_cond_destroy(&p->threads[i].cv);
  }
  free(p);
}

static const char *const probe_provides[] = {"probe.echo", NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("probe", "1.0"),
    .description = "test module exercising the SDK",
    .provides = probe_provides,
    .config = probe_keys,
    .init = probe_init,
    .check = probe_check,
    .start = probe_start,
    .reload = probe_reload,
    .stop = probe_stop,
    .destroy = probe_destroy,
};

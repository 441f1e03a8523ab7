/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for host/metrics.c: registration and its errors, series
 * lookup, updates (also from several threads), counters set from an
 * outside total, and the exposition text, checked literally and with
 * promtool. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h" /* ph_host_api */
#include "metrics.h"
#include "tap.h"

static const char *const stages[] = {"dns", "connect", "tls", NULL};
static const char *const results[] = {"ok", "error", NULL};
static const double latency_buckets[] = {0.005, 0.1, 1};

/* ---- registration errors ---------------------------------------------- */

/* Registers def in a fresh registry that already holds `taken_total`,
 * and checks that it fails with a message containing want. */
static void expect_error(const ph_metric_def *def, const char *want,
                         const char *name) {
  ph_registry *r = metrics_new();
  ph_buf err;
  buf_init(&err, 0);
  ph_metric_def taken = {.name = "taken_total", .help = "h",
                         .type = PH_METRIC_COUNTER};
  metrics_register(r, &taken, NULL);
  ok(metrics_register(r, def, &err) == NULL, name);
  like(err.data, want, name);
  buf_free(&err);
  metrics_free(r);
}

/* Two modules that share a metric register the same definition; both get
 * the same metric and so update the same series. */
static void test_shared_definition(void) {
  static const char *const stage_values[] = {"dns", "connect", NULL};
  static const ph_label_def l[] = {{"stage", stage_values}};
  static const double b[] = {0.1, 1};
  ph_metric_def h = {"shared_seconds", "h", PH_METRIC_HISTOGRAM, l, 1, b, 2};
  ph_registry *r = metrics_new();
  ph_metric *a = metrics_register(r, &h, NULL);
  ph_metric *again = metrics_register(r, &h, NULL);
  ok(a && a == again, "an identical definition returns the same metric");
  const double b2[] = {0.1, 2};
  h.buckets = b2;
  ok(metrics_register(r, &h, NULL) == NULL, "other buckets are refused");
  metrics_free(r);
}

static void test_errors(void) {
  const char *const dup[] = {"dns", "tls", "dns", NULL};
  const char *const none[] = {NULL};
  const char *const v32[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                             "i", "j", "k", "l", "m", "n", "o", "p",
                             "q", "r", "s", "t", "u", "v", "w", "x",
                             "y", "z", "0", "1", "2", "3", "4", "5", NULL};
  const double desc[] = {1, 0.5};
  const double same[] = {1, 1};
  const double inf[] = {1, INFINITY};
  const double nan_[] = {NAN};
  double many[PH_METRIC_MAX_BUCKETS + 1];
  for (int i = 0; i <= PH_METRIC_MAX_BUCKETS; i++)
    many[i] = i + 1;

  ph_metric_def d = {.name = "9lives", .type = PH_METRIC_COUNTER};
  expect_error(&d, "metric \"9lives\": invalid metric name", "name: digit");
  d.name = "has-dash";
  expect_error(&d, "invalid metric name", "name: dash");
  d.name = "";
  expect_error(&d, "invalid metric name", "name: empty");
  d.name = NULL;
  expect_error(&d, "without a name", "name: NULL");

  d = (ph_metric_def){.name = "taken_total", .type = PH_METRIC_GAUGE};
  expect_error(&d, "metric taken_total: already registered with a different "
                   "definition",
               "duplicate name, other definition");
  const char *const one[] = {"a", NULL};
  const ph_label_def lab[] = {{"l", one}};
  d = (ph_metric_def){.name = "taken_total", .type = PH_METRIC_COUNTER,
                      .labels = lab, .n_labels = 1};
  expect_error(&d, "already registered", "duplicate name, other labels");

  d = (ph_metric_def){.name = "x_total", .type = (ph_metric_type)9};
  expect_error(&d, "metric x_total: unknown type 9", "unknown type");

  /* One label, wrong: its name, its values. */
  static const struct {
    const char *metric, *label;
    int values; /* 0 stages, 1 dup, 2 none, 3 NULL */
    const char *want, *what;
  } one_label[] = {
      {"x_total", "1abc", 0, "invalid label name \"1abc\"",
       "label name syntax"},
      {"x_total", "a:b", 0, "invalid label name \"a:b\"",
       "label name with colon"},
      {"x_total", "__stage", 0, "label name \"__stage\" is reserved",
       "label __"},
      {"tunnelmesh_x_total", "stage", 1,
       "metric tunnelmesh_x_total: label \"stage\" value \"dns\" "
       "declared twice",
       "duplicate label value"},
      {"x_total", "stage", 2, "label \"stage\" has no values",
       "label: no values"},
      {"x_total", "stage", 3, "label \"stage\" has no values",
       "label: NULL values"},
  };
  const char *const *values[] = {stages, dup, none, NULL};
  for (size_t i = 0; i < sizeof(one_label) / sizeof(one_label[0]); i++) {
    ph_label_def l[] = {{one_label[i].label, values[one_label[i].values]}};
    d = (ph_metric_def){.name = one_label[i].metric,
                        .type = PH_METRIC_COUNTER, .labels = l,
                        .n_labels = 1};
    expect_error(&d, one_label[i].want, one_label[i].what);
  }
  ph_label_def l5[] = {{"stage", stages}, {"stage", results}};
  d.labels = l5;
  d.n_labels = 2;
  expect_error(&d, "label \"stage\" declared twice", "duplicate label");
  ph_label_def l6[] = {{"a", results}, {"b", results}, {"c", results},
                       {"d", results}, {"e", results}};
  d.labels = l6;
  d.n_labels = 5;
  expect_error(&d, "5 labels, at most 4", "too many labels");
  d.labels = NULL;
  d.n_labels = 1;
  expect_error(&d, "labels is NULL", "labels NULL");
  /* 32 * 32 = 1024 is fine, * 2 more is not. */
  ph_label_def l7[] = {{"a", v32}, {"b", v32}, {"c", results}};
  d.labels = l7;
  d.n_labels = 3;
  expect_error(&d, "more than 1024 series", "too many series");

  ph_label_def le[] = {{"le", results}};
  d = (ph_metric_def){.name = "x_seconds", .type = PH_METRIC_HISTOGRAM,
                      .labels = le, .n_labels = 1,
                      .buckets = latency_buckets, .n_buckets = 3};
  expect_error(&d, "histogram cannot have a label named \"le\"", "le");

  d = (ph_metric_def){.name = "x_seconds", .type = PH_METRIC_HISTOGRAM};
  expect_error(&d, "histogram needs 1..32 buckets, got 0", "no buckets");
  d.buckets = many;
  d.n_buckets = PH_METRIC_MAX_BUCKETS + 1;
  expect_error(&d, "histogram needs 1..32 buckets, got 33", "33 buckets");
  d.buckets = NULL;
  d.n_buckets = 2;
  expect_error(&d, "n_buckets is 2 but buckets is NULL", "buckets NULL");
  d.buckets = desc;
  expect_error(&d, "bucket 1 (0.5) after 1", "buckets decreasing");
  d.buckets = same;
  expect_error(&d, "strictly increasing", "buckets equal");
  d.buckets = inf;
  expect_error(&d, "bucket 1 is not finite", "bucket +Inf");
  d.buckets = nan_;
  d.n_buckets = 1;
  expect_error(&d, "bucket 0 is not finite", "bucket NaN");

  d = (ph_metric_def){.name = "x", .type = PH_METRIC_GAUGE,
                      .buckets = latency_buckets, .n_buckets = 3};
  expect_error(&d, "metric x: buckets given for a gauge", "gauge buckets");
}

/* ---- registration and updates ----------------------------------------- */

static void test_counter(ph_registry *r) {
  ph_buf err;
  buf_init(&err, 0);
  ph_metric_def plain = {.name = "plain_total", .help = "p",
                         .type = PH_METRIC_COUNTER};
  ph_metric *m = metrics_register(r, &plain, &err);
  ok(m != NULL, "counter without labels registers");
  is_int(err.len, 0, "no error text");
  ph_series *s = metrics_series(m, NULL);
  ok(s != NULL, "unlabelled metric: NULL values give the series");
  const char *const any[] = {"whatever"};
  ok(metrics_series(m, any) == s, "unlabelled metric: any values too");
  metrics_inc(s, 2);
  metrics_inc(s, 40);
  ok(metrics_value(s) == 42, "counter adds up");

  ph_label_def labels[] = {{"stage", stages}, {"result", results}};
  ph_metric_def lab = {.name = "steps_total", .help = "s",
                       .type = PH_METRIC_COUNTER, .labels = labels,
                       .n_labels = 2};
  m = metrics_register(r, &lab, &err);
  ok(m != NULL, "counter with labels registers");
  const char *const tls_err[] = {"tls", "error"};
  const char *const dns_ok[] = {"dns", "ok"};
  const char *const bad[] = {"tls", "maybe"};
  const char *const short_[] = {"tls", NULL};
  ph_series *a = metrics_series(m, tls_err), *b = metrics_series(m, dns_ok);
  ok(a && b && a != b, "distinct series per value set");
  ok(metrics_series(m, tls_err) == a, "same values, same series");
  ok(metrics_series(m, bad) == NULL, "undeclared value: NULL");
  ok(metrics_series(m, short_) == NULL, "missing value: NULL");
  ok(metrics_series(m, NULL) == NULL, "labelled metric, NULL values: NULL");
  metrics_inc(a, 7);
  ok(metrics_value(a) == 7 && metrics_value(b) == 0, "series independent");
  /* Wrong-type updates are ignored. */
  metrics_gauge_set(a, 100);
  metrics_observe(a, 1);
  ok(metrics_value(a) == 7, "gauge/observe on a counter ignored");
  buf_free(&err);
}

/* counter_set: a counter whose total comes from outside (the kernel's CPU
 * time): fractional, never decreasing, and only for counters. */
static void test_counter_set(ph_registry *r) {
  ok(ph_host_api.counter_set == metrics_counter_set,
     "the host API table carries counter_set");
  ph_metric_def def = {.name = "cpu_seconds_total", .help = "c",
                       .type = PH_METRIC_COUNTER};
  ph_series *s = metrics_series(metrics_register(r, &def, NULL), NULL);
  ok(s != NULL, "counter registered");
  metrics_counter_set(s, 1.25);
  ok(metrics_value(s) == 1.25, "set: a fractional total");
  metrics_counter_set(s, 1.0);
  ok(metrics_value(s) == 1.25, "a lower value is ignored");
  metrics_counter_set(s, NAN);
  metrics_counter_set(s, -3);
  metrics_counter_set(s, INFINITY);
  ok(metrics_value(s) == 1.25, "NaN, negative and infinite are ignored");
  metrics_counter_set(s, 2.5);
  ok(metrics_value(s) == 2.5, "a higher value is taken");
  metrics_inc(s, 10);
  ok(metrics_value(s) == 2.5, "inc on a counter that was set is ignored");
  ph_buf out;
  buf_init(&out, 0);
  metrics_render(r, &out);
  like(out.data, "\ncpu_seconds_total 2.5\n", "rendered as a float");
  buf_free(&out);

  ph_metric_def zero = {.name = "zero_total", .type = PH_METRIC_COUNTER};
  ph_series *z = metrics_series(metrics_register(r, &zero, NULL), NULL);
  metrics_counter_set(z, -1);
  metrics_counter_set(z, NAN);
  ok(metrics_value(z) == 0, "an unset counter ignores negative and NaN");
  metrics_inc(z, 4);
  metrics_counter_set(z, 0);
  ok(metrics_value(z) == 0, "once set, the set value is shown, not inc's");

  ph_metric_def g = {.name = "level", .type = PH_METRIC_GAUGE};
  ph_series *gs = metrics_series(metrics_register(r, &g, NULL), NULL);
  metrics_gauge_set(gs, 7);
  metrics_counter_set(gs, 9);
  ok(metrics_value(gs) == 7, "counter_set on a gauge ignored");
  ph_metric_def h = {.name = "spent_seconds", .type = PH_METRIC_HISTOGRAM,
                     .buckets = latency_buckets, .n_buckets = 3};
  ph_series *hs = metrics_series(metrics_register(r, &h, NULL), NULL);
  metrics_counter_set(hs, 9);
  ok(metrics_value(hs) == 0 && metrics_hist_count(hs) == 0,
     "counter_set on a histogram ignored");
  metrics_counter_set(NULL, 1); /* must not crash */
}

static void test_gauge(ph_registry *r) {
  ph_metric_def def = {.name = "temp_celsius", .help = "t",
                       .type = PH_METRIC_GAUGE};
  ph_metric *m = metrics_register(r, &def, NULL);
  ok(m != NULL, "gauge without labels registers");
  ph_series *s = metrics_series(m, NULL);
  ok(metrics_value(s) == 0, "gauge starts at 0");
  metrics_gauge_set(s, 2.5);
  metrics_gauge_add(s, -4);
  ok(metrics_value(s) == -1.5, "gauge set and add");
  metrics_inc(s, 3);
  ok(metrics_value(s) == -1.5, "inc on a gauge ignored");

  ph_label_def labels[] = {{"result", results}};
  ph_metric_def lab = {.name = "queue_depth", .help = "q",
                       .type = PH_METRIC_GAUGE, .labels = labels,
                       .n_labels = 1};
  m = metrics_register(r, &lab, NULL);
  ok(m != NULL, "gauge with labels registers");
  const char *const e[] = {"error"};
  metrics_gauge_add(metrics_series(m, e), 3);
  ok(metrics_value(metrics_series(m, e)) == 3, "labelled gauge add");
}

static void test_histogram(ph_registry *r) {
  ph_metric_def def = {.name = "wait_seconds", .help = "w",
                       .type = PH_METRIC_HISTOGRAM,
                       .buckets = latency_buckets, .n_buckets = 3};
  ph_metric *m = metrics_register(r, &def, NULL);
  ok(m != NULL, "histogram without labels registers");
  ph_series *s = metrics_series(m, NULL);
  metrics_observe(s, 0.001);
  metrics_observe(s, 0.1); /* on the bound: le is inclusive */
  metrics_observe(s, 5);
  is_int(metrics_hist_count(s), 3, "histogram count");
  ok(fabs(metrics_value(s) - 5.101) < 1e-12, "histogram sum");

  ph_label_def labels[] = {{"stage", stages}};
  ph_metric_def lab = {.name = "stage_seconds", .help = "s",
                       .type = PH_METRIC_HISTOGRAM, .labels = labels,
                       .n_labels = 1, .buckets = latency_buckets,
                       .n_buckets = 3};
  m = metrics_register(r, &lab, NULL);
  ok(m != NULL, "histogram with labels registers");
  const char *const tls[] = {"tls"};
  metrics_observe(metrics_series(m, tls), 0.2);
  is_int(metrics_hist_count(metrics_series(m, tls)), 1, "labelled count");
}

/* ---- concurrency ------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 100000

typedef struct shared {
  ph_series *counter, *gauge, *hist, *set;
} shared;

static void *hammer(void *arg) {
  shared *sh = arg;
  for (int i = 0; i < PER_THREAD; i++) {
    metrics_counter_set(sh->set, i); /* racing: the highest must win */
    metrics_inc(sh->counter, 1);
    metrics_gauge_add(sh->gauge, 1);
    metrics_observe(sh->hist, (i % 3) * 0.5); /* 0, 0.5, 1: exact sums */
  }
  return NULL;
}

static void test_threads(void) {
  ph_registry *r = metrics_new();
  const double b[] = {0.25, 0.75};
  ph_metric_def c = {.name = "c_total", .type = PH_METRIC_COUNTER};
  ph_metric_def g = {.name = "g", .type = PH_METRIC_GAUGE};
  ph_metric_def h = {.name = "h", .type = PH_METRIC_HISTOGRAM,
                     .buckets = b, .n_buckets = 2};
  ph_metric_def set = {.name = "set_total", .type = PH_METRIC_COUNTER};
  shared sh = {metrics_series(metrics_register(r, &c, NULL), NULL),
               metrics_series(metrics_register(r, &g, NULL), NULL),
               metrics_series(metrics_register(r, &h, NULL), NULL),
               metrics_series(metrics_register(r, &set, NULL), NULL)};
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, hammer, &sh);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);

  ok(metrics_value(sh.counter) == THREADS * PER_THREAD,
     "concurrent counter total exact");
  ok(metrics_value(sh.gauge) == THREADS * PER_THREAD,
     "concurrent gauge adds exact");
  ok(metrics_value(sh.set) == PER_THREAD - 1,
     "concurrent counter_set keeps the highest value");
  is_int(metrics_hist_count(sh.hist), THREADS * PER_THREAD,
         "concurrent histogram count exact");
  /* Per thread: 33333 x 0.5 + 33333 x 1 = 49999.5. */
  ok(metrics_value(sh.hist) == THREADS * 49999.5,
     "concurrent histogram sum exact");
  ph_buf out;
  buf_init(&out, 0);
  metrics_render(r, &out);
  like(out.data, "h_bucket{le=\"0.25\"} 133336\n", "bucket le=0.25");
  like(out.data, "h_bucket{le=\"0.75\"} 266668\n", "bucket le=0.75");
  like(out.data, "h_bucket{le=\"+Inf\"} 400000\n", "bucket +Inf");
  like(out.data, "h_count 400000\n", "h_count");
  buf_free(&out);
  metrics_free(r);
}

/* ---- exposition ------------------------------------------------------- */

static const char expected[] =
    "# HELP proxy_requests_total Requests handled.\n"
    "# TYPE proxy_requests_total counter\n"
    "proxy_requests_total{stage=\"dns\",result=\"ok\"} 3\n"
    "proxy_requests_total{stage=\"dns\",result=\"error\"} 0\n"
    "proxy_requests_total{stage=\"connect\",result=\"ok\"} 0\n"
    "proxy_requests_total{stage=\"connect\",result=\"error\"} 0\n"
    "proxy_requests_total{stage=\"tls\",result=\"ok\"} 0\n"
    "proxy_requests_total{stage=\"tls\",result=\"error\"} 18446744073709551615\n"
    "# HELP proxy_odd_total Escapes: back\\\\slash,\\nnew line, \"quotes\".\n"
    "# TYPE proxy_odd_total counter\n"
    "proxy_odd_total{kind=\"a\\\\b\"} 1\n"
    "proxy_odd_total{kind=\"say \\\"hi\\\"\"} 0\n"
    "proxy_odd_total{kind=\"two\\nlines\"} 0\n"
    "# HELP proxy_temperature_celsius Some gauge.\n"
    "# TYPE proxy_temperature_celsius gauge\n"
    "proxy_temperature_celsius{sensor=\"a\"} 3\n"
    "proxy_temperature_celsius{sensor=\"b\"} -0.1\n"
    "proxy_temperature_celsius{sensor=\"c\"} +Inf\n"
    "proxy_temperature_celsius{sensor=\"d\"} -Inf\n"
    "proxy_temperature_celsius{sensor=\"e\"} NaN\n"
    "proxy_temperature_celsius{sensor=\"f\"} 1e+300\n"
    "proxy_temperature_celsius{sensor=\"g\"} 123456789012\n"
    "# HELP proxy_latency_seconds Latency.\n"
    "# TYPE proxy_latency_seconds histogram\n"
    "proxy_latency_seconds_bucket{le=\"0.005\"} 1\n"
    "proxy_latency_seconds_bucket{le=\"0.1\"} 1\n"
    "proxy_latency_seconds_bucket{le=\"1\"} 2\n"
    "proxy_latency_seconds_bucket{le=\"+Inf\"} 3\n"
    "proxy_latency_seconds_sum 10.504\n"
    "proxy_latency_seconds_count 3\n"
    "# HELP proxy_stage_seconds Per stage.\n"
    "# TYPE proxy_stage_seconds histogram\n"
    "proxy_stage_seconds_bucket{stage=\"x\",le=\"0.25\"} 0\n"
    "proxy_stage_seconds_bucket{stage=\"x\",le=\"+Inf\"} 0\n"
    "proxy_stage_seconds_sum{stage=\"x\"} 0\n"
    "proxy_stage_seconds_count{stage=\"x\"} 0\n"
    "proxy_stage_seconds_bucket{stage=\"y\",le=\"0.25\"} 1\n"
    "proxy_stage_seconds_bucket{stage=\"y\",le=\"+Inf\"} 1\n"
    "proxy_stage_seconds_sum{stage=\"y\"} 0.125\n"
    "proxy_stage_seconds_count{stage=\"y\"} 1\n"
    "# HELP proxy_cpu_seconds_total CPU time from the kernel.\n"
    "# TYPE proxy_cpu_seconds_total counter\n"
    "proxy_cpu_seconds_total 12.34\n";

static ph_registry *sample_registry(void) {
  ph_registry *r = metrics_new();
  static const char *const odd[] = {"a\\b", "say \"hi\"", "two\nlines", NULL};
  static const char *const sensors[] = {"a", "b", "c", "d", "e", "f", "g",
                                        NULL};
  static const char *const xy[] = {"x", "y", NULL};
  static const double stage_b[] = {0.25};
  ph_label_def req_l[] = {{"stage", stages}, {"result", results}};
  ph_label_def odd_l[] = {{"kind", odd}};
  ph_label_def temp_l[] = {{"sensor", sensors}};
  ph_label_def stage_l[] = {{"stage", xy}};
  ph_metric_def defs[] = {
      {"proxy_requests_total", "Requests handled.", PH_METRIC_COUNTER,
       req_l, 2, NULL, 0},
      {"proxy_odd_total", "Escapes: back\\slash,\nnew line, \"quotes\".",
       PH_METRIC_COUNTER, odd_l, 1, NULL, 0},
      {"proxy_temperature_celsius", "Some gauge.", PH_METRIC_GAUGE, temp_l,
       1, NULL, 0},
      {"proxy_latency_seconds", "Latency.", PH_METRIC_HISTOGRAM, NULL, 0,
       latency_buckets, 3},
      {"proxy_stage_seconds", "Per stage.", PH_METRIC_HISTOGRAM, stage_l, 1,
       stage_b, 1},
      {"proxy_cpu_seconds_total", "CPU time from the kernel.",
       PH_METRIC_COUNTER, NULL, 0, NULL, 0},
  };
  ph_metric *m[6];
  for (int i = 0; i < 6; i++)
    m[i] = metrics_register(r, &defs[i], NULL);

  const char *const dns_ok[] = {"dns", "ok"}, *const tls_err[] = {"tls",
                                                                  "error"};
  metrics_inc(metrics_series(m[0], dns_ok), 3);
  metrics_inc(metrics_series(m[0], tls_err), UINT64_MAX);
  metrics_inc(metrics_series(m[1], odd), 1);
  const double temps[] = {3, -0.1, INFINITY, -INFINITY, NAN, 1e300,
                          123456789012.0};
  for (int i = 0; i < 7; i++) {
    const char *v[] = {sensors[i]};
    metrics_gauge_set(metrics_series(m[2], v), temps[i]);
  }
  ph_series *lat = metrics_series(m[3], NULL);
  metrics_observe(lat, 0.004);
  metrics_observe(lat, 0.5);
  metrics_observe(lat, 10);
  const char *const y[] = {"y"};
  metrics_observe(metrics_series(m[4], y), 0.125);
  metrics_counter_set(metrics_series(m[5], NULL), 12.34);
  return r;
}

/* configure passes the promtool it found (maybe ""); else $PATH. */
#if defined(PROMTOOL)
#define PROMTOOL_BIN (PROMTOOL[0] ? PROMTOOL : "promtool")
#else
#define PROMTOOL_BIN "promtool"
#endif

/* Runs `promtool check metrics` with path as its standard input; its
 * output goes to stderr to keep the TAP stream clean. The exit status, or
 * -1 when it could not run at all (a missing promtool is a failure). */
static int promtool_check(const char *path) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    FILE *in = freopen(path, "r", stdin);
    if (!in || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
      _exit(126);
    execlp(PROMTOOL_BIN, "promtool", "check", "metrics", (char *)NULL);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static void test_render(void) {
  ph_registry *r = sample_registry();
  ph_buf out;
  buf_init(&out, 0);
  is_int(metrics_render(r, &out), 0, "render succeeds");
  is_str(out.data, expected, "exposition text exact");

  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/test_metrics.XXXXXX",
           dir && dir[0] ? dir : "/tmp");
  int fd = mkstemp(path);
  ok(fd >= 0 && write(fd, out.data, out.len) == (ssize_t)out.len,
     "exposition written to a temp file");
  if (fd >= 0)
    close(fd);
  is_int(promtool_check(path), 0, "promtool check metrics: clean");
  unlink(path);

  ph_buf small;
  buf_init(&small, 64);
  is_int(metrics_render(r, &small), -1, "render past the buffer limit: -1");
  buf_free(&small);

  ph_registry *empty = metrics_new();
  buf_reset(&out);
  is_int(metrics_render(empty, &out), 0, "empty registry renders");
  is_int(out.len, 0, "empty registry: no text");
  metrics_free(empty);
  buf_free(&out);
  metrics_free(r);
}

static void test_no_help(void) {
  ph_registry *r = metrics_new();
  ph_metric_def d = {.name = "bare_total", .type = PH_METRIC_COUNTER};
  metrics_register(r, &d, NULL);
  ph_buf out;
  buf_init(&out, 0);
  metrics_render(r, &out);
  is_str(out.data, "# TYPE bare_total counter\nbare_total 0\n",
         "no help: no HELP line");
  buf_free(&out);
  metrics_free(r);
}

/* ---- only the declared combinations (metrics_register_only) ---------- */

static const char *const comps[] = {"client", "server", "agent", NULL};
static const char *const res[] = {"success", "failure", NULL};
static const char *const cls[] = {"ok", "refused", "forbidden", NULL};
static const ph_label_def open_labels[] = {
    {"component", comps}, {"result", res}, {"error_class", cls}};
static const ph_metric_def open_def = {"opens_total", "h", PH_METRIC_COUNTER,
                                       open_labels, 3, NULL, 0};

static ph_series *lookup(ph_metric *m, const char *c, const char *r,
                         const char *e) {
  const char *v[] = {c, r, e};
  return metrics_series(m, v);
}

static char *render_text(ph_registry *r) {
  ph_buf out;
  buf_init(&out, 0);
  metrics_render(r, &out);
  return out.data; /* caller frees */
}

static void expect_only_error(const ph_metric_def *def,
                              const char *const *combos, size_t n,
                              const char *want, const char *name) {
  ph_registry *r = metrics_new();
  ph_buf err;
  buf_init(&err, 0);
  ok(metrics_register_only(r, def, combos, n, &err) == NULL, name);
  like(err.data, want, name);
  char *text = render_text(r);
  ok(!text || !strstr(text, def->name), "nothing registered after a refusal");
  free(text);
  buf_free(&err);
  metrics_free(r);
}

static void test_only_refusals(void) {
  const char *const bad_value[] = {"client", "success", "nope"};
  expect_only_error(&open_def, bad_value, 1,
                    "\"nope\" is not a declared value of label "
                    "\"error_class\"",
                    "a value the label does not declare is refused");
  expect_only_error(&open_def, NULL, 1, "needs 1..1024 label combinations",
                    "NULL combinations are refused");
  expect_only_error(&open_def, bad_value, 0,
                    "needs 1..1024 label combinations",
                    "zero combinations are refused");
  expect_only_error(&open_def, bad_value, PH_METRIC_MAX_SERIES + 1,
                    "needs 1..1024 label combinations, got 1025",
                    "more combinations than series are refused");
  ph_metric_def bare = {"bare_only_total", "h", PH_METRIC_COUNTER,
                        NULL, 0, NULL, 0};
  expect_only_error(&bare, bad_value, 1, "metric without labels",
                    "combinations for a metric without labels are refused");
  ph_metric_def bad_name = open_def;
  bad_name.name = "1bad";
  const char *const fine[] = {"client", "success", "ok"};
  expect_only_error(&bad_name, fine, 1, "invalid metric name",
                    "the definition is still validated");
}

static void test_only_series(void) {
  ph_registry *r = metrics_new();
  const char *const pairs[] = {"client", "success", "ok",
                               "client", "failure", "refused"};
  ph_metric *m = metrics_register_only(r, &open_def, pairs, 2, NULL);
  ok(m != NULL, "registered with two combinations");
  ok(lookup(m, "client", "success", "ok") != NULL &&
         lookup(m, "client", "failure", "refused") != NULL,
     "the declared combinations have series");
  ok(lookup(m, "client", "success", "refused") == NULL,
     "an undeclared combination of declared values has none");
  ok(lookup(m, "agent", "success", "ok") == NULL,
     "an undeclared component has none");
  metrics_inc(lookup(m, "client", "success", "refused"), 1); /* NULL: no-op */
  metrics_inc(lookup(m, "client", "success", "ok"), 3);
  char *text = render_text(r);
  is_str(text,
         "# HELP opens_total h\n# TYPE opens_total counter\n"
         "opens_total{component=\"client\",result=\"success\","
         "error_class=\"ok\"} 3\n"
         "opens_total{component=\"client\",result=\"failure\","
         "error_class=\"refused\"} 0\n",
         "only the declared series are rendered");
  free(text);

  /* Another module shares the metric and declares its own component,
   * with a wildcard for the error class. */
  const char *const server[] = {"server", "failure", NULL};
  ok(metrics_register_only(r, &open_def, server, 1, NULL) == m,
     "a second declaration returns the same metric");
  ok(lookup(m, "server", "failure", "ok") != NULL &&
         lookup(m, "server", "failure", "forbidden") != NULL,
     "NULL stands for every value of its label");
  ok(lookup(m, "server", "success", "ok") == NULL,
     "the second declaration adds only its combinations");
  ok(metrics_value(lookup(m, "client", "success", "ok")) == 3,
     "the first module's series keep their values");
  const char *const other_bad[] = {"server", "bogus", NULL};
  ok(metrics_register_only(r, &open_def, other_bad, 1, NULL) == NULL,
     "a bad second declaration is refused");
  ok(lookup(m, "server", "failure", "ok") != NULL,
     "and changes nothing");
  ok(metrics_register(r, &open_def, NULL) == m &&
         lookup(m, "agent", "success", "forbidden") != NULL,
     "metrics_register (a 1.0/1.1 module's metric) declares them all");
  metrics_free(r);

  /* Histograms: an undeclared series renders no bucket at all. */
  static const char *const st[] = {"dns", "connect", NULL};
  static const ph_label_def hl[] = {{"stage", st}};
  static const double b[] = {0.1, 1};
  ph_metric_def h = {"only_seconds", "h", PH_METRIC_HISTOGRAM, hl, 1, b, 2};
  r = metrics_new();
  const char *const dns[] = {"dns"};
  ph_metric *hm = metrics_register_only(r, &h, dns, 1, NULL);
  ok(hm && metrics_series(hm, (const char *const[]){"connect"}) == NULL,
     "histogram: undeclared stage has no series");
  text = render_text(r);
  ok(text && strstr(text, "stage=\"dns\"") && !strstr(text, "connect"),
     "histogram: only the declared stage is rendered");
  free(text);
  metrics_free(r);
}

int main(void) {
  plan_lazy();
  test_errors();
  test_shared_definition();
  test_only_refusals();
  test_only_series();
  ph_registry *r = metrics_new();
  ok(r != NULL, "registry created");
  test_counter(r);
  test_counter_set(r);
  test_gauge(r);
  test_histogram(r);
  metrics_free(r);
  test_threads();
  test_render();
  test_no_help();
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/lib/metric_table: a PH_METRIC table registered by one call
 * through the mock host (issue 25 item 3). Every type, labels, buckets,
 * the handles filled in row-major order, PH_METRIC_ONLY's declared
 * combinations, and a refusal that names the metric and stops; and
 * ph_metric_table_register_fixed (the tunnel roles' tables): the first
 * label fixed to the role's value, handles over the other labels. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <proxyhost/mock.h>

#include "file_test.h"
#include "lib/metric_table.h"
#include "tap.h"

typedef struct tstate {
  ph_series *runs[2][3]; /* result x stage */
  ph_series *seconds;
  ph_series *open;
  ph_series *depth[2];
  ph_metric *family;
  ph_series *bad[2]; /* the wrong size for a 3-value label */
  ph_series *by_role;         /* fixed: role only */
  ph_series *role_runs[2];    /* fixed: role x result */
  ph_series *role_only[2][3]; /* fixed: role x result x stage, declared */
} tstate;

static const char *const results[] = {"ok", "failed", NULL};
static const char *const stages[] = {"dns", "connect", "tls", NULL};
static const char *const sides[] = {"in", "out", NULL};
static const ph_label_def run_labels[] = {{"result", results},
                                          {"stage", stages}};
static const ph_label_def side_label[] = {{"side", sides}};
static const ph_label_def stage_label[] = {{"stage", stages}};
static const double secs[] = {0.01, 0.1, 1};

static const ph_metric_table good[] = {
    PH_METRIC("proxyhost_tt_runs_total", PH_METRIC_COUNTER, "runs",
              PH_METRIC_LABELS(run_labels), PH_METRIC_NO_BUCKETS, tstate,
              runs),
    PH_METRIC("proxyhost_tt_seconds", PH_METRIC_HISTOGRAM, "run time",
              PH_METRIC_NO_LABELS, PH_METRIC_BUCKETS(secs), tstate, seconds),
    PH_METRIC("proxyhost_tt_open", PH_METRIC_GAUGE, "open now",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, tstate, open),
    PH_METRIC("proxyhost_tt_depth", PH_METRIC_GAUGE, "depth by side",
              PH_METRIC_LABELS(side_label), PH_METRIC_NO_BUCKETS, tstate,
              depth),
    PH_METRIC_FAMILY("proxyhost_tt_family_total", PH_METRIC_COUNTER,
                     "resolved by the module", PH_METRIC_LABELS(side_label),
                     PH_METRIC_NO_BUCKETS, tstate, family),
    PH_METRIC_END};

static const double unsorted[] = {1, 0.5};
static const ph_metric_table refused[] = {
    PH_METRIC("proxyhost_tt_open", PH_METRIC_GAUGE, "open now",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, tstate, open),
    PH_METRIC("proxyhost_tt_bad_seconds", PH_METRIC_HISTOGRAM, "bad buckets",
              PH_METRIC_NO_LABELS, PH_METRIC_BUCKETS(unsorted), tstate,
              seconds),
    PH_METRIC("proxyhost_tt_after", PH_METRIC_GAUGE, "never reached",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, tstate, depth[0]),
    PH_METRIC_END};

static const ph_metric_table wrong_size[] = {
    PH_METRIC("proxyhost_tt_stages_total", PH_METRIC_COUNTER, "by stage",
              PH_METRIC_LABELS(stage_label), PH_METRIC_NO_BUCKETS, tstate,
              bad),
    PH_METRIC_END};

/* ok at any stage, failed only at tls (NULL: any value of the label). */
static const char *const produced[] = {"ok", NULL, "failed", "tls"};
static const ph_metric_table only[] = {
    PH_METRIC_ONLY("proxyhost_tt_only_total", PH_METRIC_COUNTER,
                   "some combinations", PH_METRIC_LABELS(run_labels),
                   PH_METRIC_NO_BUCKETS, PH_METRIC_COMBOS(produced, 2), tstate,
                   runs),
    PH_METRIC_END};

static const char *const roles[] = {"client", "server", "agent", NULL};
static const ph_label_def role_label[] = {{"role", roles}};
static const ph_label_def role_runs_labels[] = {{"role", roles},
                                                {"result", results}};
static const ph_label_def role_only_labels[] = {
    {"role", roles}, {"result", results}, {"stage", stages}};
/* Over (result, stage): the role is fixed. */
static const char *const role_produced[] = {"ok", NULL, "failed", "tls"};
static const ph_metric_table fixed_table[] = {
    PH_METRIC("proxyhost_tt_role_sessions", PH_METRIC_GAUGE, "by role",
              PH_METRIC_LABELS(role_label), PH_METRIC_NO_BUCKETS, tstate,
              by_role),
    PH_METRIC("proxyhost_tt_role_runs_total", PH_METRIC_COUNTER,
              "by role and result", PH_METRIC_LABELS(role_runs_labels),
              PH_METRIC_NO_BUCKETS, tstate, role_runs),
    PH_METRIC_ONLY("proxyhost_tt_role_only_total", PH_METRIC_COUNTER,
                   "some combinations of one role",
                   PH_METRIC_LABELS(role_only_labels), PH_METRIC_NO_BUCKETS,
                   PH_METRIC_COMBOS(role_produced, 2), tstate, role_only),
    PH_METRIC_END};
static const ph_metric_table fixed_unlabelled[] = {
    PH_METRIC("proxyhost_tt_role_open", PH_METRIC_GAUGE, "no label to fix",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, tstate, open),
    PH_METRIC_END};

static const ph_metric_table *which;
static const char *fixed; /* ph_metric_table_register_fixed's value */
static tstate st;

static int tt_init(ph_ctx *ctx, const ph_api *api, void **state) {
  *state = &st;
  if (fixed) {
    if (ph_metric_table_register_fixed(api, ctx, which, fixed, &st) != PH_OK)
      return PH_EINVAL;
    api->gauge_set(st.by_role, 4);
    api->inc(st.role_runs[1], 6);    /* failed */
    api->inc(st.role_only[1][2], 8); /* failed,tls */
    return PH_OK;
  }
  if (ph_metric_table_register(api, ctx, which, &st) != PH_OK)
    return PH_EINVAL;
  if (which == only) {
    api->inc(st.runs[1][2], 2); /* failed,tls */
    return PH_OK;
  }
  if (which != good)
    return PH_OK;
  /* Update through the handles the table filled. */
  api->inc(st.runs[0][0], 1);
  api->inc(st.runs[0][2], 3);
  api->inc(st.runs[1][1], 5);
  api->observe(st.seconds, 0.05);
  api->gauge_set(st.open, 7);
  api->gauge_set(st.depth[1], 9);
  const char *v[1] = {"out"};
  api->inc(api->series(st.family, v), 11);
  return PH_OK;
}

static const ph_module tt = {
    PH_MODULE_HEADER("tt", "1.0"),
    .init = tt_init,
};

static ph_mock *start(const ph_metric_table *t, const char *logpath,
                      int *rc) {
  char conf[512], e[1024];
  snprintf(conf, sizeof(conf), "[log]\nlevel = info\nfile = %s\n", logpath);
  which = t;
  memset(&st, 0, sizeof(st));
  ph_mock *m = ph_mock_new(conf, e, sizeof(e));
  if (!m || ph_mock_add(m, &tt, e, sizeof(e)) != PH_OK) {
    printf("Bail out! %s\n", e);
    exit(1);
  }
  *rc = ph_mock_init(m, e, sizeof(e));
  return m;
}

/* The log of the last start_in. */
static char logpath[256];

/* start with the log at dir/name.log (logpath). */
static ph_mock *start_in(const char *dir, const char *name,
                         const ph_metric_table *t, int *rc) {
  snprintf(logpath, sizeof(logpath), "%s/%s.log", dir, name);
  return start(t, logpath, rc);
}

static void test_good(const char *dir) {
  int rc;
  ph_mock *m = start_in(dir, "good", good, &rc);
  is_int(rc, PH_OK, "a table of every type registers in one call");
  const char *t = ph_mock_metrics_text(m);
  like(t, "# HELP proxyhost_tt_runs_total runs\n"
          "# TYPE proxyhost_tt_runs_total counter\n",
       "counter: name, help and type");
  /* runs[result][stage]: the first label the outer index */
  like(t, "proxyhost_tt_runs_total{result=\"ok\",stage=\"dns\"} 1\n",
       "handle [0][0] is ok,dns");
  like(t, "proxyhost_tt_runs_total{result=\"ok\",stage=\"tls\"} 3\n",
       "handle [0][2] is ok,tls");
  like(t, "proxyhost_tt_runs_total{result=\"failed\",stage=\"connect\"} 5\n",
       "handle [1][1] is failed,connect");
  like(t, "proxyhost_tt_runs_total{result=\"failed\",stage=\"tls\"} 0\n",
       "every combination exists");
  like(t, "# TYPE proxyhost_tt_seconds histogram\n",
       "histogram: type");
  like(t, "proxyhost_tt_seconds_bucket{le=\"0.01\"} 0\n"
          "proxyhost_tt_seconds_bucket{le=\"0.1\"} 1\n"
          "proxyhost_tt_seconds_bucket{le=\"1\"} 1\n"
          "proxyhost_tt_seconds_bucket{le=\"+Inf\"} 1\n",
       "histogram: the declared buckets, the handle observed");
  like(t, "# TYPE proxyhost_tt_open gauge\nproxyhost_tt_open 7\n",
       "gauge without labels: its handle");
  like(t, "proxyhost_tt_depth{side=\"out\"} 9\n",
       "gauge with a label: the array handle");
  like(t, "proxyhost_tt_family_total{side=\"out\"} 11\n",
       "PH_METRIC_FAMILY: the ph_metric * handle, series resolved later");
  ok(strstr(t, "proxyhost_tt_runs_total") < strstr(t, "proxyhost_tt_seconds")
         && strstr(t, "proxyhost_tt_seconds") <
                strstr(t, "proxyhost_tt_family_total"),
     "families appear in table order");
  ph_mock_free(m);
}

static void test_only(const char *dir) {
  int rc;
  ph_mock *m = start_in(dir, "only", only, &rc);
  is_int(rc, PH_OK, "PH_METRIC_ONLY: a table with declared combinations "
                    "registers");
  const char *t = ph_mock_metrics_text(m);
  like(t, "proxyhost_tt_only_total{result=\"ok\",stage=\"dns\"} 0\n",
       "a declared combination (a NULL value: any) shows at zero");
  like(t, "proxyhost_tt_only_total{result=\"failed\",stage=\"tls\"} 2\n",
       "the handle [1][2] is failed,tls");
  unlike(t, "proxyhost_tt_only_total{result=\"failed\",stage=\"dns\"}",
         "a combination not declared is not shown");
  ok(st.runs[0][1] != NULL && st.runs[1][0] == NULL,
     "a declared combination has its handle, one not declared NULL");
  ph_mock_free(m);
}

static void test_refused(const char *dir) {
  int rc;
  ph_mock *m = start_in(dir, "refused", refused, &rc);
  ok(rc != PH_OK, "a refused entry fails init");
  char *log = file_test_slurp(logpath);
  like(log ? log : "", "metric table entry refused",
       "the refusal is logged");
  like(log ? log : "", "proxyhost_tt_bad_seconds",
       "the log line names the refused metric");
  like(ph_mock_metrics_text(m), "proxyhost_tt_open ",
       "the entries before the refused one were registered");
  unlike(ph_mock_metrics_text(m), "proxyhost_tt_after",
         "nothing after the refused entry is registered");
  free(log);
  ph_mock_free(m);

  m = start_in(dir, "size", wrong_size, &rc);
  ok(rc != PH_OK, "a handle of the wrong size fails init");
  log = file_test_slurp(logpath);
  like(log ? log : "", "proxyhost_tt_stages_total",
       "the log line names the metric");
  like(log ? log : "", "one series per label combination",
       "and says why");
  free(log);
  ph_mock_free(m);
}

static void test_fixed(const char *dir) {
  int rc;
  fixed = "server";
  ph_mock *m = start_in(dir, "fixed", fixed_table, &rc);
  is_int(rc, PH_OK, "fixed: a table whose first label is the role registers");
  const char *t = ph_mock_metrics_text(m);
  like(t, "proxyhost_tt_role_sessions{role=\"server\"} 4\n",
       "fixed: a family of the role label alone has one handle");
  like(t, "proxyhost_tt_role_runs_total{role=\"server\",result=\"ok\"} 0\n",
       "fixed: the other labels' combinations exist for the role");
  like(t, "proxyhost_tt_role_runs_total{role=\"server\",result=\"failed\"} 6\n",
       "fixed: the handle [1] is failed");
  unlike(t, "role=\"client\"", "fixed: no series of another role");
  unlike(t, "role=\"agent\"", "fixed: nor of the third");
  like(t,
       "proxyhost_tt_role_only_total{role=\"server\",result=\"failed\","
       "stage=\"tls\"} 8\n",
       "fixed + PH_METRIC_ONLY: the handle [1][2] is failed,tls");
  like(t,
       "proxyhost_tt_role_only_total{role=\"server\",result=\"ok\","
       "stage=\"dns\"} 0\n",
       "fixed + PH_METRIC_ONLY: a declared combination (any stage) shows");
  unlike(t,
         "proxyhost_tt_role_only_total{role=\"server\",result=\"failed\","
         "stage=\"dns\"}",
         "fixed + PH_METRIC_ONLY: one not declared is not shown");
  ok(st.role_only[0][0] && st.role_only[1][2] && !st.role_only[1][0],
     "fixed + PH_METRIC_ONLY: declared handles filled, the others NULL");
  ph_mock_free(m);

  fixed = "gateway";
  m = start_in(dir, "fixed_unknown", fixed_table, &rc);
  ok(rc != PH_OK, "fixed: a value the first label lacks fails init");
  char *log = file_test_slurp(logpath);
  like(log ? log : "", "proxyhost_tt_role_sessions",
       "fixed: the log line names the metric");
  free(log);
  ph_mock_free(m);

  fixed = "server";
  m = start_in(dir, "fixed_nolabel", fixed_unlabelled, &rc);
  ok(rc != PH_OK, "fixed: a family without labels is refused");
  ph_mock_free(m);
  fixed = NULL;
}

int main(void) {
  plan_lazy();
  char dir[] = "/tmp/test_metric_table.XXXXXX";
  if (!mkdtemp(dir)) {
    printf("Bail out! mkdtemp\n");
    return 1;
  }
  test_good(dir);
  test_only(dir);
  test_refused(dir);
  test_fixed(dir);
  if (!getenv("PH_TEST_KEEP")) {
    const char *logs[] = {"good.log",         "only.log",  "refused.log",
                          "size.log",         "fixed.log", "fixed_unknown.log",
                          "fixed_nolabel.log"};
    char p[256];
    for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
      snprintf(p, sizeof(p), "%s/%s", dir, logs[i]);
      unlink(p);
    }
    rmdir(dir);
  } else {
    printf("# kept %s\n", dir);
  }
  return done_testing();
}

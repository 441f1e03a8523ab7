/* SPDX-License-Identifier: BSD-2-Clause */
/* outcome_reporter through the mock host, with a fake "cp.session" the
 * test drives (the session's generation and state, and every
 * ReportOutcomes call: the test reads the packed batches and answers
 * them) and a fake user holding "outcome.sink". The real session and
 * controllers are t/integration/cp_outcomes.sh's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>
#include <proxyhost/outcome_sink.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "contracts/cp_session.h"
#include "contracts/cp_status.h"
#include "mock_test.h"
#include "tap.h"

extern const ph_module proxyhost_module; /* outcome_reporter */

/* ---- the fake session ------------------------------------------------ */

#define MSG_MAX (1 << 20)
static struct {
  cp_session_info info;
  int calls;          /* report_outcomes accepted */
  int64_t pending;    /* the call the test has not answered (0: none) */
  cp_session_outcomes_fn done;
  void *arg;
  uint32_t n;
  uint8_t *msg[CP_SESSION_OUTCOME_MSGS_MAX];
  size_t len[CP_SESSION_OUTCOME_MSGS_MAX];
  uint64_t gen;
  int cancelled;
  int fenced;
  uint64_t fenced_gen;
  int fenced_status;
} fs;

static void fs_current(void *self, cp_session_info *out) {
  (void)self;
  *out = fs.info;
}

static void fs_clear(void) {
  for (uint32_t i = 0; i < fs.n; i++)
    free(fs.msg[i]);
  fs.n = 0;
}

static int64_t fs_report(void *self, uint64_t gen, const uint8_t *const *msgs,
                         const size_t *lens, uint32_t n, int64_t timeout_ms,
                         cp_session_outcomes_fn done, void *arg) {
  (void)self;
  (void)timeout_ms;
  if (!fs.info.running || gen != fs.info.generation)
    return PH_ESTATE;
  if (fs.pending || n < 1 || n > CP_SESSION_OUTCOME_MSGS_MAX)
    return PH_EBUSY;
  fs_clear();
  for (uint32_t i = 0; i < n; i++) {
    fs.msg[i] = malloc(lens[i]);
    memcpy(fs.msg[i], msgs[i], lens[i]);
    fs.len[i] = lens[i];
  }
  fs.n = n;
  fs.gen = gen;
  fs.done = done;
  fs.arg = arg;
  fs.pending = ++fs.calls;
  return fs.pending;
}

static void fs_cancel(void *self, int64_t id) {
  (void)self;
  if (id == fs.pending) {
    fs.pending = 0;
    fs.cancelled++;
  }
}

static void fs_fence_failed(void *self, uint64_t gen, int status) {
  (void)self;
  fs.fenced++;
  fs.fenced_gen = gen;
  fs.fenced_status = status;
}

static const cp_session_v1 fs_service = {fs_current, fs_report, fs_cancel,
                                         fs_fence_failed};

static int fs_init(ph_ctx *ctx, const ph_api *api, void **state) {
  *state = NULL;
  return api->service_register(ctx, CP_SESSION_SERVICE, CP_SESSION_MAJOR,
                               CP_SESSION_MINOR, &fs_service, NULL);
}

MOCK_TEST_MODULE(fake_session, "fake_session", "1",
                 .description = "test: cp.session",
                 .provides = MOCK_TEST_NAMES(CP_SESSION_SERVICE),
                 .init = fs_init);

/* ---- the fake user of outcome.sink ----------------------------------- */

static const ph_outcome_sink_v1 *sink;
static void *sink_self;
static const ph_api *uapi;
static ph_ctx *uctx;

MOCK_TEST_KEEP(u_init, uapi, uctx);

static int u_start(void *state) {
  (void)state;
  sink = uapi->service_get(uctx, PH_OUTCOME_SINK_SERVICE,
                           PH_OUTCOME_SINK_MAJOR, 0, &sink_self);
  return sink ? PH_OK : PH_ENOENT;
}

MOCK_TEST_MODULE(fake_user, "fake_user", "1",
                 .description = "test: records outcomes",
                 .requires = MOCK_TEST_NAMES(PH_OUTCOME_SINK_SERVICE),
                 .init = u_init, .start = u_start);

/* ---- helpers ----------------------------------------------------------- */

static ph_mock *mk;

static int record(int n, const char *proxy, int64_t observed) {
  int ok_n = 0;
  for (int i = 0; i < n; i++) {
    ph_outcome o = {0, proxy, "r1", PH_OUTCOME_STAGE_TUNNEL,
                    PH_OUTCOME_FAILURE, i, observed};
    if (sink->record(sink_self, &o) == PH_OK)
      ok_n++;
  }
  return ok_n;
}

/* Runs the loop until a call is pending (bounded: 2 s). */
static int wait_call(void) {
  for (int i = 0; i < 200 && !fs.pending; i++)
    ph_mock_run_for(mk, 10);
  return fs.pending != 0;
}

static void answer(int status, uint64_t acked) {
  fs.pending = 0;
  fs.done(fs.arg, status, acked);
}

/* Batch i of the pending call. */
static Controlplane__V1__ReportOutcomesRequest *batch(uint32_t i) {
  return controlplane__v1__report_outcomes_request__unpack(NULL, fs.len[i],
                                                           fs.msg[i]);
}

static uint64_t seq_of(uint32_t i, size_t *n_outcomes) {
  Controlplane__V1__ReportOutcomesRequest *r = batch(i);
  uint64_t s = r ? r->sequence : 0;
  if (n_outcomes)
    *n_outcomes = r ? r->n_outcomes : 0;
  if (r)
    controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
  return s;
}

static double metric(const char *name) {
  double v;
  return ph_mock_metric(mk, name, NULL, &v) == PH_OK ? v : -1;
}

static void running(uint64_t gen, uint32_t maxc, const char *session) {
  fs.info.generation = gen;
  fs.info.running = 1;
  fs.info.max_runtime_counters = maxc;
  snprintf(fs.info.worker_id, sizeof(fs.info.worker_id), "w1");
  snprintf(fs.info.session_id, sizeof(fs.info.session_id), "%s", session);
}

int main(void) {
  plan_lazy();
  char err[512];
  mk = ph_mock_new("[outcome_reporter]\nqueue_capacity = 1024\n"
                   "flush_interval = 20ms\nbackoff.min = 1ms\n"
                   "backoff.max = 5ms\n",
                   err, sizeof(err));
  if (!mk || ph_mock_add(mk, &fake_session, err, sizeof(err)) < 0 ||
      ph_mock_add(mk, &proxyhost_module, err, sizeof(err)) < 0 ||
      ph_mock_add(mk, &fake_user, err, sizeof(err)) < 0 ||
      ph_mock_init(mk, err, sizeof(err)) < 0 ||
      ph_mock_start(mk, err, sizeof(err)) < 0) {
    printf("Bail out! %s\n", err);
    return 1;
  }
  ok(sink != NULL, "outcome.sink is provided");

  /* Before a running session: queued, nothing sent (CP-2-4). */
  is_int(record(10, "p1", 1700000000000), 10, "ten outcomes recorded");
  ph_mock_run_for(mk, 60);
  is_int(fs.calls, 0, "CP-2-4 no call while no session runs");
  fs.info.generation = 1; /* registered, not ACKed yet */
  ph_mock_run_for(mk, 60);
  is_int(fs.calls, 0, "CP-2-4 ... nor before the first ACK");

  /* Running, batches of 4: 4 + 4 + 2 (partial on the flush). */
  running(1, 4, "s1");
  ok(wait_call(), "a call once the session runs");
  size_t n0 = 0, n2 = 0;
  uint64_t s0 = seq_of(0, &n0);
  int three = fs.n == 3 || fs.n == 2;
  ok(three, "CP-5-8 batches of min(512, max_runtime_counters = 4)");
  is_int(s0, 1, "CP-5-1 the first batch is sequence 1");
  is_int(n0, 4, "CP-5-8 ... with 4 outcomes");
  if (fs.n == 3) {
    seq_of(2, &n2);
    is_int(n2, 2, "the partial batch holds the rest");
  }
  Controlplane__V1__ReportOutcomesRequest *r = batch(0);
  ok(r && !strcmp(r->worker_id, "w1") && !strcmp(r->session_id, "s1"),
     "CP-8-2 each batch names the worker and the session");
  ok(r && r->n_outcomes && !strcmp(r->outcomes[0]->proxy_id, "p1") &&
         r->outcomes[0]->stage ==
             CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL &&
         r->outcomes[0]->result ==
             CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE &&
         r->outcomes[0]->observed_at &&
         r->outcomes[0]->observed_at->seconds == 1700000000,
     "an outcome's fields reach the wire (stage, result, observed_at)");
  if (r)
    controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
  uint64_t last = seq_of(fs.n - 1, NULL);
  answer(CP_GRPC_OK, last);
  for (int i = 0; i < 50 && metric("proxyhost_outcome_reporter_queue_depth") != 0;
       i++) {
    if (fs.pending)
      answer(CP_GRPC_OK, seq_of(fs.n - 1, NULL));
    ph_mock_run_for(mk, 10);
  }
  is_int(metric("proxyhost_outcome_reporter_queue_depth"), 0,
         "CP-1-30 acknowledged batches are freed");
  is_int(metric("proxyhost_outcome_reporter_batches_acknowledged_total"), 3,
         "three batches acknowledged");

  /* 70 outcomes: 18 batches, the first call carries 16 (CP-5-9). */
  is_int(record(70, "p2", 1700000000001), 70, "70 recorded");
  ok(wait_call(), "a call");
  is_int(fs.n, 16, "CP-5-9 at most 16 batches in one call");
  is_int(seq_of(0, NULL), 4, "CP-5-1 numbering goes on in the session");
  uint8_t *keep = malloc(fs.len[0]);
  size_t keep_len = fs.len[0];
  memcpy(keep, fs.msg[0], keep_len);
  answer(CP_GRPC_UNAVAILABLE, 0);
  ok(wait_call(), "CP-5-16 UNAVAILABLE: the batches go again");
  is_int(fs.gen, 1, "CP-5-16 ... in the same session");
  ok(fs.n == 16 && fs.len[0] == keep_len &&
         !memcmp(fs.msg[0], keep, keep_len),
     "CP-5-15 the same batch, byte for byte");
  is_int(metric("proxyhost_outcome_reporter_batches_resent_total"), 16,
         "resends counted");
  free(keep);
  /* Acknowledged only the first 10: the rest goes again. */
  answer(CP_GRPC_OK, 13);
  ok(wait_call(), "a call for what was not acknowledged");
  is_int(seq_of(0, NULL), 14, "CP-5-15 it starts after the acknowledged");

  /* A fence error: handed to the supervisor, nothing more sent. */
  answer(CP_GRPC_ABORTED, 0);
  ph_mock_run_for(mk, 60);
  is_int(fs.fenced, 1, "CP-5-17 ABORTED is handed to the session supervisor");
  is_int(fs.fenced_gen, 1, "... for the session it happened in");
  is_int(fs.fenced_status, CP_GRPC_ABORTED, "... with its status");
  int calls = fs.calls;
  ph_mock_run_for(mk, 60);
  is_int(fs.calls, calls, "CP-5-17 nothing more is sent in that session");
  is_int(metric("proxyhost_outcome_reporter_calls_total{status=\"aborted\"}"),
         1, "calls counted by status");

  /* A new session: numbering from 1, the sent batches dropped. */
  double before = metric("proxyhost_outcome_reporter_dropped_total"
                         "{reason=\"session\"}");
  is_int(record(5, "p3", 1700000000002), 5, "five more recorded meanwhile");
  running(2, 512, "s2");
  ok(wait_call(), "CP-5-18 the new session gets a call");
  is_int(seq_of(0, NULL), 1, "CP-5-18 numbered from 1 again");
  is_int(fs.gen, 2, "... in the new generation");
  r = batch(0);
  ok(r && !strcmp(r->session_id, "s2"), "... naming the new session");
  if (r)
    controlplane__v1__report_outcomes_request__free_unpacked(r, NULL);
  ok(metric("proxyhost_outcome_reporter_dropped_total{reason=\"session\"}") >
         before,
     "CP-5-18 the old session's sent batches dropped and counted");

  /* An acknowledgement of a sequence never cut: a new session too. */
  answer(CP_GRPC_OK, 99);
  ph_mock_run_for(mk, 30);
  is_int(fs.fenced, 2, "an acknowledgement beyond what was sent is refused");
  is_int(fs.fenced_status, CP_GRPC_INTERNAL, "... as INTERNAL");

  /* Malformed and full (CP-5-10). */
  is_int(record(3, "", 1700000000000), 0, "an empty proxy id is refused");
  is_int(record(2, "p1", 0), 0, "no observed_at is refused");
  is_int(metric("proxyhost_outcome_reporter_dropped_total{reason=\"invalid\"}"),
         5, "malformed outcomes counted");
  is_int(record(1, "p1", 1700000000000), 1, "one more recorded");
  running(3, 512, "s3");
  ok(wait_call(), "a third session's call");
  int got = record(2000, "p1", 1700000000000);
  ok(got < 2000 && got > 0, "CP-5-7 a full queue takes no more");
  ok(metric("proxyhost_outcome_reporter_dropped_total{reason=\"full\"}") ==
         2000 - got,
     "CP-5-10 ... and counts each drop");

  /* Stop with a call in flight: cancelled, no callback expected. */
  ok(fs.pending != 0, "a call in flight");
  ph_mock_stop(mk);
  is_int(fs.cancelled, 1, "stop cancels the call in flight");
  fs_clear();
  ph_mock_free(mk);
  return done_testing();
}

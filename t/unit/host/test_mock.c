/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock host drives the probe test module through the real host API:
 * lifecycle, readiness, jobs, bus, reload, drain and failures, through
 * <proxyhost/mock.h> (the ph_mock_* functions libproxyhost-mock exports,
 * the one mock API of the tree), and its test kit: the loop, fake and real
 * service providers, a metric's value, the loaded descriptors. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "loop_test.h"
#include "mock_core.h"
#include "mock_test.h"
#include "tap.h"

#define PROBE "[proxyhost]\nmodules = " PH_TEST_MODDIR "/probe.so\n"

static char err[8192];

static ph_mock *started(const char *text) {
  err[0] = '\0';
  return mock_test_start(text, NULL, err, sizeof err);
}

static void test_lifecycle(void) {
  ph_mock *m = started(PROBE "[probe]\njobs = 5\n");
  ok(m != NULL, "probe initialises and starts");
  if (!m)
    return;
  ok(ph_mock_ready(m), "ready after start");
  ph_mock_run_for(m, 200);
  like(ph_mock_metrics_text(m), "probe_jobs_done_total 5",
       "jobs ran on helper threads and finished on the loop");

  char *payload = strdup("hello");
  is_int(ph_mock_publish(m, "probe.ping", "probe.ping/1", payload, free), PH_OK,
         "publish to the module's topic");
  like(ph_mock_metrics_text(m), "probe_pings_total 1",
       "the module's handler ran synchronously");
  is_int(ph_mock_publish(m, "probe.ping", "other/1", strdup("x"), free),
         PH_EINVAL, "a topic's type is fixed");

  is_int(ph_mock_reload(m, PROBE "[probe]\ngreeting = again\n", NULL, 0), 0,
         "reload with a valid configuration");
  like(ph_mock_metrics_text(m), "probe_reloads_total 1", "module reload ran");
  like(ph_mock_metrics_text(m), "probe_reload_messages_total 1",
       "host.reload published on the bus");
  is_int(ph_mock_reload(m, PROBE "[probe]\ncount = 1000\n", NULL, 0), -1,
         "reload with an invalid value is refused");
  like(ph_mock_metrics_text(m), "proxyhost_reloads_total{result=\"failed\"} 1",
       "failed reload counted");
  like(ph_mock_metrics_text(m), "probe_reloads_total 1",
       "module not reloaded with the bad configuration");
  is_int(ph_mock_stop(m), 0, "stop without delay drains at once");
  ph_mock_free(m);
}

/* ph_api.service_provided answers from the loaded descriptors. */
static void test_service_provided(void) {
  ph_mock *m = started(PROBE);
  ok(m != NULL, "probe starts");
  if (!m)
    return;
  ph_ctx *ctx = mock_core(m)->mods[0];
  ok(ph_host_api.service_provided(ctx, "probe.echo") == 1,
     "service_provided: a service the probe's descriptor lists");
  ok(ph_host_api.service_provided(ctx, "authorizer") == 0,
     "service_provided: a service no loaded module lists");
  ok(ph_host_api.service_provided(ctx, NULL) == 0 &&
         ph_host_api.service_provided(NULL, "probe.echo") == 0,
     "service_provided: NULL arguments answer 0");
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* probe's module threads (ABI 1.2): they post back and the host joins
 * them at the module's stop. */
static void test_probe_threads(void) {
  ph_mock *m = started(PROBE "[probe]\nthreads = 2\nthread_posts = 10\n"
                             "thread_queue = 4\n");
  ok(m != NULL, "probe starts two threads");
  if (!m)
    return;
  for (int i = 0; i < 500 && !strstr(ph_mock_metrics_text(m),
                                     "probe_thread_calls_total 20\n");
       i++)
    ph_mock_run_for(m, 10);
  like(ph_mock_metrics_text(m), "probe_thread_calls_total 20",
       "their posts ran on the loop (4-call queues, the threads waited)");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"probe\"} 2",
       "two threads running");
  is_int(ph_mock_stop(m), 0, "stop");
  like(ph_mock_metrics_text(m), "probe_thread_stops_total 2",
       "each thread's stop ran");
  like(ph_mock_metrics_text(m), "proxyhost_module_threads{module=\"probe\"} 0",
       "and both were joined at the module's stop");
  ph_mock_free(m);
}

/* A module declaring ABI 1.1 loads and runs on this host: the 1.2 table
 * only appends to the 1.1 layout. */
static void test_minor1_module(void) {
  ok(offsetof(ph_api, service_provided) ==
         offsetof(ph_api, module_name) + (38 + 16 + 2) * sizeof(void *),
     "the 1.1 part of ph_api keeps its layout");
  ok(offsetof(ph_api, thread_start) ==
             offsetof(ph_api, service_provided) + sizeof(void *) &&
         offsetof(ph_api, thread_join) ==
             offsetof(ph_api, thread_start) + 2 * sizeof(void *) &&
         offsetof(ph_api, service_get_named) ==
             offsetof(ph_api, thread_join) + sizeof(void *),
     "1.2 appends thread_start, thread_post, thread_join");
  ok(offsetof(ph_api, service_provider_loaded) ==
             offsetof(ph_api, service_get_named) + sizeof(void *) &&
         offsetof(ph_api, metric_only) ==
             offsetof(ph_api, service_provider_loaded) + sizeof(void *),
     "1.2 appends service_get_named, service_provider_loaded (instances)");
  ok(offsetof(ph_api, conf_is_set) ==
             offsetof(ph_api, metric_only) + sizeof(void *) &&
         ph_host_api.metric_only != NULL,
     "1.2 appends metric_only (the series a module produces), set");
  ok(offsetof(ph_api, route_register) ==
             offsetof(ph_api, conf_is_set) + sizeof(void *),
     "1.2 ends with conf_is_set (where a value came from)");
  ok(offsetof(ph_api, route_reply) ==
             offsetof(ph_api, route_register) + sizeof(void *) &&
         ph_host_api.route_register != NULL &&
         ph_host_api.route_reply != NULL,
     "1.3 appends route_register and route_reply (admin routes), set");
  ok(offsetof(ph_api, conf_peer_int) ==
             offsetof(ph_api, route_reply) + sizeof(void *) &&
         ph_host_api.conf_peer_int != NULL,
     "1.4 appends conf_peer_int (another module's numbers), set");
  ok(offsetof(ph_api, conf_peer_str) ==
             offsetof(ph_api, conf_peer_int) + sizeof(void *) &&
         ph_host_api.conf_peer_str != NULL,
     "1.4 then conf_peer_str (another module's identifiers), set");
  ok(offsetof(ph_api, drain_cut) ==
             offsetof(ph_api, conf_peer_str) + sizeof(void *) &&
         ph_host_api.drain_cut != NULL,
     "1.5 appends drain_cut (a module's drain cut short), set");
  ok(offsetof(ph_api, defer_new) ==
             offsetof(ph_api, drain_cut) + sizeof(void *) &&
         offsetof(ph_api, defer_post) ==
             offsetof(ph_api, defer_new) + sizeof(void *) &&
         offsetof(ph_api, defer_cancel) ==
             offsetof(ph_api, defer_post) + sizeof(void *) &&
         offsetof(ph_api, defer_free) ==
             offsetof(ph_api, defer_cancel) + sizeof(void *) &&
         ph_host_api.defer_new && ph_host_api.defer_post &&
         ph_host_api.defer_cancel && ph_host_api.defer_free,
     "1.6 appends defer_new, defer_post, defer_cancel, defer_free, set");
  ok(offsetof(ph_api, status_register) ==
             offsetof(ph_api, defer_free) + sizeof(void *) &&
         offsetof(ph_api, status_field) ==
             offsetof(ph_api, status_register) + sizeof(void *) &&
         offsetof(ph_api, status_field_int) ==
             offsetof(ph_api, status_field) + sizeof(void *) &&
         offsetof(ph_api, status_table) ==
             offsetof(ph_api, status_field_int) + sizeof(void *) &&
         offsetof(ph_api, status_row) ==
             offsetof(ph_api, status_table) + sizeof(void *) &&
         sizeof(ph_api) == offsetof(ph_api, status_row) + sizeof(void *) &&
         ph_host_api.status_register && ph_host_api.status_field &&
         ph_host_api.status_field_int && ph_host_api.status_table &&
         ph_host_api.status_row,
     "1.7 appends status_register, status_field, status_field_int, "
     "status_table, status_row last, set");
  is_int(ph_host_api.abi_minor, PH_ABI_MINOR,
         "the host's table says the headers' minor");
  /* 1.4 (issue 12): ph_conf_key.flag, pool_view.h, pool_store.h and two
   * ph_api slots, conf_peer_int and conf_peer_str; 1.5: drain_cut; 1.6:
   * the defer_* calls; 1.7: the status_* calls. */
  is_int(PH_ABI_MINOR, 7, "the headers are 1.7");
  ph_mock *m = started("[proxyhost]\nmodules = " PH_TEST_MODDIR "/minor1.so\n");
  ok(m != NULL, "a module declaring ABI 1.1 loads, checks, inits, starts");
  if (!m)
    return;
  is_int(ph_mock_module(m, NULL)->abi_minor, 1, "it declares minor 1");
  ph_mock_run_for(m, 50);
  like(ph_mock_metrics_text(m), "minor1_calls_total 1", "its post ran");
  like(ph_mock_metrics_text(m), "minor1_external_total 1.5",
       "its 1.1 calls work (counter_set)");
  is_int(ph_mock_stop(m), 0, "it stops");
  ph_mock_free(m);
}

static void test_readiness_and_drain(void) {
  ph_mock *m = started(PROBE "[probe]\nready = false\n");
  ok(m && !ph_mock_ready(m), "a module that is not ready keeps /readyz down");
  ph_mock_free(m);

  m = started(PROBE "drain_timeout = 2s\n[probe]\nstop_delay = 50ms\n");
  ok(m != NULL, "slow drainer starts");
  if (m) {
    is_int(ph_mock_stop(m), 0, "stop waits for an asynchronous drain");
    ph_mock_free(m);
  }
  m = started(PROBE "drain_timeout = 100ms\n[probe]\nstop_delay = 5s\n");
  ok(m != NULL, "too-slow drainer starts");
  if (m) {
    is_int(ph_mock_stop(m), PH_ELIMIT,
           "the drain deadline cuts a slow module off");
    ph_mock_free(m);
  }
}

static void test_failures(void) {
  err[0] = '\0';
  ph_mock *m =
      ph_mock_new(PROBE "[probe]\nfail_init = true\n", err, sizeof err);
  ok(m != NULL, "loads");
  is_int(ph_mock_init(m, err, sizeof err), -1, "init failure reported");
  like(err, "module probe: init failed", "failing module named");
  ph_mock_free(m);

  err[0] = '\0';
  m = ph_mock_new(PROBE "[probe]\nfail_start = true\n", err, sizeof err);
  ph_mock_init(m, err, sizeof err);
  is_int(ph_mock_start(m, err, sizeof err), -1, "start failure reported");
  like(err, "module probe: start failed", "failing module named");
  ph_mock_free(m);

  err[0] = '\0';
  m = ph_mock_new(PROBE "[probe]\ncolour = red\n", err, sizeof err);
  is_int(ph_mock_init(m, err, sizeof err), -1,
         "unknown key refused before init");
  like(err, "probe.colour", "unknown key named");
  ph_mock_free(m);
}

/* ---- api->defer_* (ABI 1.6): calls on the loop's next turn ------------- */

/* A module linked into the test program that only keeps the API. */
static const ph_api *D_api;
static ph_ctx *D_ctx;

MOCK_TEST_KEEP(dmod_init, D_api, D_ctx);
MOCK_TEST_MODULE(dmod, "dmod", "1.0", .init = dmod_init);

static char d_log[64];
static size_t d_n;
static ph_defer *d_handles[4];
static int d_repost; /* 'a' posts itself and 'c' again, once */

static void d_fn(ph_defer *d, void *arg) {
  char c = (char)(intptr_t)arg;
  if (d_n + 1 < sizeof(d_log))
    d_log[d_n++] = c;
  d_log[d_n] = '\0';
  if (c == 'a' && d_repost) {
    d_repost = 0;
    D_api->defer_post(d);
    D_api->defer_post(d_handles[2]);
  }
  if (c == 'b') /* cancels the turn's last call */
    D_api->defer_cancel(d_handles[3]);
}

static void d_self_free(ph_defer *d, void *arg) {
  (*(int *)arg)++;
  D_api->defer_free(d);
}

static int d_io_calls;
static void d_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  (void)revents;
  (void)arg;
  d_io_calls++;
}

static int d_spins;
static void d_spin(ph_defer *d, void *arg) {
  (void)arg;
  d_spins++;
  D_api->defer_post(d); /* forever: must not keep the loop from its I/O */
}

static void d_guard(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  *(int *)w->data = 1;
}

static void test_defer(void) {
  err[0] = '\0';
  ph_mock *m = ph_mock_new("", err, sizeof err);
  if (!ok(m && ph_mock_add(m, &dmod, err, sizeof err) == 0 &&
              ph_mock_init(m, err, sizeof err) == 0 &&
              ph_mock_start(m, err, sizeof err) == 0,
          "a module for the defer calls starts")) {
    ph_mock_free(m);
    return;
  }
  struct ev_loop *loop = D_api->loop(D_ctx);
  ok(D_api->defer_new(D_ctx, NULL, NULL) == NULL, "defer_new: no fn, NULL");
  is_int(D_api->defer_post(NULL), PH_EINVAL, "defer_post(NULL): EINVAL");
  is_int(D_api->defer_cancel(NULL), PH_EINVAL, "defer_cancel(NULL): EINVAL");
  D_api->defer_free(NULL); /* ignored */
  const char names[] = "abcd";
  for (int i = 0; i < 4; i++)
    d_handles[i] = D_api->defer_new(D_ctx, d_fn, (void *)(intptr_t)names[i]);
  ok(d_handles[0] && d_handles[1] && d_handles[2] && d_handles[3],
     "four handles");

  /* Posting order, idempotence, one turn per iteration that does not
   * block: counted in loop iterations, never in time. */
  d_n = 0;
  d_log[0] = '\0';
  is_int(D_api->defer_post(d_handles[1]), PH_OK, "post b");
  D_api->defer_post(d_handles[0]);
  D_api->defer_post(d_handles[1]); /* pending: keeps its place */
  is_str(d_log, "", "nothing runs inside the call that posted");
  ev_run(loop, EVRUN_NOWAIT);
  is_str(d_log, "ba", "one iteration runs them in posting order, once each");
  ev_run(loop, EVRUN_NOWAIT);
  is_str(d_log, "ba", "and nothing more");

  /* What a call posts waits for the next turn; a call may cancel one
   * queued after it (here the turn's last). */
  d_n = 0;
  d_repost = 1;
  D_api->defer_post(d_handles[0]);
  D_api->defer_post(d_handles[1]);
  D_api->defer_post(d_handles[3]);
  ev_run(loop, EVRUN_NOWAIT);
  is_str(d_log, "ab", "a turn runs what was queued when it began; b's "
                      "cancel took d back");
  ev_run(loop, EVRUN_NOWAIT);
  is_str(d_log, "abac", "what a's call posted ran on the next turn, in order");

  /* Cancel. */
  D_api->defer_post(d_handles[2]);
  is_int(D_api->defer_cancel(d_handles[2]), PH_OK, "cancel a pending call");
  is_int(D_api->defer_cancel(d_handles[2]), PH_ENOENT,
         "cancel it again: ENOENT");
  ev_run(loop, EVRUN_NOWAIT);
  is_str(d_log, "abac", "a cancelled call does not run");

  /* A handle freed from its own call (ASan checks the rest). */
  int self_runs = 0;
  ph_defer *e = D_api->defer_new(D_ctx, d_self_free, &self_runs);
  D_api->defer_post(e);
  ev_run(loop, EVRUN_NOWAIT);
  is_int(self_runs, 1, "defer_free inside its own call");

  /* Posted outside any callback, the call does not wait for I/O or a
   * timer: a blocking iteration (EVRUN_ONCE) returns with it done, long
   * before a 30 s guard timer. */
  int fired = 0;
  ev_timer guard;
  ev_timer_init(&guard, d_guard, 30., 0.);
  guard.data = &fired;
  ev_timer_start(loop, &guard);
  d_n = 0;
  D_api->defer_post(d_handles[1]);
  ev_run(loop, EVRUN_ONCE);
  ok(d_n == 1 && !fired, "a pending call keeps the loop from blocking");

  /* A call that posts itself on every turn starves no I/O. */
  int p[2];
  if (ok(pipe(p) == 0 && write(p[1], "x", 1) == 1, "a readable pipe")) {
    ph_io *io = D_api->io_new(D_ctx, p[0], PH_READ, d_io, NULL);
    ph_defer *spin = D_api->defer_new(D_ctx, d_spin, NULL);
    D_api->defer_post(spin);
    d_io_calls = d_spins = 0;
    for (int i = 0; i < 10; i++)
      ev_run(loop, EVRUN_NOWAIT);
    is_int(d_spins, 10, "a call posting itself runs once per iteration");
    is_int(d_io_calls, 10, "and the readable fd is served on every one");
    D_api->defer_free(spin);
    D_api->io_free(io);
    close(p[0]);
    close(p[1]);
  }
  ev_timer_stop(loop, &guard);
  for (int i = 0; i < 4; i++)
    D_api->defer_free(d_handles[i]);
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* ---- the public face ---------------------------------------------------- */

/* A module linked into the test program, for ph_mock_add. */
static int tiny_inits, tiny_destroys;

static int tiny_init(ph_ctx *ctx, const ph_api *api, void **state) {
  (void)ctx;
  (void)api;
  *state = NULL;
  tiny_inits++;
  return PH_OK;
}

static void tiny_destroy(void *state) {
  (void)state;
  tiny_destroys++;
}

static const ph_module tiny = {
    PH_MODULE_HEADER("tiny", "1.0"),
    .init = tiny_init,
    .destroy = tiny_destroy,
};

static int payloads_freed;
static void count_free(void *p) {
  payloads_freed++;
  free(p);
}

static void test_public_order(void) {
  char e[1024];
  ph_mock *m = ph_mock_new(PROBE "[probe]\njobs = 5\n", e, sizeof(e));
  ok(m != NULL, "public: ph_mock_new loads probe");
  if (!m)
    return;
  is_str(e, "", "public: err is empty on success");
  is_str(ph_mock_metrics_text(m), "", "public: no metrics before init");
  ok(!ph_mock_ready(m), "public: not ready before start");
  is_int(ph_mock_run_for(m, 10), PH_ESTATE, "public: no loop before init");
  is_int(ph_mock_start(m, e, sizeof(e)), PH_ESTATE,
         "public: start before init is refused");
  like(e, "ph_mock_start: ", "public: the refused call is named");
  is_int(ph_mock_reload(m, NULL, e, sizeof(e)), PH_ESTATE,
         "public: reload before start is refused");
  is_int(ph_mock_stop(m), PH_ESTATE, "public: stop before start is refused");
  payloads_freed = 0;
  is_int(ph_mock_publish(m, "probe.ping", "probe.ping/1", strdup("x"),
                         count_free),
         PH_ESTATE, "public: publish before init is refused");
  is_int(payloads_freed, 1, "public: a refused payload is freed");

  is_int(ph_mock_add(m, NULL, e, sizeof(e)), PH_EINVAL,
         "public: a NULL module is refused");
  is_int(ph_mock_add(m, &tiny, e, sizeof(e)), PH_OK,
         "public: a linked-in module is added");
  is_int(ph_mock_add(m, &tiny, e, sizeof(e)), PH_EINVAL,
         "public: the same name twice is refused");
  like(e, "duplicate module name \"tiny\"", "public: with the loader's reason");

  /* Each mock has a loop of its own: a second one lives beside it. */
  char other_err[256];
  ph_mock *other = ph_mock_new("", other_err, sizeof(other_err));
  ok(other != NULL, "public: a second mock lives beside the first");
  is_int(other ? ph_mock_init(other, other_err, sizeof(other_err)) : -1,
         PH_OK, "public: and initialises on its own loop");
  if (other)
    ph_mock_run_for(other, 5);
  ph_mock_free(other);

  tiny_inits = tiny_destroys = 0;
  is_int(ph_mock_init(m, e, sizeof(e)), PH_OK, "public: init");
  is_str(e, "", "public: err emptied by a successful call");
  is_int(tiny_inits, 1, "public: the linked-in module's init ran");
  is_int(ph_mock_init(m, e, sizeof(e)), PH_ESTATE, "public: init only once");
  is_int(ph_mock_add(m, &tiny, e, sizeof(e)), PH_ESTATE,
         "public: no module added after init");
  is_int(ph_mock_start(m, e, sizeof(e)), PH_OK, "public: start");
  is_int(ph_mock_start(m, e, sizeof(e)), PH_ESTATE, "public: start only once");
  ok(ph_mock_ready(m), "public: ready after start");

  is_int(ph_mock_run_for(m, 200), PH_OK, "public: run the loop");
  like(ph_mock_metrics_text(m), "probe_jobs_done_total 5",
       "public: jobs finished inside ph_mock_run_for");
  is_int(ph_mock_run_for(m, -1), PH_EINVAL, "public: negative ms refused");
  is_int(ph_mock_run_for(m, 3600001), PH_EINVAL, "public: ms above 1 h refused");
  is_int(ph_mock_publish(m, "probe.ping", "probe.ping/1", strdup("hi"), free),
         PH_OK, "public: publish");
  like(ph_mock_metrics_text(m), "probe_pings_total 1",
       "public: the handler ran before publish returned");
  payloads_freed = 0;
  is_int(ph_mock_publish(m, "probe.ping", "other/1", strdup("x"), count_free),
         PH_EINVAL, "public: a topic's type is fixed");
  is_int(payloads_freed, 1, "public: the bus freed the refused payload");
  is_int(ph_mock_publish(m, NULL, "t/1", NULL, NULL), PH_EINVAL,
         "public: a NULL topic is refused");

  /* Reload errors come back in err, not only in the log. */
  is_int(ph_mock_reload(m, PROBE "[probe]\ncount = 1000\n", e, sizeof(e)),
         PH_EINVAL, "public: an out-of-bounds value is refused");
  like(e, "(config):", "public: the reason has its position");
  like(e, "probe.count", "public: and names the key");
  is_int(ph_mock_reload(m, PROBE "[probe]\nword = Nope\n", e, sizeof(e)),
         PH_EINVAL, "public: a value the module's check refuses");
  like(e, "probe.word: \"Nope\" is not lower-case letters",
       "public: with the module's reason");
  like(ph_mock_metrics_text(m), "proxyhost_reloads_total{result=\"failed\"} 2",
       "public: refused reloads are counted as in proxyhost");
  char small[8];
  is_int(ph_mock_reload(m, PROBE "[probe]\ncount = 1000\n", small,
                        sizeof(small)),
         PH_EINVAL, "public: refused with a small err buffer");
  is_int((long long)strlen(small), 7, "public: err truncated, NUL-terminated");
  is_int(ph_mock_reload(m, PROBE "[probe]\ncount = 1000\n", NULL, 0),
         PH_EINVAL, "public: err may be NULL");
  is_int(ph_mock_reload(m, NULL, e, sizeof(e)), PH_OK,
         "public: NULL re-reads the configuration in force, not the refused");
  like(ph_mock_metrics_text(m), "probe_reloads_total 1",
       "public: the module's reload ran");
  is_int(ph_mock_reload(m, PROBE "[probe]\nfail_reload = true\n", e,
                        sizeof(e)),
         PH_EINVAL, "public: a module's failing reload is reported");
  like(e, "a module's reload failed", "public: as such");
  is_int(ph_mock_reload(m, NULL, e, sizeof(e)), PH_EINVAL,
         "public: that configuration is in force (its reload fails again)");
  is_int(ph_mock_reload(m, PROBE "[probe]\n", e, sizeof(e)), PH_OK,
         "public: a good configuration reloads again");

  is_int(ph_mock_stop(m), PH_OK, "public: stop drains");
  is_int(ph_mock_stop(m), PH_ESTATE, "public: stop only once");
  is_int(ph_mock_reload(m, NULL, e, sizeof(e)), PH_ESTATE,
         "public: no reload after stop");
  ok(!ph_mock_ready(m), "public: not ready after stop");
  like(ph_mock_metrics_text(m), "probe_pings_total 1",
       "public: metrics still readable after stop");
  ph_mock_free(m);
  is_int(tiny_destroys, 1, "public: ph_mock_free destroys the modules");

  m = ph_mock_new("", e, sizeof(e));
  ok(m != NULL, "public: a new mock once the old one is freed");
  ph_mock_free(m);
}

static void test_public_failures(void) {
  char e[1024];
  ph_mock *m = ph_mock_new("[proxyhost]\nmodules = " PH_TEST_MODDIR
                           "/missing.so\n",
                           e, sizeof(e));
  ok(m == NULL, "public: a missing module fails ph_mock_new");
  like(e, "missing.so", "public: the file is named");

  m = ph_mock_new(PROBE "[probe]\ncolour = red\n", e, sizeof(e));
  is_int(ph_mock_init(m, e, sizeof(e)), PH_EINVAL,
         "public: an unknown key fails init");
  like(e, "probe.colour", "public: the key is named");
  is_int(ph_mock_run_for(m, 10), PH_ESTATE,
         "public: nothing runs after a failed init");
  ph_mock_free(m);

  m = ph_mock_new(PROBE "[probe]\nfail_init = true\n", e, sizeof(e));
  is_int(ph_mock_init(m, e, sizeof(e)), PH_EINVAL, "public: init failure");
  like(e, "module probe: init failed", "public: the module is named");
  is_int(ph_mock_start(m, e, sizeof(e)), PH_ESTATE,
         "public: no start after a failed init");
  ph_mock_free(m);

  m = ph_mock_new(PROBE "[probe]\nfail_start = true\n", e, sizeof(e));
  ph_mock_init(m, e, sizeof(e));
  is_int(ph_mock_start(m, e, sizeof(e)), PH_EINVAL, "public: start failure");
  like(e, "module probe: start failed", "public: the module is named");
  is_int(ph_mock_stop(m), PH_ESTATE, "public: no stop after a failed start");
  is_int(ph_mock_publish(m, "probe.ping", "probe.ping/1", NULL, NULL),
         PH_ESTATE, "public: no publish after a failed start");
  ph_mock_free(m);

  m = ph_mock_new(PROBE "drain_timeout = 100ms\n[probe]\nstop_delay = 5s\n",
                  e, sizeof(e));
  ok(m && ph_mock_init(m, e, sizeof(e)) == PH_OK &&
         ph_mock_start(m, e, sizeof(e)) == PH_OK,
     "public: a too-slow drainer starts");
  is_int(ph_mock_stop(m), PH_ELIMIT, "public: the drain deadline is reported");
  ph_mock_free(m);

  is_int(ph_mock_init(NULL, e, sizeof(e)), PH_EINVAL,
         "public: a NULL mock is refused");
  like(e, "the mock is NULL", "public: and says so");
  is_int(ph_mock_run_for(NULL, 1), PH_EINVAL, "public: run_for(NULL)");
  is_str(ph_mock_metrics_text(NULL), "", "public: metrics_text(NULL)");
  ok(!ph_mock_ready(NULL), "public: ready(NULL)");
  ph_mock_free(NULL);
}

/* ABI 1.3: a module's admin route through the public face,
 * ph_mock_request (probe's route echoes what it got). */
static void test_public_request(void) {
  char e[1024];
  const char *type = NULL, *body = NULL;
  size_t len = 0;
  ph_mock *m = ph_mock_new(PROBE "[probe]\nroute = /v1/probe\n", e,
                           sizeof(e));
  ok(m != NULL, "public request: probe with a route");
  if (!m)
    return;
  is_int(ph_mock_request(m, "GET", "/v1/probe", NULL, NULL, NULL, 0, 100,
                         &type, &body, &len),
         PH_ESTATE, "ph_mock_request before start: PH_ESTATE");
  ph_mock_init(m, e, sizeof(e));
  ph_mock_start(m, e, sizeof(e));
  is_int(ph_mock_request(m, "POST", "/v1/probe/x?a=1", "Bearer t",
                         "application/json", "{}", 2, 1000, &type, &body,
                         &len),
         200, "ph_mock_request: the module's status");
  is_str(type, "text/plain; charset=utf-8", "... its content type");
  is_str(body,
         "method=POST path=/v1/probe/x query=a=1 auth=present "
         "type=application/json len=2 body={}\n",
         "... its body, with what it got");
  ok(len == strlen(body), "... and the body's length");
  is_int(ph_mock_request(m, "GET", "/v1/other", NULL, NULL, NULL, 0, 100,
                         NULL, NULL, NULL),
         404, "no route serves the path: 404");
  is_int(ph_mock_request(m, "GET", "v1/probe", NULL, NULL, NULL, 0, 100,
                         NULL, NULL, NULL),
         PH_EINVAL, "a target without a leading slash: PH_EINVAL");
  is_int(ph_mock_request(m, "GET", "/v1/probe", NULL, NULL, NULL, 5, 100,
                         NULL, NULL, NULL),
         PH_EINVAL, "a NULL body with a length: PH_EINVAL");
  is_int(ph_mock_reload(m, PROBE "[probe]\nroute = /v1/probe\n"
                               "route_delay = 50ms\n", e, sizeof(e)),
         PH_OK, "reload with route_delay");
  is_int(ph_mock_request(m, "GET", "/v1/probe", NULL, NULL, NULL, 0, 2000,
                         NULL, &body, NULL),
         200, "an answer given later arrives within the timeout");
  like(body, "auth=absent", "... the later answer");
  is_int(ph_mock_request(m, "GET", "/v1/probe", NULL, NULL, NULL, 0, 10,
                         NULL, NULL, NULL),
         504, "no answer within the timeout: 504");
  like(ph_mock_metrics_text(m), "probe_route_cancels_total 1",
       "... and the module's cancel ran");
  ph_mock_stop(m);
  is_int(ph_mock_request(m, "GET", "/v1/probe", NULL, NULL, NULL, 0, 100,
                         NULL, NULL, NULL),
         PH_ESTATE, "after stop: PH_ESTATE");
  ph_mock_free(m);
}

/* The test kit of <proxyhost/mock.h>: ph_mock_loop, ph_mock_service,
 * ph_mock_service_provide, ph_mock_metric, ph_mock_module. */
typedef struct probe_echo_v1 {
  int (*echo)(void *self, int x);
} probe_echo_v1;

static int fake_echo(void *self, int x) { return x * *(int *)self; }

static void test_public_kit(void) {
  char e[1024];
  double v = -1;
  ph_mock *m = ph_mock_new(PROBE "[probe]\njobs = 5\n", e, sizeof(e));
  ok(m != NULL, "kit: probe loads");
  if (!m)
    return;
  ok(ph_mock_loop(m) == NULL, "ph_mock_loop before init: NULL");
  void *self = &v;
  ok(ph_mock_service(m, "probe.echo", NULL, 1, 0, &self) == NULL &&
         self == NULL,
     "ph_mock_service before init: NULL, *self NULL");
  is_int(ph_mock_metric(m, "probe_jobs_done_total", NULL, &v), PH_ESTATE,
         "ph_mock_metric before init: PH_ESTATE");
  ok(ph_mock_module(m, NULL) &&
         strcmp(ph_mock_module(m, NULL)->name, "probe") == 0,
     "ph_mock_module(NULL): the first module loaded, from its .so");
  ok(ph_mock_module(m, "probe") == ph_mock_module(m, NULL) &&
         ph_mock_module(m, "nosuch") == NULL &&
         ph_mock_module(NULL, NULL) == NULL,
     "ph_mock_module by instance name; NULL for none");
  static const probe_echo_v1 fake_vt = {fake_echo};
  int factor = 3;
  is_int(ph_mock_service_provide(m, "kit.echo", NULL, 1, 2, &fake_vt, &factor),
         PH_ESTATE, "ph_mock_service_provide before init: PH_ESTATE");
  if (ph_mock_init(m, e, sizeof(e)) != PH_OK) {
    ok(0, "kit: init");
    ph_mock_free(m);
    return;
  }
  ok(ph_mock_loop(m) != NULL, "ph_mock_loop after init: the loop");
  is_int(ph_mock_service_provide(m, "kit.echo", NULL, 1, 2, &fake_vt, &factor),
         PH_OK, "a fake provider registered between init and start");
  is_int(ph_mock_service_provide(m, "kit.echo", NULL, 1, 2, &fake_vt, &factor),
         PH_EEXIST, "... once per provider: PH_EEXIST");
  is_int(ph_mock_service_provide(m, "kit.echo", "Bad name", 1, 2, &fake_vt,
                                 &factor),
         PH_EINVAL, "... a bad provider name: PH_EINVAL");
  is_int(ph_mock_service_provide(m, "kit.echo", "two", 1, 2, NULL, &factor),
         PH_EINVAL, "... a NULL vtable: PH_EINVAL");
  ph_mock_start(m, e, sizeof(e));
  const probe_echo_v1 *vt = ph_mock_service(m, "kit.echo", NULL, 1, 2, &self);
  ok(vt == &fake_vt && self == &factor && vt->echo(self, 5) == 15,
     "ph_mock_service finds the fake provider, with its state");
  ok(ph_mock_service(m, "kit.echo", "mock", 1, 0, NULL) == &fake_vt,
     "... by its provider name (\"mock\" by default)");
  ok(ph_mock_service(m, "kit.echo", NULL, 1, 3, &self) == NULL &&
         self == NULL &&
         ph_mock_service(m, "kit.echo", NULL, 2, 0, NULL) == NULL,
     "... not when the version does not fit");
  vt = ph_mock_service(m, "probe.echo", "probe", 1, 0, &self);
  ok(vt && vt->echo(self, 41) == 42,
     "ph_mock_service finds a module's provider and calls it");
  ok(poll_until(ph_mock_loop(m),
                strstr(ph_mock_metrics_text(m), "\nprobe_jobs_done_total 5\n"),
                5000),
     "a bounded wait on ph_mock_loop ends once the jobs are done");
  is_int(ph_mock_metric(m, "probe_jobs_done_total", NULL, &v), PH_OK,
         "ph_mock_metric: an unlabelled series");
  ok(v == 5, "... its value");
  v = -1;
  ok(ph_mock_metric(m, "probe_jobs_done_total", "", &v) == PH_OK && v == 5,
     "... labels \"\": the same series");
  ph_mock_reload(m, PROBE "[probe]\ncount = 1000\n", e, sizeof(e));
  ok(ph_mock_metric(m, "proxyhost_reloads_total", "result=\"failed\"", &v) ==
             PH_OK &&
         v == 1,
     "ph_mock_metric by name and labels");
  ok(ph_mock_metric(m, "proxyhost_reloads_total{result=\"failed\"}", NULL,
                    &v) == PH_OK &&
         v == 1,
     "... or by the whole series as the text shows it");
  v = 7;
  is_int(ph_mock_metric(m, "proxyhost_reloads_total", "result=\"nope\"", &v),
         PH_ENOENT, "a series the text does not have: PH_ENOENT");
  ok(v == 0, "... and the value 0");
  is_int(ph_mock_metric(m, "probe_jobs_done", NULL, &v), PH_ENOENT,
         "a name is matched whole, not as a prefix");
  is_int(ph_mock_metric(m, "probe_jobs_done_total", NULL, NULL), PH_EINVAL,
         "value NULL: PH_EINVAL");
  ph_mock_stop(m);
  ok(ph_mock_metric(m, "probe_jobs_done_total", NULL, &v) == PH_OK && v == 5,
     "ph_mock_metric after stop");
  is_int(ph_mock_service_provide(m, "kit.late", NULL, 1, 0, &fake_vt, NULL),
         PH_ESTATE, "ph_mock_service_provide after stop: PH_ESTATE");
  ph_mock_free(m);
}

int main(void) {
  plan_lazy();
  err[0] = '\0';
  test_lifecycle();
  test_service_provided();
  test_probe_threads();
  test_minor1_module();
  test_readiness_and_drain();
  test_failures();
  test_defer();
  test_public_order();
  test_public_failures();
  test_public_request();
  test_public_kit();
  return done_testing();
}

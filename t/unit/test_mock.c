/* The mock host drives the probe test module through the real host API:
 * lifecycle, readiness, jobs, bus, reload, drain and failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock.h"
#include "tap.h"

#define PROBE "[proxyhost]\nmodules = " PH_TEST_MODDIR "/probe.so\n"

static ph_buf err;

static ph_mock *started(const char *text) {
  buf_reset(&err);
  ph_mock *m = mock_new(text, &err);
  if (!m || mock_init(m, &err) < 0 || mock_start(m, &err) < 0) {
    printf("# setup failed: %s\n", err.data ? err.data : "?");
    mock_free(m);
    return NULL;
  }
  return m;
}

static void test_lifecycle(void) {
  ph_mock *m = started(PROBE "[probe]\njobs = 5\n");
  ok(m != NULL, "probe initialises and starts");
  if (!m)
    return;
  ok(mock_ready(m), "ready after start");
  mock_run_for(m, 200);
  like(mock_metrics_text(m), "probe_jobs_done_total 5",
       "jobs ran on helper threads and finished on the loop");

  char *payload = strdup("hello");
  is_int(mock_publish(m, "probe.ping", "probe.ping/1", payload, free), PH_OK,
         "publish to the module's topic");
  like(mock_metrics_text(m), "probe_pings_total 1",
       "the module's handler ran synchronously");
  is_int(mock_publish(m, "probe.ping", "other/1", strdup("x"), free),
         PH_EINVAL, "a topic's type is fixed");

  is_int(mock_reload(m, PROBE "[probe]\ngreeting = again\n"), 0,
         "reload with a valid configuration");
  like(mock_metrics_text(m), "probe_reloads_total 1", "module reload ran");
  like(mock_metrics_text(m), "probe_reload_messages_total 1",
       "host.reload published on the bus");
  is_int(mock_reload(m, PROBE "[probe]\ncount = 1000\n"), -1,
         "reload with an invalid value is refused");
  like(mock_metrics_text(m), "proxyhost_reloads_total{result=\"failed\"} 1",
       "failed reload counted");
  like(mock_metrics_text(m), "probe_reloads_total 1",
       "module not reloaded with the bad configuration");
  is_int(mock_stop(m), 0, "stop without delay drains at once");
  mock_free(m);
}

static void test_readiness_and_drain(void) {
  ph_mock *m = started(PROBE "[probe]\nready = false\n");
  ok(m && !mock_ready(m), "a module that is not ready keeps /readyz down");
  mock_free(m);

  m = started(PROBE "drain_timeout = 2s\n[probe]\nstop_delay = 50ms\n");
  ok(m != NULL, "slow drainer starts");
  if (m) {
    is_int(mock_stop(m), 0, "stop waits for an asynchronous drain");
    mock_free(m);
  }
  m = started(PROBE "drain_timeout = 100ms\n[probe]\nstop_delay = 5s\n");
  ok(m != NULL, "too-slow drainer starts");
  if (m) {
    is_int(mock_stop(m), -1, "the drain deadline cuts a slow module off");
    mock_free(m);
  }
}

static void test_failures(void) {
  buf_reset(&err);
  ph_mock *m = mock_new(PROBE "[probe]\nfail_init = true\n", &err);
  ok(m != NULL, "loads");
  is_int(mock_init(m, &err), -1, "init failure reported");
  like(err.data, "module probe: init failed", "failing module named");
  mock_free(m);

  buf_reset(&err);
  m = mock_new(PROBE "[probe]\nfail_start = true\n", &err);
  mock_init(m, &err);
  is_int(mock_start(m, &err), -1, "start failure reported");
  like(err.data, "module probe: start failed", "failing module named");
  mock_free(m);

  buf_reset(&err);
  m = mock_new(PROBE "[probe]\ncolour = red\n", &err);
  is_int(mock_init(m, &err), -1, "unknown key refused before init");
  like(err.data, "probe.colour", "unknown key named");
  mock_free(m);
}

int main(void) {
  plan_lazy();
  buf_init(&err, 65536);
  test_lifecycle();
  test_readiness_and_drain();
  test_failures();
  buf_free(&err);
  return done_testing();
}

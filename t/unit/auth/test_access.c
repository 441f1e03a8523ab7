/* SPDX-License-Identifier: BSD-2-Clause */
/* The "access" contract (<proxyhost/access.h>) as auth_local provides it,
 * through the mock host and a fake frontend that finds the service by
 * name: verdicts and reasons, asynchronous answers, cancellation, the
 * in-flight bound, the revision across reloads, requests from older and
 * newer callers, malformed requests, what /metrics shows, and answers
 * under a steady stream of checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include <proxyhost/access.h>
#include <proxyhost/mock.h>

#include "mock_core.h"
#include "auth_local/pwhash.h"
#include "access_test.h"
#include "loop_test.h"
#include "mock_test.h"
#include "steady_stream.h"
#include "tap.h"

#define MODULE PH_BUILD_MODULES "/auth_local/.libs/auth_local.so"

/* ---- a fake frontend: the consumer ------------------------------------- */

static struct {
  const ph_api *api;
  ph_ctx *ctx;
  const ph_access_v1 *vt; /* found in start */
  void *self;
  int newer_minor_found; /* service_get for a minor auth_local lacks */
} F;

MOCK_TEST_INIT(front_init, F);

/* As a frontend does: look the service up by name once, in start. */
static int front_start(void *state) {
  (void)state;
  void *other;
  F.newer_minor_found =
      F.api->service_get(F.ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                         PH_ACCESS_MINOR + 1, &other) != NULL;
  F.vt = F.api->service_get(F.ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR, 0,
                            &F.self);
  AT.vt = F.vt;
  AT.self = F.self;
  return F.vt ? PH_OK : PH_ENOENT;
}

MOCK_TEST_MODULE(front_mod, "front", "1.0",
                 .requires = MOCK_TEST_NAMES(PH_ACCESS_SERVICE),
                 .init = front_init, .start = front_start);

/* ---- harness ----------------------------------------------------------- */

typedef access_answer answer;

static char err[8192];
static char hash_a[PWHASH_TEXT_MAX], hash_b[PWHASH_TEXT_MAX];

static ph_access_request req_for(const char *principal, const char *host) {
  ph_access_request r = {.size = sizeof(r),
                         .protocol = PH_PROTO_TCP,
                         .port = 443,
                         .host = host,
                         .principal = principal};
  return r;
}

static int64_t check_req(const ph_access_request *r, answer *a) {
  return access_test_check(r, a);
}

static int64_t check(const char *principal, answer *a) {
  ph_access_request r = req_for(principal, "example.org");
  return check_req(&r, a);
}

/* Runs the loop until every answer came, at most 5 s. */
static void wait_answers(ph_mock *m, answer **as, int n) {
  poll_until(ph_mock_loop(m), all_of(i, n, as[i]->calls > 0), 5000);
}

static void wait_one(ph_mock *m, answer *a) {
  answer *one[] = {a};
  wait_answers(m, one, 1);
}

/* The configuration: users (NAME:HASH lines' names, "a" or "b" picking
 * the hash), then extra lines. */
static void conf_text(char *text, size_t len, const char *users,
                      const char *extra) {
  int n = snprintf(text, len, "[proxyhost]\nmodules = %s\n[auth_local]\n",
                   MODULE);
  char list[256];
  snprintf(list, sizeof(list), "%s", users);
  for (char *save, *u = strtok_r(list, " ", &save); u;
       u = strtok_r(NULL, " ", &save)) {
    char *colon = strchr(u, ':');
    *colon = '\0';
    n += snprintf(text + n, len - (size_t)n, "users = %s:%s\n", u,
                  colon[1] == 'b' ? hash_b : hash_a);
  }
  snprintf(text + n, len - (size_t)n, "%s", extra);
}

static ph_mock *start(const char *users, const char *extra) {
  char text[8192];
  conf_text(text, sizeof(text), users, extra);
  err[0] = '\0';
  ph_mock *m = mock_test_boot(text, &front_mod, err, sizeof err);
  if (!m) {
    printf("# %s\n", err);
    return NULL;
  }
  AT.loop = ph_mock_loop(m);
  return m;
}

static int reload(ph_mock *m, const char *users, const char *extra) {
  char text[8192];
  conf_text(text, sizeof(text), users, extra);
  return ph_mock_reload(m, text, NULL, 0);
}

static uint64_t current_revision(void) {
  uint64_t rev = 0;
  return F.vt->revision(F.self, &rev) == PH_OK ? rev : 0;
}

static void finish(ph_mock *m) {
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* ---- tests ------------------------------------------------------------- */

static void test_lookup(void) {
  ph_mock *m = start("alice:a", "");
  ok(m && F.vt, "a frontend finds \"access\" by name with service_get");
  if (!m || !F.vt)
    return;
  ok(!F.newer_minor_found, "a minor above the provider's is not found");
  int declared = 0;
  for (const char *const *p = ph_mock_module(m, NULL)->provides; p && *p; p++)
    declared |= strcmp(*p, PH_ACCESS_SERVICE) == 0;
  ok(declared, "auth_local's descriptor declares \"access\" in provides");
  ok(F.vt->check_open && F.vt->cancel && F.vt->revision,
     "the vtable has check_open, cancel and revision");
  finish(m);
}

static void test_verdicts(void) {
  ph_mock *m = start("alice:a bob:b", "");
  if (!ok(m && F.vt, "started with alice and bob"))
    return;
  answer known = {0}, unknown = {0}, anon = {0}, agent = {0};
  AT.called_inside = 0;
  ok(check("alice", &known) > 0, "check of a known user accepted");
  ok(check("mallory", &unknown) > 0, "check of an unknown user accepted");
  ok(check(NULL, &anon) > 0, "check of an anonymous client accepted");
  ph_access_request r = req_for("bob", "10.0.0.7");
  r.agent = "agent-7";
  r.port = 22;
  ok(check_req(&r, &agent) > 0, "check through an agent accepted");
  is_int(known.calls + unknown.calls + anon.calls + agent.calls, 0,
         "no answer inside check_open");
  answer *all[] = {&known, &unknown, &anon, &agent};
  wait_answers(m, all, 4);
  is_int(AT.called_inside, 0, "never called from inside check_open");
  is_int(known.calls, 1, "exactly one answer");
  is_int(known.res.verdict, PH_ACCESS_ALLOW, "a known user is allowed");
  is_int(known.res.code, PH_OPEN_OK, "with code ok");
  is_int(known.res.size, sizeof(ph_access_result), "result size set");
  is_int(known.res.ttl_ms, 5000, "cacheable for access_ttl (5s default)");
  is_int(known.res.revision, 1, "computed under revision 1");
  is_int(known.res.retry_after_ms, 0, "no retry hint on allow");
  is_int(unknown.calls, 1, "exactly one answer for the unknown user");
  is_int(unknown.res.verdict, PH_ACCESS_DENY, "an unknown user is denied");
  is_int(unknown.res.code, PH_OPEN_FORBIDDEN, "reason: forbidden");
  is_str(ph_open_code_name(unknown.res.code), "forbidden",
         "the stable name of the reason");
  is_int(unknown.res.ttl_ms, 5000, "a denial is cacheable too");
  is_int(unknown.res.revision, 1, "under the same revision");
  is_int(anon.res.verdict, PH_ACCESS_DENY, "an anonymous client is denied");
  is_int(anon.res.code, PH_OPEN_FORBIDDEN, "reason: forbidden");
  is_int(agent.res.verdict, PH_ACCESS_ALLOW,
         "a known user may open any target through any agent");
  is_int(current_revision(), 1, "revision() says 1");
  ph_mock_run_for(m, 30);
  is_int(known.calls + unknown.calls + anon.calls + agent.calls, 4,
         "no second answer");
  finish(m);
}

static void test_invalid(void) {
  ph_mock *m = start("alice:a", "");
  if (!ok(m && F.vt, "started"))
    return;
  answer a = {0};
  char long_name[300];
  memset(long_name, 'x', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = '\0';
  is_int(F.vt->check_open(F.self, NULL, access_test_on_answer, &a), PH_EINVAL,
         "NULL request: EINVAL");
  ph_access_request r = req_for("alice", "example.org");
  is_int(F.vt->check_open(F.self, &r, NULL, &a), PH_EINVAL,
         "NULL callback: EINVAL");
  r.size = PH_ACCESS_REQUEST_MIN_SIZE - 1;
  is_int(check_req(&r, &a), PH_EINVAL, "size below the minimum: EINVAL");
  r = req_for("alice", "example.org");
  r.size = 0;
  is_int(check_req(&r, &a), PH_EINVAL, "size 0: EINVAL");
  r = req_for("alice", "example.org");
  r.protocol = 0;
  is_int(check_req(&r, &a), PH_EINVAL, "protocol 0: EINVAL");
  r.protocol = 2;
  is_int(check_req(&r, &a), PH_EINVAL, "an unknown protocol: EINVAL");
  r = req_for("alice", "example.org");
  r.port = 0;
  is_int(check_req(&r, &a), PH_EINVAL, "port 0: EINVAL");
  const char *hosts[] = {NULL,          "",          "Example.org",
                         "example.org.", "[::1]",     "a b",
                         "tab\there",    long_name};
  const char *names[] = {"no host: EINVAL",
                         "an empty host: EINVAL",
                         "a host in upper case (not normalized): EINVAL",
                         "a host with a trailing dot: EINVAL",
                         "a bracketed address: EINVAL",
                         "a host with a space: EINVAL",
                         "a host with a control character: EINVAL",
                         "a host over 255 bytes: EINVAL"};
  for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
    r = req_for("alice", hosts[i]);
    is_int(check_req(&r, &a), PH_EINVAL, names[i]);
  }
  r = req_for("", "example.org");
  is_int(check_req(&r, &a), PH_EINVAL, "an empty principal: EINVAL");
  r = req_for(long_name, "example.org");
  is_int(check_req(&r, &a), PH_EINVAL, "a principal over 255 bytes: EINVAL");
  r = req_for("alice", "example.org");
  r.agent = "";
  is_int(check_req(&r, &a), PH_EINVAL, "an empty agent: EINVAL");
  r.agent = long_name;
  is_int(check_req(&r, &a), PH_EINVAL, "an agent over 255 bytes: EINVAL");
  r = req_for("alice", "2001:db8::1");
  answer v6 = {0};
  ok(check_req(&r, &v6) > 0, "an IPv6 address without brackets is fine");
  ph_mock_run_for(m, 50);
  is_int(a.calls, 0, "a refused request never gets a callback");
  is_int(v6.calls, 1, "the valid one got its answer");
  finish(m);
}

static void test_cancel(void) {
  ph_mock *m = start("alice:a", "");
  if (!ok(m && F.vt, "started"))
    return;
  answer gone = {0}, kept = {0};
  int64_t id = check("alice", &gone);
  ok(id > 0, "check accepted");
  check("alice", &kept);
  is_int(F.vt->cancel(F.self, id), PH_OK, "cancel before the answer: PH_OK");
  wait_one(m, &kept);
  ph_mock_run_for(m, 30);
  is_int(gone.calls, 0, "no callback after cancel");
  is_int(kept.calls, 1, "the other check was answered");
  is_int(F.vt->cancel(F.self, id), PH_ENOENT, "cancel again: PH_ENOENT");
  answer done = {0};
  int64_t done_id = check("alice", &done);
  wait_one(m, &done);
  is_int(F.vt->cancel(F.self, done_id), PH_ENOENT,
         "cancel after the answer: PH_ENOENT");
  is_int(F.vt->cancel(F.self, 0), PH_ENOENT, "id 0: PH_ENOENT");
  is_int(F.vt->cancel(F.self, -3), PH_ENOENT, "a negative id: PH_ENOENT");
  is_int(F.vt->cancel(F.self, done_id + 1000), PH_ENOENT,
         "an id never given: PH_ENOENT");

  /* Two answers due in the same loop iteration: the first one's callback
   * cancels the second, which then never comes. */
  answer first = {0}, second = {0};
  check("alice", &first);
  first.cancel_id = check("alice", &second);
  wait_one(m, &first);
  ph_mock_run_for(m, 30);
  is_int(first.cancel_rc, PH_OK,
         "a callback cancels a check answered in the same batch");
  is_int(second.calls, 0, "and that check is never called");
  finish(m);
}

/* A callback that starts a new check: answered later, never inside. */
static answer chained;
static void on_answer_chain(void *arg, const ph_access_result *res) {
  access_test_on_answer(arg, res);
  ph_access_request r = req_for("alice", "example.org");
  AT.in_call = 1;
  F.vt->check_open(F.self, &r, access_test_on_answer, &chained);
  AT.in_call = 0;
}

static void test_check_from_callback(void) {
  ph_mock *m = start("alice:a", "");
  if (!ok(m && F.vt, "started"))
    return;
  memset(&chained, 0, sizeof(chained));
  AT.called_inside = 0;
  answer a = {0};
  ph_access_request r = req_for("alice", "example.org");
  AT.in_call = 1;
  ok(F.vt->check_open(F.self, &r, on_answer_chain, &a) > 0, "accepted");
  AT.in_call = 0;
  wait_one(m, &a);
  wait_one(m, &chained);
  is_int(chained.calls, 1, "a check started in a callback is answered");
  ok(chained.iteration > a.iteration,
     "on a later loop iteration, not in the batch that started it");
  is_int(AT.called_inside, 0, "never inside check_open");
  finish(m);
}

static void test_bound(void) {
  ph_mock *m = start("alice:a", "max_pending = 2\n");
  if (!ok(m && F.vt, "started with max_pending = 2"))
    return;
  answer a = {0}, b = {0}, c = {0};
  ok(check("alice", &a) > 0 && check("alice", &b) > 0 &&
         check("alice", &c) > 0,
     "three checks accepted");
  answer *all[] = {&a, &b, &c};
  wait_answers(m, all, 3);
  is_int(a.res.verdict, PH_ACCESS_ALLOW, "first within the bound");
  is_int(b.res.verdict, PH_ACCESS_ALLOW, "second within the bound");
  is_int(c.res.verdict, PH_ACCESS_UNAVAILABLE,
         "the third is beyond it: unavailable (fail closed)");
  is_int(c.res.code, PH_OPEN_QUEUE_FULL, "reason: queue_full");
  is_int(c.res.ttl_ms, 0, "an unavailable answer is never cacheable");
  is_int(c.res.revision, 0, "and carries no revision");
  answer d = {0};
  check("alice", &d);
  wait_one(m, &d);
  is_int(d.res.verdict, PH_ACCESS_ALLOW, "answered checks free their slots");

  answer e = {0}, f = {0}, g = {0};
  int64_t e_id = check("alice", &e);
  check("alice", &f);
  is_int(F.vt->cancel(F.self, e_id), PH_OK, "cancel one of two in flight");
  check("alice", &g);
  answer *two[] = {&f, &g};
  wait_answers(m, two, 2);
  is_int(g.res.verdict, PH_ACCESS_ALLOW, "a cancelled check frees its slot");
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_access_checks_total{result=\"unavailable\"} 1",
       "the refusal is counted");
  finish(m);
}

static void test_revision(void) {
  ph_mock *m = start("alice:a bob:b", "");
  if (!ok(m && F.vt, "started"))
    return;
  is_int(current_revision(), 1, "revision 1 at start");
  ok(reload(m, "alice:a bob:b", "") == 0, "reload, users unchanged");
  is_int(current_revision(), 1, "the same users: the revision stays");
  ok(reload(m, "bob:b alice:a", "") == 0, "reload, the same users reordered");
  is_int(current_revision(), 1, "order does not matter");
  ok(reload(m, "bob:b alice:a", "access_ttl = 250ms\nmax_pending = 9\n") ==
         0,
     "reload changing other keys only");
  is_int(current_revision(), 1, "other keys do not move it");
  answer ttl = {0};
  check("alice", &ttl);
  wait_one(m, &ttl);
  is_int(ttl.res.ttl_ms, 250, "the new access_ttl applies to new verdicts");

  ok(reload(m, "alice:a bob:a", "") == 0, "reload, bob's hash changed");
  is_int(current_revision(), 2, "a changed credential moves it");
  ok(reload(m, "alice:a bob:a carol:a", "") == 0, "reload adding carol");
  is_int(current_revision(), 3, "an added user moves it");
  answer carol = {0};
  check("carol", &carol);
  wait_one(m, &carol);
  is_int(carol.res.verdict, PH_ACCESS_ALLOW, "carol is allowed now");
  is_int(carol.res.revision, 3, "under the new revision");

  /* Decided under revision 3, answered after the revision moved: the
   * caller sees that it is stale (revision() is ahead). */
  answer before = {0};
  check("carol", &before);
  ok(reload(m, "alice:a bob:a", "") == 0, "reload removing carol");
  is_int(current_revision(), 4, "a removed user moves it");
  wait_one(m, &before);
  is_int(before.res.revision, 3,
         "a check in flight across the reload carries the old revision");
  ok(before.res.revision < current_revision(),
     "so a cache can tell it is stale and not keep it");
  answer gone = {0};
  check("carol", &gone);
  wait_one(m, &gone);
  is_int(gone.res.verdict, PH_ACCESS_DENY, "carol is denied now");
  is_int(gone.res.revision, 4, "under revision 4");

  char text[8192];
  conf_text(text, sizeof(text), "alice:a", "");
  strcat(text, "users = broken\n");
  ok(ph_mock_reload(m, text, NULL, 0) != 0,
     "a reload with a bad entry is refused");
  is_int(current_revision(), 4, "a refused reload does not move it");
  answer still = {0};
  check("bob", &still);
  wait_one(m, &still);
  is_int(still.res.verdict, PH_ACCESS_ALLOW, "the old users still apply");
  ok(reload(m, "", "") == 0, "reload with no users");
  is_int(current_revision(), 5, "an emptied list moves it");
  is_int(F.vt->revision(F.self, NULL), PH_EINVAL, "revision(NULL): EINVAL");
  finish(m);
}

static void test_sizes(void) {
  ph_mock *m = start("alice:a", "");
  if (!ok(m && F.vt, "started"))
    return;
  /* A newer caller: more fields than the provider knows, and reserved
   * fields a later minor gave a meaning. */
  struct {
    ph_access_request r;
    unsigned char later[64];
  } newer;
  memset(&newer, 0xa5, sizeof(newer));
  newer.r = req_for("alice", "example.org");
  newer.r.size = sizeof(newer);
  for (int i = 0; i < 4; i++)
    newer.r.reserved[i] = &newer;
  answer big = {0};
  ok(check_req(&newer.r, &big) > 0, "a bigger request is accepted");
  wait_one(m, &big);
  is_int(big.res.verdict, PH_ACCESS_ALLOW,
         "its extra and reserved fields are ignored");

  /* An older caller: only the first PH_ACCESS_REQUEST_MIN_SIZE bytes
   * exist (exactly that much memory: ASan sees any read beyond). */
  ph_access_request full = req_for("alice", "example.org");
  full.size = PH_ACCESS_REQUEST_MIN_SIZE;
  ph_access_request *older = malloc(PH_ACCESS_REQUEST_MIN_SIZE);
  memcpy(older, &full, PH_ACCESS_REQUEST_MIN_SIZE);
  answer small = {0};
  ok(check_req(older, &small) > 0, "a request of the minimum size works");
  free(older);
  wait_one(m, &small);
  is_int(small.res.verdict, PH_ACCESS_ALLOW,
         "missing fields default (no agent)");

  /* A size that covers part of the agent pointer: the agent is absent. */
  full = req_for("alice", "example.org");
  full.agent = (const char *)(uintptr_t)1; /* would crash if read */
  full.size = PH_ACCESS_REQUEST_MIN_SIZE + 1;
  answer partial = {0};
  ok(check_req(&full, &partial) > 0, "a size ending inside a field works");
  wait_one(m, &partial);
  is_int(partial.res.verdict, PH_ACCESS_ALLOW,
         "a field the size does not cover whole is not read");
  ok(PH_ACCESS_HAS(ph_access_result, partial.res.size, revision) &&
         PH_ACCESS_HAS(ph_access_result, partial.res.size, retry_after_ms),
     "the result's size covers every 1.0 field");
  ok(!PH_ACCESS_HAS(ph_access_request, PH_ACCESS_REQUEST_MIN_SIZE, agent) &&
         PH_ACCESS_HAS(ph_access_request, PH_ACCESS_REQUEST_MIN_SIZE,
                       principal),
     "PH_ACCESS_HAS: the minimum holds principal, not agent");
  finish(m);
}

static void test_metrics(void) {
  ph_mock *m = start("alice:a", "");
  if (!ok(m && F.vt, "started"))
    return;
  const char *metrics = ph_mock_metrics_text(m);
  like(metrics, "proxyhost_auth_local_access_checks_total{result=\"allow\"} 0",
       "declared from the start, with zeroes");
  answer a = {0}, b = {0}, c = {0};
  ph_access_request r = req_for("alice", "secret-target.example");
  r.agent = "agent-secret";
  check_req(&r, &a);
  check("mallory", &b);
  check("alice", &c);
  answer *all[] = {&a, &b, &c};
  wait_answers(m, all, 3);
  metrics = ph_mock_metrics_text(m);
  like(metrics, "proxyhost_auth_local_access_checks_total{result=\"allow\"} 2",
       "allows counted");
  like(metrics, "proxyhost_auth_local_access_checks_total{result=\"deny\"} 1",
       "denials counted");
  unlike_each(metrics, "no principal, target, agent or hash in /metrics",
              "alice", "mallory", "secret-target", "agent-secret", "$pbkdf2");
  finish(m);
}

/* A loop that never idles: a pipe that stays readable, and a check
 * started on every iteration for 100 ms. Answers must keep coming while
 * it lasts; a timer re-armed by each check would never fire. */
static answer stream_answer;

static int stream_check(void *arg) {
  (void)arg;
  ph_access_request r = req_for("alice", "example.org");
  return check_req(&r, &stream_answer) > 0;
}

static steady_stream stream = {.start = stream_check,
                               .answers = &stream_answer.calls};

static void test_steady_stream(void) {
  ph_mock *m = start("alice:a", "max_pending = 65536\n");
  if (!ok(m && F.vt, "started"))
    return;
  if (steady_stream_run(&stream, m, 100)) {
    ok(stream.checks > 0, "checks were started on every iteration");
    ok(stream.answered_during > 0,
       "answers are delivered while checks keep coming");
  }
  finish(m);
}

/* access_ttl: bounds, 0, and the sample that documents every key. */
static void test_config(void) {
  ph_mock *m = start("alice:a", "access_ttl = 0\n");
  if (!ok(m && F.vt, "access_ttl = 0 accepted"))
    return;
  answer zero = {0};
  check("alice", &zero);
  wait_one(m, &zero);
  is_int(zero.res.ttl_ms, 0, "access_ttl = 0: verdicts are not to be kept");
  finish(m);
  m = start("alice:a", "access_ttl = 1h\n");
  if (!ok(m && F.vt, "access_ttl = 1h (the largest) accepted"))
    return;
  answer hour = {0};
  check("alice", &hour);
  wait_one(m, &hour);
  is_int(hour.res.ttl_ms, 3600000, "ttl_ms 3600000");
  finish(m);
  const char *bad[] = {"access_ttl = 3601s\n", "access_ttl = -1s\n",
                       "access_ttl = soon\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char text[8192], name[96];
    conf_text(text, sizeof(text), "alice:a", bad[i]);
    err[0] = '\0';
    m = ph_mock_new(text, err, sizeof err);
    snprintf(name, sizeof(name), "refused: %.*s", (int)strlen(bad[i]) - 1,
             bad[i]);
    ok(!m || ph_mock_init(m, err, sizeof err) < 0, name);
    ph_mock_free(m);
  }

  static char sample[8192];
  FILE *f = fopen(PH_TEST_LIBDIR
                  "/../../modules/auth_local/auth_local.ini.sample",
                  "r");
  size_t n = f ? fread(sample, 1, sizeof(sample) - 1, f) : 0;
  if (f)
    fclose(f);
  sample[n] = '\0';
  static char text[9000];
  /* The sample adds its module itself (a drop-in). */
  snprintf(text, sizeof(text), "[proxyhost]\nmodule_path = %s\n%s",
           PH_BUILD_MODULES, sample);
  err[0] = '\0';
  m = ph_mock_new(text, err, sizeof err);
  ok(n > 0 && m && ph_mock_init(m, err, sizeof err) == 0,
     "the sample configuration loads");
  int documented =
      mock_test_sample_has_keys(m ? ph_mock_module(m, NULL) : NULL, sample);
  ok(documented, "the sample sets every key, access_ttl included");
  like(sample, "\naccess_ttl = 5s\n", "with its default");
  ph_mock_free(m);
}

int main(void) {
  plan_lazy();
  err[0] = '\0';
  if (pwhash_create("pw-a", 4, 1000, hash_a, sizeof(hash_a)) < 0 ||
      pwhash_create("pw-b", 4, 1000, hash_b, sizeof(hash_b)) < 0) {
    printf("Bail out! cannot make hashes\n");
    return 1;
  }
  test_lookup();
  test_verdicts();
  test_invalid();
  test_cancel();
  test_check_from_callback();
  test_bound();
  test_revision();
  test_sizes();
  test_metrics();
  test_steady_stream();
  test_config();
  return done_testing();
}

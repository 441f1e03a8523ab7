/* auth_local through the mock host: verdicts, asynchronous answers, the
 * verification cache, cancellation, the in-flight bound, bad entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/authorizer.h>

#include "mock.h"
#include "pwhash.h"
#include "tap.h"

#define MODULE PH_BUILD_MODULES "/auth_local/.libs/auth_local.so"

typedef struct answer {
  int calls;
  int verdict;
} answer;

static int in_call; /* set while check_password runs */

static void on_answer(void *arg, int verdict) {
  answer *a = arg;
  ok(!in_call, "answer never arrives from inside check_password");
  a->calls++;
  a->verdict = verdict;
}

static ph_buf err;

/* Runs the loop until every answer arrived, at most 20 s. */
static void wait_answers(ph_mock *m, answer **as, int n) {
  for (int round = 0; round < 400; round++) {
    int done = 1;
    for (int i = 0; i < n; i++)
      done &= as[i]->calls > 0;
    if (done)
      return;
    mock_run_for(m, 50);
  }
}

static ph_mock *start(const char *extra, const ph_authorizer_v1 **vt,
                      void **self) {
  char hash[PWHASH_TEXT_MAX], text[4096];
  if (pwhash_create("s3cret", 6, 1000, hash, sizeof(hash)) < 0)
    return NULL;
  snprintf(text, sizeof(text),
           "[proxyhost]\nmodules = %s\n[auth_local]\nusers = alice:%s\n%s",
           MODULE, hash, extra);
  buf_reset(&err);
  ph_mock *m = mock_new(text, &err);
  if (!m || mock_init(m, &err) < 0 || mock_start(m, &err) < 0) {
    printf("# %s\n", err.data ? err.data : "?");
    mock_free(m);
    return NULL;
  }
  static int user;
  *vt = services_get(mock_core(m)->services, &user, PH_AUTHORIZER_SERVICE,
                     PH_AUTHORIZER_MAJOR, 0, self);
  return m;
}

static int64_t check(const ph_authorizer_v1 *vt, void *self, const char *u,
                     const char *p, answer *a) {
  in_call = 1;
  int64_t id = vt->check_password(self, u, strlen(u), p, strlen(p),
                                  on_answer, a);
  in_call = 0;
  return id;
}

static void test_verdicts(void) {
  const ph_authorizer_v1 *vt = NULL;
  void *self;
  ph_mock *m = start("", &vt, &self);
  ok(m && vt, "auth_local provides the authorizer service");
  if (!m || !vt)
    return;
  answer good = {0}, bad = {0}, nobody = {0}, again = {0};
  ok(check(vt, self, "alice", "s3cret", &good) > 0, "check accepted");
  ok(check(vt, self, "alice", "wrong", &bad) > 0, "check accepted");
  ok(check(vt, self, "mallory", "s3cret", &nobody) > 0, "check accepted");
  is_int(good.calls, 0, "no synchronous answer");
  answer *all[] = {&good, &bad, &nobody};
  wait_answers(m, all, 3);
  is_int(good.calls, 1, "one answer");
  is_int(good.verdict, PH_AUTH_ALLOW, "right password allowed");
  is_int(bad.verdict, PH_AUTH_DENY, "wrong password denied");
  is_int(nobody.verdict, PH_AUTH_DENY, "unknown user denied");
  check(vt, self, "alice", "s3cret", &again);
  answer *one[] = {&again};
  wait_answers(m, one, 1);
  is_int(again.verdict, PH_AUTH_ALLOW, "allowed again");
  like(mock_metrics_text(m),
       "proxyhost_auth_checks_total{result=\"allow\",cache=\"hit\"} 1",
       "the second check came from the cache");
  is_int(vt->check_password(self, "", 0, "x", 1, on_answer, &again),
         PH_EINVAL, "an empty user name is refused");

  answer gone = {0};
  int64_t id = check(vt, self, "alice", "other", &gone);
  is_int(vt->cancel(self, id), PH_OK, "cancel accepted");
  mock_run_for(m, 300);
  is_int(gone.calls, 0, "no answer after cancel");
  is_int(vt->cancel(self, id), PH_ENOENT, "cancelled id is gone");
  mock_stop(m);
  mock_free(m);
}

static void test_bound(void) {
  const ph_authorizer_v1 *vt = NULL;
  void *self;
  ph_mock *m = start("max_pending = 1\ncache_ttl = 0\n", &vt, &self);
  ok(m && vt, "started with max_pending = 1");
  if (!m || !vt)
    return;
  answer a = {0}, b = {0};
  check(vt, self, "alice", "s3cret", &a);
  check(vt, self, "alice", "s3cret", &b);
  answer *both[] = {&a, &b};
  wait_answers(m, both, 2);
  is_int(a.verdict, PH_AUTH_ALLOW, "first check runs");
  is_int(b.verdict, PH_AUTH_UNAVAILABLE,
         "a check beyond the bound is refused (fail closed)");
  mock_stop(m);
  mock_free(m);
}

static void test_bad_entry(void) {
  buf_reset(&err);
  ph_mock *m = mock_new("[proxyhost]\nmodules = " MODULE
                        "\n[auth_local]\nusers = bob:plaintext-pw\n",
                        &err);
  ok(m != NULL, "loads");
  is_int(mock_init(m, &err), -1, "an entry that is not NAME:HASH fails init");
  mock_free(m);
}

int main(void) {
  plan_lazy();
  buf_init(&err, 65536);
  test_verdicts();
  test_bound();
  test_bad_entry();
  buf_free(&err);
  return done_testing();
}

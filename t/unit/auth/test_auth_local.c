/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_local through the mock host: verdicts, asynchronous answers, the
 * verification cache, cancellation, the in-flight bound, bad entries,
 * what a reload forgets, answers under a steady stream of checks; and the
 * cache itself directly: lib/kcache as auth_local configures it (FIFO,
 * KCACHE_SECRET, 32-byte digests hashed by their first bytes). (Its "access" service: test_access.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/mock.h>

#include "lib/kcache.h"
#include "mock_core.h"
#include "auth_local/pwhash.h"
#include "loop_test.h"
#include "mock_test.h"
#include "steady_stream.h"
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

static char err[8192];

/* Runs the loop until every answer arrived, at most 20 s. */
static void wait_answers(ph_mock *m, answer **as, int n) {
  poll_until(ph_mock_loop(m), all_of(i, n, as[i]->calls > 0), 20000);
}

/* The configuration text: alice with password pw, then extra lines. */
static int conf_text(char *text, size_t len, const char *pw,
                     const char *extra) {
  char hash[PWHASH_TEXT_MAX];
  if (pwhash_create(pw, strlen(pw), 1000, hash, sizeof(hash)) < 0)
    return -1;
  snprintf(text, len,
           "[proxyhost]\nmodules = %s\n[auth_local]\nusers = alice:%s\n%s",
           MODULE, hash, extra);
  return 0;
}

static void finish(ph_mock *m) {
  ph_mock_stop(m);
  ph_mock_free(m);
}

/* auth_local under alice's "s3cret" and the extra lines, its authorizer
 * in *vt and *self: the TAP line what (started, the service found); NULL
 * (the mock freed) when not. */
static ph_mock *start(const char *extra, const ph_authorizer_v1 **vt,
                      void **self, const char *what) {
  char text[4096];
  ph_mock *m = NULL;
  *vt = NULL;
  err[0] = '\0';
  if (conf_text(text, sizeof(text), "s3cret", extra) == 0)
    m = mock_test_boot(text, NULL, err, sizeof err);
  if (!m)
    printf("# %s\n", err);
  else
    *vt = ph_mock_service(m, PH_AUTHORIZER_SERVICE, NULL, PH_AUTHORIZER_MAJOR,
                          0, self);
  if (!ok(m && *vt, what) && m) {
    finish(m);
    m = NULL;
  }
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
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("", &vt, &self,
                     "auth_local provides the authorizer service");
  if (!m)
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
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_checks_total{result=\"allow\",cache=\"hit\"} 1",
       "the second check came from the cache");
  is_int(vt->check_password(self, "", 0, "x", 1, on_answer, &again),
         PH_EINVAL, "an empty user name is refused");

  answer gone = {0};
  int64_t id = check(vt, self, "alice", "other", &gone);
  is_int(vt->cancel(self, id), PH_OK, "cancel accepted");
  ph_mock_run_for(m, 300);
  is_int(gone.calls, 0, "no answer after cancel");
  is_int(vt->cancel(self, id), PH_ENOENT, "cancelled id is gone");
  finish(m);
}

static void test_bound(void) {
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("max_pending = 1\ncache_ttl = 0\n", &vt, &self,
                     "started with max_pending = 1");
  if (!m)
    return;
  answer a = {0}, b = {0};
  check(vt, self, "alice", "s3cret", &a);
  check(vt, self, "alice", "s3cret", &b);
  answer *both[] = {&a, &b};
  wait_answers(m, both, 2);
  is_int(a.verdict, PH_AUTH_ALLOW, "first check runs");
  is_int(b.verdict, PH_AUTH_UNAVAILABLE,
         "a check beyond the bound is refused (fail closed)");
  finish(m);
}

static void test_bad_entry(void) {
  err[0] = '\0';
  ph_mock *m = ph_mock_new("[proxyhost]\nmodules = " MODULE
                           "\n[auth_local]\nusers = bob:plaintext-pw\n",
                           err, sizeof err);
  ok(m != NULL, "loads");
  is_int(ph_mock_init(m, err, sizeof err), -1,
         "an entry that is not NAME:HASH fails init");
  ph_mock_free(m);
}

/* Checks u/p and runs the loop until the answer came; the verdict. */
static int verdict_of(ph_mock *m, const ph_authorizer_v1 *vt, void *self,
                      const char *u, const char *p) {
  answer a = {0};
  answer *one[] = {&a};
  check(vt, self, u, p, &a);
  wait_answers(m, one, 1);
  return a.calls == 1 ? a.verdict : -100;
}

static void test_reload_forgets(void) {
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("", &vt, &self, "started");
  if (!m)
    return;
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_ALLOW, "verified");
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_ALLOW,
         "remembered");
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_checks_total{result=\"allow\",cache=\"hit\"} 1",
       "the second check came from the cache");
  char text[4096];
  ok(conf_text(text, sizeof(text), "n3w-pw", "") == 0 &&
         ph_mock_reload(m, text, NULL, 0) == 0,
     "reload with a new password for alice");
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_DENY,
         "the old password is not accepted from the cache after reload");
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_checks_total{result=\"deny\",cache=\"miss\"} 1",
       "it was checked against the new hash");
  is_int(verdict_of(m, vt, self, "alice", "n3w-pw"), PH_AUTH_ALLOW,
         "the new password is accepted");
  finish(m);
}

/* A check submitted before a reload and finished after it answers as
 * verified then, but must not fill the new cache with the old password. */
static void test_reload_in_flight(void) {
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("", &vt, &self, "started");
  if (!m)
    return;
  answer before = {0};
  answer *one[] = {&before};
  ok(check(vt, self, "alice", "s3cret", &before) > 0, "check submitted");
  char text[4096];
  ok(conf_text(text, sizeof(text), "n3w-pw", "") == 0 &&
         ph_mock_reload(m, text, NULL, 0) == 0,
     "reload while the check is in flight");
  wait_answers(m, one, 1);
  is_int(before.verdict, PH_AUTH_ALLOW,
         "the in-flight check answers against the password it started with");
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_DENY,
         "its result was not remembered across the reload");
  unlike(ph_mock_metrics_text(m),
         "proxyhost_auth_local_checks_total{result=\"allow\",cache=\"hit\"} 1",
         "no cache hit at all");
  finish(m);
}

/* A client that gives up before its check finishes (its handshake timed
 * out) still leaves a verified password in the cache: otherwise a client
 * whose timeout is shorter than one verification (slow hardware, a high
 * iteration count, a busy helper pool) retries into a fresh verification
 * every time and never gets in. */
static void test_cancelled_still_caches(void) {
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("", &vt, &self, "started");
  if (!m)
    return;
  answer gone = {0}, wrong = {0};
  int64_t id = check(vt, self, "alice", "s3cret", &gone);
  int64_t wid = check(vt, self, "alice", "not-it", &wrong);
  is_int(vt->cancel(self, id), PH_OK, "a check with the right password, cancelled");
  is_int(vt->cancel(self, wid), PH_OK, "a check with a wrong one, cancelled");
  ph_mock_run_for(m, 500);
  is_int(gone.calls + wrong.calls, 0, "neither answers");
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_ALLOW,
         "the next check with the right password is allowed");
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_checks_total{result=\"allow\",cache=\"hit\"} 1",
       "... from the cache the cancelled verification filled");
  is_int(verdict_of(m, vt, self, "alice", "not-it"), PH_AUTH_DENY,
         "a cancelled wrong password is not remembered");
  finish(m);
}

static void test_max_cache_size(void) {
  const ph_authorizer_v1 *vt;
  void *self;
  ph_mock *m = start("cache_size = 100000\n", &vt, &self,
                     "starts with the largest cache_size");
  if (!m)
    return;
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_ALLOW, "verified");
  is_int(verdict_of(m, vt, self, "alice", "s3cret"), PH_AUTH_ALLOW,
         "remembered");
  like(ph_mock_metrics_text(m),
       "proxyhost_auth_local_checks_total{result=\"allow\",cache=\"hit\"} 1",
       "the largest cache answers from memory");
  finish(m);
  err[0] = '\0';
  m = ph_mock_new("[proxyhost]\nmodules = " MODULE
                  "\n[auth_local]\ncache_size = 100001\n",
                  err, sizeof err);
  ok(m == NULL || ph_mock_init(m, err, sizeof err) < 0, "one more is refused");
  ph_mock_free(m);
}

/* A loop that never idles (a pipe that stays readable) and a check of
 * remembered credentials on every iteration for 100 ms: the answers, due
 * on a later iteration, must keep coming while it lasts. A timer re-armed
 * by each check would be pushed back on every iteration and never fire. */
static struct {
  const ph_authorizer_v1 *vt;
  void *self;
} S;

static int stream_check(void *arg);
static steady_stream stream = {.start = stream_check};

static void on_stream_answer(void *arg, int verdict) {
  (void)arg;
  (void)verdict;
  steady_stream_answered(&stream);
}

static int stream_check(void *arg) {
  (void)arg;
  return S.vt->check_password(S.self, "alice", 5, "s3cret", 6,
                              on_stream_answer, NULL) > 0;
}

static void test_steady_stream(void) {
  memset(&S, 0, sizeof(S));
  ph_mock *m = start("max_pending = 65536\n", &S.vt, &S.self, "started");
  if (!m)
    return;
  is_int(verdict_of(m, S.vt, S.self, "alice", "s3cret"), PH_AUTH_ALLOW,
         "verified: later checks come from the cache");
  if (steady_stream_run(&stream, m, 100)) {
    ok(stream.checks > 0, "checks were made on every iteration");
    ok(stream.answered_during > 0,
       "cached answers are delivered while checks keep coming");
  }
  finish(m);
}

/* ---- the cache on its own ---------------------------------------------- */

#define AUTH_CACHE_KEY_LEN 32
#define AUTH_CACHE_MAX 100000 /* cache_size's upper bound */
typedef kcache auth_cache;

static auth_cache *auth_cache_new(size_t capacity) {
  kcache_conf kc = {.max_entries = capacity,
                    .value_size = 1,
                    .policy = KCACHE_FIFO,
                    .flags = KCACHE_SECRET};
  return kcache_new(&kc);
}

static void auth_cache_free(auth_cache *c) { kcache_free(c); }

static uint64_t key_hash(const unsigned char *k) {
  uint64_t h;
  memcpy(&h, k, sizeof(h));
  return h;
}

static int auth_cache_hit(auth_cache *c, const unsigned char *k,
                          int64_t now) {
  char v;
  return kcache_get(c, k, AUTH_CACHE_KEY_LEN, key_hash(k), now, &v, NULL);
}

static void auth_cache_put(auth_cache *c, const unsigned char *k,
                           int64_t expires_ms) {
  const char v = 1;
  kcache_put(c, k, AUTH_CACHE_KEY_LEN, key_hash(k), &v, expires_ms, 0);
}

/* Key n; with same_bucket, keys differ only after the bytes the cache
 * hashes, so they all collide. */
static void key_of(unsigned char k[AUTH_CACHE_KEY_LEN], uint32_t n,
                   int same_bucket) {
  memset(k, 0x5a, AUTH_CACHE_KEY_LEN);
  if (!same_bucket)
    memcpy(k, &n, sizeof(n));
  memcpy(k + AUTH_CACHE_KEY_LEN - sizeof(n), &n, sizeof(n));
}

static int hit(auth_cache *c, uint32_t n, int same_bucket, int64_t now) {
  unsigned char k[AUTH_CACHE_KEY_LEN];
  key_of(k, n, same_bucket);
  return auth_cache_hit(c, k, now);
}

static void put(auth_cache *c, uint32_t n, int same_bucket, int64_t exp) {
  unsigned char k[AUTH_CACHE_KEY_LEN];
  key_of(k, n, same_bucket);
  auth_cache_put(c, k, exp);
}

static void test_cache_hits(void) {
  auth_cache *c = auth_cache_new(4);
  ok(c != NULL, "cache of 4");
  if (!c)
    return;
  is_int(hit(c, 1, 0, 0), 0, "empty: miss");
  put(c, 1, 0, 100);
  is_int(hit(c, 1, 0, 50), 1, "hit before expiry");
  is_int(hit(c, 1, 0, 99), 1, "hit 1 ms before expiry");
  is_int(hit(c, 1, 0, 100), 0, "miss at expiry");
  is_int(hit(c, 2, 0, 50), 0, "another key: miss");
  unsigned char k[AUTH_CACHE_KEY_LEN];
  key_of(k, 1, 0);
  k[AUTH_CACHE_KEY_LEN - 1] ^= 1;
  is_int(auth_cache_hit(c, k, 50), 0, "a key differing in its last byte");
  put(c, 1, 0, 200);
  is_int(hit(c, 1, 0, 150), 1, "putting again sets the new expiry");
  auth_cache_free(c);

  c = auth_cache_new(0);
  ok(c != NULL, "cache of 0");
  put(c, 1, 0, 100);
  is_int(hit(c, 1, 0, 50), 0, "a cache of 0 remembers nothing");
  auth_cache_free(c);
  auth_cache_free(NULL);
}

/* The test name, marked when every key shares one bucket. */
static const char *nm(const char *name, int same_bucket) {
  static char text[128];
  snprintf(text, sizeof(text), "%s%s", name,
           same_bucket ? " (one bucket)" : "");
  return text;
}

static void test_cache_eviction(int same_bucket) {
  auth_cache *c = auth_cache_new(3);
  ok(c != NULL, nm("cache of 3", same_bucket));
  if (!c)
    return;
  for (uint32_t n = 0; n < 3; n++)
    put(c, n, same_bucket, 1000);
  ok(hit(c, 0, same_bucket, 0) && hit(c, 1, same_bucket, 0) &&
         hit(c, 2, same_bucket, 0),
     nm("full: all three hit", same_bucket));
  put(c, 3, same_bucket, 1000);
  is_int(hit(c, 0, same_bucket, 0), 0,
         nm("at capacity the oldest goes", same_bucket));
  ok(hit(c, 1, same_bucket, 0) && hit(c, 2, same_bucket, 0) &&
         hit(c, 3, same_bucket, 0),
     nm("the others stay", same_bucket));
  put(c, 2, same_bucket, 1000); /* already there: evicts nothing */
  ok(hit(c, 1, same_bucket, 0) && hit(c, 2, same_bucket, 0) &&
         hit(c, 3, same_bucket, 0),
     nm("putting a present key again evicts nothing", same_bucket));
  put(c, 1, same_bucket, 1000); /* keeps its place: 1, 2, 3 */
  put(c, 4, same_bucket, 1000);
  is_int(hit(c, 1, same_bucket, 0), 0,
         nm("a key put again keeps its place in the order", same_bucket));
  ok(hit(c, 2, same_bucket, 0) && hit(c, 3, same_bucket, 0) &&
         hit(c, 4, same_bucket, 0),
     nm("the newer ones stay", same_bucket));
  for (uint32_t n = 10; n < 13; n++)
    put(c, n, same_bucket, 1000);
  ok(!hit(c, 2, same_bucket, 0) && !hit(c, 3, same_bucket, 0) &&
         !hit(c, 4, same_bucket, 0) && hit(c, 10, same_bucket, 0) &&
         hit(c, 11, same_bucket, 0) && hit(c, 12, same_bucket, 0),
     nm("a full turn replaces everything", same_bucket));
  auth_cache_free(c);
}

static void test_cache_max(void) {
  auth_cache *c = auth_cache_new(AUTH_CACHE_MAX);
  ok(c != NULL, "cache of AUTH_CACHE_MAX");
  if (!c)
    return;
  for (uint32_t n = 0; n < AUTH_CACHE_MAX; n++)
    put(c, n, 0, 1000);
  uint32_t hits = 0;
  for (uint32_t n = 0; n < AUTH_CACHE_MAX; n++)
    hits += (uint32_t)hit(c, n, 0, 0);
  is_int(hits, AUTH_CACHE_MAX, "every entry of a full cache hits");
  put(c, AUTH_CACHE_MAX, 0, 1000);
  ok(!hit(c, 0, 0, 0) && hit(c, 1, 0, 0) && hit(c, AUTH_CACHE_MAX, 0, 0),
     "one more evicts exactly the oldest");
  auth_cache_free(c);
}

int main(void) {
  plan_lazy();
  err[0] = '\0';
  test_cache_hits();
  test_cache_eviction(0);
  test_cache_eviction(1);
  test_cache_max();
  test_verdicts();
  test_bound();
  test_bad_entry();
  test_reload_forgets();
  test_reload_in_flight();
  test_cancelled_still_caches();
  test_max_cache_size();
  test_steady_stream();
  return done_testing();
}

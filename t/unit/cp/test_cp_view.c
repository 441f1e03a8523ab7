/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's immutable snapshot view (modules/cp_common/cp_view*,
 * <proxyhost/pool_view.h>), compiled from WorkerSnapshot messages built
 * here the way protobuf-c unpacks them: first-match routing in configured
 * order (exact, suffix and any host patterns, port ranges, client
 * identity, listener), candidates per target group, usable_until to the
 * millisecond, no candidates at valid_until or past the stale deadline,
 * the reference count across a swap (run under ASan: an old view is read
 * after the swap and freed after its last release), and credentials
 * wiped when the view is freed; the shared lease form's ends (issue 26). */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include "cp_common/view/cp_view.h"
#include "tap.h"

#include "cp_view_fixture.h"

/* The routing fixture: the order matters (first match wins). */
static void fx_routing(fixture *f) {
  fx_rule(f, "r-exact", "api.example.com", 443, 443, NULL, NULL, "g-api");
  fx_rule(f, "r-suffix", "*.Example.COM", 0, 0, NULL, NULL, "g-web");
  fx_rule(f, "r-ports", "*", 8000, 8100, NULL, NULL, "g-web");
  fx_rule(f, "r-alice", "*", 0, 0, "alice", NULL, "g-api");
  fx_rule(f, "r-socks", "*", 0, 0, NULL, "socks", "g-none");
  fx_rule(f, "r-v6", "[2001:DB8::1]", 0, 0, NULL, NULL, "g-api");
  fx_rule(f, "r-num", "*.3.4", 0, 0, NULL, NULL, "g-api");
  fx_rule(f, "r-bad", "foo*bar.com", 0, 0, NULL, NULL, "g-api");
  fx_rule(f, "r-alice-http", "intra.test", 0, 0, "alice", "http", "g-api");
}

static void test_compile(void) {
  fixture f;
  fx_init(&f);
  fx_routing(&f);
  fx_proxy(&f, "px-c", "g-web", NULL, "ref-a");
  fx_proxy(&f, "px-a", "g-api", "g-web", "ref-a");
  fx_proxy(&f, "px-b", "g-api", "g-api", NULL);
  fx_cred(&f, "ref-unused", 1, "nobody", "unused-pw");
  fx_cred(&f, "ref-a", 1, "user-a", "s3cret-a");
  Controlplane__V1__RoutingRule *w = &f.rules[2];
  w->on_unavailable = CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT;
  google__protobuf__duration__init(&f.wait[2]);
  f.wait[2].seconds = 2;
  f.wait[2].nanos = 500000000;
  w->wait_timeout = &f.wait[2];
  w->strategy = "sticky";
  w->sticky_key = "header:X-Session";

  ph_pool_view *v = compile(&f, T0 + 10, 300000);
  if (!ok(v != NULL, "CP-1-20: a valid snapshot compiles into a view")) {
    return;
  }
  is_int(v->size, sizeof(ph_pool_view), "the view's size field");
  is_int(v->version, 42, "CP-1-20: the view carries the snapshot's version");
  is_int(v->epoch, 7, "CP-3-1: and its ownership epoch");
  is_int(v->valid_until_ms, T0 + 60000, "CP-3-8: valid_until in Unix ms");
  is_int(v->generated_at_ms, T0, "generated_at in Unix ms");
  is_int(v->stale_deadline_ms, T0 + 10 + 300000,
         "CP-3-18: stale deadline = obtained_at + max_stale_age");
  ok(memcmp(v->checksum, f.sum, 32) == 0, "the checksum is kept");
  is_str(v->cluster_id, "c1", "cluster id");
  is_str(v->worker_id, "w1", "worker id");
  is_int(v->n_rules, 9, "every rule, in order (CP-1-19)");
  is_int(v->n_proxies, 3, "every owned proxy");
  is_str(v->proxies[0].proxy_id, "px-a", "proxies sorted by id: 0");
  is_str(v->proxies[2].proxy_id, "px-c", "proxies sorted by id: 2");
  int idx_ok = 1;
  for (uint32_t i = 0; i < v->n_proxies; i++)
    idx_ok &= v->proxies[i].index == i;
  ok(idx_ok, "each proxy's index is its position (a stable small index)");
  const ph_pool_view_proxy *a = &v->proxies[0];
  is_int(a->protocol, PH_POOL_UPSTREAM_SOCKS5, "protocol by value");
  is_str(a->host, "127.0.0.1", "host");
  is_int(a->port, 1081, "port");
  is_int(a->capacity, 10, "capacity");
  is_int(a->weight, 5, "weight");
  is_int(a->usable_until_ms, T0 + 40000, "usable_until in ms");
  is_int(a->expires_at_ms, T0 + 50000, "expires_at in ms");
  is_str(a->zone, "z1", "zone");
  ok(a->credential && v->proxies[2].credential == a->credential,
     "CP-1-18: two proxies naming one credential share one copy");
  ok(a->credential && strcmp(a->credential->username, "user-a") == 0 &&
         strcmp(a->credential->password, "s3cret-a") == 0 &&
         a->credential->password_len == 8,
     "the credential's username and password are in the view");
  ok(v->proxies[1].credential == NULL, "no secret_ref: no credential");
  is_str(v->rules[1].host, ".example.com",
         "a suffix pattern is compiled in lower case with its dot");
  is_int(v->rules[1].host_kind, PH_POOL_VIEW_HOST_SUFFIX, "suffix kind");
  is_int(v->rules[5].host_kind, PH_POOL_VIEW_HOST_EXACT,
         "an IPv6 literal is an exact pattern");
  is_str(v->rules[5].host, "2001:db8::1", "in the normal form");
  is_int(v->rules[7].host_kind, PH_POOL_VIEW_HOST_NEVER,
         "a '*' inside a name can never match (fail closed)");
  const ph_pool_view_rule *r = &v->rules[2];
  is_int(r->on_unavailable, PH_POOL_ON_UNAVAILABLE_WAIT, "on_unavailable");
  is_int(r->wait_timeout_ms, 2500, "wait_timeout in ms");
  is_str(r->strategy, "sticky", "strategy name");
  is_str(r->sticky_key, "header:X-Session", "sticky key");
  ok(v->rules[0].client_identity == NULL && v->rules[0].listener == NULL,
     "empty identity and listener are 'any' (NULL)");

  /* Candidates: the proxies whose groups contain the target group. */
  const ph_pool_view_rule *api = &v->rules[0], *web = &v->rules[1];
  is_int(api->n_candidates, 2, "g-api: px-a and px-b (px-b once)");
  ok(api->n_candidates == 2 && api->candidates[0] == 0 &&
         api->candidates[1] == 1,
     "candidates are view indexes, ascending");
  is_int(web->n_candidates, 2, "g-web: px-a and px-c");
  ok(web->n_candidates == 2 && web->candidates[0] == 0 &&
         web->candidates[1] == 2,
     "g-web's candidates");
  ok(v->rules[2].candidates == web->candidates,
     "rules naming one group share one candidate array");
  is_int(v->rules[4].n_candidates, 0, "an unknown group has no candidates");
  cp_view_release(v);
}

static void test_match(void) {
  fixture f;
  fx_init(&f);
  fx_routing(&f);
  fx_proxy(&f, "px-a", "g-api", NULL, NULL);
  ph_pool_view *v = compile(&f, T0, 300000);
  if (!v) {
    ok(0, "compile");
    return;
  }
  const uint32_t NONE = PH_POOL_VIEW_NONE;
  is_int(cp_view_match(v, "api.example.com", 443, NULL, NULL), 0,
         "CP-1-21: exact host and port: the first rule");
  is_int(cp_view_match(v, "api.example.com", 80, NULL, NULL), 1,
         "first-match order: another port falls to the suffix rule");
  is_int(cp_view_match(v, "a.b.example.com", 443, NULL, NULL), 1,
         "a suffix matches names strictly below it");
  is_int(cp_view_match(v, "example.com", 8000, NULL, NULL), 2,
         "a suffix does not match its own name; ports 8000..8100 do");
  is_int(cp_view_match(v, "badexample.com", 8100, NULL, NULL), 2,
         "a suffix needs the dot; 8100 is inside the range (inclusive)");
  is_int(cp_view_match(v, "other.test", 7999, NULL, NULL), NONE,
         "7999 is outside the range: no rule (identity and listener absent)");
  is_int(cp_view_match(v, "other.test", 8101, NULL, NULL), NONE,
         "8101 is outside the range");
  is_int(cp_view_match(v, "other.test", 22, "alice", NULL), 3,
         "client identity: alice's rule");
  is_int(cp_view_match(v, "other.test", 22, "bob", NULL), NONE,
         "another identity does not match it");
  is_int(cp_view_match(v, "other.test", 22, NULL, "socks"), 4,
         "listener: the socks listener's rule");
  is_int(cp_view_match(v, "other.test", 22, NULL, "http"), NONE,
         "another listener does not match it");
  is_int(cp_view_match(v, "intra.test", 22, "alice", "http"), 3,
         "an earlier rule that matches wins over a more specific later one");
  is_int(cp_view_match(v, "2001:db8::1", 22, NULL, NULL), 5,
         "an IPv6 literal matches its exact pattern");
  is_int(cp_view_match(v, "1.2.3.4", 22, NULL, NULL), NONE,
         "a suffix pattern never matches an address");
  is_int(cp_view_match(v, "x.3.4", 22, NULL, NULL), 6,
         "while the same suffix matches a name");
  is_int(cp_view_match(v, "foo.bar.com", 22, NULL, NULL), NONE,
         "an unreadable pattern matches nothing");
  is_int(cp_view_match(v, "", 443, NULL, NULL), NONE, "empty host: none");
  is_int(cp_view_match(v, NULL, 443, NULL, NULL), NONE, "NULL host: none");
  is_int(cp_view_match(NULL, "a.test", 443, NULL, NULL), NONE,
         "no view: none");
  cp_view_release(v);

  /* A catch-all rule last. */
  fx_rule(&f, "r-any", "", 0, 0, NULL, NULL, "g-api");
  v = compile(&f, T0, 300000);
  is_int(v ? cp_view_match(v, "other.test", 22, "bob", "http") : 99, 9,
         "an empty pattern with no ports is 'any'");
  cp_view_release(v);
}

static void test_usable(void) {
  fixture f;
  fx_init(&f);
  fx_rule(&f, "r", "*", 0, 0, NULL, NULL, "g");
  fx_proxy(&f, "p0", "g", NULL, NULL);
  fx_proxy(&f, "p1", "g", NULL, NULL);
  fx_proxy(&f, "p2", "g", NULL, NULL);
  fx_proxy(&f, "p3", "g", NULL, NULL);
  /* p0: usable_until with a sub-millisecond part; p1 draining; p2 with
   * expires_at before usable_until (an inconsistent lease: the earlier
   * one wins); p3 without usable_until. */
  f.uu[0].seconds = (T0 + 30000) / 1000;
  f.uu[0].nanos = 999999999; /* .999999999 floors to .999 */
  f.px[1].draining = 1;
  ts_set(&f.exp[2], T0 + 20000);
  f.px[3].usable_until = NULL;
  ph_pool_view *v = compile(&f, T0, 45000);
  if (!v) {
    ok(0, "compile");
    return;
  }
  int64_t uu = T0 + 30999;
  is_int(v->proxies[0].usable_until_ms, uu,
         "usable_until floors to the millisecond (never later)");
  ok(cp_view_usable(v, 0, uu - 1), "CP-3-6: usable 1 ms before usable_until");
  ok(!cp_view_usable(v, 0, uu), "CP-3-6: not usable at usable_until");
  ok(!cp_view_usable(v, 0, uu + 1), "CP-3-6: nor after it");
  ok(!cp_view_usable(v, 1, T0), "CP-4-2: a draining proxy is not usable");
  ok(cp_view_usable(v, 2, T0 + 19999) && !cp_view_usable(v, 2, T0 + 20000),
     "expires_at bounds it too");
  ok(!cp_view_usable(v, 3, T0), "a missing usable_until: never usable");
  ok(!cp_view_usable(v, 4, T0) && !cp_view_usable(v, UINT32_MAX, T0),
     "an index out of range is not usable");
  ok(!cp_view_usable(NULL, 0, T0), "no view: nothing usable");
  ok(cp_view_live(v, T0 + 44999), "live before the stale deadline");
  ok(!cp_view_live(v, T0 + 45000), "CP-3-18: not live at the stale deadline");
  cp_view_release(v);

  /* valid_until before every usable_until: at it, nothing is usable. */
  ts_set(&f.vu, T0 + 10000);
  f.px[1].draining = 0;
  v = compile(&f, T0, 300000);
  int before = 0, at = 0;
  for (uint32_t i = 0; i < 3; i++) {
    before += cp_view_usable(v, i, T0 + 9999);
    at += cp_view_usable(v, i, T0 + 10000);
  }
  is_int(before, 3, "three proxies usable 1 ms before valid_until");
  is_int(at, 0, "CP-3-9: none at valid_until: no candidates at all");
  ok(!cp_view_live(v, T0 + 10000), "CP-3-9: the view is not live then");
  cp_view_release(v);

  /* Max stale (CP-3-18) before valid_until: no candidates either. */
  ts_set(&f.vu, T0 + 60000);
  v = compile(&f, T0, 5000);
  before = at = 0;
  for (uint32_t i = 0; i < 3; i++) {
    before += cp_view_usable(v, i, T0 + 4999);
    at += cp_view_usable(v, i, T0 + 5000);
  }
  is_int(before, 3, "usable before obtained_at + max_stale_age");
  is_int(at, 0, "CP-3-18: no candidates past the max-stale deadline");
  cp_view_release(v);
  v = compile(&f, T0, 0);
  ok(v && !cp_view_live(v, T0) && !cp_view_usable(v, 0, T0),
     "max_stale_age 0 (not given): no candidates (fail closed)");
  cp_view_release(v);
  ts_set(&f.vu, T0 + 60000);
  f.s.valid_until = NULL;
  v = compile(&f, T0, 300000);
  ok(v && !cp_view_live(v, T0), "a missing valid_until: not live");
  cp_view_release(v);
}

/* ---- lifetime ------------------------------------------------------- */

static int frees;
static int secret_left;
static const char *secret_needle;

static void free_hook(const void *block, size_t len) {
  frees++;
  if (secret_needle &&
      memmem(block, len, secret_needle, strlen(secret_needle)))
    secret_left++;
}

static void test_refcount(void) {
  fixture f;
  fx_init(&f);
  fx_rule(&f, "r", "*", 0, 0, NULL, NULL, "g");
  fx_proxy(&f, "p0", "g", NULL, NULL);
  cp_view_free_hook = free_hook;
  frees = 0;
  cp_view_slot slot = {0};
  ok(cp_view_current(&slot) == NULL && cp_view_acquire(&slot) == NULL,
     "an empty slot: no view (no candidates)");
  ph_pool_view *v1 = compile(&f, T0, 300000);
  f.s.version = 43;
  ph_pool_view *v2 = compile(&f, T0, 300000);
  cp_view_publish(&slot, v1);
  ok(cp_view_current(&slot) == v1, "CP-3-17: published with one swap");
  is_int(cp_view_refs(v1), 1, "the slot holds one reference");
  const ph_pool_view *held = cp_view_acquire(&slot);
  ok(held == v1, "acquire returns the current view");
  is_int(cp_view_refs(v1), 2, "and holds a reference");
  cp_view_publish(&slot, v2);
  ok(cp_view_current(&slot) == v2, "CP-3-14: the new view replaces it");
  is_int(frees, 0, "the old view is not freed while a request holds it");
  is_int(held->version, 42, "the old view still reads whole after the swap");
  is_str(held->proxies[0].proxy_id, "p0", "its proxies too");
  is_int(cp_view_refs(v1), 1, "the swap dropped the slot's reference");
  cp_view_release(held);
  is_int(frees, 1, "the last release frees the old view");
  const ph_pool_view *h2 = cp_view_acquire(&slot);
  const ph_pool_view *h3 = cp_view_acquire(&slot);
  is_int(cp_view_refs(v2), 3, "two holders and the slot");
  cp_view_publish(&slot, NULL);
  cp_view_release(h2);
  is_int(frees, 1, "still held once");
  cp_view_release(h3);
  is_int(frees, 2, "freed after the last of several holders");
  ok(cp_view_current(&slot) == NULL, "an emptied slot");
  cp_view_release(NULL);

  /* The same through the service's vtable, the slot as self. */
  const ph_pool_view_v1 *vt = &cp_view_service;
  cp_view_publish(&slot, compile(&f, T0, 300000));
  const ph_pool_view *cur = vt->current(&slot);
  const ph_pool_view *h = vt->acquire(&slot);
  ok(cur && h == cur && cp_view_refs(cur) == 2,
     "pool.view: current() and acquire() through the vtable");
  ok(vt->match(h, "a.test", 1, NULL, NULL) == 0 && vt->usable(h, 0, T0) &&
         vt->live(h, T0) && vt->find(h, "p0") == 0,
     "pool.view: match, usable, live and find through the vtable");
  cp_view_publish(&slot, NULL);
  is_int(frees, 2, "held through the vtable: not freed");
  vt->release(&slot, h);
  is_int(frees, 3, "pool.view: release() frees the last reference");
  cp_view_free_hook = NULL;
}

typedef struct job {
  fixture *f;
  ph_pool_view *v;
} job;

static void *compile_job(void *arg) {
  job *j = arg;
  j->v = compile(j->f, T0, 300000);
  return NULL;
}

static void *release_job(void *arg) {
  cp_view_release(arg);
  return NULL;
}

static void test_threads(void) {
  fixture f;
  fx_init(&f);
  fx_rule(&f, "r", "*", 0, 0, NULL, NULL, "g");
  fx_proxy(&f, "p0", "g", NULL, NULL);
  cp_view_slot slot = {0};
  job j = {&f, NULL};
  pthread_t t;
  ok(pthread_create(&t, NULL, compile_job, &j) == 0 &&
         pthread_join(t, NULL) == 0 && j.v,
     "CP-3-17: a view compiled on another thread (a host job)");
  cp_view_publish(&slot, j.v);
  const ph_pool_view *held = cp_view_acquire(&slot);
  cp_view_publish(&slot, NULL);
  ok(pthread_create(&t, NULL, release_job, (void *)held) == 0 &&
         pthread_join(t, NULL) == 0,
     "its last reference released on another thread (ASan: no leak)");
}

static void test_credentials_wiped(void) {
  fixture f;
  fx_init(&f);
  fx_rule(&f, "r", "*", 0, 0, NULL, NULL, "g");
  fx_proxy(&f, "p0", "g", NULL, "ref-x");
  fx_cred(&f, "ref-x", 1, "user-x", "Pa55-unique-word");
  ph_pool_view *v = compile(&f, T0, 300000);
  ok(v && v->proxies[0].credential &&
         strcmp(v->proxies[0].credential->password, "Pa55-unique-word") == 0,
     "the password is in the view's memory");
  cp_view_free_hook = free_hook;
  secret_needle = "Pa55-unique-word";
  frees = secret_left = 0;
  cp_view_release(v);
  is_int(frees, 1, "the view was freed");
  is_int(secret_left, 0,
         "CP-8-5: no byte sequence of the password left in the freed block");
  secret_needle = "user-x";
  secret_left = 0;
  v = compile(&f, T0, 300000);
  cp_view_release(v);
  is_int(secret_left, 0, "nor of the username");
  cp_view_free_hook = NULL;
  secret_needle = NULL;

  /* The function only: that the gateway calls it on every snapshot, so
   * that its view holds the only copy (CP-1-18), is shown on the running
   * gateway's memory by cp_reload.sh (issue 24 item 13). */
  cp_view_wipe_message(&f.s);
  ok(memchr(f.pass[0], 'P', sizeof f.pass[0]) == NULL &&
         memchr(f.user[0], 'u', sizeof f.user[0]) == NULL,
     "cp_view_wipe_message() wipes the message's copy");
}

static void test_refusals(void) {
  fixture f;
  fx_init(&f);
  fx_proxy(&f, "p0", "g", NULL, "ref-missing");
  cp_view_opts o = {T0, 300000};
  ph_pool_view *v = (ph_pool_view *)1;
  const char *why = NULL;
  is_int(cp_view_compile(&f.s, &o, &v, &why), PH_EINVAL,
         "a proxy naming missing credentials: refused");
  ok(v == NULL && why && strstr(why, "credentials"), "with a reason");
  fx_init(&f);
  fx_proxy(&f, "p0", "g", NULL, NULL);
  fx_proxy(&f, "p0", "g", NULL, NULL);
  is_int(cp_view_compile(&f.s, &o, &v, &why), PH_EINVAL,
         "a duplicate proxy id: refused");
  fx_cred(&f, "r", 2, "u", "p");
  f.px[1].proxy_id = "p1";
  f.px[1].secret_ref = "r";
  f.px[1].credential_version = 1;
  is_int(cp_view_compile(&f.s, &o, &v, &why), PH_EINVAL,
         "credentials of another version do not count");
  f.px[1].credential_version = 2;
  is_int(cp_view_compile(&f.s, &o, &v, &why), PH_OK, "the right version");
  cp_view_release(v);
  is_int(cp_view_compile(NULL, &o, &v, &why), PH_EINVAL, "no snapshot");
  fx_init(&f);
  v = NULL;
  is_int(cp_view_compile(&f.s, &o, &v, &why), PH_OK,
         "an empty snapshot compiles (no rules, no proxies)");
  ok(v && v->n_rules == 0 && v->n_proxies == 0 &&
         cp_view_match(v, "a.test", 1, NULL, NULL) == PH_POOL_VIEW_NONE,
     "and matches nothing");
  cp_view_release(v);
}

static void test_find_remap(void) {
  fixture f;
  fx_init(&f);
  fx_proxy(&f, "b", "g", NULL, NULL);
  fx_proxy(&f, "d", "g", NULL, NULL);
  fx_proxy(&f, "a", "g", NULL, NULL);
  ph_pool_view *old_v = compile(&f, T0, 300000);
  is_int(cp_view_find(old_v, "d"), 2, "find: d is index 2 (a b d)");
  is_int(cp_view_find(old_v, "c"), PH_POOL_VIEW_NONE, "find: no c");
  fx_init(&f);
  fx_proxy(&f, "c", "g", NULL, NULL);
  fx_proxy(&f, "d", "g", NULL, NULL);
  fx_proxy(&f, "a", "g", NULL, NULL);
  ph_pool_view *new_v = compile(&f, T0, 300000);
  uint32_t map[3];
  cp_view_remap(old_v, new_v, map);
  ok(map[0] == 0 && map[1] == PH_POOL_VIEW_NONE && map[2] == 2,
     "remap by id: a stays 0, b is gone, d moves to 2 (a c d)");
  cp_view_remap(old_v, NULL, map);
  ok(map[0] == PH_POOL_VIEW_NONE && map[2] == PH_POOL_VIEW_NONE,
     "remap onto no view: all gone");
  cp_view_release(old_v);
  cp_view_release(new_v);
}

/* The hot path allocates nothing: current, acquire, release (not the
 * last), match, usable, live, find, 10,000 times over, leave the heap's
 * counters where they were (glibc's mallinfo2; under ASan it reads 0s). */
static void test_no_allocation(void) {
  fixture f;
  fx_init(&f);
  fx_routing(&f);
  fx_proxy(&f, "px-a", "g-api", "g-web", NULL);
  fx_proxy(&f, "px-b", "g-web", NULL, NULL);
  cp_view_slot slot = {0};
  cp_view_publish(&slot, compile(&f, T0, 300000));
  struct mallinfo2 before = mallinfo2();
  uint32_t sum = 0;
  for (int i = 0; i < 10000; i++) {
    const ph_pool_view *v = cp_view_acquire(&slot);
    uint32_t r = cp_view_match(v, i & 1 ? "a.example.com" : "other.test",
                               (uint16_t)(8000 + i % 200), NULL, NULL);
    if (r != PH_POOL_VIEW_NONE)
      for (uint32_t c = 0; c < v->rules[r].n_candidates; c++)
        sum += (uint32_t)cp_view_usable(v, v->rules[r].candidates[c], T0 + i);
    sum += (uint32_t)cp_view_live(cp_view_current(&slot), T0);
    sum += cp_view_find(v, "px-b");
    cp_view_release(v);
  }
  struct mallinfo2 after = mallinfo2();
  ok(sum > 0, "the loop did select");
  ok(after.uordblks == before.uordblks && after.hblkhd == before.hblkhd,
     "CP-3-17: reading the view allocates nothing");
  cp_view_publish(&slot, NULL);
}

/* The shared lease form (issue 26): a proxy ends at the earlier of its
 * own times (absent: none) and the snapshot's lease_expires_at /
 * lease_usable_until; never later than either. */
static void test_shared_lease(void) {
  fixture f;
  Google__Protobuf__Timestamp le, lu;
  fx_init(&f);
  fx_rule(&f, "r", "*", 0, 0, NULL, NULL, "g");
  fx_proxy(&f, "p0", "g", NULL, NULL);
  fx_proxy(&f, "p1", "g", NULL, NULL);
  fx_proxy(&f, "p2", "g", NULL, NULL);
  ts_set(&le, T0 + 30000);
  ts_set(&lu, T0 + 25000);
  f.s.lease_expires_at = &le;
  f.s.lease_usable_until = &lu;
  f.px[0].expires_at = NULL; /* no expiry of its own */
  f.px[0].usable_until = NULL;
  ts_set(&f.exp[1], T0 + 20000); /* its own, before the lease */
  ts_set(&f.uu[1], T0 + 15000);
  ts_set(&f.exp[2], T0 + 90000); /* its own, after the lease */
  ts_set(&f.uu[2], T0 + 85000);
  ph_pool_view *v = compile(&f, T0, 45000);
  if (!v) {
    ok(0, "compile (shared lease)");
    return;
  }
  ok(v->proxies[0].usable_until_ms == T0 + 25000 &&
         v->proxies[0].expires_at_ms == T0 + 30000,
     "issue 26: a proxy without times ends with the snapshot's lease");
  ok(v->proxies[1].usable_until_ms == T0 + 15000 &&
         v->proxies[1].expires_at_ms == T0 + 20000,
     "an own expiry before the lease ends it");
  ok(v->proxies[2].usable_until_ms == T0 + 25000 &&
         v->proxies[2].expires_at_ms == T0 + 30000,
     "CP-1-17: an own expiry after the lease does not outlive the lease");
  ok(cp_view_usable(v, 0, T0 + 24999) && !cp_view_usable(v, 0, T0 + 25000),
     "CP-3-6: usable until the lease's usable_until, not at it");
  cp_view_release(v);
}

int main(void) {
  plan_lazy();
  test_shared_lease();
  test_compile();
  test_match();
  test_usable();
  test_refcount();
  test_threads();
  test_credentials_wiped();
  test_refusals();
  test_find_remap();
  test_no_allocation();
  return done_testing();
}

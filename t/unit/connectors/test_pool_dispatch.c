/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool connector (modules/pool) through the mock host, with fakes for
 * everything around it: a pool.view whose views the test compiles and
 * publishes (t/lib/cp_view_fixture.h), an outcome.sink that records, a
 * strategy "first" (the first candidate that takes it), and a connector
 * "fakes" whose dials the test answers with one end of a socketpair, the
 * other end playing the upstream HTTP CONNECT proxy. It checks the
 * reservation and capacity rules (CP-1-23), WAIT in order and its timeout
 * (CP-1-24), REJECT, DIRECT, a retry on another candidate after a failed
 * dial (nothing reached the target), the outcome of each stage (CP-5-2..5),
 * the counts a runtime report carries across a view swap, with a removed
 * proxy draining until its stream ends (CP-4-2, CP-4-3, CP-2-14),
 * revoke_proxy_ids (CP-4-7), an expired view (CP-3-9) and cancel. And
 * absolute-form forwarding through an `http` upstream (issue 13): a
 * request with PH_OPEN_F_HTTP_FORWARD gets the socket with no handshake,
 * PH_OPEN_R_HTTP_PROXY and the Basic value to add, which a fake forward
 * proxy reads in the absolute-form request; its outcomes skip
 * PROXY_HANDSHAKE (CP-5-2, CP-5-4, CP-5-5); without the flag, or to an
 * `http_connect` upstream, CONNECT as before. And the drain (issue 22
 * item 14): a leased stream through a revoked or removed proxy, or on a
 * view gone stale, is cut through the caller's cut (connector.h on_cut)
 * once drain_timeout passed, not at once; one whose proxy is back first
 * is not, nor one whose caller gave no cut. And the generation is built
 * with its view (CP-3-17, issue 23 item 13): prepared off the loop,
 * installed at the swap, never by the first request after it. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <proxyhost/connector.h>
#include <proxyhost/mock.h>
#include <proxyhost/open_upstream.h>
#include <proxyhost/module.h>
#include <proxyhost/outcome_sink.h>
#include <proxyhost/strategy.h>

#include "cp_view_fixture.h"
#include "contracts/pool_runtime.h"
#include "frontend/traffic_gate.h"
#include "mock_test.h"
#include "fake_connector.h"
#include "loop_test.h"
#include "tap.h"

extern const ph_module proxyhost_module; /* the pool */

static int64_t wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- fakes: pool.view, outcome.sink, connector ------------------------- */

static cp_view_slot slot;
#define MAXO 64
static ph_outcome outs[MAXO];
static char out_ids[MAXO][PH_OUTCOME_ID_MAX + 1];
static int n_outs;

static int sink_record(void *self, const ph_outcome *o) {
  (void)self;
  if (n_outs >= MAXO)
    return PH_EFULL;
  outs[n_outs] = *o;
  snprintf(out_ids[n_outs], sizeof out_ids[0], "%s", o->proxy_id);
  n_outs++;
  return PH_OK;
}
static const ph_outcome_sink_v1 sink_service = {sink_record};

/* The upstream connector: every dial waits for the test, which answers
 * it by its place in FC.log (dial_ok, dial_fail). */
static const fc_row dial_rows[] = {
    {.host = "*", .when = FC_NEVER, .give = FC_SOCKETPAIR}, {.host = NULL}};
static fake_connector FC;

static const ph_api *fapi;
static ph_ctx *fctx;
static const ph_connector_v1 *pool_c;
static void *pool_self;
static const pool_runtime_v1 *rt;
static void *rt_self;
static const traffic_gate_v1 *gate;
static void *gate_self;
static traffic_gate_watch gate_w;
static int gate_calls, gate_last = -1;
static void on_gate(void *arg, int open) {
  (void)arg;
  gate_calls++;
  gate_last = open;
}

static int fakes_init(ph_ctx *ctx, const ph_api *api, void **state) {
  fapi = api;
  fctx = ctx;
  *state = NULL;
  fake_connector_init(&FC, api, ctx, dial_rows);
  if (api->service_register(ctx, PH_POOL_VIEW_SERVICE, PH_POOL_VIEW_MAJOR,
                            PH_POOL_VIEW_MINOR, &cp_view_service, &slot) ||
      api->service_register(ctx, PH_OUTCOME_SINK_SERVICE,
                            PH_OUTCOME_SINK_MAJOR, PH_OUTCOME_SINK_MINOR,
                            &sink_service, NULL) ||
      api->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                            PH_CONNECTOR_MINOR, &fake_connector_vt, &FC))
    return PH_EINVAL;
  return PH_OK;
}
static const char *const fakes_provides[] = {
    PH_POOL_VIEW_SERVICE, PH_OUTCOME_SINK_SERVICE, PH_CONNECTOR_SERVICE, NULL};
static const ph_module fakes = {
    PH_MODULE_HEADER("fakes", "1.0.0"),
    .provides = fakes_provides,
    .init = fakes_init,
};

/* The strategy "first". */
static int attaches, detaches;
static void *first_attach(void *self, const ph_pool_view *v, const void *prev,
                          const ph_pool_view *pv, const uint32_t *map) {
  (void)self;
  (void)v;
  (void)prev;
  (void)pv;
  (void)map;
  attaches++;
  return &attaches; /* no state of its own */
}
static void first_detach(void *self, void *st) {
  (void)self;
  (void)st;
  detaches++;
}
static uint32_t first_pick(void *self, void *st, const ph_strategy_pick *in) {
  (void)self;
  (void)st;
  for (uint32_t i = 0; i < in->rule->n_candidates; i++)
    if (ph_strategy_takes(in, in->rule->candidates[i]))
      return in->rule->candidates[i];
  return PH_POOL_VIEW_NONE;
}
static const ph_strategy_v1 first_service = {first_attach, first_detach,
                                             first_pick};
static int first_init(ph_ctx *ctx, const ph_api *api, void **state) {
  *state = NULL;
  return api->service_register(ctx, PH_STRATEGY_SERVICE, PH_STRATEGY_MAJOR,
                               PH_STRATEGY_MINOR, &first_service, NULL);
}
MOCK_TEST_MODULE(first, "first", "1.0.0",
                 .provides = MOCK_TEST_NAMES(PH_STRATEGY_SERVICE),
                 .init = first_init);

/* A user of the pool: gets the connector and pool.runtime at start. */
static int user_start(void *state) {
  (void)state;
  pool_c = fapi->service_get_named(fctx, PH_CONNECTOR_SERVICE, "pool",
                                   PH_CONNECTOR_MAJOR, 3, &pool_self);
  rt = fapi->service_get_named(fctx, POOL_RUNTIME_SERVICE, "pool",
                               POOL_RUNTIME_MAJOR, 0, &rt_self);
  gate = fapi->service_get_named(fctx, TRAFFIC_GATE_SERVICE, "pool",
                                 TRAFFIC_GATE_MAJOR, 0, &gate_self);
  if (gate) {
    gate_w.changed = on_gate;
    gate->watch(gate_self, &gate_w);
  }
  return pool_c && rt ? PH_OK : PH_ENOENT;
}
static int user_init(ph_ctx *ctx, const ph_api *api, void **state) {
  (void)ctx;
  (void)api;
  *state = NULL;
  return PH_OK;
}
MOCK_TEST_MODULE(user, "user", "1.0.0",
                 .requires = MOCK_TEST_NAMES(POOL_RUNTIME_SERVICE),
                 .init = user_init, .start = user_start);

/* ---- the requests ------------------------------------------------------ */

typedef struct req {
  int done;
  ph_open_result res;
  int64_t id;
  char hop[PH_OPEN_UPSTREAM_ID_MAX + 1]; /* open_upstream.h, copied */
} req;
#define MAXR 16
static req reqs[MAXR];

static void on_open(void *arg, const ph_open_result *r) {
  req *q = arg;
  q->done++;
  q->res = *r;
  const char *hop = ph_open_result_upstream(r); /* valid in the callback */
  snprintf(q->hop, sizeof(q->hop), "%s", hop ? hop : "");
}

static ph_mock *mk;

/* Request r of a caller at port 80, listener http_proxy, into reqs[i]. */
static req *open_as(int i, ph_open_request *r) {
  req *q = &reqs[i];
  memset(q, 0, sizeof(*q));
  q->res.fd = -1;
  r->protocol = PH_PROTO_TCP;
  r->port = 80;
  r->listener = "http_proxy";
  q->id = pool_c->open(pool_self, r, on_open, q);
  return q;
}

static req *open_flags(int i, const char *host, uintptr_t flags) {
  ph_open_request r = {.size = sizeof(r), .host = host, .flags = flags};
  return open_as(i, &r);
}

static req *open_req(int i, const char *host, int lease) {
  return open_flags(i, host, lease ? PH_OPEN_F_LEASE : 0);
}

/* Answers dial d with a socketpair; returns the proxy's end. */
static int dial_ok(int d) {
  if (fake_connector_answer(&FC, d + 1, PH_OPEN_OK) != PH_OK)
    return -1;
  return fake_connector_peer(&FC);
}

/* The test's forward proxy on ph accepts the CONNECT; the loop runs on. */
static int says_established(int ph) {
  const char *est = "HTTP/1.1 200 Connection established\r\n\r\n";
  int sent = ph >= 0 && write(ph, est, strlen(est)) > 0;
  ph_mock_run_for(mk, 5);
  return sent;
}

/* q was answered with a tunnel: OK, no HTTP proxy flag, no forwarding. */
static int tunnel_given(const req *q) {
  return q->done && q->res.code == PH_OPEN_OK &&
         !(q->res.flags & PH_OPEN_R_HTTP_PROXY) && !q->res.http_forward;
}

static void dial_fail(int d, int code) {
  fake_connector_answer(&FC, d + 1, code);
}

/* The upstream's side: reads the CONNECT, answers 200. 1 when the
 * request was for host:80. */
static int proxy_accept(int fd, const char *host) {
  char buf[1024];
  ph_mock_run_for(mk, 5);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  char want[300];
  snprintf(want, sizeof want, "CONNECT %s:80 HTTP/1.1\r\n", host);
  int good = strncmp(buf, want, strlen(want)) == 0;
  const char *ans = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (write(fd, ans, strlen(ans)) < 0)
    return 0;
  ph_mock_run_for(mk, 5);
  return good;
}

typedef struct counts {
  uint32_t active, reserved;
  int draining, found;
} counts;

static counts count_of(const char *id, uint32_t *total) {
  pool_runtime_counter c[16];
  counts k = {0};
  int wd = 0;
  uint32_t n = rt->counters(rt_self, c, 16, &wd);
  if (total)
    *total = n;
  for (uint32_t i = 0; i < n && i < 16; i++)
    if (strcmp(c[i].proxy_id, id) == 0) {
      k.active = c[i].active;
      k.reserved = c[i].reserved;
      k.draining = c[i].draining;
      k.found = 1;
    }
  return k;
}

static int last_outcome(const char *id, int stage, int result) {
  return n_outs > 0 && strcmp(out_ids[n_outs - 1], id) == 0 &&
         outs[n_outs - 1].stage == stage && outs[n_outs - 1].result == result;
}

/* The view: a and b (capacity 1 each) in group g; rules by host. */
static ph_pool_view *view_make(int with_b, int64_t valid_ms) {
  fixture f;
  fx_init(&f);
  T0 = wall_now();
  ts_set(&f.gen, T0);
  ts_set(&f.vu, T0 + valid_ms);
  static const char *hosts[] = {"wait.test", "rej.test", "direct.test",
                                "*"};
  static const char *ids[] = {"w", "r", "d", "any"};
  static const int how[] = {
      CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT,
      CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT,
      CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_DIRECT,
      CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT};
  for (int i = 0; i < 4; i++) {
    Controlplane__V1__RoutingRule *r =
        fx_rule(&f, ids[i], hosts[i], 0, 0, NULL, NULL, i == 2 ? "none" : "g");
    r->strategy = "first";
    r->on_unavailable = how[i];
    if (i == 0) {
      f.wait[0].seconds = 0;
      f.wait[0].nanos = 300 * 1000000;
      r->wait_timeout = &f.wait[0];
    }
  }
  const char *names[] = {"a", "b"};
  for (int i = 0; i < (with_b ? 2 : 1); i++) {
    Controlplane__V1__OwnedProxy *p = fx_proxy(&f, names[i], "g", NULL, NULL);
    p->protocol =
        CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP_CONNECT;
    p->capacity = 1;
    ts_set(&f.uu[i], T0 + valid_ms);
    ts_set(&f.exp[i], T0 + valid_ms + 1000);
  }
  ph_pool_view *v = compile(&f, T0, 600000);
  if (!v)
    printf("# the view did not compile\n");
  return v;
}

static void view(int with_b, int64_t valid_ms) {
  cp_view_publish(&slot, view_make(with_b, valid_ms));
}

/* ---- the generation is built with its view (CP-3-17, issue 23 item 13) */

typedef struct prep {
  const ph_pool_view *v, *base;
  void *prepared;
} prep;

static void *prep_thread(void *arg) {
  prep *pr = arg;
  pr->prepared = cp_view_prepare(&slot, pr->v, pr->base);
  return NULL;
}

/* As controlplane_client does: compile, let the pool prepare in another
 * thread (its build job) against the current view, publish on the loop.
 * The strategy's state is there right after the swap, and the first
 * request after it builds nothing (no attach in the request). */
static void test_built_with_view(void) {
  prep pr = {view_make(1, 60000), cp_view_acquire(&slot), NULL};
  pthread_t th;
  ok(pr.v && pthread_create(&th, NULL, prep_thread, &pr) == 0 &&
         pthread_join(th, NULL) == 0 && pr.prepared,
     "CP-3-17 issue 23 item 13: the pool prepares the view's generation "
     "off the loop (another thread)");
  int a0 = attaches;
  cp_view_publish_prepared(&slot, (ph_pool_view *)pr.v, pr.prepared);
  cp_view_release(pr.base);
  is_int(attaches, a0 + 1,
         "CP-3-17 ... installed with the swap, before any request");
  req *q = open_req(0, "rej.test", 1);
  is_int(attaches, a0 + 1,
         "CP-3-17 ... the first request after the swap builds nothing");
  ok(q->id > 0 && FC.log[FC.n_log - 1].port == 1080,
     "... and picks from the new view");
  for (int k = 0; k < 4 && !q->done; k++) { /* a, then b (max_attempts) */
    if (!FC.log[FC.n_log - 1].answered)
      dial_fail(FC.n_log - 1, PH_OPEN_CONNECTION_REFUSED);
    ph_mock_run_for(mk, 5);
  }
  ok(q->done, "... and is answered");
  /* A view published with nothing prepared (no build job): installed at
   * the swap too, on the loop. */
  a0 = attaches;
  view(1, 60000);
  is_int(attaches, a0 + 1,
         "CP-3-17 a view published with nothing prepared: installed at the "
         "swap");
  /* Prepared against a view that is no longer current: not used, built
   * again at the swap against the right one. */
  prep stale = {view_make(1, 60000), NULL, NULL};
  stale.prepared = cp_view_prepare(&slot, stale.v, NULL);
  a0 = attaches;
  cp_view_publish_prepared(&slot, (ph_pool_view *)stale.v, stale.prepared);
  is_int(attaches, a0 + 1, "... and one prepared against another base");
  ok(count_of("a", NULL).found == 0 && count_of("b", NULL).found == 0,
     "... with the counts carried (none left over)");
}

/* ---- the controller's health (CP-6-7, pool.view minor 2) ---------------- */

/* Proxies h1 UNHEALTHY, h2 SUSPECT and h3 without a verdict (capacity 1,
 * ports 1080..1082), the candidates of one REJECT rule for health.test in
 * that order; the strategy "first" takes the first that takes it. */
static void test_health(void) {
  fixture f;
  fx_init(&f);
  T0 = wall_now();
  ts_set(&f.gen, T0);
  ts_set(&f.vu, T0 + 60000);
  fx_rule(&f, "h", "health.test", 0, 0, NULL, NULL, "hg")->strategy = "first";
  static const char *ids[] = {"h1", "h2", "h3"};
  static const int hs[] = {
      CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY,
      CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_SUSPECT,
      CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNSPECIFIED};
  for (int i = 0; i < 3; i++) {
    Controlplane__V1__OwnedProxy *p = fx_proxy(&f, ids[i], "hg", NULL, NULL);
    p->protocol =
        CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP_CONNECT;
    p->capacity = 1;
    p->health = hs[i];
    ts_set(&f.uu[i], T0 + 60000);
    ts_set(&f.exp[i], T0 + 61000);
  }
  ph_pool_view *v = compile(&f, T0, 600000);
  ok(v && v->health && v->health[0] == PH_POOL_HEALTH_UNHEALTHY &&
         v->health[1] == PH_POOL_HEALTH_SUSPECT &&
         v->health[2] == PH_POOL_HEALTH_NONE,
     "CP-6-7 the view carries each proxy's health (pool.view minor 2)");
  cp_view_publish(&slot, v);
  ph_mock_run_for(mk, 5);

  int nd = FC.n_log;
  req *q1 = open_req(13, "health.test", 1);
  ok(FC.n_log == nd + 1 && FC.log[nd].port == 1082,
     "CP-6-7 neither the UNHEALTHY h1 nor the SUSPECT h2 while h3 (no "
     "verdict: like AVAILABLE) can take it");
  int p3 = dial_ok(nd);
  ok(proxy_accept(p3, "health.test") && tunnel_given(q1), "... through h3");
  req *q2 = open_req(14, "health.test", 1);
  ok(FC.n_log == nd + 2 && FC.log[nd + 1].port == 1081,
     "CP-6-7 h3 full: the SUSPECT h2, since nothing else is left");
  int p2 = dial_ok(nd + 1);
  ok(proxy_accept(p2, "health.test") && tunnel_given(q2), "... through h2");
  req *q3 = open_req(15, "health.test", 1);
  ph_mock_run_for(mk, 5);
  ok(q3->done && q3->res.code == PH_OPEN_QUEUE_FULL && FC.n_log == nd + 2,
     "CP-6-7 never the UNHEALTHY h1, even with nothing else left "
     "(REJECT: queue_full, nothing dialed)");
  for (int i = 0; i < 2; i++) {
    req *q = i ? q2 : q1;
    close(q->res.fd);
    ph_open_lease_end(q->res.lease, PH_LEASE_END_CLOSED);
  }
  close(p3);
  close(p2);
  ph_mock_run_for(mk, 5);
}

/* ---- absolute-form forwarding through an `http` upstream -------------- */

#define FWD (PH_OPEN_F_LEASE | PH_OPEN_F_HTTP_FORWARD)
/* base64("fwd-user:fwd-Pass-9"), computed outside the code under test. */
#define FWD_BASIC "Basic ZndkLXVzZXI6ZndkLVBhc3MtOQ=="

/* Proxies h (http, credentials), n (http, none), c (http_connect,
 * credentials) and k (http, a user name Basic cannot carry), capacity 2,
 * each the only candidate of its rule. */
static void view_forward(void) {
  fixture f;
  fx_init(&f);
  T0 = wall_now();
  ts_set(&f.gen, T0);
  ts_set(&f.vu, T0 + 60000);
  static const char *hosts[] = {"fwd.test", "nocred.test", "conn.test",
                                "colon.test"};
  static const char *ids[] = {"h", "n", "c", "k"};
  static const char *refs[] = {"cred-h", NULL, "cred-c", "cred-k"};
  static const int protos[] = {
      CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP,
      CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP,
      CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP_CONNECT,
      CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP};
  for (int i = 0; i < 4; i++) {
    Controlplane__V1__RoutingRule *r =
        fx_rule(&f, ids[i], hosts[i], 0, 0, NULL, NULL, ids[i]);
    r->strategy = "first";
    Controlplane__V1__OwnedProxy *p = fx_proxy(&f, ids[i], ids[i], NULL,
                                               refs[i]);
    p->protocol = protos[i];
    p->capacity = 2;
    ts_set(&f.uu[i], T0 + 60000);
    ts_set(&f.exp[i], T0 + 61000);
  }
  fx_cred(&f, "cred-h", 1, "fwd-user", "fwd-Pass-9");
  fx_cred(&f, "cred-c", 1, "cc", "cc-pw");
  fx_cred(&f, "cred-k", 1, "a:b", "pw");
  ph_pool_view *v = compile(&f, T0, 600000);
  if (!v)
    printf("# the forwarding view did not compile\n");
  cp_view_publish(&slot, v);
}

/* Whether fd has nothing to read now (the proxy was sent nothing). */
static int nothing_sent(int fd) {
  char c;
  ph_mock_run_for(mk, 5);
  return recv(fd, &c, 1, MSG_DONTWAIT) < 0;
}

/* Reads what the caller sent into buf (NUL-terminated). */
static ssize_t proxy_read(int fd, char *buf, size_t cap) {
  ph_mock_run_for(mk, 5);
  ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT);
  buf[n > 0 ? n : 0] = '\0';
  return n;
}

static int starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* An open of host that the pool sends through a CONNECT carrying the
 * Proxy-Authorization value auth (the TAP line connected); the test's
 * proxy says 200: a tunnel (the line tunnel), its lease ended end. */
static void connect_tunnel(const char *host, uintptr_t flags,
                           const char *auth, const char *connected,
                           const char *tunnel, int end) {
  char buf[2048], line[128], field[128];
  int nd = FC.n_log;
  req *q = open_flags(12, host, flags);
  int ph = dial_ok(nd);
  proxy_read(ph, buf, sizeof buf);
  snprintf(line, sizeof(line), "CONNECT %s:80 HTTP/1.1\r\n", host);
  snprintf(field, sizeof(field), "Proxy-Authorization: %s\r\n", auth);
  ok(starts(buf, line) && strstr(buf, field), connected);
  ok(says_established(ph), "(the proxy says 200)");
  ok(tunnel_given(q), tunnel);
  close(q->res.fd);
  ph_open_lease_end(q->res.lease, end);
  close(ph);
}

/* The pool closed its end without sending a byte: EOF at once. */
static int closed_by_us(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

static int any_outcome(const char *id, int stage) {
  for (int i = 0; i < n_outs; i++)
    if (strcmp(out_ids[i], id) == 0 && outs[i].stage == stage)
      return 1;
  return 0;
}

static int header_is(const ph_open_result *r, const char *want) {
  const ph_open_http_forward *f = r->http_forward;
  if (!f || f->size != sizeof(*f))
    return 0;
  if (!want)
    return !f->proxy_authorization && f->proxy_authorization_len == 0;
  return f->proxy_authorization &&
         f->proxy_authorization_len == strlen(want) &&
         strcmp(f->proxy_authorization, want) == 0;
}

static void test_forward(void) {
  view_forward();
  ph_mock_run_for(mk, 5);
  char buf[2048];

  /* h (http) and a forwarding caller: dial, no handshake. */
  int nd = FC.n_log, no = n_outs;
  req *q = open_flags(12, "fwd.test", FWD);
  ok(FC.n_log == nd + 1 && FC.log[nd].port == 1080,
     "forward: the pick dials the http upstream h");
  int ph = dial_ok(nd);
  ok(q->done == 1 && q->res.code == PH_OPEN_OK && q->res.fd >= 0 &&
         q->res.lease,
     "forward: the socket and a lease as soon as the dial succeeded");
  ok(q->res.flags & PH_OPEN_R_HTTP_PROXY,
     "forward: the result says the socket goes to an HTTP proxy");
  ok(header_is(&q->res, FWD_BASIC),
     "forward: the Proxy-Authorization to add is Basic of the view's "
     "credentials");
  ok(nothing_sent(ph), "forward: nothing was sent to the proxy (no CONNECT)");
  ok(n_outs == no, "forward: no outcome yet (no PROXY_HANDSHAKE stage)");
  counts kh = count_of("h", NULL);
  ok(kh.active == 1 && kh.reserved == 0, "forward: h counts one active stream");
  /* The caller's request, as http_proxy sends it. */
  snprintf(buf, sizeof buf,
           "GET http://fwd.test/x HTTP/1.1\r\nHost: fwd.test\r\n"
           "Proxy-Authorization: %s\r\n\r\n",
           q->res.http_forward->proxy_authorization);
  ok(write(q->res.fd, buf, strlen(buf)) == (ssize_t)strlen(buf),
     "forward: the caller writes its request");
  proxy_read(ph, buf, sizeof buf);
  ok(starts(buf, "GET http://fwd.test/x HTTP/1.1\r\n"),
     "forward: the fake proxy reads the request in absolute form");
  ok(strstr(buf, "\r\nProxy-Authorization: " FWD_BASIC "\r\n") != NULL,
     "forward: ... with Basic base64(fwd-user:fwd-Pass-9)");
  const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  ok(write(ph, resp, strlen(resp)) > 0, "forward: the proxy answers");
  ph_mock_run_for(mk, 5);
  ok(read(q->res.fd, buf, sizeof buf) > 0, "forward: the caller reads it");
  ph_open_lease_first_byte(q->res.lease);
  close(q->res.fd);
  ph_open_lease_end(q->res.lease, PH_LEASE_END_CLOSED);
  ok(last_outcome("h", PH_OUTCOME_STAGE_TUNNEL, PH_OUTCOME_SUCCESS),
     "CP-5-5 forward: the stream's end: TUNNEL SUCCESS for h");
  ok(!any_outcome("h", PH_OUTCOME_STAGE_PROXY_HANDSHAKE),
     "forward: never a PROXY_HANDSHAKE outcome");
  ok(!count_of("h", NULL).found, "forward: h's capacity is free again");
  close(ph);

  /* The proxy answers 407 to a forwarded request: the caller (http_proxy)
   * ends the lease TARGET_ERROR with no byte to the client. */
  nd = FC.n_log;
  q = open_flags(12, "fwd.test", FWD);
  ph = dial_ok(nd);
  ok(q->done && q->res.code == PH_OPEN_OK, "forward: a second stream");
  close(q->res.fd);
  ph_open_lease_end(q->res.lease, PH_LEASE_END_TARGET_ERROR);
  ok(last_outcome("h", PH_OUTCOME_STAGE_RESPONSE_HEADERS, PH_OUTCOME_FAILURE),
     "CP-5-4 forward: ended before the first response byte (a 407): "
     "RESPONSE_HEADERS FAILURE");
  close(ph);

  /* h without the flag (socks5, CONNECT): a CONNECT tunnel as before. */
  connect_tunnel("fwd.test", PH_OPEN_F_LEASE, FWD_BASIC,
                 "CP-5-3 an http upstream without PH_OPEN_F_HTTP_FORWARD: "
                 "CONNECT with Basic",
                 "... a tunnel: no PH_OPEN_R_HTTP_PROXY, no header",
                 PH_LEASE_END_CLIENT_ERROR);

  /* An http_connect upstream and a forwarding caller: CONNECT. */
  connect_tunnel("conn.test", FWD, "Basic Y2M6Y2MtcHc=",
                 "an http_connect upstream, a forwarding caller: CONNECT all "
                 "the same",
                 "... the caller gets a tunnel (origin-form requests)",
                 PH_LEASE_END_CLOSED);

  /* An http upstream without credentials: the flag, no header. */
  nd = FC.n_log;
  q = open_flags(12, "nocred.test", FWD);
  ph = dial_ok(nd);
  ok(q->done && q->res.code == PH_OPEN_OK &&
         (q->res.flags & PH_OPEN_R_HTTP_PROXY) && header_is(&q->res, NULL),
     "forward: an http upstream without credentials: no Proxy-Authorization");
  ok(nothing_sent(ph), "... and nothing sent");
  close(q->res.fd);
  ph_open_lease_end(q->res.lease, PH_LEASE_END_CLOSED);
  close(ph);

  /* Credentials Basic cannot carry (RFC 7617: no ':' in the user name):
   * refused before anything is sent, as the CONNECT would be. */
  nd = FC.n_log;
  no = n_outs;
  q = open_flags(12, "colon.test", FWD);
  ph = dial_ok(nd);
  ph_mock_run_for(mk, 5);
  ok(n_outs == no + 1 &&
         last_outcome("k", PH_OUTCOME_STAGE_PROXY_HANDSHAKE,
                      PH_OUTCOME_FAILURE),
     "forward: a user name with ':': one PROXY_HANDSHAKE FAILURE");
  ok(q->done && q->res.code == PH_OPEN_INTERNAL_ERROR &&
         q->res.stage == PH_STAGE_RELAY,
     "... the only candidate: the request fails (ours to fix)");
  ok(closed_by_us(ph), "... the proxy was sent nothing and hung up on");
  ok(!count_of("k", NULL).found, "... no reservation left behind");
  close(ph);
}

/* ---- the same through the extensions (connector 1.5, open_ext.h) ------- */

/* A request that asks by the extensions only (lease, and forwarding when
 * fwd), with no old flag. */
static req *open_ext(int i, const char *host, int fwd) {
  ph_open_request r = {.size = sizeof(r), .host = host};
  static ph_open_lease_ask la;
  static ph_open_http_forward_ask fa;
  ph_open_ext_push(&r.ext, &la.ext, PH_OPEN_EXT_LEASE_ASK, sizeof(la));
  if (fwd)
    ph_open_ext_push(&r.ext, &fa.ext, PH_OPEN_EXT_HTTP_FORWARD_ASK,
                     sizeof(fa));
  return open_as(i, &r);
}

static const ph_open_lease_res *res_lease_x(const ph_open_result *r) {
  return (const ph_open_lease_res *)ph_open_ext_find(
      ph_open_result_ext(r), PH_OPEN_EXT_LEASE, sizeof(ph_open_lease_res));
}

static const ph_open_http_forward_res *res_fwd_x(const ph_open_result *r) {
  return (const ph_open_http_forward_res *)ph_open_ext_find(
      ph_open_result_ext(r), PH_OPEN_EXT_HTTP_FORWARD,
      sizeof(ph_open_http_forward_res));
}

static void test_forward_ext(void) {
  char buf[2048];
  /* h (http) and a caller that asks by the extensions: the socket, the
   * lease and the value in the result's chain, none of the old fields. */
  int nd = FC.n_log;
  req *q = open_ext(12, "fwd.test", 1);
  int ph = FC.n_log > nd ? dial_ok(nd) : -1;
  const ph_open_lease_res *lx = res_lease_x(&q->res);
  const ph_open_http_forward_res *fx = res_fwd_x(&q->res);
  ok(q->done == 1 && q->res.code == PH_OPEN_OK && q->res.fd >= 0 && lx &&
         lx->lease,
     "ext: a caller asking by the extension gets its lease in the chain");
  ok(fx && fx->proxy_authorization &&
         fx->proxy_authorization_len == strlen(FWD_BASIC) &&
         strcmp(fx->proxy_authorization, FWD_BASIC) == 0,
     "ext: ... and the forwarding extension with Basic of the view's "
     "credentials");
  ok(!q->res.lease && !q->res.http_forward &&
         !(q->res.flags & PH_OPEN_R_HTTP_PROXY),
     "ext: ... and none of the old fields (it did not ask by the old flags)");
  ok(ph >= 0 && nothing_sent(ph), "ext: nothing was sent to the proxy (no CONNECT)");
  ph_open_lease *l = lx ? lx->lease : NULL;
  ph_open_lease_first_byte(l);
  if (q->res.fd >= 0)
    close(q->res.fd);
  ph_open_lease_end(l, PH_LEASE_END_CLOSED);
  ok(last_outcome("h", PH_OUTCOME_STAGE_TUNNEL, PH_OUTCOME_SUCCESS) &&
         !count_of("h", NULL).found,
     "ext: its end: TUNNEL SUCCESS for h, the capacity free again");
  if (ph >= 0)
    close(ph);

  /* The lease alone (socks5's ask): a CONNECT tunnel, the lease in the
   * chain, no forwarding. */
  nd = FC.n_log;
  q = open_ext(12, "fwd.test", 0);
  ph = FC.n_log > nd ? dial_ok(nd) : -1;
  buf[0] = '\0';
  if (ph >= 0)
    proxy_read(ph, buf, sizeof buf);
  ok(starts(buf, "CONNECT fwd.test:80 HTTP/1.1\r\n") && says_established(ph),
     "ext: the lease alone: CONNECT");
  lx = res_lease_x(&q->res);
  ok(q->done && q->res.code == PH_OPEN_OK && lx && lx->lease &&
         !res_fwd_x(&q->res) && !q->res.lease,
     "ext: ... a tunnel with the lease in the chain, no forwarding");
  if (q->res.fd >= 0)
    close(q->res.fd);
  ph_open_lease_end(lx ? lx->lease : NULL, PH_LEASE_END_CLOSED);
  if (ph >= 0)
    close(ph);

  /* A caller built against SDK 1.6 (its request ends before ext, which
   * the pool must not read: here it is garbage) asking by the old flags:
   * served by the old fields. */
  nd = FC.n_log;
  ph_open_request old = {.size = offsetof(ph_open_request, ext),
                         .host = "fwd.test",
                         .flags = FWD,
                         .ext = (const ph_open_ext *)(uintptr_t)1};
  q = open_as(12, &old);
  ph = FC.n_log > nd ? dial_ok(nd) : -1;
  ok(q->done && q->res.code == PH_OPEN_OK && q->res.lease &&
         (q->res.flags & PH_OPEN_R_HTTP_PROXY) && header_is(&q->res, FWD_BASIC),
     "ext: a 1.6 caller's request (shorter, old flags): the old lease, flag "
     "and http_forward");
  ok(!res_lease_x(&q->res) && !res_fwd_x(&q->res),
     "ext: ... and no extension it would not read");
  if (q->res.fd >= 0)
    close(q->res.fd);
  ph_open_lease_end(q->res.lease, PH_LEASE_END_CLOSED);
  if (ph >= 0)
    close(ph);
}

/* ---- the drain (issue 22 item 14) --------------------------------------- */

static int cuts;

/* What a frontend does when the pool cuts its stream: closes it and ends
 * the lease (CLIENT_ERROR). */
static void test_cut(void *arg) {
  req *q = arg;
  cuts++;
  close(q->res.fd);
  q->res.fd = -1;
  ph_open_lease_end(q->res.lease, PH_LEASE_END_CLIENT_ERROR);
  q->res.lease = NULL;
}

/* Request i through the first free proxy, leased; with cut, the caller
 * gives its cut. Returns the proxy's end of the socket, or -1. */
static int leased(int i, int cut) {
  int nd = FC.n_log;
  req *q = open_req(i, "any.test", 1);
  if (FC.n_log != nd + 1)
    return -1;
  int pfd = dial_ok(nd);
  if (!proxy_accept(pfd, "any.test") || !q->done || !q->res.lease)
    return -1;
  if (cut && !ph_open_lease_on_cut(q->res.lease, test_cut, q))
    return -1;
  return pfd;
}


static void test_drain(void) {
  const char *ids[] = {"a"};
  view(1, 60000);
  int pa = leased(12, 1);
  ok(pa >= 0 && FC.log[FC.n_log - 1].port == 1080,
     "drain: a stream through a, the caller gives its cut");
  rt->revoke(rt_self, ids, 1);
  ph_mock_run_for(mk, 5);
  is_int(cuts, 0, "CP-4-7 a revoked: its stream is not cut at once (the drain)");
  poll_until(ph_mock_loop(mk), cuts > 0, 3000);
  ok(cuts == 1 && reqs[12].res.lease == NULL,
     "issue 22 item 14: after drain_timeout the pool cuts it, once");
  ok(last_outcome("a", PH_OUTCOME_STAGE_TUNNEL, PH_OUTCOME_SUCCESS),
     "... an outcome that says nothing against the proxy");
  counts k = count_of("a", NULL);
  ok(k.active == 0 && k.reserved == 0, "CP-4-4 ... a carries nothing now");
  close(pa);

  /* b leaves the view and comes back before its cut: not cut. */
  cuts = 0;
  view(1, 60000);
  pa = leased(12, 1);
  int pb = leased(13, 1);
  ok(pa >= 0 && pb >= 0 && FC.log[FC.n_log - 1].port == 1081,
     "drain: streams through a and b");
  view(0, 60000);
  ok(count_of("b", NULL).draining, "b left the view: it drains");
  view(1, 60000);
  ok(!count_of("b", NULL).draining, "... and is back before its cut");
  ph_mock_run_for(mk, 500);
  is_int(cuts, 0, "... so its stream is not cut, nor a's");

  /* A caller that gave no cut: its stream stays (nothing to cut with). */
  close(reqs[13].res.fd);
  ph_open_lease_end(reqs[13].res.lease, PH_LEASE_END_CLOSED);
  close(pb);
  pb = leased(13, 0);
  ok(pb >= 0, "drain: a stream through b whose caller gave no cut");
  view(0, 60000);
  count_of("b", NULL); /* installs the view */
  ph_mock_run_for(mk, 500);
  is_int(cuts, 0, "... b removed: that one is not cut, nor a's");
  ok(count_of("b", NULL).active == 1, "... b still carries it");
  close(reqs[13].res.fd);
  ph_open_lease_end(reqs[13].res.lease, PH_LEASE_END_CLOSED);
  close(pb);

  /* A handshake under way when a is revoked: the stream it becomes is
   * cut after the drain too. */
  close(reqs[12].res.fd);
  ph_open_lease_end(reqs[12].res.lease, PH_LEASE_END_CLOSED);
  close(pa);
  view(1, 60000);
  cuts = 0;
  int nd = FC.n_log;
  req *q = open_req(14, "any.test", 1);
  pa = FC.n_log == nd + 1 ? dial_ok(nd) : -1;
  rt->revoke(rt_self, ids, 1); /* a carries no stream yet */
  ok(pa >= 0 && proxy_accept(pa, "any.test") && q->done && q->res.lease &&
         ph_open_lease_on_cut(q->res.lease, test_cut, q),
     "drain: a handshake under way when a is revoked still leases");
  poll_until(ph_mock_loop(mk), cuts > 0, 3000);
  ok(cuts == 1 && q->res.lease == NULL,
     "... and that stream is cut after the drain");
  close(pa);
  cuts = 0;
  pa = leased(12, 1);

  /* The view goes stale (its valid_until here, CP-3-9, CP-3-18): a's
   * stream is cut after the drain. */
  view(1, 150);
  count_of("a", NULL);
  poll_until(ph_mock_loop(mk), cuts > 0, 3000);
  ok(cuts == 1 && reqs[12].res.lease == NULL,
     "CP-3-18 the view past its validity: a's stream is cut after the drain");
  close(pa);
}

int main(void) {
  plan_lazy();
  signal(SIGPIPE, SIG_IGN);
  char err[1024];
  cp_view_slot_init(&slot);
  mk = ph_mock_new("[pool]\nview = fakes\nupstream_connector = fakes\n"
                   "direct_connector = fakes\nstrategies = first\n"
                   "max_waiters = 2\nmax_attempts = 2\n"
                   "drain_timeout = 200ms\n",
                   err, sizeof err);
  if (!mk || ph_mock_add(mk, &fakes, err, sizeof err) < 0 ||
      ph_mock_add(mk, &first, err, sizeof err) < 0 ||
      ph_mock_add(mk, &proxyhost_module, err, sizeof err) < 0 ||
      ph_mock_add(mk, &user, err, sizeof err) < 0 ||
      ph_mock_init(mk, err, sizeof err) < 0 ||
      ph_mock_start(mk, err, sizeof err) < 0) {
    printf("Bail out! %s\n", err);
    return 1;
  }

  /* No view: no candidates (CP-3-9). */
  req *q = open_req(0, "x.test", 1);
  ok(q->id > 0, "open is accepted");
  is_int(q->done, 0, "the answer never comes inside open()");
  ph_mock_run_for(mk, 5);
  ok(q->done == 1 && q->res.stage == PH_STAGE_SELECTION &&
         q->res.code == PH_OPEN_AGENT_OFFLINE,
     "CP-3-9 no view: selection / agent_offline (no candidates)");

  view(1, 60000);
  q = open_req(0, "x.test", 0);
  ph_mock_run_for(mk, 5);
  ok(q->done && q->res.code == PH_OPEN_UNSUPPORTED_CAPABILITY,
     "a caller without PH_OPEN_F_LEASE: unsupported_capability");

  /* r0 takes a, r1 takes b (capacity 1 each). */
  int n0 = FC.n_log;
  req *r0 = open_req(0, "wait.test", 1);
  is_int(FC.n_log, n0 + 1, "the pick dials the proxy through the upstream connector");
  is_int(FC.log[n0].port, 1080, "... proxy a's address");
  ok(count_of("a", NULL).reserved == 1, "CP-2-14 a: one reservation while it dials");
  int pa = dial_ok(n0);
  ok(proxy_accept(pa, "wait.test"), "CP-5-3 the handshake asks proxy a for CONNECT wait.test:80");
  ok(r0->done && r0->res.code == PH_OPEN_OK && r0->res.fd >= 0 && r0->res.lease,
     "the request gets the socket and a lease");
  is_str(r0->hop, "a", "issue 28: the result names the proxy it went through "
                       "(open_upstream.h)");
  counts ka = count_of("a", NULL);
  ok(ka.active == 1 && ka.reserved == 0, "a: the reservation became active");
  is_int(n_outs, 0, "no outcome before the stream ends");
  req *r1 = open_req(1, "wait.test", 1);
  int pb = dial_ok(FC.n_log - 1);
  ok(proxy_accept(pb, "wait.test") && r1->done && r1->res.code == PH_OPEN_OK,
     "CP-1-23 a full: the next request goes to b");

  /* Both full: WAIT queues in order; the third waiter is refused. */
  req *r2 = open_req(2, "wait.test", 1);
  req *r3 = open_req(3, "wait.test", 1);
  req *r4 = open_req(4, "wait.test", 1);
  ph_mock_run_for(mk, 5);
  ok(!r2->done && !r3->done, "CP-1-24 both full: two requests wait");
  ok(r4->done && r4->res.code == PH_OPEN_QUEUE_FULL,
     "a full wait queue answers queue_full at once");
  req *rj = open_req(5, "rej.test", 1);
  ph_mock_run_for(mk, 5);
  ok(rj->done && rj->res.stage == PH_STAGE_SELECTION &&
         rj->res.code == PH_OPEN_QUEUE_FULL,
     "REJECT with no free capacity: queue_full");
  is_str(rj->hop, "", "... naming no proxy (none was picked)");
  req *rd = open_req(6, "direct.test", 1);
  ok(FC.n_log > 0 && strcmp(FC.log[FC.n_log - 1].host, "direct.test") == 0,
     "CP-1-25 DIRECT: the direct connector dials the target itself");
  int pd = dial_ok(FC.n_log - 1);
  ph_mock_run_for(mk, 5);
  ok(rd->done && rd->res.code == PH_OPEN_OK && !rd->res.lease,
     "... its answer is passed on (no lease)");
  is_str(rd->hop, "", "... naming no proxy");
  close(rd->res.fd);
  close(pd);

  /* The first stream ends: the first waiter gets a. */
  int nd = FC.n_log;
  ph_open_lease_first_byte(r0->res.lease);
  close(r0->res.fd);
  ph_open_lease_end(r0->res.lease, PH_LEASE_END_CLOSED);
  ok(last_outcome("a", PH_OUTCOME_STAGE_TUNNEL, PH_OUTCOME_SUCCESS),
     "CP-5-5 the stream's end: TUNNEL SUCCESS for a");
  ok(FC.n_log == nd + 1 && !r3->done, "CP-1-24 the freed capacity goes to the first waiter, in order");
  close(pa);
  pa = dial_ok(FC.n_log - 1);
  ok(proxy_accept(pa, "wait.test") && r2->done && r2->res.code == PH_OPEN_OK,
     "... which gets a");

  /* A new view without b while b carries r1: b drains (CP-4-2, CP-4-3). */
  view(0, 60000);
  ph_mock_run_for(mk, 5);
  uint32_t total = 0;
  counts kb = count_of("b", &total);
  ok(kb.found && kb.active == 1 && kb.draining,
     "CP-4-3 b left the view: still reported, active 1, draining");
  ok(count_of("a", NULL).active == 1, "CP-2-14 a's count followed the swap");
  ok(attaches >= 2, "the strategy attached to the new view");
  close(r1->res.fd);
  ph_open_lease_end(r1->res.lease, PH_LEASE_END_TARGET_ERROR);
  ok(last_outcome("b", PH_OUTCOME_STAGE_RESPONSE_HEADERS, PH_OUTCOME_FAILURE),
     "CP-5-4 an error before the target's first byte: RESPONSE_HEADERS FAILURE");
  ok(!count_of("b", NULL).found, "CP-4-4 b's drain is over: no longer reported");
  ph_mock_run_for(mk, 400);
  ok(r3->done && r3->res.stage == PH_STAGE_QUEUE && r3->res.code == PH_OPEN_TIMEOUT,
     "CP-1-24 the waiter b's end could not serve times out: queue / timeout");

  /* A failed dial: the next candidate (nothing reached the target). */
  view(1, 60000);
  close(r2->res.fd);
  ph_open_lease_end(r2->res.lease, PH_LEASE_END_CLIENT_ERROR);
  ok(last_outcome("a", PH_OUTCOME_STAGE_TUNNEL, PH_OUTCOME_SUCCESS),
     "a client that went away says nothing against the proxy");
  close(pa);
  close(pb);
  nd = FC.n_log;
  req *r5 = open_req(7, "any.test", 1);
  dial_fail(nd, PH_OPEN_CONNECTION_REFUSED);
  ok(last_outcome("a", PH_OUTCOME_STAGE_DIAL, PH_OUTCOME_FAILURE),
     "CP-5-2 a refused dial: DIAL FAILURE");
  ok(FC.n_log == nd + 2 && FC.log[nd + 1].port == 1081,
     "CP-1-23 ... and the request tries b");
  dial_fail(nd + 1, PH_OPEN_TIMEOUT);
  ph_mock_run_for(mk, 5);
  ok(last_outcome("b", PH_OUTCOME_STAGE_DIAL, PH_OUTCOME_TIMEOUT),
     "a dial timeout: DIAL TIMEOUT");
  ok(r5->done && r5->res.stage == PH_STAGE_RELAY && r5->res.code == PH_OPEN_TIMEOUT,
     "every candidate failed: the last failure, stage relay");
  is_str(r5->hop, "b", "issue 28: a failure names the last proxy tried");
  ok(!count_of("a", NULL).found && !count_of("b", NULL).found,
     "no reservation left behind");
  /* The status panels (issue 28): the failed opens by stage and code
   * over the last minutes, the view with its proxies' counts. */
  const char *sj = NULL;
  is_int(ph_mock_status(mk, "/v1/status/pool/failures", &sj), 200,
         "issue 28: the panel failures is there");
  like(sj ? sj : "", "[\"relay\",\"timeout\",1,300]",
       "... r5's relay / timeout counted once over 300 s");
  like(sj ? sj : "", "[\"queue\",\"timeout\",1,300]",
       "... and r3's queue / timeout");
  is_int(ph_mock_status(mk, "/v1/status/pool/view", &sj), 200,
         "issue 28: the panel view is there");
  like(sj ? sj : "", "\"valid\":\"yes\"", "... the view valid");
  like(sj ? sj : "", "[\"a\",0,0,", "... a with nothing active or reserved");

  /* A new view between the failed dial and the retry: a stays tried. */
  nd = FC.n_log;
  req *rs = open_req(11, "any.test", 1);
  view(1, 60000);
  dial_fail(nd, PH_OPEN_CONNECTION_REFUSED);
  ok(FC.n_log == nd + 2 && FC.log[nd + 1].port == 1081,
     "a view swap before the retry: the tried proxy a stays tried, b is dialed");
  ok(pool_c->cancel(pool_self, rs->id) == PH_OK && !count_of("b", NULL).found,
     "(cancelled, nothing reserved)");

  /* A handshake refused by the proxy: PROXY_HANDSHAKE, then b. */
  nd = FC.n_log;
  req *r6 = open_req(8, "any.test", 1);
  pa = dial_ok(nd);
  ph_mock_run_for(mk, 5);
  char buf[512];
  ok(read(pa, buf, sizeof buf) > 0, "the CONNECT reached a");
  const char *no = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
  ok(write(pa, no, strlen(no)) > 0, "a answers 403");
  ph_mock_run_for(mk, 10);
  ok(last_outcome("a", PH_OUTCOME_STAGE_PROXY_HANDSHAKE, PH_OUTCOME_FAILURE),
     "CP-5-3 a refused CONNECT: PROXY_HANDSHAKE FAILURE");
  ok(FC.n_log == nd + 2, "... and b is tried");
  /* Cancel while b dials: the reservation goes. */
  ok(pool_c->cancel(pool_self, r6->id) == PH_OK, "cancel while dialing");
  ok(FC.log[nd + 1].cancelled, "... cancels the upstream dial");
  ok(!count_of("b", NULL).found, "... and frees b's reservation");
  ph_mock_run_for(mk, 5);
  is_int(r6->done, 0, "no answer after cancel");
  close(pa);

  /* revoke_proxy_ids (CP-4-7): no new reservation on a. */
  const char *ids[] = {"a"};
  rt->revoke(rt_self, ids, 1);
  counts kr = count_of("a", NULL);
  ok(kr.found && kr.draining, "CP-4-3 a revoked: reported draining");
  nd = FC.n_log;
  open_req(9, "any.test", 1);
  ok(FC.n_log == nd + 1 && FC.log[nd].port == 1081, "CP-4-7 a revoked: the pick takes b");
  pb = dial_ok(nd);
  ok(proxy_accept(pb, "any.test") && reqs[9].done && reqs[9].res.code == PH_OPEN_OK,
     "... through b");
  close(reqs[9].res.fd);
  ph_open_lease_end(reqs[9].res.lease, PH_LEASE_END_TIMEOUT);
  ok(last_outcome("b", PH_OUTCOME_STAGE_RESPONSE_HEADERS, PH_OUTCOME_TIMEOUT),
     "an idle timeout before any target byte: RESPONSE_HEADERS TIMEOUT");
  close(pb);

  test_drain();

  test_built_with_view();

  /* A view past its valid_until: no candidates, nothing dialed (CP-3-9). */
  ok(gate && gate->is_open(gate_self),
     "issue 23 item 9 the pool's traffic.gate: open with a live view");
  int gc = gate_calls;
  view(1, 30);
  ph_mock_run_for(mk, 60);
  nd = FC.n_log;
  req *r7 = open_req(10, "any.test", 1);
  ph_mock_run_for(mk, 5);
  ok(r7->done && r7->res.code == PH_OPEN_AGENT_OFFLINE && FC.n_log == nd,
     "CP-3-9 an expired view: no candidates, no dial");
  ok(gate && !gate->is_open(gate_self) && gate_calls == gc + 1 && gate_last == 0,
     "CP-3-18 issue 23 item 9 ... and the gate closes at the view's deadline: "
     "the frontends stop accepting");

  test_forward();
  test_forward_ext();
  test_health();
  ok(gate && gate->is_open(gate_self) && gate_calls == gc + 2 && gate_last == 1,
     "issue 23 item 9 a live view again: the gate opens");
  if (gate)
    gate->unwatch(gate_self, &gate_w);

  ph_mock_stop(mk);
  ph_mock_free(mk);
  cp_view_publish(&slot, NULL);
  ok(detaches == attaches, "every strategy state was detached");
  return done_testing();
}

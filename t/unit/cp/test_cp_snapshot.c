/* SPDX-License-Identifier: BSD-2-Clause */
/* The control plane's snapshots (modules/cp_common/snapshot/cp_snapshot*.c,
 * cp_checksum.c), pure code on real protobuf-c messages:
 *  - build: every inclusion and exclusion rule with its CP id, the
 *    usable_until arithmetic to the millisecond, credentials deduplicated
 *    and resolved once, never an expired snapshot, routing in order, the
 *    limits, a 10,000-proxy build within its allocation bound;
 *  - check: every reject reason, each rule on its own;
 *  - deltas: apply (base, checksum, removed and upserted proxies, routing
 *    replaced), diff and apply giving the full snapshot's checksum, over
 *    the wire too;
 *  - the shared lease form (issue 26): one checksum for both forms, no
 *    proxy's end later than its lease, a renewal's delta of the same size
 *    for 3 and 300 proxies, the new fields' check rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_checksum.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_common/snapshot/cp_snapshot_time.h"
#include "tap.h"

#define NOW 1800000000000LL /* Unix ms */
#define MARGIN 5000
#define VALIDITY 120000

#define R_OK CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED
#define R_EXPIRED CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_EXPIRED
#define R_CHECKSUM CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_BAD_CHECKSUM
#define R_MALFORMED CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_MALFORMED
#define R_TOO_LARGE CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_TOO_LARGE
#define R_IDENTITY CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_IDENTITY

typedef Controlplane__V1__WorkerSnapshot Snap;
typedef Controlplane__V1__OwnedProxy Proxy;

/* ---- fixtures ---------------------------------------------------------- */

static ph_pool_proxy_row prow(const char *id, const char *ref, uint64_t ver) {
  ph_pool_proxy_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.proxy_id, sizeof r.proxy_id, "%s", id);
  r.protocol = PH_POOL_UPSTREAM_SOCKS5;
  snprintf(r.host, sizeof r.host, "%s.example.net", id);
  r.port = 1080;
  snprintf(r.groups[0], sizeof r.groups[0], "eu");
  r.n_groups = 1;
  snprintf(r.zone, sizeof r.zone, "z1");
  r.capacity = 10;
  r.weight = 1;
  if (ref) {
    snprintf(r.secret_ref, sizeof r.secret_ref, "%s", ref);
    r.credential_version = ver;
  }
  r.admin_state = PH_POOL_ADMIN_ACTIVE;
  return r;
}

static ph_pool_route_row rrow(const char *id, uint32_t pos, const char *strat,
                              int onu) {
  ph_pool_route_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.rule_id, sizeof r.rule_id, "%s", id);
  r.position = pos;
  r.enabled = 1;
  snprintf(r.host_pattern, sizeof r.host_pattern, "*");
  snprintf(r.target_group, sizeof r.target_group, "eu");
  snprintf(r.strategy, sizeof r.strategy, "%s", strat);
  r.on_unavailable = onu;
  if (onu == PH_POOL_ON_UNAVAILABLE_WAIT)
    r.wait_timeout_ms = 1500;
  return r;
}

/* The resolver: secret refs starting "missing" have no material, "bad"
 * material a gateway would refuse; calls are counted. */
static int resolver_calls;
static int resolve(void *ud, const char *ref, uint64_t ver,
                   ph_pool_credential *out) {
  (void)ud;
  resolver_calls++;
  if (!ref || strncmp(ref, "missing", 7) == 0)
    return 0;
  snprintf(out->secret_ref, sizeof out->secret_ref, "%s", ref);
  out->credential_version = ver;
  snprintf(out->username, sizeof out->username, "u-%s-%llu", ref,
           (unsigned long long)ver);
  snprintf(out->password, sizeof out->password, "%s",
           strncmp(ref, "bad", 3) == 0 ? "line\nbreak" : "s3cret!");
  return 1;
}

static cp_build_input base_input(void) {
  cp_build_input in;
  memset(&in, 0, sizeof in);
  in.cluster_id = "c1";
  in.worker_id = "w1";
  in.session_id = "0123456789abcdef0123456789abcdef";
  in.resolve = resolve;
  in.now_ms = NOW;
  in.version = 7;
  in.ownership_epoch = 3;
  in.allocation_safety_margin_ms = MARGIN;
  in.snapshot_validity_ms = VALIDITY;
  cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
  in.limits = lim;
  return in;
}

static const cp_expect EXPECT = {"c1", "w1",
                                 "0123456789abcdef0123456789abcdef"};

static const Proxy *find(const Snap *s, const char *id) {
  for (size_t i = 0; i < s->n_proxies; i++)
    if (strcmp(s->proxies[i]->proxy_id, id) == 0)
      return s->proxies[i];
  return NULL;
}

static int64_t ms(const Google__Protobuf__Timestamp *t) {
  int64_t v = -1;
  cp_ts_to_ms(t, &v);
  return v;
}

/* The standard pool for the check and delta tests: three proxies (two
 * sharing a credential), two rules. */
static ph_pool_proxy_row std_rows[3];
static ph_pool_route_row std_routes[2];
static cp_owned std_owned[3];

static cp_build_input std_input(void) {
  std_rows[0] = prow("px-a", "vault/a", 1);
  std_rows[1] = prow("px-b", "vault/a", 1);
  std_rows[2] = prow("px-c", NULL, 0);
  std_routes[0] = rrow("r-wait", 1, "round_robin", PH_POOL_ON_UNAVAILABLE_WAIT);
  std_routes[1] = rrow("r-direct", 2, "sticky", PH_POOL_ON_UNAVAILABLE_DIRECT);
  snprintf(std_routes[1].sticky_key, sizeof std_routes[1].sticky_key,
           "username");
  for (int i = 0; i < 3; i++) {
    std_owned[i].proxy_id = std_rows[i].proxy_id;
    std_owned[i].lease_expiry_ms = NOW + 60000;
  }
  cp_build_input in = base_input();
  in.proxies = std_rows;
  in.n_proxies = 3;
  in.routes = std_routes;
  in.n_routes = 2;
  in.owned = std_owned;
  in.n_owned = 3;
  return in;
}

static cp_snapshot *std_snapshot(void) {
  cp_build_input in = std_input();
  cp_snapshot *s = NULL;
  if (cp_snapshot_build(&in, &s, NULL) != CP_BUILD_OK)
    return NULL;
  return s;
}

/* A test may change a built snapshot and then set its checksum right,
 * so that only the rule under test fires. */
static Snap *mut(cp_snapshot *s) { return (Snap *)cp_snapshot_msg(s); }
static void resum(Snap *m) { cp_checksum_snapshot(m, m->checksum.data); }

/* ---- build ------------------------------------------------------------- */

static void test_build_rules(void) {
  ph_pool_proxy_row rows[10];
  rows[0] = prow("ok", NULL, 0);
  rows[1] = prow("drain", NULL, 0);
  rows[1].admin_state = PH_POOL_ADMIN_DRAINING;
  rows[2] = prow("disabled", NULL, 0);
  rows[2].admin_state = PH_POOL_ADMIN_DISABLED;
  rows[3] = prow("not-owned", NULL, 0);
  rows[4] = prow("own-expiry", NULL, 0);
  rows[4].expires_at_ms = NOW + 20000; /* earlier than its lease */
  rows[5] = prow("lease-first", NULL, 0);
  rows[5].expires_at_ms = NOW + 900000; /* later than its lease */
  rows[6] = prow("edge-out", NULL, 0); /* usable_until == now */
  rows[7] = prow("edge-in", NULL, 0);  /* usable_until == now + 1 ms */
  rows[8] = prow("self-expired", NULL, 0);
  rows[8].expires_at_ms = NOW - 1;
  rows[9] = prow("bad-port", NULL, 0);
  rows[9].port = 0;
  cp_owned owned[] = {
      {"ok", NOW + 60000, 0, 0},         {"drain", NOW + 60000, 0, 0},
      {"disabled", NOW + 60000, 0, 0},   {"own-expiry", NOW + 60000, 0, 0},
      {"lease-first", NOW + 30000, 0, 0}, {"edge-out", NOW + MARGIN, 0, 0},
      {"edge-in", NOW + MARGIN + 1, 0, 0}, {"self-expired", NOW + 60000, 0, 0},
      {"bad-port", NOW + 60000, 0, 0},   {"gone", NOW + 60000, 0, 0},
      {"ok", NOW + 60000, 0, 0}};
  cp_build_input in = base_input();
  in.proxies = rows;
  in.n_proxies = 10;
  in.owned = owned;
  in.n_owned = sizeof owned / sizeof owned[0];
  cp_snapshot *s = NULL;
  cp_build_stats st;
  is_int(cp_snapshot_build(&in, &s, &st), CP_BUILD_OK, "build succeeds");
  if (!s)
    return;
  const Snap *m = cp_snapshot_msg(s);
  ok(find(m, "ok"), "CP-3-3: an owned active proxy is delivered");
  ok(!find(m, "not-owned"),
     "CP-3-3: a proxy the worker does not own is not delivered");
  ok(!find(m, "gone") && st.not_found == 1,
     "CP-1-16: an owned id the pool does not have is left out, counted");
  ok(!find(m, "disabled") && st.disabled == 1,
     "CP-4-2: a disabled proxy is never delivered, counted");
  const Proxy *d = find(m, "drain");
  ok(d && d->draining && st.draining == 1,
     "CP-4-2: a draining proxy is delivered with draining=true");
  ok(find(m, "ok") && !find(m, "ok")->draining, "an active one is not draining");
  const Proxy *oe = find(m, "own-expiry");
  ok(oe && ms(oe->expires_at) == NOW + 20000,
     "CP-1-17: expires_at is the proxy's own expiry when it comes first");
  const Proxy *lf = find(m, "lease-first");
  ok(lf && ms(lf->expires_at) == NOW + 30000,
     "CP-1-17: expires_at is the lease's expiry when it comes first");
  ok(find(m, "ok") && ms(find(m, "ok")->expires_at) == NOW + 60000,
     "CP-1-17: no own expiry (0): the lease's");
  ok(!find(m, "edge-out"),
     "CP-3-5: usable_until == now is left out (not usable)");
  const Proxy *ei = find(m, "edge-in");
  ok(ei && ms(ei->usable_until) == NOW + 1,
     "CP-3-5: usable_until == now + 1 ms is delivered");
  ok(!find(m, "self-expired"), "CP-3-5: a proxy past its own expiry is out");
  is_int(st.unusable, 2, "the two unusable ones are counted");
  ok(!find(m, "bad-port") && st.invalid == 1,
     "a row out of its bounds (port 0) is left out, counted");
  is_int(st.duplicate_owned, 1, "an id twice in the index is counted once");
  is_int(st.delivered, 5, "five proxies delivered");
  is_int(m->n_proxies, 5, "and five in the message");
  int sorted = 1;
  for (size_t i = 1; i < m->n_proxies; i++)
    sorted &= strcmp(m->proxies[i - 1]->proxy_id, m->proxies[i]->proxy_id) < 0;
  ok(sorted, "proxies are listed in proxy_id order, each once");
  is_int(cp_snapshot_check(m, &EXPECT, NOW, NULL, NULL), R_OK,
         "CP-3-7: the built snapshot passes the gateway's check");
  ok(m->version == 7 && m->ownership_epoch == 3,
     "CP-3-1: version and ownership_epoch as given");
  ok(m->generated_at && ms(m->generated_at) == NOW,
     "CP-3-1: generated_at is the build's time");
  ok(strcmp(m->cluster_id, "c1") == 0 && strcmp(m->worker_id, "w1") == 0 &&
         strcmp(m->session_id, EXPECT.session_id) == 0,
     "CP-2-2: the snapshot names its cluster, worker and session");
  uint8_t sum[CP_CHECKSUM_LEN];
  cp_checksum_snapshot(m, sum);
  ok(cp_checksum_equal(&m->checksum, sum), "CP-3-4: the checksum is set");
  cp_snapshot_free(s);
}

static void test_build_arithmetic(void) {
  ph_pool_proxy_row rows[1] = {prow("p", NULL, 0)};
  cp_owned owned[] = {{"p", 1800000123457LL, 0, 0}};
  cp_build_input in = base_input();
  in.proxies = rows;
  in.n_proxies = 1;
  in.owned = owned;
  in.n_owned = 1;
  in.allocation_safety_margin_ms = 1001;
  cp_snapshot *s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  const Proxy *p = s ? find(cp_snapshot_msg(s), "p") : NULL;
  ok(p && p->expires_at->seconds == 1800000123 &&
         p->expires_at->nanos == 457000000,
     "expires_at 1800000123457 ms is 1800000123 s + 457000000 ns");
  ok(p && p->usable_until->seconds == 1800000122 &&
         p->usable_until->nanos == 456000000,
     "CP-3-5: usable_until = expires_at - 1001 ms, to the millisecond");
  cp_snapshot_free(s);

  in.allocation_safety_margin_ms = 0;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  p = s ? find(cp_snapshot_msg(s), "p") : NULL;
  ok(p && cp_ts_cmp(p->usable_until, p->expires_at) == 0,
     "CP-3-5: a zero margin: usable_until == expires_at");
  cp_snapshot_free(s);

  Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  cp_ms_to_ts(-1, &t);
  ok(t.seconds == -1 && t.nanos == 999000000,
     "-1 ms is -1 s + 999000000 ns (nanos never negative)");
  int64_t back = 0;
  ok(cp_ts_to_ms(&t, &back) && back == -1, "and converts back");
}

static void test_build_credentials(void) {
  ph_pool_proxy_row rows[6] = {
      prow("a1", "vault/a", 1), prow("a2", "vault/a", 1),
      prow("a3", "vault/a", 2), prow("m1", "missing/x", 1),
      prow("b1", "bad/y", 1),   prow("n1", NULL, 0)};
  cp_owned owned[6];
  memset(owned, 0, sizeof owned); /* reclaim and health too (valgrind) */
  for (int i = 0; i < 6; i++) {
    owned[i].proxy_id = rows[i].proxy_id;
    owned[i].lease_expiry_ms = NOW + 60000;
  }
  cp_build_input in = base_input();
  in.proxies = rows;
  in.n_proxies = 6;
  in.owned = owned;
  in.n_owned = 6;
  cp_snapshot *s = NULL;
  cp_build_stats st;
  resolver_calls = 0;
  is_int(cp_snapshot_build(&in, &s, &st), CP_BUILD_OK, "build succeeds");
  if (!s)
    return;
  const Snap *m = cp_snapshot_msg(s);
  is_int(resolver_calls, 4,
         "CP-1-18: the resolver is asked once per distinct (secret_ref, "
         "version)");
  is_int(m->n_credentials, 2,
         "CP-1-18: credentials deduplicated by (secret_ref, version)");
  ok(m->n_credentials == 2 &&
         strcmp(m->credentials[0]->secret_ref, "vault/a") == 0 &&
         m->credentials[0]->credential_version == 1 &&
         m->credentials[1]->credential_version == 2 &&
         strcmp(m->credentials[1]->username, "u-vault/a-2") == 0,
     "one per version of the same reference, with its material");
  ok(!find(m, "m1") && !find(m, "b1") && st.credential_missing == 2,
     "CP-1-18: a proxy whose credential is missing or unusable is left "
     "out, counted");
  int m1 = 0, b1 = 0;
  for (uint32_t i = 0; i < st.n_withheld; i++) {
    m1 |= strcmp(st.withheld[i].proxy_id, "m1") == 0 &&
          strcmp(st.withheld[i].secret_ref, "missing/x") == 0;
    b1 |= strcmp(st.withheld[i].proxy_id, "b1") == 0 &&
          strcmp(st.withheld[i].secret_ref, "bad/y") == 0;
  }
  ok(st.n_withheld == 2 && m1 && b1,
     "issue 23 item 6: ... and listed with its secret_ref, for the log");
  ok(find(m, "a1") && find(m, "a2") && find(m, "a3") && find(m, "n1"),
     "the others are delivered");
  is_int(cp_snapshot_check(m, &EXPECT, NOW, NULL, NULL), R_OK,
         "and the snapshot passes the check");
  cp_snapshot_free(s);

  /* No resolver: every credentialed proxy is out, the rest stays. */
  in.resolve = NULL;
  s = NULL;
  cp_snapshot_build(&in, &s, &st);
  ok(s && cp_snapshot_msg(s)->n_proxies == 1 &&
         cp_snapshot_msg(s)->n_credentials == 0,
     "without a resolver only the proxy without credentials is delivered");
  cp_snapshot_free(s);
}

static void test_build_validity(void) {
  cp_build_input in = base_input();
  cp_snapshot *s = NULL;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_OK,
         "an empty pool builds (no proxies, no rules)");
  ok(s && ms(cp_snapshot_msg(s)->valid_until) == NOW + VALIDITY,
     "CP-3-1: without proxies valid_until = now + snapshot_validity");
  cp_snapshot_free(s);

  ph_pool_proxy_row rows[2] = {prow("p1", NULL, 0), prow("p2", NULL, 0)};
  cp_owned owned[] = {{"p1", NOW + 40000, 0, 0}, {"p2", NOW + 50000, 0, 0}};
  in.proxies = rows;
  in.n_proxies = 2;
  in.owned = owned;
  in.n_owned = 2;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  ok(s && ms(cp_snapshot_msg(s)->valid_until) == NOW + 50000,
     "CP-3-10: valid_until is clipped to the latest delivered lease");
  ok(s && !cp_snapshot_msg(s)->proxies[0]->draining &&
         !cp_snapshot_msg(s)->proxies[1]->draining,
     "active rows, no reclaim: nothing draining");
  cp_snapshot_free(s);
  owned[1].reclaim = 1;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  ok(s && cp_snapshot_msg(s)->n_proxies == 2 &&
         !cp_snapshot_msg(s)->proxies[0]->draining &&
         cp_snapshot_msg(s)->proxies[1]->draining,
     "CP-4-2: a proxy an extraction waits for is delivered draining");
  cp_snapshot_free(s);
  owned[1].reclaim = 0;

  /* The refresh point's bound: the earliest usable_until a renewal can
   * move. p1's own expires_at comes before its lease: it just expires. */
  cp_build_stats st;
  s = NULL;
  cp_snapshot_build(&in, &s, &st);
  is_int(st.renewable_until_ms, NOW + 40000 - MARGIN,
         "renewable_until: the earliest lease-bound usable_until (p1's)");
  cp_snapshot_free(s);
  rows[0].expires_at_ms = NOW + 20000;
  s = NULL;
  cp_snapshot_build(&in, &s, &st);
  is_int(st.renewable_until_ms, NOW + 50000 - MARGIN,
         "a proxy its own expires_at bounds is left out (p2's lease counts)");
  cp_snapshot_free(s);
  rows[1].expires_at_ms = NOW + 30000;
  s = NULL;
  cp_snapshot_build(&in, &s, &st);
  is_int(st.renewable_until_ms, 0, "none lease-bound: 0");
  cp_snapshot_free(s);
  rows[0].expires_at_ms = rows[1].expires_at_ms = 0;

  owned[1].lease_expiry_ms = NOW + 999999;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  ok(s && ms(cp_snapshot_msg(s)->valid_until) == NOW + VALIDITY,
     "and to now + snapshot_validity when that comes first");
  cp_snapshot_free(s);

  /* The shortest case: one lease just past the margin. */
  owned[0].lease_expiry_ms = NOW + MARGIN + 1;
  in.n_owned = 1;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  ok(s && ms(cp_snapshot_msg(s)->valid_until) > NOW,
     "CP-3-10: never an expired snapshot (valid_until > now)");
  is_int(s ? (int)cp_snapshot_check(cp_snapshot_msg(s), &EXPECT, NOW, NULL,
                                      NULL)
           : -1,
         R_OK, "and the gateway accepts it at that now");
  cp_snapshot_free(s);

  in.snapshot_validity_ms = 1;
  in.n_owned = 0;
  s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  ok(s && ms(cp_snapshot_msg(s)->valid_until) == NOW + 1,
     "the smallest validity (1 ms) still gives valid_until > now");
  cp_snapshot_free(s);
}

static void test_build_routing(void) {
  ph_pool_route_row r[5] = {
      rrow("third", 30, "least_active", PH_POOL_ON_UNAVAILABLE_REJECT),
      rrow("first", 10, "round_robin", PH_POOL_ON_UNAVAILABLE_WAIT),
      rrow("off", 15, "random", PH_POOL_ON_UNAVAILABLE_REJECT),
      rrow("second", 20, "my_strategy_2", PH_POOL_ON_UNAVAILABLE_DIRECT),
      rrow("second-b", 20, "weighted", PH_POOL_ON_UNAVAILABLE_DIRECT)};
  r[2].enabled = 0;
  r[0].port_min = 443;
  r[0].port_max = 8443;
  snprintf(r[0].client_identity, sizeof r[0].client_identity, "alice");
  snprintf(r[0].listener, sizeof r[0].listener, "main");
  snprintf(r[0].host_pattern, sizeof r[0].host_pattern, "*.example.com");
  cp_build_input in = base_input();
  in.routes = r;
  in.n_routes = 5;
  cp_snapshot *s = NULL;
  cp_build_stats st;
  is_int(cp_snapshot_build(&in, &s, &st), CP_BUILD_OK, "build succeeds");
  if (!s)
    return;
  const Snap *m = cp_snapshot_msg(s);
  is_int(m->n_routing, 4, "CP-1-19: a disabled rule is not delivered");
  const char *want[] = {"first", "second", "second-b", "third"};
  int order = m->n_routing == 4;
  for (size_t i = 0; order && i < 4; i++)
    order = strcmp(m->routing[i]->rule_id, want[i]) == 0;
  ok(order, "CP-1-19, CP-3-2: rules in position order (ties by rule_id)");
  const Controlplane__V1__RoutingRule *w = m->routing[0];
  int64_t wt = 0;
  ok(w->on_unavailable ==
             CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT &&
         cp_dur_to_ms(w->wait_timeout, &wt) && wt == 1500,
     "CP-1-24: WAIT carries wait_timeout (1500 ms)");
  ok(!m->routing[1]->wait_timeout, "no wait_timeout without WAIT");
  is_str(m->routing[1]->strategy, "my_strategy_2",
         "strategy names are passed through");
  const Controlplane__V1__RoutingRule *t = m->routing[3];
  ok(t->port_min == 443 && t->port_max == 8443 &&
         strcmp(t->client_identity, "alice") == 0 &&
         strcmp(t->listener, "main") == 0 &&
         strcmp(t->host_pattern, "*.example.com") == 0 &&
         t->on_unavailable ==
             CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT,
     "every match field converts");
  is_int(st.routes, 4, "four rules counted");
  cp_snapshot_free(s);

  /* A rule out of its bounds fails the build (fail closed). */
  snprintf(r[1].strategy, sizeof r[1].strategy, "Round-Robin");
  s = NULL;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "a strategy name not [a-z0-9_] fails the build");
  ok(!s, "and gives no snapshot");
}

static void test_build_limits(void) {
  cp_build_input in = std_input();
  cp_snapshot *s = NULL;
  in.limits.max_proxies = 2;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_ETOOBIG,
         "CP-8-3: more delivered proxies than max_proxies fails");
  in = std_input();
  in.limits.max_routes = 1;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_ETOOBIG,
         "CP-8-3: more rules than max_routes fails");
  in = std_input();
  in.limits.max_proxies = 3;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_OK,
         "exactly max_proxies builds");
  cp_snapshot_free(s);
  in = std_input();
  in.version = 0;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL, "version 0 fails");
  in = std_input();
  in.snapshot_validity_ms = 0;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "snapshot_validity 0 fails");
  in = std_input();
  in.allocation_safety_margin_ms = -1;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "a negative margin fails");
  in = std_input();
  in.allocation_safety_margin_ms = CP_MARGIN_MAX_MS + 1;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "a margin over its bound fails");
  in = std_input();
  in.worker_id = "";
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "an empty worker id fails");
  in = std_input();
  in.limits.max_routes = 0;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "limits out of their bounds fail");
  ph_pool_proxy_row dup[2] = {prow("same", NULL, 0), prow("same", NULL, 0)};
  in = std_input();
  in.proxies = dup;
  in.n_proxies = 2;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_EINVAL,
         "two pool rows with one id fail");
  ok(!s, "no snapshot from a failed build");
}

static void test_build_large(void) {
  enum { N = 10000 };
  ph_pool_proxy_row *rows = calloc(N, sizeof *rows);
  cp_owned *owned = calloc(N, sizeof *owned);
  if (!rows || !owned) {
    ok(0, "memory for 10,000 rows");
    return;
  }
  for (int i = 0; i < N; i++) {
    char id[32], ref[32];
    snprintf(id, sizeof id, "px-%05d", N - i); /* reverse order */
    snprintf(ref, sizeof ref, "vault/%d", i % 100);
    rows[i] = prow(id, ref, 1);
    owned[i].proxy_id = rows[i].proxy_id;
    owned[i].lease_expiry_ms = NOW + 60000 + i;
  }
  cp_build_input in = base_input();
  in.proxies = rows;
  in.n_proxies = N;
  in.owned = owned;
  in.n_owned = N;
  cp_snapshot *s = NULL;
  resolver_calls = 0;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_OK,
         "CP-1-16: a 10,000-proxy build succeeds");
  if (!s)
    goto out;
  const Snap *m = cp_snapshot_msg(s);
  is_int(m->n_proxies, N, "all 10,000 delivered");
  is_int(m->n_credentials, 100, "CP-1-18: 100 distinct credentials");
  is_int(resolver_calls, 100, "resolved 100 times, not 10,000");
  size_t packed = controlplane__v1__worker_snapshot__get_packed_size(m);
  size_t bytes = cp_snapshot_bytes(s);
  printf("# 10,000 proxies: %zu bytes packed, %zu bytes in the arena\n",
         packed, bytes);
  /* The bound: every proxy's structs and strings plus the arena's last,
   * mostly empty chunk; a per-proxy cost over 512 bytes for these short
   * fields would mean copies or waste. */
  ok(bytes <= (size_t)N * 512 + (2u << 20),
     "the snapshot's memory is bounded (<= 512 B a proxy + 2 MiB)");
  ok(bytes <= packed * 8, "and within 8x its packed size");
  is_int(cp_snapshot_check(m, &EXPECT, NOW, NULL, NULL), R_OK,
         "CP-3-7: and it passes the check");
  cp_snapshot_free(s);
out:
  free(rows);
  free(owned);
}

/* ---- check ------------------------------------------------------------- */

typedef void (*mutation)(Snap *m);

/* Builds the standard snapshot, applies f, sets the checksum right
 * (unless `keep_sum`), and returns the verdict. */
static int verdict(mutation f, int keep_sum, int64_t now,
                   const cp_snapshot_limits *lim) {
  cp_snapshot *s = std_snapshot();
  if (!s)
    return -1;
  Snap *m = mut(s);
  f(m);
  if (!keep_sum)
    resum(m);
  const char *why = NULL;
  int r = (int)cp_snapshot_check(m, &EXPECT, now, lim, &why);
  printf("#   %s\n", why ? why : "(no text)");
  cp_snapshot_free(s);
  return r;
}

static void m_none(Snap *m) { (void)m; }
static void m_vu_missing(Snap *m) { m->valid_until = NULL; }
static void m_vu_nanos_neg(Snap *m) { m->valid_until->nanos = -1; }
static void m_vu_nanos_big(Snap *m) { m->valid_until->nanos = 1000000000; }
static void m_vu_sec_big(Snap *m) {
  m->valid_until->seconds = CP_TS_MAX_SECONDS + 1;
}
static void m_vu_sec_small(Snap *m) {
  m->valid_until->seconds = CP_TS_MIN_SECONDS - 1;
}
static void m_sum_flip(Snap *m) { m->checksum.data[5] ^= 0x40; }
static void m_sum_short(Snap *m) { m->checksum.len = 31; }
static void m_sum_empty(Snap *m) { m->checksum.len = 0; }
static void m_content_changed(Snap *m) { m->proxies[0]->capacity = 11; }
static void m_cluster(Snap *m) { m->cluster_id = "c2"; }
static void m_worker(Snap *m) { m->worker_id = "w2"; }
static void m_session(Snap *m) { m->session_id = "ffff"; }
static void m_proto_unspec(Snap *m) { m->proxies[0]->protocol = 0; }
static void m_proto_unknown(Snap *m) { m->proxies[0]->protocol = 4; }
static void m_onu_unspec(Snap *m) { m->routing[1]->on_unavailable = 0; }
static void m_onu_unknown(Snap *m) { m->routing[1]->on_unavailable = 9; }
static char long_id[PH_POOL_ID_MAX + 2];
static void m_id_long(Snap *m) { m->proxies[0]->proxy_id = long_id; }
static char max_id[PH_POOL_ID_MAX + 1];
static void m_id_max(Snap *m) { m->proxies[2]->proxy_id = max_id; }
static void m_id_empty(Snap *m) { m->proxies[0]->proxy_id = ""; }
static void m_host_ctl(Snap *m) { m->proxies[0]->host = "a\001b"; }
static void m_host_del(Snap *m) { m->proxies[0]->host = "a\177b"; }
static void m_host_high(Snap *m) { m->proxies[0]->host = "a\303\251b"; }
static void m_pw_nl(Snap *m) { m->credentials[0]->password = "x\ny"; }
static void m_port0(Snap *m) { m->proxies[0]->port = 0; }
static void m_port_big(Snap *m) { m->proxies[0]->port = 65536; }
static void m_cap0(Snap *m) { m->proxies[0]->capacity = 0; }
static void m_weight0(Snap *m) { m->proxies[0]->weight = 0; }
static void m_weight_big(Snap *m) { m->proxies[0]->weight = 1001; }
static void m_groups0(Snap *m) { m->proxies[0]->n_groups = 0; }
static void m_usable_after(Snap *m) {
  m->proxies[0]->usable_until->seconds = m->proxies[0]->expires_at->seconds;
  m->proxies[0]->usable_until->nanos = m->proxies[0]->expires_at->nanos + 1;
}
static void m_usable_equal(Snap *m) {
  *m->proxies[0]->usable_until = *m->proxies[0]->expires_at;
}
static void m_expires_missing(Snap *m) { m->proxies[0]->expires_at = NULL; }
static void m_dup_proxy(Snap *m) { m->proxies[1]->proxy_id = "px-a"; }
static void m_dup_rule(Snap *m) { m->routing[1]->rule_id = "r-wait"; }
static void m_cred_absent(Snap *m) { m->proxies[0]->credential_version = 2; }
static void m_cred_unused(Snap *m) {
  m->proxies[0]->secret_ref = "";
  m->proxies[0]->credential_version = 0;
  m->proxies[1]->secret_ref = "";
  m->proxies[1]->credential_version = 0;
}
static void m_ver_without_ref(Snap *m) { m->proxies[2]->credential_version = 1; }
static void m_strategy_upper(Snap *m) { m->routing[0]->strategy = "Round"; }
static void m_strategy_dash(Snap *m) { m->routing[0]->strategy = "a-b"; }
static void m_strategy_empty(Snap *m) { m->routing[0]->strategy = ""; }
static void m_ports_reversed(Snap *m) {
  m->routing[0]->port_min = 90;
  m->routing[0]->port_max = 80;
}
static void m_wait_missing(Snap *m) { m->routing[0]->wait_timeout = NULL; }
static void m_wait_zero(Snap *m) {
  m->routing[0]->wait_timeout->seconds = 0;
  m->routing[0]->wait_timeout->nanos = 0;
}
static void m_wait_long(Snap *m) { m->routing[0]->wait_timeout->seconds = 61; }
static void m_version0(Snap *m) { m->version = 0; }
static void m_group_long(Snap *m) {
  static char g[PH_POOL_GROUP_MAX + 2];
  memset(g, 'g', sizeof g - 1);
  m->proxies[0]->groups[0] = g;
}

static void test_check(void) {
  memset(long_id, 'x', sizeof long_id - 1);
  memset(max_id, 'y', sizeof max_id - 1);
  is_int(verdict(m_none, 0, NOW, NULL), R_OK, "CP-3-7: the standard one passes");
  /* EXPIRED (CP-3-7) */
  is_int(verdict(m_vu_missing, 0, NOW, NULL), R_EXPIRED,
         "CP-3-7: valid_until missing: EXPIRED");
  is_int(verdict(m_vu_nanos_neg, 0, NOW, NULL), R_EXPIRED,
         "CP-3-7: valid_until nanos -1: EXPIRED");
  is_int(verdict(m_vu_nanos_big, 0, NOW, NULL), R_EXPIRED,
         "CP-3-7: valid_until nanos 1e9: EXPIRED");
  is_int(verdict(m_vu_sec_big, 0, NOW, NULL), R_EXPIRED,
         "CP-3-7: valid_until after 9999-12-31: EXPIRED");
  is_int(verdict(m_vu_sec_small, 0, NOW, NULL), R_EXPIRED,
         "CP-3-7: valid_until before 0001-01-01: EXPIRED");
  is_int(verdict(m_none, 0, NOW + 60000, NULL), R_EXPIRED,
         "CP-3-7: now == valid_until: EXPIRED (reached)");
  is_int(verdict(m_none, 0, NOW + 60000 - 1, NULL), R_OK,
         "one millisecond before valid_until: accepted");
  /* BAD_CHECKSUM */
  is_int(verdict(m_sum_flip, 1, NOW, NULL), R_CHECKSUM,
         "CP-3-4: one checksum bit flipped: BAD_CHECKSUM");
  is_int(verdict(m_sum_short, 1, NOW, NULL), R_CHECKSUM,
         "CP-3-4: a 31-byte checksum: BAD_CHECKSUM");
  is_int(verdict(m_sum_empty, 1, NOW, NULL), R_CHECKSUM,
         "CP-3-4: no checksum: BAD_CHECKSUM");
  is_int(verdict(m_content_changed, 1, NOW, NULL), R_CHECKSUM,
         "CP-3-4: content changed after the checksum: BAD_CHECKSUM");
  /* IDENTITY (CP-2-2) */
  is_int(verdict(m_cluster, 0, NOW, NULL), R_IDENTITY,
         "CP-2-2: another cluster: IDENTITY");
  is_int(verdict(m_worker, 0, NOW, NULL), R_IDENTITY,
         "CP-2-2: another worker: IDENTITY");
  is_int(verdict(m_session, 0, NOW, NULL), R_IDENTITY,
         "CP-2-5: another session: IDENTITY");
  /* TOO_LARGE (CP-8-3) */
  cp_snapshot_limits l = {2, 10, 10};
  is_int(verdict(m_none, 0, NOW, &l), R_TOO_LARGE,
         "CP-8-3: more proxies than max_proxies: TOO_LARGE");
  cp_snapshot_limits l2 = {10, 1, 10};
  is_int(verdict(m_none, 0, NOW, &l2), R_TOO_LARGE,
         "CP-8-3: more rules than max_routes: TOO_LARGE");
  cp_snapshot_limits l3 = {10, 10, 0};
  is_int(verdict(m_none, 0, NOW, &l3), R_TOO_LARGE,
         "CP-8-3: more credentials than max_credentials: TOO_LARGE");
  /* MALFORMED: enums (CP-7-3) */
  is_int(verdict(m_proto_unspec, 0, NOW, NULL), R_MALFORMED,
         "CP-7-3: protocol UNSPECIFIED: MALFORMED");
  is_int(verdict(m_proto_unknown, 0, NOW, NULL), R_MALFORMED,
         "CP-7-3: an unknown protocol value: MALFORMED");
  is_int(verdict(m_onu_unspec, 0, NOW, NULL), R_MALFORMED,
         "CP-7-3: on_unavailable UNSPECIFIED: MALFORMED");
  is_int(verdict(m_onu_unknown, 0, NOW, NULL), R_MALFORMED,
         "CP-7-3: an unknown on_unavailable value: MALFORMED");
  /* MALFORMED: strings */
  is_int(verdict(m_id_long, 0, NOW, NULL), R_MALFORMED,
         "a 129-byte proxy_id: MALFORMED");
  is_int(verdict(m_id_max, 0, NOW, NULL), R_OK, "a 128-byte proxy_id passes");
  is_int(verdict(m_id_empty, 0, NOW, NULL), R_MALFORMED,
         "an empty proxy_id: MALFORMED");
  is_int(verdict(m_host_ctl, 0, NOW, NULL), R_MALFORMED,
         "a control byte in host: MALFORMED");
  is_int(verdict(m_host_del, 0, NOW, NULL), R_MALFORMED,
         "DEL (0x7f) in host: MALFORMED");
  is_int(verdict(m_host_high, 0, NOW, NULL), R_MALFORMED,
         "a byte above 0x7f in host: MALFORMED");
  is_int(verdict(m_pw_nl, 0, NOW, NULL), R_MALFORMED,
         "a newline in a password: MALFORMED");
  is_int(verdict(m_group_long, 0, NOW, NULL), R_MALFORMED,
         "a 65-byte group: MALFORMED");
  /* MALFORMED: numbers and times */
  is_int(verdict(m_port0, 0, NOW, NULL), R_MALFORMED, "port 0: MALFORMED");
  is_int(verdict(m_port_big, 0, NOW, NULL), R_MALFORMED,
         "port 65536: MALFORMED");
  is_int(verdict(m_cap0, 0, NOW, NULL), R_MALFORMED, "capacity 0: MALFORMED");
  is_int(verdict(m_weight0, 0, NOW, NULL), R_MALFORMED, "weight 0: MALFORMED");
  is_int(verdict(m_weight_big, 0, NOW, NULL), R_MALFORMED,
         "weight 1001: MALFORMED");
  is_int(verdict(m_groups0, 0, NOW, NULL), R_MALFORMED,
         "no groups: MALFORMED");
  is_int(verdict(m_usable_after, 0, NOW, NULL), R_MALFORMED,
         "CP-3-5: usable_until 1 ns after expires_at: MALFORMED");
  is_int(verdict(m_usable_equal, 0, NOW, NULL), R_OK,
         "usable_until == expires_at passes");
  is_int(verdict(m_expires_missing, 0, NOW, NULL), R_MALFORMED,
         "CP-3-3: expires_at missing: MALFORMED");
  is_int(verdict(m_version0, 0, NOW, NULL), R_MALFORMED,
         "CP-3-1: version 0: MALFORMED");
  /* MALFORMED: references */
  is_int(verdict(m_dup_proxy, 0, NOW, NULL), R_MALFORMED,
         "a duplicate proxy_id: MALFORMED");
  is_int(verdict(m_dup_rule, 0, NOW, NULL), R_MALFORMED,
         "a duplicate rule_id: MALFORMED");
  is_int(verdict(m_cred_absent, 0, NOW, NULL), R_MALFORMED,
         "CP-1-18: a proxy naming a credential the snapshot lacks: MALFORMED");
  is_int(verdict(m_cred_unused, 0, NOW, NULL), R_MALFORMED,
         "CP-8-4: a credential no proxy names: MALFORMED");
  is_int(verdict(m_ver_without_ref, 0, NOW, NULL), R_MALFORMED,
         "a credential_version without a secret_ref: MALFORMED");
  /* MALFORMED: rules */
  is_int(verdict(m_strategy_upper, 0, NOW, NULL), R_MALFORMED,
         "strategy with upper case: MALFORMED");
  is_int(verdict(m_strategy_dash, 0, NOW, NULL), R_MALFORMED,
         "strategy with '-': MALFORMED");
  is_int(verdict(m_strategy_empty, 0, NOW, NULL), R_MALFORMED,
         "an empty strategy: MALFORMED");
  is_int(verdict(m_ports_reversed, 0, NOW, NULL), R_MALFORMED,
         "port_min > port_max: MALFORMED");
  is_int(verdict(m_wait_missing, 0, NOW, NULL), R_MALFORMED,
         "CP-1-24: WAIT without wait_timeout: MALFORMED");
  is_int(verdict(m_wait_zero, 0, NOW, NULL), R_MALFORMED,
         "CP-1-24: wait_timeout 0: MALFORMED");
  is_int(verdict(m_wait_long, 0, NOW, NULL), R_MALFORMED,
         "CP-1-24: wait_timeout over 60 s: MALFORMED");
  /* The order: identity before expiry before the rest. */
  is_int(verdict(m_cluster, 1, NOW + 999999999, NULL), R_IDENTITY,
         "identity is judged before expiry");

  const char *why = NULL;
  is_int(cp_snapshot_check(NULL, NULL, NOW, NULL, &why), R_MALFORMED,
         "no snapshot: MALFORMED");
  ok(why && *why, "with a text");
}

/* Unknown fields (a newer controller's) neither break the check nor
 * enter the checksum. */
static void test_unknown_fields(void) {
  cp_snapshot *s = std_snapshot();
  if (!s) {
    ok(0, "standard snapshot");
    return;
  }
  const Snap *m = cp_snapshot_msg(s);
  size_t n = controlplane__v1__worker_snapshot__get_packed_size(m);
  uint8_t *buf = malloc(n + 8);
  controlplane__v1__worker_snapshot__pack(m, buf);
  /* field 99, varint 1; field 100, length-delimited "ab" */
  const uint8_t extra[] = {0x98, 0x06, 0x01, 0xa2, 0x06, 0x02, 'a', 'b'};
  memcpy(buf + n, extra, sizeof extra);
  cp_snapshot *u = cp_snapshot_unpack(buf, n + sizeof extra);
  ok(u && cp_snapshot_msg(u)->base.n_unknown_fields == 2,
     "CP-7-1: a snapshot with two unknown fields unpacks, keeping them");
  is_int(u ? (int)cp_snapshot_check(cp_snapshot_msg(u), &EXPECT, NOW, NULL, NULL)
           : -1,
         R_OK, "CP-3-4: unknown fields do not enter the checksum");
  cp_snapshot *plain = cp_snapshot_unpack(buf, n);
  is_int(plain ? (int)cp_snapshot_check(cp_snapshot_msg(plain), &EXPECT, NOW, NULL,
                                   NULL)
               : -1,
         R_OK, "the same bytes without them pass too");
  ok(!cp_snapshot_unpack(buf, n - 1) || 1, "a cut message is refused or "
                                           "checked, never a crash");
  const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
  ok(!cp_snapshot_unpack(junk, sizeof junk), "a length past the end is refused");
  cp_snapshot_free(u);
  cp_snapshot_free(plain);
  free(buf);
  cp_snapshot_free(s);
}

/* The gateway reads the stream's message once (cp_snapshot_unpack_response):
 * a full snapshot owned by the handle, or a delta read from its arena;
 * anything else refused. */
static void test_unpack_response(void) {
  cp_snapshot *s = std_snapshot();
  if (!s) {
    ok(0, "standard snapshot");
    return;
  }
  Controlplane__V1__WatchSnapshotsResponse r =
      CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__INIT;
  r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT;
  r.snapshot = (Snap *)cp_snapshot_msg(s);
  size_t n = controlplane__v1__watch_snapshots_response__get_packed_size(&r);
  uint8_t *buf = malloc(n);
  controlplane__v1__watch_snapshots_response__pack(&r, buf);
  const Controlplane__V1__SnapshotDelta *d = (void *)1;
  cp_snapshot *u = cp_snapshot_unpack_response(buf, n, &d);
  ok(u && !d && cp_snapshot_msg(u)->version == cp_snapshot_msg(s)->version &&
         cp_snapshot_check(cp_snapshot_msg(u), &EXPECT, NOW, NULL, NULL) == R_OK,
     "CP-3-7: a full snapshot from the stream message, checked in place");
  cp_snapshot_free(u);
  free(buf);

  Controlplane__V1__SnapshotDelta delta = CONTROLPLANE__V1__SNAPSHOT_DELTA__INIT;
  delta.base_version = 7;
  delta.version = 8;
  r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA;
  r.delta = &delta;
  n = controlplane__v1__watch_snapshots_response__get_packed_size(&r);
  buf = malloc(n);
  controlplane__v1__watch_snapshots_response__pack(&r, buf);
  u = cp_snapshot_unpack_response(buf, n, &d);
  ok(u && d && d->base_version == 7 && d->version == 8 &&
         cp_snapshot_msg(u)->n_proxies == 0,
     "CP-3-15: a delta from the stream message, in the handle's arena");
  cp_snapshot_free(u);
  free(buf);

  r.payload_case = CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD__NOT_SET;
  uint8_t none[8];
  n = controlplane__v1__watch_snapshots_response__pack(&r, none);
  ok(!cp_snapshot_unpack_response(none, n, &d) && !d,
     "a stream message without a payload is refused");
  const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
  ok(!cp_snapshot_unpack_response(junk, sizeof junk, &d),
     "a length past the end is refused");
  cp_snapshot_free(s);
}

/* ---- deltas ------------------------------------------------------------ */

/* The standard pool moved on: px-a removed, px-b changed (capacity),
 * px-d new (sharing vault/a), routing changed. */
static cp_snapshot *std_next(int change_routing, uint64_t version) {
  cp_build_input in = std_input();
  static ph_pool_proxy_row rows[4];
  static cp_owned owned[3];
  rows[0] = std_rows[1];
  rows[0].capacity = 99;
  rows[1] = std_rows[2];
  rows[2] = prow("px-d", "vault/a", 1);
  rows[3] = std_rows[0];
  owned[0].proxy_id = "px-b";
  owned[1].proxy_id = "px-c";
  owned[2].proxy_id = "px-d";
  for (int i = 0; i < 3; i++)
    owned[i].lease_expiry_ms = NOW + 70000;
  owned[1].lease_expiry_ms = NOW + 60000; /* px-c unchanged */
  in.proxies = rows;
  in.n_proxies = 4;
  in.owned = owned;
  in.n_owned = 3;
  in.version = version;
  in.now_ms = NOW + 1000;
  if (change_routing)
    std_routes[1].on_unavailable = PH_POOL_ON_UNAVAILABLE_REJECT;
  cp_snapshot *s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  return s;
}

static void test_delta_round_trip(void) {
  cp_snapshot *old = std_snapshot(), *nw = std_next(1, 8);
  cp_delta *d = NULL;
  const char *why = NULL;
  if (!old || !nw) {
    ok(0, "fixtures build");
    return;
  }
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(nw), &d, &why),
         CP_DELTA_OK, "CP-3-15: the diff of two builds is a delta");
  if (!d)
    goto out;
  const Controlplane__V1__SnapshotDelta *dm = cp_delta_msg(d);
  ok(dm->base_version == 7 && dm->version == 8,
     "CP-3-15: it declares base_version 7, version 8");
  ok(dm->n_removed_proxy_ids == 1 &&
         strcmp(dm->removed_proxy_ids[0], "px-a") == 0,
     "px-a removed");
  ok(dm->n_upserted_proxies == 2 &&
         strcmp(dm->upserted_proxies[0]->proxy_id, "px-b") == 0 &&
         dm->upserted_proxies[0]->capacity == 99 &&
         strcmp(dm->upserted_proxies[1]->proxy_id, "px-d") == 0,
     "px-b (changed) and px-d (new) upserted, px-c (same) not");
  ok(dm->routing_replaced && dm->n_routing == 2, "routing replaced");

  /* Over the wire, as the gateway gets it. */
  size_t n = controlplane__v1__snapshot_delta__get_packed_size(dm);
  uint8_t *buf = malloc(n);
  controlplane__v1__snapshot_delta__pack(dm, buf);
  Controlplane__V1__SnapshotDelta *wire =
      controlplane__v1__snapshot_delta__unpack(NULL, n, buf);
  free(buf);
  cp_snapshot *res = NULL;
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &EXPECT,
                                 NOW + 1000, NULL, &res, &why),
         CP_DELTA_OK, "CP-3-16: the gateway applies it to version 7");
  if (res) {
    const Snap *r = cp_snapshot_msg(res);
    uint8_t a[CP_CHECKSUM_LEN];
    cp_checksum_snapshot(r, a);
    ok(cp_checksum_equal(&cp_snapshot_msg(nw)->checksum, a),
       "CP-3-16: diff then apply equals the full new snapshot's checksum");
    ok(r->version == 8 && r->n_proxies == 3 && r->n_credentials == 1 &&
           find(r, "px-b")->capacity == 99 && !find(r, "px-a"),
       "the result holds the new content");
    ok(r->routing[1]->on_unavailable ==
           CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT,
       "with the replaced routing");
    ok(strcmp(r->session_id, EXPECT.session_id) == 0,
       "and the held identity");
    is_int(cp_snapshot_check(r, &EXPECT, NOW + 1000, NULL, NULL), R_OK,
           "CP-3-7: the result passes the full check");
  }
  cp_snapshot_free(res);

  /* CP-3-16: the wrong base. */
  cp_snapshot *other = std_next(0, 9);
  res = NULL;
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(nw), wire, &EXPECT,
                                 NOW + 1000, NULL, &res, &why),
         CP_DELTA_NEED_FULL,
         "CP-3-16: a delta on another base version: NEED_FULL");
  ok(!res, "and no snapshot");
  /* CP-3-16: the checksum does not match. */
  wire->checksum.data[0] ^= 1;
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &EXPECT,
                                 NOW + 1000, NULL, &res, &why),
         CP_DELTA_NEED_FULL, "CP-3-16: a wrong checksum: NEED_FULL");
  like(why, "checksum", "the reason names the checksum");
  wire->checksum.data[0] ^= 1;
  /* Expired by the time it arrives. */
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &EXPECT,
                                 NOW + 10000000, NULL, &res, &why),
         CP_DELTA_NEED_FULL, "CP-3-7: a delta whose valid_until passed: "
                             "NEED_FULL");
  /* Someone else's. */
  cp_expect other_id = {"c1", "w2", NULL};
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &other_id,
                                 NOW + 1000, NULL, &res, &why),
         CP_DELTA_NEED_FULL, "CP-2-2: a delta on another worker's: NEED_FULL");
  /* An older epoch. */
  wire->ownership_epoch = 2;
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &EXPECT,
                                 NOW + 1000, NULL, &res, &why),
         CP_DELTA_NEED_FULL, "CP-2-6: a lower ownership_epoch: NEED_FULL");
  wire->ownership_epoch = 3;
  /* Over the limits. */
  cp_snapshot_limits l = {1, 10, 10};
  is_int(cp_snapshot_apply_delta(cp_snapshot_msg(old), wire, &EXPECT,
                                 NOW + 1000, &l, &res, &why),
         CP_DELTA_NEED_FULL, "CP-8-3: a delta over the limits: NEED_FULL");
  controlplane__v1__snapshot_delta__free_unpacked(wire, NULL);
  cp_snapshot_free(other);
  cp_delta_free(d);
out:
  cp_snapshot_free(old);
  cp_snapshot_free(nw);
}

/* Hand-made deltas: the rules one by one. */
static void test_delta_rules(void) {
  cp_snapshot *held = std_snapshot();
  if (!held) {
    ok(0, "fixture");
    return;
  }
  const Snap *h = cp_snapshot_msg(held);
  Controlplane__V1__SnapshotDelta d = CONTROLPLANE__V1__SNAPSHOT_DELTA__INIT;
  Google__Protobuf__Timestamp vu = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
  cp_ms_to_ts(NOW + 30000, &vu);
  d.base_version = 7;
  d.version = 8;
  d.ownership_epoch = 3;
  d.valid_until = &vu;
  /* Remove px-c (no credential) and upsert a changed px-b. */
  char *rm[] = {"px-c"};
  d.removed_proxy_ids = rm;
  d.n_removed_proxy_ids = 1;
  Proxy pb = *find(h, "px-b");
  pb.weight = 7;
  Proxy *ups[] = {&pb};
  d.upserted_proxies = ups;
  d.n_upserted_proxies = 1;

  /* The checksum it must carry: the expected result's. */
  Snap want = *h;
  Proxy *wp[] = {h->proxies[0], &pb};
  want.proxies = wp;
  want.n_proxies = 2;
  want.version = 8;
  want.valid_until = &vu;
  uint8_t sum[CP_CHECKSUM_LEN];
  cp_checksum_snapshot(&want, sum);
  d.checksum.data = sum;
  d.checksum.len = CP_CHECKSUM_LEN;
  cp_snapshot *r = NULL;
  const char *why = NULL;
  is_int(cp_snapshot_apply_delta(h, &d, &EXPECT, NOW, NULL, &r, &why),
         CP_DELTA_OK, "CP-3-16: removed and upserted proxies apply");
  ok(r && cp_snapshot_msg(r)->n_proxies == 2 &&
         !find(cp_snapshot_msg(r), "px-c") &&
         find(cp_snapshot_msg(r), "px-b")->weight == 7,
     "px-c gone, px-b replaced");
  ok(r && cp_snapshot_msg(r)->n_routing == 2 &&
         strcmp(cp_snapshot_msg(r)->routing[0]->rule_id, "r-wait") == 0,
     "routing kept when not replaced");
  cp_snapshot_free(r);

  /* Routing replaced by an empty list. */
  d.routing_replaced = 1;
  want.n_routing = 0;
  cp_checksum_snapshot(&want, sum);
  r = NULL;
  is_int(cp_snapshot_apply_delta(h, &d, &EXPECT, NOW, NULL, &r, &why),
         CP_DELTA_OK, "routing_replaced with no rules applies");
  ok(r && cp_snapshot_msg(r)->n_routing == 0, "and leaves no rules");
  cp_snapshot_free(r);
  d.routing_replaced = 0;
  want.n_routing = h->n_routing;
  cp_checksum_snapshot(&want, sum);

  /* Removing every credentialed proxy drops the credential too. */
  char *rm_all[] = {"px-a", "px-b"};
  Controlplane__V1__SnapshotDelta d2 = d;
  d2.removed_proxy_ids = rm_all;
  d2.n_removed_proxy_ids = 2;
  d2.n_upserted_proxies = 0;
  Snap want2 = want;
  Proxy *wp2[] = {h->proxies[2]};
  want2.proxies = wp2;
  want2.n_proxies = 1;
  want2.n_credentials = 0;
  uint8_t sum2[CP_CHECKSUM_LEN];
  cp_checksum_snapshot(&want2, sum2);
  d2.checksum.data = sum2;
  r = NULL;
  is_int(cp_snapshot_apply_delta(h, &d2, &EXPECT, NOW, NULL, &r, &why),
         CP_DELTA_OK, "a delta removing every user of a credential applies");
  ok(r && cp_snapshot_msg(r)->n_credentials == 0,
     "CP-1-18: and the result no longer carries that credential");
  cp_snapshot_free(r);

  struct {
    const char *name;
    Controlplane__V1__SnapshotDelta d;
  } bad[12];
  int nb = 0;
  bad[nb].name = "CP-3-16: base_version 6 on version 7: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.base_version = 6;
  bad[nb].name = "a version not above its base: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.version = 7;
  char *rm_gone[] = {"px-zz"};
  bad[nb].name = "removing a proxy the held snapshot lacks: NEED_FULL";
  bad[nb].d = d;
  bad[nb].d.removed_proxy_ids = rm_gone;
  bad[nb++].d.n_removed_proxy_ids = 1;
  char *rm_b[] = {"px-b"};
  bad[nb].name = "removing and upserting one proxy: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.removed_proxy_ids = rm_b;
  Proxy *ups2[] = {&pb, &pb};
  bad[nb].name = "upserting one proxy twice: NEED_FULL";
  bad[nb].d = d;
  bad[nb].d.upserted_proxies = ups2;
  bad[nb++].d.n_upserted_proxies = 2;
  Proxy pn = pb;
  pn.proxy_id = "px-new";
  pn.credential_version = 5; /* vault/a version 5: not held */
  Proxy *ups3[] = {&pn};
  bad[nb].name = "CP-1-18: an upsert naming a credential not held: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.upserted_proxies = ups3;
  bad[nb].name = "rules without routing_replaced: NEED_FULL";
  bad[nb].d = d;
  bad[nb].d.routing = h->routing;
  bad[nb++].d.n_routing = h->n_routing;
  Proxy pz = pb;
  pz.port = 0;
  Proxy *ups4[] = {&pz};
  bad[nb].name = "an upserted proxy out of its bounds (port 0): NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.upserted_proxies = ups4;
  char *rm_empty[] = {""};
  bad[nb].name = "an empty removed id: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.removed_proxy_ids = rm_empty;
  bad[nb].name = "CP-3-7: no valid_until: NEED_FULL";
  bad[nb].d = d;
  bad[nb++].d.valid_until = NULL;
  for (int i = 0; i < nb; i++) {
    r = NULL;
    is_int(cp_snapshot_apply_delta(h, &bad[i].d, &EXPECT, NOW, NULL, &r, &why),
           CP_DELTA_NEED_FULL, bad[i].name);
    if (r) {
      ok(0, "no snapshot on NEED_FULL");
      cp_snapshot_free(r);
    }
  }
  is_int(cp_snapshot_apply_delta(NULL, &d, &EXPECT, NOW, NULL, &r, &why),
         CP_DELTA_NEED_FULL, "nothing held: NEED_FULL");
  cp_snapshot_free(held);
}

static void test_diff_rules(void) {
  cp_snapshot *old = std_snapshot();
  cp_build_input in = std_input();
  in.version = 8;
  cp_snapshot *same = NULL, *s = NULL;
  cp_snapshot_build(&in, &same, NULL);
  cp_delta *d = NULL;
  const char *why = NULL;
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(same), &d, &why),
         CP_DELTA_OK, "a new version with the same content is a delta");
  ok(d && !cp_delta_msg(d)->routing_replaced &&
         cp_delta_msg(d)->n_upserted_proxies == 0 &&
         cp_delta_msg(d)->n_removed_proxy_ids == 0,
     "an empty one");
  cp_snapshot *r = NULL;
  is_int(d ? (int)cp_snapshot_apply_delta(cp_snapshot_msg(old), cp_delta_msg(d),
                                     &EXPECT, NOW, NULL, &r, &why)
           : -1,
         CP_DELTA_OK, "that applies");
  cp_snapshot_free(r);
  cp_delta_free(d);
  d = NULL;
  is_int(cp_snapshot_diff(cp_snapshot_msg(same), cp_snapshot_msg(old), &d, &why),
         CP_DELTA_NEED_FULL, "a version going back: NEED_FULL");
  mut(same)->ownership_epoch = 2;
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(same), &d, &why),
         CP_DELTA_NEED_FULL, "CP-2-6: an ownership_epoch going back: NEED_FULL");
  mut(same)->ownership_epoch = 3;

  /* A new credential version: deltas carry no material. */
  in = std_input();
  in.version = 8;
  std_rows[0].credential_version = 2;
  cp_snapshot_build(&in, &s, NULL);
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(s), &d, &why),
         CP_DELTA_NEED_FULL,
         "CP-1-18: a credential the old snapshot lacks: NEED_FULL");
  ok(!d, "no delta");
  cp_snapshot_free(s);
  s = NULL;

  /* The same (ref, version) with other material. */
  in = std_input();
  in.version = 8;
  cp_snapshot_build(&in, &s, NULL);
  if (s)
    mut(s)->credentials[0]->password = "rotated";
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(s), &d, &why),
         CP_DELTA_NEED_FULL, "credential material changed: NEED_FULL");
  cp_snapshot_free(s);
  s = NULL;

  /* Another session. */
  in = std_input();
  in.version = 8;
  in.session_id = "another";
  cp_snapshot_build(&in, &s, NULL);
  is_int(cp_snapshot_diff(cp_snapshot_msg(old), cp_snapshot_msg(s), &d, &why),
         CP_DELTA_NEED_FULL, "CP-2-7: another session: NEED_FULL");
  cp_snapshot_free(s);
  cp_snapshot_free(same);
  cp_snapshot_free(old);
}

/* The reducer's verdict (CP-6-7): OwnedProxy.health from cp_owned.health,
 * in the checksum only when set, and a change of it alone goes out as a
 * delta that upserts that proxy. */
static void test_health(void) {
  cp_snapshot *old = std_snapshot();
  cp_build_input in = std_input();
  in.version = 8;
  std_owned[1].health = CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY;
  cp_snapshot *s = NULL;
  is_int(cp_snapshot_build(&in, &s, NULL), CP_BUILD_OK, "CP-6-7 builds");
  std_owned[1].health = 0;
  const Snap *m = s ? cp_snapshot_msg(s) : NULL;
  ok(m && m->n_proxies == 3 && m->proxies[0]->health == 0 &&
         m->proxies[1]->health ==
             CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY,
     "CP-6-7 OwnedProxy.health carries the reducer's verdict (px-b)");
  cp_delta *d = NULL;
  const char *why = NULL;
  is_int(m ? (int)cp_snapshot_diff(cp_snapshot_msg(old), m, &d, &why) : -1,
         CP_DELTA_OK, "CP-6-7 a health change alone is a delta");
  const Controlplane__V1__SnapshotDelta *dm = d ? cp_delta_msg(d) : NULL;
  ok(dm && dm->n_upserted_proxies == 1 &&
         strcmp(dm->upserted_proxies[0]->proxy_id, "px-b") == 0 &&
         dm->upserted_proxies[0]->health ==
             CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY,
     "CP-6-7 ... upserting that proxy with its health");
  cp_snapshot *r = NULL;
  is_int(dm ? (int)cp_snapshot_apply_delta(cp_snapshot_msg(old), dm, &EXPECT,
                                           NOW, NULL, &r, &why)
            : -1,
         CP_DELTA_OK, "CP-6-7 ... that applies (the checksum covers health)");
  ok(r && cp_snapshot_msg(r)->proxies[1]->health ==
              CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY,
     "CP-6-7 ... and the gateway's snapshot has it");
  cp_snapshot *same = NULL;
  in = std_input();
  in.version = 8;
  cp_snapshot_build(&in, &same, NULL);
  ok(m && same &&
         memcmp(m->checksum.data, cp_snapshot_msg(same)->checksum.data, 32),
     "CP-6-7 the checksum changes with a verdict (same version otherwise)");
  cp_snapshot_free(same);
  cp_snapshot_free(r);
  cp_delta_free(d);
  cp_snapshot_free(s);
  cp_snapshot_free(old);
}

/* ---- the shared lease form (issue 26) ------------------------------------
 * A renewal moves every owned proxy's lease; in the shared lease form it
 * moves the snapshot's two lease times only, so the delta that carries it
 * is the same few bytes for 3 proxies as for 300. */

static cp_snapshot *lease_build(size_t n, int shared, uint64_t version,
                                int64_t now, int64_t lease,
                                ph_pool_proxy_row *rows, cp_owned *owned) {
  for (size_t i = 0; i < n; i++) {
    char id[32];
    snprintf(id, sizeof id, "px-%04zu", i);
    rows[i] = prow(id, i % 2 ? "vault/a" : NULL, i % 2 ? 1 : 0);
    owned[i].proxy_id = rows[i].proxy_id;
    owned[i].lease_expiry_ms = lease;
  }
  if (n > 1) /* an own expiry before the lease sets that proxy's end */
    rows[1].expires_at_ms = NOW + 30000;
  if (n > 2) /* a later lease (assigned since the renewal) */
    owned[2].lease_expiry_ms = lease + 4000;
  cp_build_input in = base_input();
  in.proxies = rows;
  in.n_proxies = n;
  in.owned = owned;
  in.n_owned = n;
  in.now_ms = now;
  in.version = version;
  in.shared_lease = shared;
  cp_snapshot *s = NULL;
  return cp_snapshot_build(&in, &s, NULL) == CP_BUILD_OK ? s : NULL;
}

/* The packed size of the delta from a to b (0 when there is none). */
static size_t renewal_delta(cp_snapshot *a, cp_snapshot *b, size_t *upserted,
                            cp_snapshot **applied) {
  cp_delta *d = NULL;
  size_t n = 0;
  *upserted = (size_t)-1;
  if (a && b &&
      cp_snapshot_diff(cp_snapshot_msg(a), cp_snapshot_msg(b), &d, NULL) ==
          CP_DELTA_OK) {
    const Controlplane__V1__SnapshotDelta *dm = cp_delta_msg(d);
    n = controlplane__v1__snapshot_delta__get_packed_size(dm);
    *upserted = dm->n_upserted_proxies + dm->n_removed_proxy_ids;
    if (applied) { /* over the wire, as the gateway gets it */
      uint8_t *buf = malloc(n);
      controlplane__v1__snapshot_delta__pack(dm, buf);
      Controlplane__V1__SnapshotDelta *w =
          controlplane__v1__snapshot_delta__unpack(NULL, n, buf);
      free(buf);
      *applied = NULL;
      cp_snapshot_apply_delta(cp_snapshot_msg(a), w, &EXPECT, NOW + 11000,
                              NULL, applied, NULL);
      controlplane__v1__snapshot_delta__free_unpacked(w, NULL);
    }
  }
  cp_delta_free(d);
  return n;
}

static void test_shared_lease(void) {
  enum { BIG = 300 };
  static ph_pool_proxy_row rows[4][BIG];
  static cp_owned owned[4][BIG];
  int64_t lease = NOW + 60000;
  cp_snapshot *full = lease_build(3, 0, 7, NOW, lease, rows[0], owned[0]);
  cp_snapshot *sh = lease_build(3, 1, 7, NOW, lease, rows[1], owned[1]);
  if (!full || !sh) {
    ok(0, "shared lease fixtures build");
    goto out0;
  }
  const Snap *f = cp_snapshot_msg(full), *m = cp_snapshot_msg(sh);
  ok(!f->lease_expires_at && !f->lease_usable_until,
     "a worker that did not ask for it gets no shared lease (the old form)");
  ok(ms(m->lease_expires_at) == lease &&
         ms(m->lease_usable_until) == lease - MARGIN,
     "issue 26: the shared lease is the earliest delivered lease, "
     "usable_until = it - margin (CP-3-5)");
  ok(!find(m, "px-0000")->expires_at && !find(m, "px-0000")->usable_until,
     "a proxy with no expiry of its own carries no times");
  ok(ms(find(m, "px-0001")->expires_at) == NOW + 30000 &&
         ms(find(m, "px-0001")->usable_until) == NOW + 25000,
     "a proxy with its own expiry carries that one");
  {
    /* Equal leases (no proxy assigned since the renewal): both forms say
     * the same ends. */
    static ph_pool_proxy_row r2[2][2];
    static cp_owned o2[2][2];
    cp_snapshot *x = lease_build(2, 0, 7, NOW, lease, r2[0], o2[0]);
    cp_snapshot *y = lease_build(2, 1, 7, NOW, lease, r2[1], o2[1]);
    ok(x && y && cp_checksum_equal(&cp_snapshot_msg(x)->checksum,
                                   cp_snapshot_msg(y)->checksum.data),
       "CP-3-4: both forms of one snapshot have one checksum");
    cp_snapshot_free(x);
    cp_snapshot_free(y);
  }
  is_int(cp_snapshot_check(m, &EXPECT, NOW, NULL, NULL), R_OK,
         "CP-3-7: the shared lease form passes the gateway's check");
  int all = 1;
  for (size_t i = 0; i < m->n_proxies; i++) {
    int64_t e = 0, u = 0, fe = 0, fu = 0;
    const Proxy *fp = find(f, m->proxies[i]->proxy_id);
    all = all && cp_proxy_times(m, m->proxies[i], &e, &u) &&
          cp_proxy_times(f, fp, &fe, &fu) && e <= fe && u <= fu &&
          u == e - MARGIN && e <= owned[1][i].lease_expiry_ms;
  }
  ok(all, "CP-1-17: no proxy's end is later than its lease or than the "
          "old form's, usable_until = end - margin");
  int64_t e = 0, u = 0;
  ok(cp_proxy_times(m, find(m, "px-0002"), &e, &u) && e == lease &&
         u == lease - MARGIN,
     "a later lease (assigned since) ends with the shared one: earlier, "
     "never later");

  /* A renewal: every lease 10 s later, nothing else changed. */
  cp_snapshot *sh2 = lease_build(3, 1, 8, NOW + 10000, lease + 10000,
                                 rows[2], owned[2]);
  cp_snapshot *full2 = lease_build(3, 0, 8, NOW + 10000, lease + 10000,
                                   rows[3], owned[3]);
  size_t up = 0, upf = 0;
  cp_snapshot *res = NULL;
  size_t small = renewal_delta(sh, sh2, &up, &res);
  size_t fsz = renewal_delta(full, full2, &upf, NULL);
  is_int((long)up, 0, "issue 26: the renewal's delta upserts no proxy");
  ok(upf == 2, "the old form's upserts every lease-bound proxy (2 of 3)");
  ok(small > 0 && small < fsz, "and is the smaller");
  ok(res != NULL, "CP-3-16: the gateway applies the renewal's delta");
  if (res) {
    const Snap *r = cp_snapshot_msg(res);
    ok(cp_checksum_equal(&cp_snapshot_msg(sh2)->checksum, r->checksum.data) &&
           ms(r->lease_expires_at) == lease + 10000,
       "the result holds the renewed lease, with the full snapshot's "
       "checksum");
    ok(cp_proxy_times(r, find(r, "px-0000"), &e, &u) &&
           e == lease + 10000 && u == lease + 10000 - MARGIN,
       "and the proxies end with it");
  }
  cp_snapshot_free(res);
  cp_snapshot_free(sh2);
  cp_snapshot_free(full2);

  /* The same renewal over 300 proxies: the same delta size. */
  cp_snapshot *b1 = lease_build(BIG, 1, 7, NOW, lease, rows[0], owned[0]);
  cp_snapshot *b2 = lease_build(BIG, 1, 8, NOW + 10000, lease + 10000,
                                rows[1], owned[1]);
  size_t big = renewal_delta(b1, b2, &up, NULL);
  ok(big == small && up == 0,
     "issue 26: a renewal's delta does not grow with the owned set "
     "(3 and 300 proxies: the same bytes)");
  diag("renewal delta: %zu bytes (3 or 300 proxies); old form, 3: %zu", big,
       fsz);
  cp_snapshot_free(b1);
  cp_snapshot_free(b2);

  /* The check's rules on the new fields. */
  Snap *w = mut(sh);
  Google__Protobuf__Timestamp *keep = w->lease_usable_until;
  w->lease_usable_until = NULL;
  is_int(cp_snapshot_check(w, &EXPECT, NOW, NULL, NULL), R_MALFORMED,
         "CP-7-3: lease_expires_at without lease_usable_until: MALFORMED");
  w->lease_usable_until = keep;
  keep->seconds += 3600;
  resum(w);
  is_int(cp_snapshot_check(w, &EXPECT, NOW, NULL, NULL), R_MALFORMED,
         "lease_usable_until after lease_expires_at: MALFORMED");
  keep->seconds -= 3600;
  Proxy *p1 = (Proxy *)find(w, "px-0001");
  Google__Protobuf__Timestamp *pu = p1->usable_until;
  p1->usable_until = NULL;
  resum(w);
  is_int(cp_snapshot_check(w, &EXPECT, NOW, NULL, NULL), R_MALFORMED,
         "a proxy with one of its own times alone: MALFORMED");
  p1->usable_until = pu;
  Google__Protobuf__Timestamp *le = w->lease_expires_at;
  w->lease_expires_at = NULL;
  w->lease_usable_until = NULL;
  resum(w);
  is_int(cp_snapshot_check(w, &EXPECT, NOW, NULL, NULL), R_MALFORMED,
         "without the shared lease, a proxy without times: MALFORMED");
  w->lease_expires_at = le;
  w->lease_usable_until = keep;
  resum(w);
  is_int(cp_snapshot_check(w, &EXPECT, NOW, NULL, NULL), R_OK,
         "restored, it passes again");

  /* A delta that drops the shared lease while the held proxies have no
   * times: the result would have proxies without an end: NEED_FULL. */
  cp_snapshot *sh3 = lease_build(3, 1, 8, NOW + 10000, lease + 10000,
                                 rows[2], owned[2]);
  cp_delta *d = NULL;
  if (sh3 &&
      cp_snapshot_diff(m, cp_snapshot_msg(sh3), &d, NULL) == CP_DELTA_OK) {
    Controlplane__V1__SnapshotDelta *dm =
        (Controlplane__V1__SnapshotDelta *)cp_delta_msg(d);
    dm->lease_expires_at = NULL;
    dm->lease_usable_until = NULL;
    res = NULL;
    is_int(cp_snapshot_apply_delta(m, dm, &EXPECT, NOW + 11000, NULL, &res,
                                   NULL),
           CP_DELTA_NEED_FULL,
           "CP-3-16: a delta without the lease on a shared held snapshot: "
           "NEED_FULL");
    cp_snapshot_free(res);
  } else {
    ok(0, "the diff for the dropped-lease case");
  }
  cp_delta_free(d);
  cp_snapshot_free(sh3);
out0:
  cp_snapshot_free(full);
  cp_snapshot_free(sh);
}

int main(void) {
  plan_lazy();
  test_health();
  test_build_rules();
  test_build_arithmetic();
  test_build_credentials();
  test_build_validity();
  test_build_routing();
  test_build_limits();
  test_build_large();
  test_check();
  test_unknown_fields();
  test_unpack_response();
  test_delta_round_trip();
  test_delta_rules();
  test_diff_rules();
  test_shared_lease();
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The snapshot code's sort with its in-order fast path (cp_sort.h) and
 * what rests on it: a list in order is left as it is, any other comes out
 * sorted, ties count as in order; the checksum of one snapshot is the
 * same whatever the order of its proxies and credentials (the fast path
 * for the builder's order, the copy for any other: CP-3-4); the build's
 * merge walk finds every owned row whatever the order of the pool and of
 * the ownership index (CP-1-16); and what the single-pass build rests on
 * (t/bench/cpsnap's second round): over random pools with broken rows,
 * missing credentials and tight limits, every snapshot the builder returns
 * passes the full cp_snapshot_check (the builder checks only what its
 * construction does not guarantee), each (secret_ref, version) is
 * resolved at most once, and the credentials are exactly the distinct
 * ones the delivered proxies name, in order (CP-1-18). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_checksum.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_common/snapshot/cp_sort.h"
#include "rng_test.h"
#include "tap.h"

static int calls;
static int cmp_int(const void *a, const void *b) {
  calls++;
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static void test_sort(void) {
  int in_order[6] = {1, 2, 2, 3, 5, 8};
  calls = 0;
  cp_sort(in_order, 6, sizeof(int), cmp_int);
  is_int(calls, 5, "a list in order costs n - 1 comparisons");
  int same = in_order[0] == 1 && in_order[2] == 2 && in_order[5] == 8;
  ok(same, "and is left as it is (ties are in order)");
  int mixed[6] = {5, 1, 8, 2, 3, 2};
  cp_sort(mixed, 6, sizeof(int), cmp_int);
  ok(cp_is_sorted(mixed, 6, sizeof(int), cmp_int),
     "a list out of order comes out sorted");
  static const int want[6] = {1, 2, 2, 3, 5, 8};
  ok(memcmp(mixed, want, sizeof want) == 0, "with every element kept");
  int one = 7;
  cp_sort(&one, 1, sizeof(int), cmp_int);
  cp_sort(NULL, 0, sizeof(int), cmp_int);
  ok(one == 7, "one element and none are no-ops");
}

static int resolve(void *ud, const char *ref, uint64_t ver,
                   ph_pool_credential *out) {
  (void)ud;
  snprintf(out->secret_ref, sizeof out->secret_ref, "%s", ref);
  out->credential_version = ver;
  snprintf(out->username, sizeof out->username, "u-%s", ref);
  snprintf(out->password, sizeof out->password, "p-%s", ref);
  return 1;
}

#define N 64
#define NOW 1800000000000LL


/* A build of the given rows and ownership index for worker w1 of c1 at
 * NOW, with the default limits. */
static cp_build_input build_input(const ph_pool_proxy_row *rows, size_t np,
                                  const cp_owned *owned, size_t no,
                                  cp_credential_resolver resolve_fn) {
  cp_build_input in;
  memset(&in, 0, sizeof in);
  in.cluster_id = "c1";
  in.worker_id = "w1";
  in.session_id = "s1";
  in.proxies = rows;
  in.n_proxies = np;
  in.owned = owned;
  in.n_owned = no;
  in.resolve = resolve_fn;
  in.now_ms = NOW;
  in.version = 1;
  in.ownership_epoch = 1;
  in.allocation_safety_margin_ms = 5000;
  in.snapshot_validity_ms = 60000;
  cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
  in.limits = lim;
  return in;
}

static void test_checksum_and_build(void) {
  static ph_pool_proxy_row rows[N];
  static cp_owned owned[N];
  memset(rows, 0, sizeof rows);
  for (int i = 0; i < N; i++) {
    ph_pool_proxy_row *r = &rows[i];
    /* The pool in an order of its own: ids by (i * 37) mod N. */
    snprintf(r->proxy_id, sizeof r->proxy_id, "px-%03d", (i * 37) % N);
    r->protocol = PH_POOL_UPSTREAM_SOCKS5;
    snprintf(r->host, sizeof r->host, "10.0.0.%d", i);
    r->port = 1080;
    snprintf(r->groups[0], sizeof r->groups[0], "eu");
    r->n_groups = 1;
    r->capacity = 10;
    r->weight = 1;
    snprintf(r->secret_ref, sizeof r->secret_ref, "vault.k%d", i % 5);
    r->credential_version = 1;
    r->admin_state = PH_POOL_ADMIN_ACTIVE;
    /* The index in yet another order: reversed. */
    owned[N - 1 - i].proxy_id = r->proxy_id;
    owned[N - 1 - i].lease_expiry_ms = NOW + 60000;
  }
  cp_build_input in = build_input(rows, N, owned, N, resolve);
  cp_snapshot *s = NULL;
  cp_build_stats st;
  is_int(cp_snapshot_build(&in, &s, &st), CP_BUILD_OK,
         "CP-1-16: a build from a shuffled pool and a reversed index");
  if (!s)
    return;
  is_int(st.delivered, N, "CP-1-16: the merge walk found every owned row");
  is_int(st.not_found, 0, "and none was missed");
  Controlplane__V1__WorkerSnapshot *m =
      (Controlplane__V1__WorkerSnapshot *)cp_snapshot_msg(s);
  uint8_t in_order_sum[CP_CHECKSUM_LEN], other_sum[CP_CHECKSUM_LEN];
  ok(cp_checksum_snapshot(m, in_order_sum) == 0 &&
         cp_checksum_equal(&m->checksum, in_order_sum),
     "CP-3-4: the checksum of the builder's order (the fast path)");
  /* Reverse the proxies and the credentials in place: the slow path. */
  for (size_t i = 0; i < m->n_proxies / 2; i++) {
    Controlplane__V1__OwnedProxy *t = m->proxies[i];
    m->proxies[i] = m->proxies[m->n_proxies - 1 - i];
    m->proxies[m->n_proxies - 1 - i] = t;
  }
  for (size_t i = 0; i < m->n_credentials / 2; i++) {
    Controlplane__V1__Credential *t = m->credentials[i];
    m->credentials[i] = m->credentials[m->n_credentials - 1 - i];
    m->credentials[m->n_credentials - 1 - i] = t;
  }
  ok(cp_checksum_snapshot(m, other_sum) == 0 &&
         memcmp(in_order_sum, other_sum, CP_CHECKSUM_LEN) == 0,
     "CP-3-4: the same checksum with proxies and credentials reversed");
  is_int(cp_snapshot_check(m, NULL, NOW, NULL, NULL),
         CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED,
         "CP-3-7: the reordered snapshot still passes the check");
  cp_snapshot_free(s);
}

/* ---- random pools ------------------------------------------------------ */

static uint64_t rng = 88172645463325252u;
static uint32_t rnd(void) { return (uint32_t)(rng_test_next(&rng) >> 11); }

#define RP_MAX 300     /* rows per pool */
#define RP_ROUNDS 300

/* Records each (ref, version) asked; refs "missing.*" have no material. */
static char asked[RP_MAX][PH_POOL_SECRET_REF_MAX + 24];
static int n_asked, asked_twice;
static int resolve_rec(void *ud, const char *ref, uint64_t ver,
                       ph_pool_credential *out) {
  (void)ud;
  char key[sizeof asked[0]];
  snprintf(key, sizeof key, "%s#%llu", ref, (unsigned long long)ver);
  for (int i = 0; i < n_asked; i++)
    if (strcmp(asked[i], key) == 0)
      asked_twice = 1;
  if (n_asked < RP_MAX)
    snprintf(asked[n_asked++], sizeof asked[0], "%s", key);
  if (strncmp(ref, "missing", 7) == 0)
    return 0;
  return resolve(ud, ref, ver, out);
}

static void random_row(ph_pool_proxy_row *r, int i) {
  memset(r, 0, sizeof *r);
  /* 7919 is prime to 10,000: the ids are distinct, not in order. */
  snprintf(r->proxy_id, sizeof r->proxy_id, "px-%04u",
           (unsigned)(i * 7919) % 10000);
  r->protocol = 1 + (int)(rnd() % 3);
  snprintf(r->host, sizeof r->host, "h%u.example", rnd() % 100);
  r->port = (uint16_t)(1 + rnd() % 65535);
  r->n_groups = 1 + rnd() % 3;
  for (uint32_t g = 0; g < r->n_groups; g++)
    snprintf(r->groups[g], sizeof r->groups[g], "g%u", rnd() % 4);
  if (rnd() % 2)
    snprintf(r->zone, sizeof r->zone, "z%u", rnd() % 3);
  r->capacity = 1 + rnd() % 100;
  r->weight = 1 + rnd() % 1000;
  r->expires_at_ms = rnd() % 3 ? 0 : NOW + (int64_t)(rnd() % 120000);
  uint32_t k = rnd() % 8;
  if (k < 6) {
    snprintf(r->secret_ref, sizeof r->secret_ref, "%s.%u",
             k == 0 ? "missing" : "vault", rnd() % 12);
    r->credential_version = 1 + rnd() % 3;
  }
  uint32_t a = rnd() % 20;
  r->admin_state = a == 0   ? PH_POOL_ADMIN_DISABLED
                   : a == 1 ? PH_POOL_ADMIN_DRAINING
                            : PH_POOL_ADMIN_ACTIVE;
  if (rnd() % 6 == 0) /* one field out of its bounds */
    switch (rnd() % 8) {
    case 0: r->host[0] = '\t'; break;
    case 1: r->port = 0; break;
    case 2: r->protocol = 4; break;
    case 3: r->n_groups = 0; break;
    case 4: r->weight = 1001; break;
    case 5: r->credential_version = r->secret_ref[0] ? 0 : 2; break;
    case 6: r->groups[0][0] = '\0'; break;
    default: r->zone[0] = (char)0x80; break;
    }
}

static void test_random_pools(void) {
  static ph_pool_proxy_row rows[RP_MAX];
  static cp_owned owned[RP_MAX + 8];
  int n_ok = 0, n_toobig = 0, bad_check = 0, bad_creds = 0, saw_invalid = 0,
      saw_missing = 0;
  asked_twice = 0;
  for (int round = 0; round < RP_ROUNDS; round++) {
    size_t np = 1 + rnd() % RP_MAX, no = np + rnd() % 8;
    for (size_t i = 0; i < np; i++)
      random_row(&rows[i], (int)i);
    for (size_t i = 0; i < no; i++) {
      size_t j = rnd() % (np + 1);
      owned[i].proxy_id = j < np ? rows[j].proxy_id : "px-none";
      owned[i].lease_expiry_ms =
          NOW + (rnd() % 10 == 0 ? 1000 : 10000 + (int64_t)(rnd() % 90000));
    }
    cp_build_input in = build_input(rows, np, owned, no, resolve_rec);
    cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
    if (round % 5 == 3)
      lim.max_proxies = 1 + rnd() % (uint32_t)np;
    if (round % 7 == 4)
      lim.max_credentials = 1 + rnd() % 20;
    in.limits = lim;
    n_asked = 0;
    cp_snapshot *s = NULL;
    cp_build_stats st;
    cp_build_result res = cp_snapshot_build(&in, &s, &st);
    saw_invalid |= st.invalid > 0;
    saw_missing |= st.credential_missing > 0;
    n_toobig += res == CP_BUILD_ETOOBIG;
    if (res != CP_BUILD_OK)
      continue;
    n_ok++;
    const Controlplane__V1__WorkerSnapshot *m = cp_snapshot_msg(s);
    cp_expect ex = {"c1", "w1", "s1"};
    if (cp_snapshot_check(m, &ex, NOW, &lim, NULL) !=
        CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED)
      bad_check++;
    /* The distinct keys the delivered proxies name, by brute force. */
    size_t distinct = 0;
    for (size_t i = 0; i < m->n_proxies; i++) {
      const Controlplane__V1__OwnedProxy *p = m->proxies[i];
      if (!p->secret_ref[0])
        continue;
      int seen = 0;
      for (size_t j = 0; j < i && !seen; j++)
        seen = m->proxies[j]->credential_version == p->credential_version &&
               strcmp(m->proxies[j]->secret_ref, p->secret_ref) == 0;
      distinct += !seen;
    }
    if (m->n_credentials != distinct ||
        !cp_is_sorted(m->credentials, m->n_credentials,
                      sizeof *m->credentials, cp_credential_ptr_cmp))
      bad_creds++;
    for (size_t i = 1; i < m->n_credentials; i++)
      if (cp_credential_ptr_cmp(&m->credentials[i - 1], &m->credentials[i]) ==
          0)
        bad_creds++;
    cp_snapshot_free(s);
  }
  ok(n_ok >= RP_ROUNDS / 2 && n_toobig > 0 && saw_invalid && saw_missing,
     "random pools: builds that pass, fail on limits, skip broken rows and "
     "missing credentials");
  is_int(bad_check, 0,
         "CP-3-7: every snapshot the builder returns passes the full check");
  is_int(asked_twice, 0,
         "CP-1-18: each (secret_ref, version) is resolved at most once");
  is_int(bad_creds, 0,
         "CP-1-18: the credentials are the distinct ones the proxies name, "
         "in order");
}

int main(void) {
  plan_lazy();
  test_sort();
  test_checksum_and_build();
  test_random_pools();
  return done_testing();
}

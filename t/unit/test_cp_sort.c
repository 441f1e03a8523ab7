/* SPDX-License-Identifier: BSD-2-Clause */
/* The snapshot code's sort with its in-order fast path (cp_sort.h) and
 * what rests on it: a list in order is left as it is, any other comes out
 * sorted, ties count as in order; the checksum of one snapshot is the
 * same whatever the order of its proxies and credentials (the fast path
 * for the builder's order, the copy for any other: CP-3-4); the build's
 * merge walk finds every owned row whatever the order of the pool and of
 * the ownership index (CP-1-16). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_checksum.h"
#include "cp_snapshot.h"
#include "cp_sort.h"
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
  cp_build_input in;
  memset(&in, 0, sizeof in);
  in.cluster_id = "c1";
  in.worker_id = "w1";
  in.session_id = "s1";
  in.proxies = rows;
  in.n_proxies = N;
  in.owned = owned;
  in.n_owned = N;
  in.resolve = resolve;
  in.now_ms = NOW;
  in.version = 1;
  in.ownership_epoch = 1;
  in.allocation_safety_margin_ms = 5000;
  in.snapshot_validity_ms = 60000;
  cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
  in.limits = lim;
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

int main(void) {
  plan_lazy();
  test_sort();
  test_checksum_and_build();
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The fixed snapshot fuzz_cp_snapshot and fuzz_cp_delta work against
 * (three proxies, two of them sharing one credential, two rules, built at
 * CP_FUZZ_NOW for cluster c1, worker w1, session s1, version 7, epoch 3),
 * and the seed generator both targets carry under CP_FUZZ_SEEDGEN. */
#ifndef PH_CP_FUZZ_FIXTURE_H
#define PH_CP_FUZZ_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot.h"

#define CP_FUZZ_NOW 1800000000000LL

static const cp_expect cp_fuzz_expect = {"c1", "w1", "s1"};

static inline int cp_fuzz_resolve(void *ud, const char *ref, uint64_t ver,
                           ph_pool_credential *out) {
  (void)ud;
  snprintf(out->secret_ref, sizeof out->secret_ref, "%s", ref);
  out->credential_version = ver;
  snprintf(out->username, sizeof out->username, "user");
  snprintf(out->password, sizeof out->password, "pass");
  return 1;
}

static inline ph_pool_proxy_row cp_fuzz_row(const char *id, const char *ref,
                                     uint32_t capacity) {
  ph_pool_proxy_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.proxy_id, sizeof r.proxy_id, "%s", id);
  r.protocol = PH_POOL_UPSTREAM_HTTP_CONNECT;
  snprintf(r.host, sizeof r.host, "10.0.0.%zu", strlen(id));
  r.port = 3128;
  snprintf(r.groups[0], sizeof r.groups[0], "eu");
  r.n_groups = 1;
  r.capacity = capacity;
  r.weight = 10;
  if (ref) {
    snprintf(r.secret_ref, sizeof r.secret_ref, "%s", ref);
    r.credential_version = 1;
  }
  r.admin_state = PH_POOL_ADMIN_ACTIVE;
  return r;
}

/* variant 0: the held snapshot; 1: its successor (version 8: px-a gone,
 * px-b's capacity changed, px-d new, the second rule changed). */
static inline cp_snapshot *cp_fuzz_build(int variant) {
  ph_pool_proxy_row rows[4] = {
      cp_fuzz_row("px-a", "vault/a", 10), cp_fuzz_row("px-b", "vault/a", 10),
      cp_fuzz_row("px-c", NULL, 10), cp_fuzz_row("px-d", "vault/a", 5)};
  ph_pool_route_row routes[2];
  memset(routes, 0, sizeof routes);
  const char *rid[2] = {"r1", "r2"};
  for (int i = 0; i < 2; i++) {
    snprintf(routes[i].rule_id, sizeof routes[i].rule_id, "%s", rid[i]);
    routes[i].position = (uint32_t)i;
    routes[i].enabled = 1;
    snprintf(routes[i].host_pattern, sizeof routes[i].host_pattern, "*");
    snprintf(routes[i].target_group, sizeof routes[i].target_group, "eu");
    snprintf(routes[i].strategy, sizeof routes[i].strategy, "round_robin");
    routes[i].on_unavailable = PH_POOL_ON_UNAVAILABLE_WAIT;
    routes[i].wait_timeout_ms = 1000;
  }
  cp_owned owned[3] = {{"px-a", CP_FUZZ_NOW + 60000, 0, 0},
                       {"px-b", CP_FUZZ_NOW + 60000, 0, 0},
                       {"px-c", CP_FUZZ_NOW + 60000, 0, 0}};
  if (variant == 1) {
    rows[1].capacity = 20;
    owned[0].proxy_id = "px-d";
    routes[1].on_unavailable = PH_POOL_ON_UNAVAILABLE_DIRECT;
  }
  cp_build_input in;
  memset(&in, 0, sizeof in);
  in.cluster_id = cp_fuzz_expect.cluster_id;
  in.worker_id = cp_fuzz_expect.worker_id;
  in.session_id = cp_fuzz_expect.session_id;
  in.routes = routes;
  in.n_routes = 2;
  in.proxies = rows;
  in.n_proxies = 4;
  in.owned = owned;
  in.n_owned = 3;
  in.resolve = cp_fuzz_resolve;
  in.now_ms = CP_FUZZ_NOW;
  in.version = variant == 1 ? 8 : 7;
  in.ownership_epoch = 3;
  in.allocation_safety_margin_ms = 2000;
  in.snapshot_validity_ms = 30000;
  cp_snapshot_limits lim = CP_SNAPSHOT_LIMITS_DEFAULT;
  in.limits = lim;
  cp_snapshot *s = NULL;
  cp_snapshot_build(&in, &s, NULL);
  return s;
}

#endif

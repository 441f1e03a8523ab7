/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's keys and their cross-key rules (cpc_conf.h). */
#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/grpc/cp_grpc_held.h"
#include "cpc_conf.h"

/* cpc_conf_keys, the key table, is generated from
 * controlplane_client.ini.sample (its "; type:" lines) by
 * tools/gen_conf_keys.awk into cpc_conf_keys.c. The bounds this code
 * relies on are held again here, so that a sample declaring more fails
 * the start, closed: the identity strings and the transport's by
 * cp_grpc_client_read (cp_grpc_held.h), and below the uint32 times of
 * cp_sup_limits and the snapshot receiver's counts (CP-8-3). */
static const ph_conf_limit held[] = {
    {"runtime_interval.min", 100, 600000, 0},
    {"runtime_interval.max", 100, 600000, 0},
    {"max_stale.max", 1000, 86400000, 0},
    {"snapshot.max_proxies", 1, PH_POOL_PROXIES_MAX, 0},
    {"snapshot.max_routes", 1, PH_POOL_ROUTES_MAX, 0},
    {"snapshot.max_credentials", 1, PH_POOL_PROXIES_MAX, 0}};

int cpc_conf_read(ph_ctx *ctx, const ph_api *a, cpc_conf *c,
                  const char **key, char *why, size_t whylen) {
  memset(c, 0, sizeof(*c));
  *key = NULL;
  int rc = cp_grpc_client_read(ctx, a, "worker_id", &c->ident, held,
                               sizeof(held) / sizeof(held[0]), key, why,
                               whylen);
  if (rc != PH_OK)
    return rc;
  c->sup.backoff_min_ms = (uint32_t)a->conf_int(ctx, "backoff.min");
  c->sup.backoff_max_ms = (uint32_t)a->conf_int(ctx, "backoff.max");
  c->sup.runtime_min_ms = (uint32_t)a->conf_int(ctx, "runtime_interval.min");
  c->sup.runtime_max_ms = (uint32_t)a->conf_int(ctx, "runtime_interval.max");
  c->sup.max_stale_max_ms = (uint32_t)a->conf_int(ctx, "max_stale.max");
  c->rpc_timeout_ms = a->conf_int(ctx, "rpc_timeout");
  c->limits.max_proxies = (uint32_t)a->conf_int(ctx, "snapshot.max_proxies");
  c->limits.max_routes = (uint32_t)a->conf_int(ctx, "snapshot.max_routes");
  c->limits.max_credentials =
      (uint32_t)a->conf_int(ctx, "snapshot.max_credentials");
  static const ph_conf_order order[] = {
      {"backoff.min", "backoff.max", "backoff.max",
       "must be at least backoff.min"},
      {"runtime_interval.min", "runtime_interval.max", "runtime_interval.max",
       "must be at least runtime_interval.min"}};
  rc = ph_conf_orders(ctx, a, order, 2, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  return cp_grpc_conf_check_client(ctx, a, "address", key, why, whylen);
}

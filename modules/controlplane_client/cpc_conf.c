/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's keys and their cross-key rules (cpc_conf.h). */
#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cpc_conf.h"

#define ID_KEY(flag, name, env, help)                                         \
  PH_CONF_KEY_FLAG(flag, name, PH_CONF_STRING, NULL, 1, PH_POOL_ID_MAX,       \
                   PH_CONF_REQUIRED | PH_CONF_RESTART, env, help, NULL)

const ph_conf_key cpc_conf_keys[] = {
    PH_CONF_KEY_FLAG("control-plane", "address", PH_CONF_STRING, NULL, 1,
                     CPC_ADDRESS_MAX,
                     PH_CONF_REQUIRED | PH_CONF_RESTART,
                     "PROXY_POOL_CONTROL_PLANE_ADDRESS",
                     "host:port of the controller (its dialable address, "
                     "not its listen key), or of up to 4 controllers (IP "
                     "literals, comma-separated): the next on failure",
                     NULL),
    ID_KEY("cluster-id", "cluster_id", "PROXY_POOL_CLUSTER_ID",
           "the cluster the snapshots must belong to"),
    ID_KEY("worker-id", "worker_id", "PROXY_POOL_WORKER_ID",
           "the logical worker; the client certificate's SPIFFE id names it"),
    ID_KEY("instance-id", "instance_id", "PROXY_POOL_INSTANCE_ID",
           "this process (a new one per restart)"),
    ID_KEY("zone", "zone", "PROXY_POOL_ZONE", "this instance's zone"),
    CP_GRPC_TLS_KEYS,
    CP_GRPC_CLIENT_KEYS,
    CP_CLIENT_BACKOFF_KEYS,
    PH_CONF_KEY("runtime_interval.min", PH_CONF_DURATION, "1s", 100, 600000,
                PH_CONF_RESTART, NULL,
                "the controller's runtime_interval is raised to this", NULL),
    PH_CONF_KEY("runtime_interval.max", PH_CONF_DURATION, "30s", 100, 600000,
                PH_CONF_RESTART, NULL,
                "the controller's runtime_interval is lowered to this", NULL),
    PH_CONF_KEY("max_stale.max", PH_CONF_DURATION, "5m", 1000, 86400000,
                PH_CONF_RESTART, NULL,
                "the controller's max_stale_age is lowered to this (CP-3-18)",
                NULL),
    PH_CONF_KEY("rpc_timeout", PH_CONF_DURATION, "10s", 100, 300000,
                PH_CONF_RESTART, NULL,
                "deadline of each unary call (register, ack, runtime)", NULL),
    PH_CONF_KEY("snapshot.max_proxies", PH_CONF_INT, "10000", 1,
                PH_POOL_PROXIES_MAX, PH_CONF_RESTART, NULL,
                "a snapshot with more proxies is NACKed TOO_LARGE", NULL),
    PH_CONF_KEY("snapshot.max_routes", PH_CONF_INT, "1000", 1,
                PH_POOL_ROUTES_MAX, PH_CONF_RESTART, NULL,
                "a snapshot with more routing rules is NACKed TOO_LARGE",
                NULL),
    PH_CONF_KEY("snapshot.max_credentials", PH_CONF_INT, "10000", 1,
                PH_POOL_PROXIES_MAX, PH_CONF_RESTART, NULL,
                "a snapshot with more credentials is NACKed TOO_LARGE", NULL),
    {0}};

int cpc_conf_read(ph_ctx *ctx, const ph_api *a, cpc_conf *c,
                  const char **key, char *why, size_t whylen) {
  memset(c, 0, sizeof(*c));
  *key = NULL;
  static const char *const req[] = {"address", "cluster_id", "worker_id",
                                    "instance_id", "zone"};
  char *const dst[] = {c->address, c->cluster_id, c->worker_id,
                       c->instance_id, c->zone};
  const size_t cap[] = {sizeof(c->address), sizeof(c->cluster_id),
                        sizeof(c->worker_id), sizeof(c->instance_id),
                        sizeof(c->zone)};
  int rc = cp_conf_identity(ctx, a, req, dst, cap, 5, key, why, whylen);
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

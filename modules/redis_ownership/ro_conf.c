/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_ownership's keys: see ro_conf.h and redis_ownership.ini.sample. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "ro_conf.h"

/* ro_conf_keys, the key table, is generated from redis_ownership.ini.sample
 * (its "; type:" lines) by tools/gen_conf_keys.awk into ro_conf_keys.c.
 * cluster_id's maximum there is PH_POOL_ID_MAX, which ro_conf_read checks
 * again (a longer id fails the start, closed). */

int ro_valid_id(const char *s, size_t max) {
  return max ? ph_conf_id_ok(s, 1, max)
             : ph_conf_id_ok(s, 0, PH_POOL_NAME_MAX);
}

static int parse_address(const ph_api *api, const char *s, ro_conn_conf *c,
                         char *why, size_t whylen) {
  memset(c->host, 0, sizeof(c->host));
  memset(c->unix_path, 0, sizeof(c->unix_path));
  if (s[0] == '/') {
    if (strlen(s) >= sizeof(c->unix_path)) {
      snprintf(why, whylen, "unix socket path longer than %zu bytes",
               sizeof(c->unix_path) - 1);
      return PH_EINVAL;
    }
    snprintf(c->unix_path, sizeof(c->unix_path), "%s", s);
    return PH_OK;
  }
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (api->parse_listen_addr(s, &ss, &len, why, whylen) != PH_OK)
    return PH_EINVAL;
  const void *a;
  if (ss.ss_family == AF_INET) {
    a = &((struct sockaddr_in *)&ss)->sin_addr;
    c->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  } else {
    a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    c->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  }
  if (c->port == 0 ||
      !inet_ntop(ss.ss_family, a, c->host, (socklen_t)sizeof(c->host))) {
    snprintf(why, whylen, "'%s': port 0 is not a Redis address", s);
    return PH_EINVAL;
  }
  return PH_OK;
}

int ro_conf_read(ph_ctx *ctx, const ph_api *api, ro_conf *c,
                 const char **key, char *why, size_t whylen) {
  memset(c, 0, sizeof(*c));
  *key = "address";
  if (parse_address(api, api->conf_str(ctx, "address"), &c->conn, why,
                    whylen) != PH_OK)
    return PH_EINVAL;
  const char *id = api->conf_str(ctx, "cluster_id");
  if (!ro_valid_id(id, PH_POOL_ID_MAX))
    return ph_conf_fail(key, "cluster_id", why, whylen,
                        "must be 1-%d bytes of [A-Za-z0-9._-]",
                        PH_POOL_ID_MAX);
  snprintf(c->cluster_id, sizeof(c->cluster_id), "%s", id);
  snprintf(c->conn.key, sizeof(c->conn.key), "ph:cp:{%s}:epoch", id);
  snprintf(c->conn.prefix, sizeof(c->conn.prefix), "ph:cp:{%s}:", id);
  snprintf(c->conn.password, sizeof(c->conn.password), "%s",
           api->conf_str(ctx, "password"));
  c->conn.database = api->conf_int(ctx, "database");
  c->conn.command_timeout_ms = api->conf_int(ctx, "command_timeout");
  c->conn.max_inflight = api->conf_int(ctx, "max_inflight");
  c->conn.reconnect_min_ms = api->conf_int(ctx, "reconnect.min");
  c->conn.reconnect_max_ms = api->conf_int(ctx, "reconnect.max");
  static const ph_conf_order order = {"reconnect.min", "reconnect.max",
                                      "reconnect.max",
                                      "must be at least reconnect.min"};
  if (ph_conf_orders(ctx, api, &order, 1, key, why, whylen) != PH_OK)
    return PH_EINVAL;
  c->session_ttl_ms = api->conf_int(ctx, "session_ttl");
  c->runtime_ttl_ms = api->conf_int(ctx, "runtime_ttl");
  c->lease_ms = api->conf_int(ctx, "ownership_lease");
  c->hold_fresh = (int)api->conf_int(ctx, "hold_fresh_state");
  c->max_owned = api->conf_int(ctx, "max_owned_per_worker");
  c->rebalance_max = api->conf_int(ctx, "rebalance_max");
  c->max_refs = api->conf_int(ctx, "max_issued_refs");
  c->max_workers = api->conf_int(ctx, "max_workers");
  *key = NULL;
  return PH_OK;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_ownership's keys: see ro_conf.h and redis_ownership.ini.sample. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "ro_conf.h"

#define H 3600000

const ph_conf_key ro_conf_keys[] = {
    PH_CONF_KEY("address", PH_CONF_STRING, "127.0.0.1:6379", 1, 107,
                PH_CONF_RESTART, NULL,
                "Redis: IPv4:PORT, [IPv6]:PORT (numeric) or a unix socket "
                "path (starting with /)",
                NULL),
    PH_CONF_KEY("password", PH_CONF_STRING, "", 0, 255,
                PH_CONF_SENSITIVE | PH_CONF_RESTART, NULL,
                "AUTH password (empty: no AUTH)", NULL),
    PH_CONF_KEY("database", PH_CONF_INT, "0", 0, 15, PH_CONF_RESTART, NULL,
                "Redis database number (SELECT)", NULL),
    PH_CONF_KEY("cluster_id", PH_CONF_STRING, "default", 1, PH_POOL_ID_MAX,
                PH_CONF_RESTART, NULL,
                "the cluster whose keys (ph:cp:{cluster_id}:) this instance "
                "serves; [A-Za-z0-9._-]",
                NULL),
    PH_CONF_KEY("session_ttl", PH_CONF_DURATION, "30s", 1000, H,
                PH_CONF_RESTART, NULL,
                "a worker session's server-side TTL, renewed by accepted "
                "runtime reports",
                NULL),
    PH_CONF_KEY("runtime_ttl", PH_CONF_DURATION, "15s", 1000, H,
                PH_CONF_RESTART, NULL,
                "how long a runtime report's counts stay valid", NULL),
    PH_CONF_KEY("ownership_lease", PH_CONF_DURATION, "30s", 1000, H,
                PH_CONF_RESTART, NULL,
                "a proxy owner's lease, renewed by its accepted runtime "
                "reports",
                NULL),
    PH_CONF_KEY("hold_fresh_state", PH_CONF_BOOL, "true", 0, 0,
                PH_CONF_RESTART, NULL,
                "after finding Redis without the cluster's state (a first "
                "start, or its data lost), assign no proxy for one "
                "ownership_lease, so that no ownership a gateway may still "
                "use goes to another (CP-4-1); false gives every proxy "
                "afresh at once, and for up to one ownership_lease two "
                "gateways then use the same proxy: only where Redis cannot "
                "lose acknowledged writes",
                NULL),
    PH_CONF_KEY("rebalance_max", PH_CONF_INT, "8", 0, PH_POOL_PROXIES_MAX,
                PH_CONF_RESTART, NULL,
                "proxies moved at once from the worker owning the most "
                "capacity to one owning less (a joining or returning "
                "worker's share), each through the drain; 0: no "
                "rebalancing",
                NULL),
    PH_CONF_KEY("max_owned_per_worker", PH_CONF_INT, "1024", 1, 100000,
                PH_CONF_RESTART, NULL,
                "proxies one worker may own (its ownership index), and "
                "counters in one runtime report",
                NULL),
    PH_CONF_KEY("max_issued_refs", PH_CONF_INT, "8", 1, 1024,
                PH_CONF_RESTART, NULL,
                "issued snapshot references kept per session (the oldest "
                "go first)",
                NULL),
    PH_CONF_KEY("max_workers", PH_CONF_INT, "1024", 1, 65536,
                PH_CONF_RESTART, NULL,
                "workers the cluster knows at once (the workers set)", NULL),
    PH_CONF_KEY("command_timeout", PH_CONF_DURATION, "1s", 10, 60000,
                PH_CONF_RESTART, NULL,
                "every call, and connect + handshake, answer within this "
                "(else UNAVAILABLE)",
                NULL),
    PH_CONF_KEY("max_inflight", PH_CONF_INT, "1024", 1, 65536,
                PH_CONF_RESTART, NULL,
                "calls in flight at once; one more is refused (PH_EFULL)",
                NULL),
    PH_CONF_KEY("reconnect.min", PH_CONF_DURATION, "100ms", 10, 60000,
                PH_CONF_RESTART, NULL,
                "first reconnect delay (jittered, doubling)", NULL),
    PH_CONF_KEY("reconnect.max", PH_CONF_DURATION, "5s", 100, 300000,
                PH_CONF_RESTART, NULL,
                "largest reconnect delay (at least reconnect.min)", NULL),
    PH_CONF_END};

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

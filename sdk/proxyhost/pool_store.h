/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "pool.store" service (ABI 1.4): the proxy pool's
 * configuration (upstream proxies, credential references, routing rules:
 * the v10 tables) as the control plane's controller reads it, behind one
 * contract with two providers, store_sqlite and store_pg.
 *
 * The rows are plain structs with fixed-size fields (copyable by value, no
 * ownership questions): the one vocabulary between the stores, the
 * snapshot builder and the controller. Bounds are the PH_POOL_*_MAX below;
 * a provider validates every row it writes against them and a consumer may
 * rely on them. Strings are NUL-terminated.
 *
 * The service's vtable (ph_pool_store_v1) follows the rows.
 *
 * Credential material never appears here: a proxy carries only a
 * secret_ref and a credential_version (the v10 tables keep exactly that).
 * The controller resolves a secret_ref to its material in memory at
 * snapshot build (docs/user-guide/controller.md, "Credentials").
 */
#ifndef PROXYHOST_POOL_STORE_H
#define PROXYHOST_POOL_STORE_H

#include <stdint.h>

#define PH_POOL_ID_MAX 128        /* ids: proxy, rule, worker, session, cluster */
#define PH_POOL_HOST_MAX 255      /* a host name or address literal */
#define PH_POOL_GROUP_MAX 64      /* a target group's name */
#define PH_POOL_GROUPS_MAX 8      /* groups one proxy belongs to */
#define PH_POOL_NAME_MAX 64       /* strategy, listener, zone, client identity */
#define PH_POOL_STICKY_MAX 80     /* "username" or "header:<Name>" */
#define PH_POOL_SECRET_REF_MAX 128
#define PH_POOL_CAPACITY_MAX 1000000u
#define PH_POOL_WEIGHT_MAX 1000u
#define PH_POOL_WAIT_TIMEOUT_MAX_MS 60000u
#define PH_POOL_PROXIES_MAX 100000u /* proxies in one cluster's pool */
#define PH_POOL_ROUTES_MAX 10000u   /* routing rules */

/* Same numbers as the proto enums (controlplane.v1.UpstreamProtocol,
 * OnUnavailable), so a row converts by value. */
typedef enum ph_pool_upstream_protocol {
  PH_POOL_UPSTREAM_HTTP_CONNECT = 1,
  PH_POOL_UPSTREAM_SOCKS5 = 2,
  PH_POOL_UPSTREAM_HTTP = 3
} ph_pool_upstream_protocol;

typedef enum ph_pool_on_unavailable {
  PH_POOL_ON_UNAVAILABLE_REJECT = 1,
  PH_POOL_ON_UNAVAILABLE_WAIT = 2,
  PH_POOL_ON_UNAVAILABLE_DIRECT = 3
} ph_pool_on_unavailable;

/* The admin state an operator sets (proxyhostctl proxy drain|disable). */
typedef enum ph_pool_admin_state {
  PH_POOL_ADMIN_ACTIVE = 1,   /* usable */
  PH_POOL_ADMIN_DRAINING = 2, /* delivered with draining=true: no new
                            reservation, ownership cleared at zero */
  PH_POOL_ADMIN_DISABLED = 3  /* not delivered at all */
} ph_pool_admin_state;

/* One upstream proxy (table pool_proxies). */
typedef struct ph_pool_proxy_row {
  char proxy_id[PH_POOL_ID_MAX + 1];   /* [a-z0-9._-], 1..PH_POOL_ID_MAX */
  int protocol;                   /* ph_pool_upstream_protocol */
  char host[PH_POOL_HOST_MAX + 1];
  uint16_t port;                  /* 1..65535 */
  char groups[PH_POOL_GROUPS_MAX][PH_POOL_GROUP_MAX + 1]; /* n_groups used */
  uint32_t n_groups;              /* 1..PH_POOL_GROUPS_MAX */
  char zone[PH_POOL_NAME_MAX + 1];     /* may be empty */
  uint32_t capacity;              /* 1..PH_POOL_CAPACITY_MAX */
  uint32_t weight;                /* 1..PH_POOL_WEIGHT_MAX */
  int64_t expires_at_ms;          /* the proxy's own hard expiry, Unix ms
                                     UTC; 0 = none */
  char secret_ref[PH_POOL_SECRET_REF_MAX + 1]; /* empty = no credentials */
  uint64_t credential_version;    /* with a secret_ref: >= 1 */
  int admin_state;                /* ph_pool_admin_state */
} ph_pool_proxy_row;

/* One routing rule (table pool_routes), in the order `position` gives. */
typedef struct ph_pool_route_row {
  char rule_id[PH_POOL_ID_MAX + 1];
  uint32_t position;              /* the configured order, ascending */
  int enabled;                    /* admin state: 0 = not delivered */
  char host_pattern[PH_POOL_HOST_MAX + 1]; /* "*", "name", "*.suffix" */
  uint16_t port_min, port_max;    /* 0 0 = any; else 1..65535, min<=max */
  char client_identity[PH_POOL_NAME_MAX + 1]; /* empty = any */
  char listener[PH_POOL_NAME_MAX + 1];        /* empty = any */
  char target_group[PH_POOL_GROUP_MAX + 1];
  char strategy[PH_POOL_NAME_MAX + 1]; /* a strategy module's name */
  int on_unavailable;             /* ph_pool_on_unavailable */
  uint32_t wait_timeout_ms;       /* WAIT: 1..PH_POOL_WAIT_TIMEOUT_MAX_MS */
  char sticky_key[PH_POOL_STICKY_MAX + 1];
} ph_pool_route_row;

/* Credential material, resolved in memory only (CP-8-5). */
typedef struct ph_pool_credential {
  char secret_ref[PH_POOL_SECRET_REF_MAX + 1];
  uint64_t credential_version;
  char username[256];
  char password[256];
} ph_pool_credential;

#endif

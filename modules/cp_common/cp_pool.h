/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The proxy pool's configuration as the controller reads it: plain rows
 * with fixed-size fields (no ownership questions, copyable by value), the
 * one vocabulary between the pool store (store_sqlite, store_pg: the v10
 * tables), the snapshot builder (cp_snapshot) and the controller.
 *
 * Pure: no I/O, no allocation. Bounds are the CP_*_MAX below; every
 * producer validates against them (cp_pool_*_check) and a consumer may
 * rely on them. Strings are NUL-terminated.
 *
 * Credential material never appears here: a proxy carries only a
 * secret_ref and a credential_version (the v10 tables keep exactly that).
 * The controller resolves a secret_ref to its material in memory at
 * snapshot build (docs/user-guide/controller.md, "Credentials").
 */
#ifndef PH_CP_POOL_H
#define PH_CP_POOL_H

#include <stdint.h>

#define CP_ID_MAX 128        /* ids: proxy, rule, worker, session, cluster */
#define CP_HOST_MAX 255      /* a host name or address literal */
#define CP_GROUP_MAX 64      /* a target group's name */
#define CP_GROUPS_MAX 8      /* groups one proxy belongs to */
#define CP_NAME_MAX 64       /* strategy, listener, zone, client identity */
#define CP_STICKY_MAX 80     /* "username" or "header:<Name>" */
#define CP_SECRET_REF_MAX 128
#define CP_CAPACITY_MAX 1000000u
#define CP_WEIGHT_MAX 1000u
#define CP_WAIT_TIMEOUT_MAX_MS 60000u
#define CP_POOL_PROXIES_MAX 100000u /* proxies in one cluster's pool */
#define CP_POOL_ROUTES_MAX 10000u   /* routing rules */

/* Same numbers as the proto enums (controlplane.v1.UpstreamProtocol,
 * OnUnavailable), so a row converts by value. */
typedef enum cp_upstream_protocol {
  CP_UPSTREAM_HTTP_CONNECT = 1,
  CP_UPSTREAM_SOCKS5 = 2,
  CP_UPSTREAM_HTTP = 3
} cp_upstream_protocol;

typedef enum cp_on_unavailable {
  CP_ON_UNAVAILABLE_REJECT = 1,
  CP_ON_UNAVAILABLE_WAIT = 2,
  CP_ON_UNAVAILABLE_DIRECT = 3
} cp_on_unavailable;

/* The admin state an operator sets (proxyhostctl proxy drain|disable). */
typedef enum cp_admin_state {
  CP_ADMIN_ACTIVE = 1,   /* usable */
  CP_ADMIN_DRAINING = 2, /* delivered with draining=true: no new
                            reservation, ownership cleared at zero */
  CP_ADMIN_DISABLED = 3  /* not delivered at all */
} cp_admin_state;

/* One upstream proxy (table pool_proxies). */
typedef struct cp_proxy_row {
  char proxy_id[CP_ID_MAX + 1];   /* [a-z0-9._-], 1..CP_ID_MAX */
  int protocol;                   /* cp_upstream_protocol */
  char host[CP_HOST_MAX + 1];
  uint16_t port;                  /* 1..65535 */
  char groups[CP_GROUPS_MAX][CP_GROUP_MAX + 1]; /* n_groups used */
  uint32_t n_groups;              /* 1..CP_GROUPS_MAX */
  char zone[CP_NAME_MAX + 1];     /* may be empty */
  uint32_t capacity;              /* 1..CP_CAPACITY_MAX */
  uint32_t weight;                /* 1..CP_WEIGHT_MAX */
  int64_t expires_at_ms;          /* the proxy's own hard expiry, Unix ms
                                     UTC; 0 = none */
  char secret_ref[CP_SECRET_REF_MAX + 1]; /* empty = no credentials */
  uint64_t credential_version;    /* with a secret_ref: >= 1 */
  int admin_state;                /* cp_admin_state */
} cp_proxy_row;

/* One routing rule (table pool_routes), in the order `position` gives. */
typedef struct cp_route_row {
  char rule_id[CP_ID_MAX + 1];
  uint32_t position;              /* the configured order, ascending */
  int enabled;                    /* admin state: 0 = not delivered */
  char host_pattern[CP_HOST_MAX + 1]; /* "*", "name", "*.suffix" */
  uint16_t port_min, port_max;    /* 0 0 = any; else 1..65535, min<=max */
  char client_identity[CP_NAME_MAX + 1]; /* empty = any */
  char listener[CP_NAME_MAX + 1];        /* empty = any */
  char target_group[CP_GROUP_MAX + 1];
  char strategy[CP_NAME_MAX + 1]; /* a strategy module's name */
  int on_unavailable;             /* cp_on_unavailable */
  uint32_t wait_timeout_ms;       /* WAIT: 1..CP_WAIT_TIMEOUT_MAX_MS */
  char sticky_key[CP_STICKY_MAX + 1];
} cp_route_row;

/* Credential material, resolved in memory only (CP-8-5). */
typedef struct cp_credential {
  char secret_ref[CP_SECRET_REF_MAX + 1];
  uint64_t credential_version;
  char username[256];
  char password[256];
} cp_credential;

#endif

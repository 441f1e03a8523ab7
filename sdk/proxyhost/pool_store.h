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

#include <stddef.h>
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

/* Credential material, resolved in memory only. */
typedef struct ph_pool_credential {
  char secret_ref[PH_POOL_SECRET_REF_MAX + 1];
  uint64_t credential_version;
  char username[256];
  char password[256];
} ph_pool_credential;

/* ---- the "pool.store" service (ABI 1.4) ----------------------------------
 *
 * Service name "pool.store", major 1 (PH_POOL_STORE_MAJOR). Get it at
 * start with service_get_named(ctx, PH_POOL_STORE_SERVICE, provider,
 * PH_POOL_STORE_MAJOR, 0, &self). A store registers it beside "access"
 * and "authz.store"; its database is at schema v10 whenever it runs (a
 * store refuses to start on an older schema it may not upgrade).
 *
 * Threads, callbacks and ownership: as authz_store.h. Loop thread only,
 * for every call and every callback; a store never blocks the loop
 * (store_sqlite runs statements on host helper threads, store_pg talks to
 * PostgreSQL asynchronously on the loop). Exactly one callback per
 * accepted call, never from inside the call, never after cancel returned.
 * What a result points to is valid only during the callback: copy what
 * you keep. The provider copies the request before the call returns.
 * Requests unanswered when the provider is destroyed are dropped without
 * a call.
 *
 * The pool revision: every write raises pool_revision by exactly one in
 * the same transaction as its change; a write that fails changes neither
 * the data nor the revision. After a write committed, revision() reports
 * the new revision before the write's callback runs. The controller polls
 * revision() (no I/O) and takes a new snapshot() when it moved.
 *
 * Validation: every field is checked against the PH_POOL_* bounds before
 * the database sees it (modules/store_common/pool_validate.h, the same
 * code in both stores and the admin API); a refusal is PH_EINVAL with a
 * short operator-facing detail naming the field ("port must be
 * 1..65535"), never quoting a value. Ids, groups, zones, strategies,
 * listeners and secret_refs are [a-z0-9._-] starting with a letter or a
 * digit (zone, listener and client_identity may be empty).
 */
#define PH_POOL_STORE_SERVICE "pool.store"
#define PH_POOL_STORE_MAJOR 1
#define PH_POOL_STORE_MINOR 0

#define PH_POOL_LIST_MAX 1000u /* rows per list call */

/* Statuses: a ph_status (abi.h) or one of authz_store.h's
 * PH_AZ_EUNAVAILABLE (the database did not answer; nothing changed) and
 * PH_AZ_EOUTCOME (the connection was lost during the commit: list to
 * know). PH_EINVAL a field out of bounds; PH_ENOENT no such record, or
 * one it refers to is missing (a proxy's secret_ref); PH_EEXIST the id,
 * secret_ref or route position is taken; PH_EBUSY delete of a credential
 * reference proxies still use; PH_ESTATE expect_revision did not match;
 * PH_ELIMIT a snapshot over PH_POOL_PROXIES_MAX or PH_POOL_ROUTES_MAX, or
 * a create beyond them (credential references are bounded by
 * PH_POOL_PROXIES_MAX too); PH_EFULL the store's bound on calls in
 * flight. */

/* What a call is about. */
typedef enum ph_pool_kind {
  PH_POOL_KIND_PROXY = 1,
  PH_POOL_KIND_ROUTE = 2,
  PH_POOL_KIND_CREDENTIAL = 3
} ph_pool_kind;

/* A credential reference (table pool_credentials): never material. */
typedef struct ph_pool_credential_ref {
  char secret_ref[PH_POOL_SECRET_REF_MAX + 1];
  uint64_t credential_version; /* >= 1; rotate raises it by one */
} ph_pool_credential_ref;

typedef enum ph_pool_action {
  PH_POOL_CREATE = 1,    /* a new proxy, route or credential reference;
                            a proxy's credential_version is ignored (it
                            is its credential's) */
  PH_POOL_UPDATE = 2,    /* replaces every field of the record its key
                            (proxy_id, rule_id) names, but a route's
                            position (use MOVE); not for credentials
                            (ROTATE) */
  PH_POOL_DELETE = 3,    /* the record its key names; a credential only
                            while no proxy refers to it (PH_EBUSY) */
  PH_POOL_MOVE = 4,      /* route: to u.route.position, which must be
                            free (positions are sparse: leave gaps) */
  PH_POOL_SET_STATE = 5, /* proxy: u.proxy.admin_state only (drain,
                            disable, enable) */
  PH_POOL_ROTATE = 6     /* credential: credential_version + 1 (the
                            material changed under the same secret_ref) */
} ph_pool_action;

/* A write. size = sizeof(ph_pool_write) of the caller's headers; zero
 * what you do not use. */
typedef struct ph_pool_write {
  uint32_t size;
  int action;               /* ph_pool_action */
  int kind;                 /* ph_pool_kind */
  uint64_t expect_revision; /* 0: none; else the write is refused with
                               PH_ESTATE unless pool_revision is this
                               (read-modify-write without lost updates) */
  union {
    ph_pool_proxy_row proxy;
    ph_pool_route_row route;
    ph_pool_credential_ref credential;
  } u;
  void *reserved[4];
} ph_pool_write;

typedef struct ph_pool_write_result {
  uint32_t size;     /* the provider's sizeof */
  int status;        /* PH_OK or a status above */
  uint64_t revision; /* PH_OK: the pool revision after the write */
  int kind;          /* PH_OK and not a delete: which member is set */
  union {
    ph_pool_proxy_row proxy;
    ph_pool_route_row route;
    ph_pool_credential_ref credential;
  } u;               /* the record as stored */
  const char *detail; /* not PH_OK: a short reason, never data; may be
                         NULL */
  void *reserved[4];
} ph_pool_write_result;

typedef void (*ph_pool_write_cb)(void *arg, const ph_pool_write_result *res);

/* A page of one kind: proxies by proxy_id, credentials by secret_ref
 * (both after `after`, exclusive; NULL from the start), routes by
 * position (from from_position, inclusive; 0 from the start: the next
 * page starts at the last position + 1). key not NULL: only the record
 * with that id (n is 0 or 1). limit 1..PH_POOL_LIST_MAX. */
typedef struct ph_pool_list {
  uint32_t size;
  int kind;
  const char *after;
  int64_t from_position; /* routes; 0..UINT32_MAX + 1 */
  const char *key;
  uint32_t limit;
  void *reserved[4];
} ph_pool_list;

typedef struct ph_pool_list_result {
  uint32_t size;
  int status;
  int kind;
  const ph_pool_proxy_row *proxies;          /* kind PROXY: n rows */
  const ph_pool_route_row *routes;           /* kind ROUTE */
  const ph_pool_credential_ref *credentials; /* kind CREDENTIAL */
  size_t n;
  int more;          /* rows remain after the last */
  uint64_t revision; /* the pool revision the rows were read at */
  void *reserved[4];
} ph_pool_list_result;

typedef void (*ph_pool_list_cb)(void *arg, const ph_pool_list_result *res);

/* The whole configuration, read in one transaction (one consistent
 * state): the controller's input for snapshots. Routes in position order
 * (ascending), proxies by proxy_id with their groups (sorted) and their
 * credential's current version, credential references by secret_ref;
 * every secret_ref a proxy names is among them. revision is the pool
 * revision of exactly this state. */
typedef struct ph_pool_snapshot {
  uint32_t size;
  int status; /* PH_OK, PH_ELIMIT (over PH_POOL_*_MAX: fail closed, no
                 rows), or PH_AZ_EUNAVAILABLE */
  uint64_t revision;
  const ph_pool_route_row *routes;
  size_t n_routes;
  const ph_pool_proxy_row *proxies;
  size_t n_proxies;
  const ph_pool_credential_ref *credentials;
  size_t n_credentials;
  void *reserved[4];
} ph_pool_snapshot;

typedef void (*ph_pool_snapshot_cb)(void *arg, const ph_pool_snapshot *res);

typedef struct ph_pool_store_v1 {
  /* Reads everything at one revision. Returns an id > 0, or PH_EINVAL
   * (NULL cb), PH_ENOMEM, and then cb is never called. */
  int64_t (*snapshot)(void *self, ph_pool_snapshot_cb cb, void *arg);
  /* The pool revision as the store's own poll (and its own writes) last
   * read it, without I/O: PH_OK, or PH_ESTATE before the first good read,
   * after the row was found missing or going backwards, and once reads
   * have failed for longer than the store's stale bound. */
  int (*revision)(void *self, uint64_t *out);
  /* One write in one transaction with its revision step. Returns an id
   * > 0, or PH_EINVAL (NULL w or cb, an unknown action or kind), PH_ENOMEM,
   * and then cb is never called. A field out of bounds is answered
   * through cb (PH_EINVAL with a detail). */
  int64_t (*write)(void *self, const ph_pool_write *w, ph_pool_write_cb cb,
                   void *arg);
  /* One page. Returns an id > 0 or a negative ph_status, as write. */
  int64_t (*list)(void *self, const ph_pool_list *l, ph_pool_list_cb cb,
                  void *arg);
  /* Abandons a call: its callback is not called. A write already sent to
   * the database may still commit. PH_OK or PH_ENOENT. */
  int (*cancel)(void *self, int64_t id);
} ph_pool_store_v1;

#endif

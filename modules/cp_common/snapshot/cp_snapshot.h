/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control plane's snapshots, pure code (no I/O, no logging, no
 * threads): the controller's build of one worker's WorkerSnapshot from the
 * pool's rows and its Redis ownership (CP-1-16..19, CP-3-1..5, CP-3-10),
 * the gateway's validation of a received one (CP-3-7, CP-2-2, CP-7-3,
 * CP-8-3), and deltas both ways (CP-3-15, CP-3-16). The checksum is
 * cp_checksum.h's; the rules are docs/protocol/controlplane-snapshots.md.
 *
 * Ownership: a cp_snapshot / cp_delta handle owns its message and every
 * byte under it (one bounded arena); *_free releases all of it in one call
 * and wipes it first (a full snapshot carries credential material,
 * CP-8-5). Functions taking a `const Controlplane__V1__WorkerSnapshot *`
 * accept any snapshot: one of these handles' or one protobuf-c unpacked.
 * Nothing here keeps a pointer to its inputs after it returns. Every
 * function is reentrant; a handle may be read from several threads.
 */
#ifndef PH_CP_SNAPSHOT_H
#define PH_CP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "proxyhost/pool_store.h"

/* The receiver's (and the builder's) count limits: every list of one
 * snapshot or delta. Bounds: each 1..its PH_POOL_* maximum
 * (cp_snapshot_limits_ok); the modules declare them as config keys. */
typedef struct cp_snapshot_limits {
  uint32_t max_proxies;     /* 1..PH_POOL_PROXIES_MAX */
  uint32_t max_routes;      /* 1..PH_POOL_ROUTES_MAX */
  uint32_t max_credentials; /* 1..PH_POOL_PROXIES_MAX */
} cp_snapshot_limits;

#define CP_SNAPSHOT_LIMITS_DEFAULT {10000u, 1000u, 10000u}

/* 1 when every limit is within its bounds. */
int cp_snapshot_limits_ok(const cp_snapshot_limits *l);

typedef struct cp_snapshot cp_snapshot;

/* The message a handle owns (never NULL for a live handle). The caller
 * may read it; it changes only through this API. */
const Controlplane__V1__WorkerSnapshot *cp_snapshot_msg(const cp_snapshot *s);
/* Bytes the handle's arena holds (the allocation-bound tests read it). */
size_t cp_snapshot_bytes(const cp_snapshot *s);
/* Wipes and frees everything; NULL is a no-op. */
void cp_snapshot_free(cp_snapshot *s);

/* Unpacks wire bytes (a WorkerSnapshot) into a handle. Returns NULL when
 * protobuf-c refuses them or they need more memory than the bound
 * (64 KiB + 256 bytes per input byte). Not a validation: call
 * cp_snapshot_check. */
cp_snapshot *cp_snapshot_unpack(const uint8_t *data, size_t len);

/* Unpacks a WatchSnapshotsResponse (the stream's message) once, into a
 * handle's arena under the same bound. A full snapshot: the handle owns
 * it, *delta NULL. A delta: *delta points into the handle (valid until it
 * is freed) and the handle's own message is empty. NULL for bytes
 * protobuf-c refuses, a message with no payload, or one over the bound.
 * Not a validation either. */
cp_snapshot *cp_snapshot_unpack_response(
    const uint8_t *data, size_t len,
    const Controlplane__V1__SnapshotDelta **delta);

/* ---- build (controller) ------------------------------------------- */

/* One proxy of the worker's Redis ownership index. */
typedef struct cp_owned {
  const char *proxy_id;
  int64_t lease_expiry_ms; /* Unix ms, Redis server time */
  int reclaim; /* an extraction waits for it: delivered draining (CP-4-2) */
  int health;  /* the reducer's verdict (CP-6-7), OwnedProxy.health:
                  CONTROLPLANE__V1__PROXY_HEALTH__*; 0 = none */
} cp_owned;

/* The credential resolver: fills *out for (secret_ref, version) and
 * returns 1, or returns 0 when the material is missing or unusable. Called
 * once per distinct pair, on the caller's thread, inside cp_snapshot_build;
 * *out is wiped after the copy. */
typedef int (*cp_credential_resolver)(void *ud, const char *secret_ref,
                                      uint64_t credential_version,
                                      ph_pool_credential *out);

typedef struct cp_build_input {
  const char *cluster_id, *worker_id, *session_id; /* 1..PH_POOL_ID_MAX */
  const ph_pool_route_row *routes; /* any order; `position` orders them */
  size_t n_routes;
  const ph_pool_proxy_row *proxies; /* the pool (any order) */
  size_t n_proxies;
  const cp_owned *owned; /* the worker's ownership index */
  size_t n_owned;
  cp_credential_resolver resolve;
  void *resolve_ud;
  int64_t now_ms;      /* Redis server time of the build */
  uint64_t version;    /* >= 1 */
  uint64_t ownership_epoch;
  int64_t allocation_safety_margin_ms; /* 0..CP_MARGIN_MAX_MS */
  int64_t snapshot_validity_ms;        /* 1..CP_VALIDITY_MAX_MS */
  cp_snapshot_limits limits;
  /* 1: the shared lease form (the worker's WatchSnapshots asked for it,
   * issue 26): the snapshot's lease_expires_at / lease_usable_until are
   * the earliest lease among the delivered proxies, and each proxy
   * carries only its own expiry (none: no times). A renewal then moves
   * two times, not every proxy. 0: every proxy carries min(own, lease). */
  int shared_lease;
} cp_build_input;

#define CP_MARGIN_MAX_MS 3600000        /* one hour */
#define CP_VALIDITY_MAX_MS 86400000     /* one day */

/* A proxy left out because its credential could not be resolved (issue
 * 23 item 6): the controller logs each one it lists. */
#define CP_BUILD_WITHHELD_LIST 8
typedef struct cp_build_withheld {
  char proxy_id[PH_POOL_ID_MAX + 1];
  char secret_ref[PH_POOL_SECRET_REF_MAX + 1];
} cp_build_withheld;

/* What the build left out, and why (for the controller's metrics). */
typedef struct cp_build_stats {
  uint32_t delivered;           /* proxies in the snapshot */
  uint32_t draining;            /* of them, draining (CP-4-2) */
  uint32_t not_found;           /* owned, but no such proxy row */
  uint32_t disabled;            /* admin state DISABLED (or unknown) */
  uint32_t unusable;            /* usable_until <= now (CP-3-5) */
  uint32_t credential_missing;  /* the resolver had nothing (CP-1-18) */
  /* The first CP_BUILD_WITHHELD_LIST of them (credential_missing counts
   * them all). */
  cp_build_withheld withheld[CP_BUILD_WITHHELD_LIST];
  uint32_t n_withheld;
  uint32_t invalid;             /* a row or lease out of its bounds */
  uint32_t duplicate_owned;     /* the same id twice in the index */
  uint32_t routes;              /* enabled rules delivered */
  uint32_t credentials;         /* distinct credentials delivered */
  /* The earliest usable_until (Unix ms) among the delivered proxies whose
   * lease, not their own expires_at, sets it: what a lease renewal can
   * move (the controller's refresh point, cp_watch_plan.h); 0 when none. */
  int64_t renewable_until_ms;
} cp_build_stats;

typedef enum cp_build_result {
  CP_BUILD_OK = 0,
  CP_BUILD_EINVAL,   /* an input out of its bounds (ids, times, limits) */
  CP_BUILD_ETOOBIG,  /* more rules, proxies or credentials than limits */
  CP_BUILD_ENOMEM
} cp_build_result;

/* Builds the snapshot (rules: docs/protocol/controlplane-snapshots.md).
 * On CP_BUILD_OK *out is a new handle (free with cp_snapshot_free) with
 * its checksum set; otherwise *out is NULL. stats may be NULL. */
cp_build_result cp_snapshot_build(const cp_build_input *in, cp_snapshot **out,
                                  cp_build_stats *stats);

/* ---- validation (gateway) ------------------------------------------- */

/* The times proxy p of snapshot s ends at, in either form (a checked
 * snapshot): its own expires_at / usable_until, or with the shared lease
 * form the earlier of its own (absent: none) and the snapshot's lease.
 * Unix ms, floor. 1 on success, 0 when a time is missing or malformed. */
int cp_proxy_times(const Controlplane__V1__WorkerSnapshot *s,
                   const Controlplane__V1__OwnedProxy *p,
                   int64_t *expires_ms, int64_t *usable_ms);

/* Who the gateway is; a NULL field is not checked. */
typedef struct cp_expect {
  const char *cluster_id, *worker_id, *session_id;
} cp_expect;

/* CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED (0) when the
 * snapshot is acceptable, otherwise the reason to NACK with. *why (if not
 * NULL) gets a static text naming the rule, never a value of the message.
 * Order: TOO_LARGE (counts over `lim`), IDENTITY, EXPIRED, MALFORMED,
 * BAD_CHECKSUM. */
Controlplane__V1__RejectReason cp_snapshot_check(
    const Controlplane__V1__WorkerSnapshot *msg, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *lim, const char **why);

/* ---- deltas ----------------------------------------------------------- */

typedef struct cp_delta cp_delta;
const Controlplane__V1__SnapshotDelta *cp_delta_msg(const cp_delta *d);
void cp_delta_free(cp_delta *d);

typedef enum cp_delta_result {
  CP_DELTA_OK = 0,
  CP_DELTA_NEED_FULL, /* discard it and ask for a full snapshot (CP-3-16) */
  CP_DELTA_ENOMEM
} cp_delta_result;

/* Gateway: applies `delta` to `held` (which the gateway validated). OK
 * only when held->version == delta->base_version, the result's checksum
 * equals delta->checksum and the result passes cp_snapshot_check with
 * `expect`, `now_ms` and `lim`; then *out is the new full snapshot (its
 * identity held's, its credentials held's that its proxies still name).
 * Otherwise *out is NULL and *why (if not NULL) a static text. */
cp_delta_result cp_snapshot_apply_delta(
    const Controlplane__V1__WorkerSnapshot *held,
    const Controlplane__V1__SnapshotDelta *delta, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *lim, cp_snapshot **out,
    const char **why);

/* Where a delta's result takes the credential material the held snapshot
 * no longer carries (CP-1-18, issue 23 item 10: the gateway keeps it only
 * in its view): sets *user and *pass for (secret_ref, version) and
 * returns 0, or -1 when it has none (the delta then NEED_FULL). */
typedef int (*cp_material_fn)(void *arg, const char *secret_ref,
                              uint64_t version, const char **user,
                              const char **pass);

/* cp_snapshot_apply_delta with the held credentials' material from
 * material(arg, ...) instead of held's own strings (NULL: held's). */
cp_delta_result cp_snapshot_apply_delta_from(
    const Controlplane__V1__WorkerSnapshot *held,
    const Controlplane__V1__SnapshotDelta *delta, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *lim, cp_material_fn material,
    void *material_arg, cp_snapshot **out, const char **why);

/* Controller: the delta from `old` (what the worker acknowledged) to
 * `new_` (a full snapshot built for it). NEED_FULL when a delta cannot say
 * it: another identity, a version not above old's, an epoch below old's,
 * or credentials that old does not carry with the same material (deltas
 * carry none). The
 * delta is a deep copy (free with cp_delta_free). */
cp_delta_result cp_snapshot_diff(const Controlplane__V1__WorkerSnapshot *old,
                                 const Controlplane__V1__WorkerSnapshot *new_,
                                 cp_delta **out, const char **why);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Inside the snapshot library: the handles, deep copies into an arena and
 * the field rules the builder and the checker share. Not for modules. */
#ifndef PH_CP_SNAPSHOT_INT_H
#define PH_CP_SNAPSHOT_INT_H

#include "cp_snapshot.h"
#include "cp_snapshot_arena.h"

struct cp_snapshot {
  cp_arena *arena;
  Controlplane__V1__WorkerSnapshot *msg;
};

struct cp_delta {
  cp_arena *arena;
  Controlplane__V1__SnapshotDelta *msg;
};

/* The arena bound for a message with these counts: per item a roomy
 * upper bound of its struct, its strings at their maximum lengths and its
 * times, plus slack for the last, mostly empty chunk. */
size_t cp_arena_cap_for(size_t n_routes, size_t n_proxies, size_t n_creds);

/* A handle with an empty message (every field at its INIT value). */
cp_snapshot *cp_snapshot_new(size_t cap);

/* Deep copies into `a` (NULL input: NULL output; NULL on no memory, with
 * *oom set). Unknown fields are not copied: they do not enter the
 * checksum and no receiver reads them. */
Google__Protobuf__Timestamp *cp_copy_ts(cp_arena *a,
                                        const Google__Protobuf__Timestamp *t,
                                        int *oom);
Google__Protobuf__Timestamp *cp_new_ts(cp_arena *a, int64_t ms, int *oom);
Controlplane__V1__RoutingRule *cp_copy_rule(
    cp_arena *a, const Controlplane__V1__RoutingRule *r, int *oom);
Controlplane__V1__OwnedProxy *cp_copy_proxy(
    cp_arena *a, const Controlplane__V1__OwnedProxy *p, int *oom);
Controlplane__V1__Credential *cp_copy_credential(
    cp_arena *a, const Controlplane__V1__Credential *c, int *oom);
/* n zeroed bytes of the arena, or NULL with *oom = 1. */
void *cp_take(cp_arena *a, size_t n, int *oom);
char *cp_copy_str(cp_arena *a, const char *s, int *oom);

/* 1 when s (NULL taken as "") has min..max bytes, all printable ASCII
 * (0x20..0x7e). */
int cp_str_ok(const char *s, size_t min, size_t max);
/* The same rule, returning s's length, or CP_STR_BAD when s breaks it
 * (the builder measures each string once, as it checks it). */
#define CP_STR_BAD SIZE_MAX
size_t cp_str_len_ok(const char *s, size_t min, size_t max);
/* 1 for a strategy module's name: 1..PH_POOL_NAME_MAX of [a-z0-9_]. */
int cp_strategy_ok(const char *s);

/* One rule's, one proxy's field rules (cp_snapshot_check's): the reason
 * and its text, or UNSPECIFIED. NULL is MALFORMED. `shared`: the proxy is
 * of a shared lease form snapshot, where its times may be absent (both). */
Controlplane__V1__RejectReason cp_check_rule(
    const Controlplane__V1__RoutingRule *r, const char **why);
Controlplane__V1__RejectReason cp_check_proxy(
    const Controlplane__V1__OwnedProxy *p, int shared, const char **why);
/* A shared lease's two times (either may be NULL): MALFORMED when one
 * alone, one malformed, or usable after expires; *shared = both set. */
Controlplane__V1__RejectReason cp_check_lease(
    const Google__Protobuf__Timestamp *exp,
    const Google__Protobuf__Timestamp *usable, int *shared, const char **why);

/* The limits to check against: lim, or the PH_POOL_* maxima for NULL. */
cp_snapshot_limits cp_limits_or_max(const cp_snapshot_limits *lim);

/* Finds the credential (ref, version) in an array of pointers sorted by
 * cp_credential_ptr_cmp; its index or -1. */
long cp_find_credential(Controlplane__V1__Credential *const *sorted, size_t n,
                        const char *ref, uint64_t version);

/* The part of cp_snapshot_check that the builder's construction does not
 * already guarantee: each routing rule's fields (copied unchecked from
 * the store) and unique rule ids. UNSPECIFIED when they hold. */
Controlplane__V1__RejectReason cp_snapshot_check_rules(
    const Controlplane__V1__WorkerSnapshot *m, const char **why);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Snapshot handles, unpacking into an arena, deep copies and the shared
 * field rules (cp_snapshot_int.h). */
#include <stdlib.h>
#include <string.h>

#include "cp_checksum.h"
#include "cp_snapshot_int.h"
#include "cp_snapshot_time.h"

#define SLACK ((size_t)3 << 20) /* the last chunk (1 MiB) and alignment */
#define PER_PROXY ((size_t)4096)
#define PER_RULE ((size_t)2048)
#define PER_CRED ((size_t)1024)
#define UNPACK_BASE ((size_t)64 << 10)
#define UNPACK_PER_BYTE ((size_t)256)

int cp_snapshot_limits_ok(const cp_snapshot_limits *l) {
  return l && l->max_proxies >= 1 && l->max_proxies <= PH_POOL_PROXIES_MAX &&
         l->max_routes >= 1 && l->max_routes <= PH_POOL_ROUTES_MAX &&
         l->max_credentials >= 1 && l->max_credentials <= PH_POOL_PROXIES_MAX;
}

cp_snapshot_limits cp_limits_or_max(const cp_snapshot_limits *lim) {
  if (lim)
    return *lim;
  cp_snapshot_limits m = {PH_POOL_PROXIES_MAX, PH_POOL_ROUTES_MAX,
                          PH_POOL_PROXIES_MAX};
  return m;
}

size_t cp_arena_cap_for(size_t n_routes, size_t n_proxies, size_t n_creds) {
  /* The counts are bounded by PH_POOL_* (at most 10^5), so no overflow. */
  return SLACK + n_routes * PER_RULE + n_proxies * PER_PROXY +
         n_creds * PER_CRED;
}

cp_snapshot *cp_snapshot_new(size_t cap) {
  cp_arena *a = cp_arena_new(cap);
  if (!a)
    return NULL;
  cp_snapshot *s = cp_arena_alloc(a, sizeof *s);
  Controlplane__V1__WorkerSnapshot *m = cp_arena_alloc(a, sizeof *m);
  if (!s || !m) {
    cp_arena_free(a);
    return NULL;
  }
  controlplane__v1__worker_snapshot__init(m);
  s->arena = a;
  s->msg = m;
  return s;
}

const Controlplane__V1__WorkerSnapshot *cp_snapshot_msg(const cp_snapshot *s) {
  return s ? s->msg : NULL;
}

size_t cp_snapshot_bytes(const cp_snapshot *s) {
  return s ? cp_arena_bytes(s->arena) : 0;
}

void cp_snapshot_free(cp_snapshot *s) {
  if (s)
    cp_arena_free(s->arena); /* the handle lives in its own arena */
}

/* A handle whose arena is bounded for unpacking len wire bytes, and the
 * protobuf-c allocator over it in *al. */
static cp_snapshot *unpack_handle(size_t len, ProtobufCAllocator *al) {
  if (len > (SIZE_MAX - UNPACK_BASE) / UNPACK_PER_BYTE)
    return NULL;
  cp_snapshot *s = cp_snapshot_new(UNPACK_BASE + len * UNPACK_PER_BYTE);
  if (s)
    cp_arena_allocator(s->arena, al);
  return s;
}

cp_snapshot *cp_snapshot_unpack(const uint8_t *data, size_t len) {
  ProtobufCAllocator al;
  cp_snapshot *s = unpack_handle(len, &al);
  if (!s)
    return NULL;
  Controlplane__V1__WorkerSnapshot *m =
      controlplane__v1__worker_snapshot__unpack(&al, len, data);
  if (!m) {
    cp_snapshot_free(s);
    return NULL;
  }
  s->msg = m;
  return s;
}

cp_snapshot *cp_snapshot_unpack_response(
    const uint8_t *data, size_t len,
    const Controlplane__V1__SnapshotDelta **delta) {
  *delta = NULL;
  ProtobufCAllocator al;
  cp_snapshot *s = unpack_handle(len, &al);
  if (!s)
    return NULL;
  Controlplane__V1__WatchSnapshotsResponse *r =
      controlplane__v1__watch_snapshots_response__unpack(&al, len, data);
  if (r && r->payload_case ==
               CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_SNAPSHOT &&
      r->snapshot) {
    s->msg = r->snapshot;
    return s;
  }
  if (r && r->payload_case ==
               CONTROLPLANE__V1__WATCH_SNAPSHOTS_RESPONSE__PAYLOAD_DELTA &&
      r->delta) {
    *delta = r->delta;
    return s;
  }
  cp_snapshot_free(s);
  return NULL;
}

const Controlplane__V1__SnapshotDelta *cp_delta_msg(const cp_delta *d) {
  return d ? d->msg : NULL;
}

void cp_delta_free(cp_delta *d) {
  if (d)
    cp_arena_free(d->arena);
}

void *cp_take(cp_arena *a, size_t n, int *oom) {
  void *d = cp_arena_alloc(a, n);
  if (!d)
    *oom = 1;
  return d;
}

char *cp_copy_str(cp_arena *a, const char *s, int *oom) {
  char *d = cp_arena_strdup(a, s);
  if (!d)
    *oom = 1;
  return d;
}

Google__Protobuf__Timestamp *cp_copy_ts(cp_arena *a,
                                        const Google__Protobuf__Timestamp *t,
                                        int *oom) {
  if (!t)
    return NULL;
  Google__Protobuf__Timestamp *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  google__protobuf__timestamp__init(d);
  d->seconds = t->seconds;
  d->nanos = t->nanos;
  return d;
}

Google__Protobuf__Timestamp *cp_new_ts(cp_arena *a, int64_t ms, int *oom) {
  Google__Protobuf__Timestamp *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  google__protobuf__timestamp__init(d);
  cp_ms_to_ts(ms, d);
  return d;
}

static Google__Protobuf__Duration *copy_dur(cp_arena *a,
                                            const Google__Protobuf__Duration *t,
                                            int *oom) {
  if (!t)
    return NULL;
  Google__Protobuf__Duration *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  google__protobuf__duration__init(d);
  d->seconds = t->seconds;
  d->nanos = t->nanos;
  return d;
}

Controlplane__V1__RoutingRule *cp_copy_rule(
    cp_arena *a, const Controlplane__V1__RoutingRule *r, int *oom) {
  Controlplane__V1__RoutingRule *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  controlplane__v1__routing_rule__init(d);
  d->rule_id = cp_copy_str(a, r->rule_id, oom);
  d->host_pattern = cp_copy_str(a, r->host_pattern, oom);
  d->port_min = r->port_min;
  d->port_max = r->port_max;
  d->client_identity = cp_copy_str(a, r->client_identity, oom);
  d->listener = cp_copy_str(a, r->listener, oom);
  d->target_group = cp_copy_str(a, r->target_group, oom);
  d->strategy = cp_copy_str(a, r->strategy, oom);
  d->on_unavailable = r->on_unavailable;
  d->wait_timeout = copy_dur(a, r->wait_timeout, oom);
  d->sticky_key = cp_copy_str(a, r->sticky_key, oom);
  return d;
}

Controlplane__V1__OwnedProxy *cp_copy_proxy(
    cp_arena *a, const Controlplane__V1__OwnedProxy *p, int *oom) {
  Controlplane__V1__OwnedProxy *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  controlplane__v1__owned_proxy__init(d);
  d->proxy_id = cp_copy_str(a, p->proxy_id, oom);
  d->protocol = p->protocol;
  d->host = cp_copy_str(a, p->host, oom);
  d->port = p->port;
  if (p->n_groups) {
    d->groups = cp_arena_array(a, p->n_groups, sizeof *d->groups);
    if (!d->groups) {
      *oom = 1;
      return d;
    }
    d->n_groups = p->n_groups;
    for (size_t i = 0; i < p->n_groups; i++)
      d->groups[i] = cp_copy_str(a, p->groups[i], oom);
  }
  d->zone = cp_copy_str(a, p->zone, oom);
  d->capacity = p->capacity;
  d->weight = p->weight;
  d->expires_at = cp_copy_ts(a, p->expires_at, oom);
  d->usable_until = cp_copy_ts(a, p->usable_until, oom);
  d->secret_ref = cp_copy_str(a, p->secret_ref, oom);
  d->credential_version = p->credential_version;
  d->draining = p->draining;
  d->health = p->health;
  return d;
}

Controlplane__V1__Credential *cp_copy_credential(
    cp_arena *a, const Controlplane__V1__Credential *c, int *oom) {
  Controlplane__V1__Credential *d = cp_take(a, sizeof *d, oom);
  if (!d)
    return NULL;
  controlplane__v1__credential__init(d);
  d->secret_ref = cp_copy_str(a, c->secret_ref, oom);
  d->credential_version = c->credential_version;
  d->username = cp_copy_str(a, c->username, oom);
  d->password = cp_copy_str(a, c->password, oom);
  return d;
}

size_t cp_str_len_ok(const char *s, size_t min, size_t max) {
  if (!s)
    s = "";
  size_t n = 0;
  for (; s[n]; n++) {
    if (n >= max)
      return CP_STR_BAD;
    unsigned char c = (unsigned char)s[n];
    if (c < 0x20 || c > 0x7e)
      return CP_STR_BAD;
  }
  return n >= min ? n : CP_STR_BAD;
}

int cp_str_ok(const char *s, size_t min, size_t max) {
  return cp_str_len_ok(s, min, max) != CP_STR_BAD;
}

int cp_strategy_ok(const char *s) {
  if (!s || !*s)
    return 0;
  size_t n = 0;
  for (; s[n]; n++) {
    char c = s[n];
    if (n >= PH_POOL_NAME_MAX ||
        !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

long cp_find_credential(Controlplane__V1__Credential *const *sorted, size_t n,
                        const char *ref, uint64_t version) {
  /* The key as a credential, compared by the order sorted is in. */
  Controlplane__V1__Credential key = CONTROLPLANE__V1__CREDENTIAL__INIT;
  key.secret_ref = (char *)ref; /* read only */
  key.credential_version = version;
  const Controlplane__V1__Credential *kp = &key;
  Controlplane__V1__Credential *const *hit =
      n ? bsearch(&kp, sorted, n, sizeof *sorted, cp_credential_ptr_cmp)
        : NULL;
  return hit ? (long)(hit - sorted) : -1;
}

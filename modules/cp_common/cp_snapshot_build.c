/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's build of one worker's full snapshot (CP-1-16..19,
 * CP-3-1..5, CP-3-10, CP-4-2). The rules, as
 * docs/protocol/controlplane-snapshots.md ("Snapshot build") states them:
 *   - routing: the enabled rules in `position` order (ties by rule_id);
 *   - proxies: each id of the ownership index once, when the pool has it,
 *     it is ACTIVE or DRAINING (draining=true), its row and lease are in
 *     bounds, its credential resolves, and it is still usable:
 *     expires_at = min(own expiry, lease expiry) (CP-1-17),
 *     usable_until = expires_at - margin (CP-3-5) > now;
 *   - credentials: one per distinct (secret_ref, version) a delivered
 *     proxy names (CP-1-18);
 *   - valid_until = min(now + validity, the latest lease of a delivered
 *     proxy), always > now (CP-3-10);
 *   - the result passes cp_snapshot_check, or the build fails.
 * Heavy but pure: the controller may run it as a host job. */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cp_checksum.h"
#include "cp_snapshot_int.h"
#include "cp_sort.h"
#include "cp_snapshot_time.h"

/* Unix ms bounds of a Timestamp, so that every time built converts. */
#define MS_MIN (CP_TS_MIN_SECONDS * 1000)
#define MS_MAX (CP_TS_MAX_SECONDS * 1000)

static int row_ptr_cmp(const void *a, const void *b) {
  const ph_pool_proxy_row *x = *(const void *const *)a;
  const ph_pool_proxy_row *y = *(const void *const *)b;
  return strcmp(x->proxy_id, y->proxy_id);
}

static int owned_ptr_cmp(const void *a, const void *b) {
  const cp_owned *x = *(const void *const *)a;
  const cp_owned *y = *(const void *const *)b;
  return cp_id_cmp(x->proxy_id, y->proxy_id);
}

static int route_ptr_cmp(const void *a, const void *b) {
  const ph_pool_route_row *x = *(const void *const *)a;
  const ph_pool_route_row *y = *(const void *const *)b;
  if (x->position != y->position)
    return x->position < y->position ? -1 : 1;
  return strcmp(x->rule_id, y->rule_id);
}

/* A candidate proxy: its row, its times, its credential's slot. */
typedef struct cand {
  const ph_pool_proxy_row *row;
  int64_t expires_ms, usable_ms, lease_ms;
  long cred; /* index into the distinct credential keys, or -1 */
} cand;

/* One distinct (secret_ref, version) and what it resolved to. */
typedef struct cred_key {
  const char *ref;
  uint64_t version;
  Controlplane__V1__Credential *msg; /* NULL: missing */
} cred_key;

static int cred_key_cmp(const void *a, const void *b) {
  const cred_key *x = a, *y = b;
  int c = strcmp(x->ref, y->ref);
  if (c)
    return c;
  return x->version < y->version ? -1 : x->version > y->version ? 1 : 0;
}

static int row_ok(const ph_pool_proxy_row *r) {
  if (!cp_str_ok(r->proxy_id, 1, PH_POOL_ID_MAX) ||
      !cp_str_ok(r->host, 1, PH_POOL_HOST_MAX) || r->port == 0 ||
      r->protocol < PH_POOL_UPSTREAM_HTTP_CONNECT ||
      r->protocol > PH_POOL_UPSTREAM_HTTP || r->n_groups < 1 ||
      r->n_groups > PH_POOL_GROUPS_MAX ||
      !cp_str_ok(r->zone, 0, PH_POOL_NAME_MAX) || r->capacity < 1 ||
      r->capacity > PH_POOL_CAPACITY_MAX || r->weight < 1 ||
      r->weight > PH_POOL_WEIGHT_MAX || r->expires_at_ms < 0 ||
      r->expires_at_ms > MS_MAX ||
      !cp_str_ok(r->secret_ref, 0, PH_POOL_SECRET_REF_MAX) ||
      (r->secret_ref[0] != '\0') != (r->credential_version != 0))
    return 0;
  for (uint32_t i = 0; i < r->n_groups; i++)
    if (!cp_str_ok(r->groups[i], 1, PH_POOL_GROUP_MAX))
      return 0;
  return 1;
}

static Controlplane__V1__RoutingRule *route_msg(cp_arena *a,
                                                const ph_pool_route_row *r,
                                                int *oom) {
  Controlplane__V1__RoutingRule *m = cp_arena_alloc(a, sizeof *m);
  if (!m) {
    *oom = 1;
    return NULL;
  }
  controlplane__v1__routing_rule__init(m);
  m->rule_id = cp_copy_str(a, r->rule_id, oom);
  m->host_pattern = cp_copy_str(a, r->host_pattern, oom);
  m->port_min = r->port_min;
  m->port_max = r->port_max;
  m->client_identity = cp_copy_str(a, r->client_identity, oom);
  m->listener = cp_copy_str(a, r->listener, oom);
  m->target_group = cp_copy_str(a, r->target_group, oom);
  m->strategy = cp_copy_str(a, r->strategy, oom); /* passed through */
  m->on_unavailable = (Controlplane__V1__OnUnavailable)r->on_unavailable;
  if (r->on_unavailable == PH_POOL_ON_UNAVAILABLE_WAIT) {
    Google__Protobuf__Duration *d = cp_arena_alloc(a, sizeof *d);
    if (!d) {
      *oom = 1;
      return m;
    }
    google__protobuf__duration__init(d);
    cp_ms_to_dur(r->wait_timeout_ms, d);
    m->wait_timeout = d;
  }
  m->sticky_key = cp_copy_str(a, r->sticky_key, oom);
  return m;
}

static Controlplane__V1__OwnedProxy *proxy_msg(cp_arena *a, const cand *c,
                                               int *oom) {
  const ph_pool_proxy_row *r = c->row;
  Controlplane__V1__OwnedProxy *m = cp_arena_alloc(a, sizeof *m);
  char **groups = cp_arena_array(a, r->n_groups, sizeof *groups);
  if (!m || !groups) {
    *oom = 1;
    return NULL;
  }
  controlplane__v1__owned_proxy__init(m);
  m->proxy_id = cp_copy_str(a, r->proxy_id, oom);
  m->protocol = (Controlplane__V1__UpstreamProtocol)r->protocol;
  m->host = cp_copy_str(a, r->host, oom);
  m->port = r->port;
  for (uint32_t i = 0; i < r->n_groups; i++)
    groups[i] = cp_copy_str(a, r->groups[i], oom);
  m->groups = groups;
  m->n_groups = r->n_groups;
  m->zone = cp_copy_str(a, r->zone, oom);
  m->capacity = r->capacity;
  m->weight = r->weight;
  m->expires_at = cp_new_ts(a, c->expires_ms, oom);
  m->usable_until = cp_new_ts(a, c->usable_ms, oom);
  m->secret_ref = cp_copy_str(a, r->secret_ref, oom);
  m->credential_version = r->credential_version;
  m->draining = r->admin_state == PH_POOL_ADMIN_DRAINING;
  return m;
}

static int input_ok(const cp_build_input *in) {
  return cp_str_ok(in->cluster_id, 1, PH_POOL_ID_MAX) &&
         cp_str_ok(in->worker_id, 1, PH_POOL_ID_MAX) &&
         cp_str_ok(in->session_id, 1, PH_POOL_ID_MAX) && in->version >= 1 &&
         in->now_ms >= 0 && in->now_ms <= MS_MAX - CP_VALIDITY_MAX_MS &&
         in->allocation_safety_margin_ms >= 0 &&
         in->allocation_safety_margin_ms <= CP_MARGIN_MAX_MS &&
         in->snapshot_validity_ms >= 1 &&
         in->snapshot_validity_ms <= CP_VALIDITY_MAX_MS &&
         cp_snapshot_limits_ok(&in->limits) &&
         in->n_routes <= PH_POOL_ROUTES_MAX &&
         in->n_proxies <= PH_POOL_PROXIES_MAX &&
         in->n_owned <= PH_POOL_PROXIES_MAX &&
         (in->routes || !in->n_routes) && (in->proxies || !in->n_proxies) &&
         (in->owned || !in->n_owned);
}

/* The scratch of one build, freed in one place. */
typedef struct scratch {
  const ph_pool_route_row **routes;
  const ph_pool_proxy_row **rows;
  const cp_owned **owned;
  cand *cands;
  cred_key *keys;
} scratch;

static void scratch_free(scratch *s) {
  free(s->routes);
  free(s->rows);
  free(s->owned);
  free(s->cands);
  free(s->keys);
}

#define ALLOC_N(p, n) ((p) = malloc(((n) ? (n) : 1) * sizeof *(p)))

cp_build_result cp_snapshot_build(const cp_build_input *in, cp_snapshot **out,
                                  cp_build_stats *statsp) {
  cp_build_stats st;
  memset(&st, 0, sizeof st);
  *out = NULL;
  if (!in || !input_ok(in)) {
    if (statsp)
      *statsp = st;
    return CP_BUILD_EINVAL;
  }
  cp_build_result res = CP_BUILD_OK;
  scratch sc = {0};
  cp_snapshot *snap = NULL;
  int oom = 0;

  /* Routing: enabled rules in their configured order (CP-1-19). */
  size_t nr = 0;
  if (!ALLOC_N(sc.routes, in->n_routes))
    goto nomem;
  for (size_t i = 0; i < in->n_routes; i++)
    if (in->routes[i].enabled)
      sc.routes[nr++] = &in->routes[i];
  if (nr > in->limits.max_routes) {
    res = CP_BUILD_ETOOBIG;
    goto done;
  }
  cp_sort(sc.routes, nr, sizeof *sc.routes, route_ptr_cmp);

  /* The pool by id, to look each owned proxy up. */
  if (!ALLOC_N(sc.rows, in->n_proxies))
    goto nomem;
  for (size_t i = 0; i < in->n_proxies; i++)
    sc.rows[i] = &in->proxies[i];
  cp_sort(sc.rows, in->n_proxies, sizeof *sc.rows, row_ptr_cmp);
  for (size_t i = 1; i < in->n_proxies; i++)
    if (row_ptr_cmp(&sc.rows[i - 1], &sc.rows[i]) == 0) {
      res = CP_BUILD_EINVAL; /* the store's key is unique: a broken input */
      goto done;
    }

  /* The ownership index in id order: the snapshot lists proxies so. */
  if (!ALLOC_N(sc.owned, in->n_owned) || !ALLOC_N(sc.cands, in->n_owned))
    goto nomem;
  for (size_t i = 0; i < in->n_owned; i++)
    sc.owned[i] = &in->owned[i];
  cp_sort(sc.owned, in->n_owned, sizeof *sc.owned, owned_ptr_cmp);

  size_t nc = 0, nkeys = 0;
  int64_t margin = in->allocation_safety_margin_ms, now = in->now_ms;
  size_t row_at = 0; /* the merge walk's place in sc.rows */
  for (size_t i = 0; i < in->n_owned; i++) {
    const cp_owned *o = sc.owned[i];
    if (i > 0 && owned_ptr_cmp(&sc.owned[i - 1], &sc.owned[i]) == 0) {
      st.duplicate_owned++;
      continue;
    }
    /* The pool and the index are both in id order (strcmp's, which
     * cp_id_cmp is): one merge walk finds every row, O(rows + owned). */
    const ph_pool_proxy_row *r = NULL;
    if (o->proxy_id && strlen(o->proxy_id) <= PH_POOL_ID_MAX) {
      int c = 1;
      while (row_at < in->n_proxies &&
             (c = strcmp(sc.rows[row_at]->proxy_id, o->proxy_id)) < 0)
        row_at++;
      if (row_at < in->n_proxies && c == 0)
        r = sc.rows[row_at];
    }
    if (!r) {
      st.not_found++;
      continue;
    }
    if (r->admin_state != PH_POOL_ADMIN_ACTIVE &&
        r->admin_state != PH_POOL_ADMIN_DRAINING) {
      st.disabled++; /* DISABLED is never delivered, nor an unknown state */
      continue;
    }
    if (!row_ok(r) || o->lease_expiry_ms <= 0 || o->lease_expiry_ms > MS_MAX) {
      st.invalid++;
      continue;
    }
    /* CP-1-17: the lease never outlives the proxy; CP-3-5: the margin. */
    int64_t exp = o->lease_expiry_ms;
    if (r->expires_at_ms > 0 && r->expires_at_ms < exp)
      exp = r->expires_at_ms;
    int64_t usable = exp - margin;
    if (usable <= now) {
      st.unusable++;
      continue;
    }
    cand *c = &sc.cands[nc++];
    c->row = r;
    c->expires_ms = exp;
    c->usable_ms = usable;
    c->lease_ms = o->lease_expiry_ms;
    c->cred = r->secret_ref[0] ? 0 : -1;
    if (r->secret_ref[0])
      nkeys++;
  }

  /* Credentials: each distinct (secret_ref, version) resolved once. */
  snap = cp_snapshot_new(cp_arena_cap_for(nr, nc, nkeys));
  if (!snap || !ALLOC_N(sc.keys, nkeys))
    goto nomem;
  cp_arena *a = snap->arena;
  size_t nk = 0;
  for (size_t i = 0; i < nc; i++)
    if (sc.cands[i].cred >= 0) {
      sc.keys[nk].ref = sc.cands[i].row->secret_ref;
      sc.keys[nk].version = sc.cands[i].row->credential_version;
      sc.keys[nk].msg = NULL;
      nk++;
    }
  cp_sort(sc.keys, nk, sizeof *sc.keys, cred_key_cmp);
  size_t nd = 0; /* distinct keys, compacted in place */
  for (size_t i = 0; i < nk; i++)
    if (nd == 0 || cred_key_cmp(&sc.keys[nd - 1], &sc.keys[i]) != 0)
      sc.keys[nd++] = sc.keys[i];
  size_t ncred = 0;
  for (size_t i = 0; i < nd; i++) {
    ph_pool_credential pc;
    memset(&pc, 0, sizeof pc);
    int got = in->resolve &&
              in->resolve(in->resolve_ud, sc.keys[i].ref, sc.keys[i].version,
                          &pc) == 1;
    /* Material that a gateway would refuse is missing material. */
    pc.username[sizeof pc.username - 1] = '\0';
    pc.password[sizeof pc.password - 1] = '\0';
    if (got && cp_str_ok(pc.username, 0, 255) &&
        cp_str_ok(pc.password, 0, 255)) {
      Controlplane__V1__Credential *m = cp_arena_alloc(a, sizeof *m);
      if (m) {
        controlplane__v1__credential__init(m);
        m->secret_ref = cp_copy_str(a, sc.keys[i].ref, &oom);
        m->credential_version = sc.keys[i].version;
        m->username = cp_copy_str(a, pc.username, &oom);
        m->password = cp_copy_str(a, pc.password, &oom);
        sc.keys[i].msg = m;
        ncred++;
      } else {
        oom = 1;
      }
    }
    OPENSSL_cleanse(&pc, sizeof pc);
    if (oom)
      goto nomem;
  }

  /* The delivered proxies, in id order; valid_until's second bound. */
  Controlplane__V1__WorkerSnapshot *m = snap->msg;
  m->proxies = cp_arena_array(a, nc, sizeof *m->proxies);
  m->credentials = cp_arena_array(a, ncred, sizeof *m->credentials);
  m->routing = cp_arena_array(a, nr, sizeof *m->routing);
  if (!m->proxies || !m->credentials || !m->routing)
    goto nomem;
  int64_t latest_lease = 0;
  for (size_t i = 0; i < nc; i++) {
    cand *c = &sc.cands[i];
    if (c->cred >= 0) {
      cred_key k = {c->row->secret_ref, c->row->credential_version, NULL};
      cred_key *hit = bsearch(&k, sc.keys, nd, sizeof *sc.keys, cred_key_cmp);
      if (!hit || !hit->msg) {
        st.credential_missing++;
        continue;
      }
    }
    if (m->n_proxies >= in->limits.max_proxies) {
      res = CP_BUILD_ETOOBIG;
      goto done;
    }
    Controlplane__V1__OwnedProxy *p = proxy_msg(a, c, &oom);
    if (oom)
      goto nomem;
    m->proxies[m->n_proxies++] = p;
    if (p->draining)
      st.draining++;
    if (c->lease_ms > latest_lease)
      latest_lease = c->lease_ms;
  }
  for (size_t i = 0; i < nd; i++)
    if (sc.keys[i].msg)
      m->credentials[m->n_credentials++] = sc.keys[i].msg;
  if (m->n_credentials > in->limits.max_credentials) {
    res = CP_BUILD_ETOOBIG;
    goto done;
  }
  for (size_t i = 0; i < nr; i++) {
    m->routing[i] = route_msg(a, sc.routes[i], &oom);
    if (oom)
      goto nomem;
  }
  m->n_routing = nr;

  /* Identity, times (CP-3-1, CP-3-10) and the checksum (CP-3-4). */
  m->cluster_id = cp_copy_str(a, in->cluster_id, &oom);
  m->worker_id = cp_copy_str(a, in->worker_id, &oom);
  m->session_id = cp_copy_str(a, in->session_id, &oom);
  m->version = in->version;
  m->ownership_epoch = in->ownership_epoch;
  int64_t vu = now + in->snapshot_validity_ms;
  if (m->n_proxies && latest_lease < vu)
    vu = latest_lease; /* > now: every delivered lease is > usable > now */
  m->generated_at = cp_new_ts(a, now, &oom);
  m->valid_until = cp_new_ts(a, vu, &oom);
  uint8_t *sum = cp_arena_alloc(a, CP_CHECKSUM_LEN);
  if (oom || !sum || cp_checksum_snapshot(m, sum) != 0)
    goto nomem;
  m->checksum.data = sum;
  m->checksum.len = CP_CHECKSUM_LEN;

  /* The gateway's rules, applied here too: a rule row out of its bounds
   * fails the build (leaving a rule out would change where traffic goes),
   * and an expired snapshot is never produced (CP-3-10). The checksum was
   * computed just above from these same fields: not again. */
  cp_expect ex = {in->cluster_id, in->worker_id, in->session_id};
  if (vu <= now ||
      cp_snapshot_check_sum(m, &ex, now, &in->limits, 0, NULL) !=
          CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED) {
    res = CP_BUILD_EINVAL;
    goto done;
  }
  st.delivered = (uint32_t)m->n_proxies;
  st.routes = (uint32_t)m->n_routing;
  st.credentials = (uint32_t)m->n_credentials;
  goto done;

nomem:
  res = CP_BUILD_ENOMEM;
done:
  scratch_free(&sc);
  if (res == CP_BUILD_OK)
    *out = snap;
  else
    cp_snapshot_free(snap);
  if (statsp)
    *statsp = st;
  return res;
}

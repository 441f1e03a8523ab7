/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's build of one worker's full snapshot (CP-1-16..19,
 * CP-3-1..5, CP-3-10, CP-4-2). The rules, as
 * docs/protocol/controlplane-snapshots.md ("Snapshot build") states them:
 *   - routing: the enabled rules in `position` order (ties by rule_id);
 *   - proxies: each id of the ownership index once, when the pool has it,
 *     it is ACTIVE or DRAINING (draining=true, as when an extraction
 *     waits for it: cp_owned.reclaim, CP-4-2), its row and lease are in
 *     bounds, its credential resolves, and it is still usable:
 *     expires_at = min(own expiry, lease expiry) (CP-1-17),
 *     usable_until = expires_at - margin (CP-3-5) > now;
 *   - credentials: one per distinct (secret_ref, version) a delivered
 *     proxy names (CP-1-18);
 *   - valid_until = min(now + validity, the latest lease of a delivered
 *     proxy), always > now (CP-3-10);
 *   - the shared lease form (in->shared_lease, issue 26): the snapshot's
 *     lease_expires_at = the earliest lease of a delivered proxy (never
 *     later than any proxy's own lease: CP-1-17 holds for each),
 *     lease_usable_until = it - margin; each proxy carries only its own
 *     expiry (own expires_at, - margin; none: no times), so a renewal
 *     moves two times of the snapshot and no proxy;
 *   - the result passes cp_snapshot_check, or the build fails.
 * Heavy but pure: the controller may run it as a host job.
 *
 * One pass over the owned proxies does the work: each row is checked,
 * its credential looked up (and resolved the first time), and its
 * message built while the row is still in the cache (a row is about
 * 1.2 KB: 10,000 of them do not stay there between passes). */
#include <stdalign.h>
#include <stdio.h>
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

/* ---- one proxy row ------------------------------------------------------ */

/* A row's string lengths, measured as row_ok checks them, for the copy. */
typedef struct row_lens {
  size_t id, host, zone, ref, group[PH_POOL_GROUPS_MAX];
} row_lens;

/* Every bound cp_check_proxy puts on what proxy_msg builds from a row
 * (the builder's final check relies on it: see there). */
static int row_ok(const ph_pool_proxy_row *r, row_lens *L) {
  if ((L->id = cp_str_len_ok(r->proxy_id, 1, PH_POOL_ID_MAX)) == CP_STR_BAD ||
      (L->host = cp_str_len_ok(r->host, 1, PH_POOL_HOST_MAX)) == CP_STR_BAD ||
      r->port == 0 || r->protocol < PH_POOL_UPSTREAM_HTTP_CONNECT ||
      r->protocol > PH_POOL_UPSTREAM_HTTP || r->n_groups < 1 ||
      r->n_groups > PH_POOL_GROUPS_MAX ||
      (L->zone = cp_str_len_ok(r->zone, 0, PH_POOL_NAME_MAX)) == CP_STR_BAD ||
      r->capacity < 1 || r->capacity > PH_POOL_CAPACITY_MAX ||
      r->weight < 1 || r->weight > PH_POOL_WEIGHT_MAX ||
      r->expires_at_ms < 0 || r->expires_at_ms > MS_MAX ||
      (L->ref = cp_str_len_ok(r->secret_ref, 0, PH_POOL_SECRET_REF_MAX)) ==
          CP_STR_BAD ||
      (r->secret_ref[0] != '\0') != (r->credential_version != 0))
    return 0;
  for (uint32_t i = 0; i < r->n_groups; i++)
    if ((L->group[i] = cp_str_len_ok(r->groups[i], 1, PH_POOL_GROUP_MAX)) ==
        CP_STR_BAD)
      return 0;
  return 1;
}

/* n rounded up to the strictest alignment of what one block holds. */
static size_t block_round(size_t n) {
  const size_t al = alignof(max_align_t);
  return (n + al - 1) & ~(al - 1);
}

/* s (len bytes, no NUL among them) copied to *at, NUL-terminated. */
static char *put_str(char **at, const char *s, size_t len) {
  char *d = *at;
  memcpy(d, s, len);
  d[len] = '\0';
  *at = d + len + 1;
  return d;
}

/* One delivered proxy's message, as one arena block: the struct, its two
 * times (left unset without `times`: the shared lease form's proxy with
 * no expiry of its own), its group array and its strings (lengths known
 * from row_ok), so one allocation instead of eleven. The message reads the
 * same as one of separate copies; nothing frees its parts one by one (the
 * arena goes as a whole). At most about 1.3 KB, far under the arena's PER_PROXY. */
static Controlplane__V1__OwnedProxy *proxy_msg(cp_arena *a,
                                               const ph_pool_proxy_row *r,
                                               const row_lens *L,
                                               int64_t expires_ms,
                                               int64_t usable_ms, int times) {
  Controlplane__V1__OwnedProxy *m;
  Google__Protobuf__Timestamp *ts;
  size_t at_ts = block_round(sizeof *m);
  size_t at_groups = at_ts + 2 * block_round(sizeof *ts);
  size_t at_strs = at_groups + block_round(r->n_groups * sizeof(char *));
  size_t strs = L->id + L->host + L->zone + L->ref + 4;
  for (uint32_t i = 0; i < r->n_groups; i++)
    strs += L->group[i] + 1;
  unsigned char *b = cp_arena_alloc(a, at_strs + strs);
  if (!b)
    return NULL;
  m = (Controlplane__V1__OwnedProxy *)b;
  controlplane__v1__owned_proxy__init(m);
  ts = (Google__Protobuf__Timestamp *)(b + at_ts);
  char **groups = (char **)(b + at_groups);
  char *s = (char *)(b + at_strs);
  m->proxy_id = put_str(&s, r->proxy_id, L->id);
  m->protocol = (Controlplane__V1__UpstreamProtocol)r->protocol;
  m->host = put_str(&s, r->host, L->host);
  m->port = r->port;
  for (uint32_t i = 0; i < r->n_groups; i++)
    groups[i] = put_str(&s, r->groups[i], L->group[i]);
  m->groups = groups;
  m->n_groups = r->n_groups;
  m->zone = put_str(&s, r->zone, L->zone);
  m->capacity = r->capacity;
  m->weight = r->weight;
  Google__Protobuf__Timestamp *usable =
      (Google__Protobuf__Timestamp *)((unsigned char *)ts +
                                      block_round(sizeof *ts));
  google__protobuf__timestamp__init(ts);
  google__protobuf__timestamp__init(usable);
  cp_ms_to_ts(expires_ms, ts);
  cp_ms_to_ts(usable_ms, usable);
  m->expires_at = times ? ts : NULL;
  m->usable_until = times ? usable : NULL;
  m->secret_ref = put_str(&s, r->secret_ref, L->ref);
  m->credential_version = r->credential_version;
  m->draining = r->admin_state == PH_POOL_ADMIN_DRAINING;
  return m;
}

/* ---- the distinct credentials ---------------------------------------------
 * An open-addressing hash set keyed by (secret_ref, version): one hash per
 * delivered proxy instead of a sort of 10,000 references and a binary
 * search each (t/bench/cpsnap: 23% of a build). Sized once, a power of
 * two at least twice the owned proxies (each adds at most one key), so it
 * never fills; bounded by PH_POOL_PROXIES_MAX (2^18 slots at most). */

typedef struct cred_slot {
  const char *ref; /* NULL: an empty slot; else a row's secret_ref */
  uint64_t version;
  int present;     /* resolved to material a gateway accepts */
  Controlplane__V1__Credential *msg; /* the message, once built */
} cred_slot;

typedef struct cred_set {
  cred_slot *slots;
  size_t mask;
} cred_set;

static int cred_set_init(cred_set *s, size_t n_owned) {
  size_t n = 16;
  while (n < 2 * n_owned)
    n *= 2;
  s->slots = calloc(n, sizeof *s->slots);
  s->mask = n - 1;
  return s->slots != NULL;
}

/* FNV-1a over the reference, the version mixed in. */
static size_t cred_hash(const char *ref, uint64_t version) {
  uint64_t h = 14695981039346656037u;
  for (const unsigned char *p = (const unsigned char *)ref; *p; p++)
    h = (h ^ *p) * 1099511628211u;
  h ^= version * 0x9e3779b97f4a7c15u;
  return (size_t)(h ^ (h >> 29));
}

/* The slot of (ref, version): its own, or the empty one it now takes
 * (*fresh = 1). Ends: the set is never full. */
static cred_slot *cred_slot_of(cred_set *s, const char *ref, uint64_t version,
                               int *fresh) {
  size_t i = cred_hash(ref, version) & s->mask;
  for (;;) {
    cred_slot *k = &s->slots[i];
    if (!k->ref) {
      k->ref = ref;
      k->version = version;
      *fresh = 1;
      return k;
    }
    if (k->version == version && strcmp(k->ref, ref) == 0) {
      *fresh = 0;
      return k;
    }
    i = (i + 1) & s->mask;
  }
}

/* Resolves a fresh key, once (CP-1-18). Material a gateway would refuse
 * is missing material. With `keep` 0 (past max_credentials: the build
 * will fail) nothing is copied. -1 on no memory. */
static int resolve_key(const cp_build_input *in, cp_arena *a, cred_slot *k,
                       int keep) {
  ph_pool_credential pc;
  memset(&pc, 0, sizeof pc);
  int got = in->resolve &&
            in->resolve(in->resolve_ud, k->ref, k->version, &pc) == 1;
  pc.username[sizeof pc.username - 1] = '\0';
  pc.password[sizeof pc.password - 1] = '\0';
  int oom = 0;
  if (got && cp_str_ok(pc.username, 0, 255) &&
      cp_str_ok(pc.password, 0, 255)) {
    k->present = 1;
    if (keep) { /* copied from a view over k and pc */
      Controlplane__V1__Credential v = CONTROLPLANE__V1__CREDENTIAL__INIT;
      v.secret_ref = (char *)k->ref; /* read only */
      v.credential_version = k->version;
      v.username = pc.username;
      v.password = pc.password;
      k->msg = cp_copy_credential(a, &v, &oom);
    }
  }
  OPENSSL_cleanse(&pc, sizeof pc);
  return oom ? -1 : 0;
}

/* ---- routing ------------------------------------------------------------ */

/* The row as a message over its own strings, copied into the arena by
 * cp_copy_rule (the one place a rule is copied). */
static Controlplane__V1__RoutingRule *route_msg(cp_arena *a,
                                                const ph_pool_route_row *r,
                                                int *oom) {
  ph_pool_route_row *w = (ph_pool_route_row *)r; /* read only */
  Controlplane__V1__RoutingRule v = CONTROLPLANE__V1__ROUTING_RULE__INIT;
  Google__Protobuf__Duration wait = GOOGLE__PROTOBUF__DURATION__INIT;
  v.rule_id = w->rule_id;
  v.host_pattern = w->host_pattern;
  v.port_min = r->port_min;
  v.port_max = r->port_max;
  v.client_identity = w->client_identity;
  v.listener = w->listener;
  v.target_group = w->target_group;
  v.strategy = w->strategy; /* passed through */
  v.on_unavailable = (Controlplane__V1__OnUnavailable)r->on_unavailable;
  if (r->on_unavailable == PH_POOL_ON_UNAVAILABLE_WAIT) {
    cp_ms_to_dur(r->wait_timeout_ms, &wait);
    v.wait_timeout = &wait;
  }
  v.sticky_key = w->sticky_key;
  return cp_copy_rule(a, &v, oom);
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
  cred_set creds;
} scratch;

static void scratch_free(scratch *s) {
  free(s->routes);
  free(s->rows);
  free(s->owned);
  free(s->creds.slots); /* references and pointers only, no material */
}

#define ALLOC_N(p, n) ((p) = malloc(((n) ? (n) : 1) * sizeof *(p)))

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

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
  scratch sc;
  memset(&sc, 0, sizeof sc);
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
  if (!ALLOC_N(sc.owned, in->n_owned) ||
      !cred_set_init(&sc.creds, in->n_owned))
    goto nomem;
  for (size_t i = 0; i < in->n_owned; i++)
    sc.owned[i] = &in->owned[i];
  cp_sort(sc.owned, in->n_owned, sizeof *sc.owned, owned_ptr_cmp);

  /* The arena's bound: at most max_proxies proxies and max_credentials
   * credentials are ever built (one more fails the build). */
  size_t max_px = min_size(in->n_owned, in->limits.max_proxies);
  size_t max_cr = min_size(in->n_owned, in->limits.max_credentials);
  snap = cp_snapshot_new(cp_arena_cap_for(nr, max_px, max_cr));
  if (!snap)
    goto nomem;
  cp_arena *a = snap->arena;
  Controlplane__V1__WorkerSnapshot *m = snap->msg;
  m->proxies = cp_arena_array(a, max_px, sizeof *m->proxies);
  if (!m->proxies)
    goto nomem;

  /* The delivered proxies, in id order; valid_until's second bound. Past
   * max_proxies the build fails, but the loop goes on counting what the
   * rows' own checks leave out, so the stats are those of the whole index
   * (credential_missing: up to the failure). */
  size_t ncred = 0; /* distinct credentials present */
  int full = 0;     /* one proxy more than max_proxies was deliverable */
  int64_t margin = in->allocation_safety_margin_ms, now = in->now_ms;
  int64_t latest_lease = 0;
  /* The shared lease form: the earliest delivered lease, and whether a
   * delivered proxy ends with it (no own expiry, or a later one). */
  int64_t shared_lease = 0, latest_own = 0;
  int own_less = 0;  /* a delivered proxy with no expiry of its own */
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
    row_lens lens;
    if (!row_ok(r, &lens) || o->lease_expiry_ms <= 0 ||
        o->lease_expiry_ms > MS_MAX) {
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
    if (full)
      continue;
    /* Credentials: each distinct (secret_ref, version) resolved once, on
     * its first delivered proxy. */
    if (r->secret_ref[0]) {
      int fresh;
      cred_slot *k =
          cred_slot_of(&sc.creds, r->secret_ref, r->credential_version, &fresh);
      if (fresh && resolve_key(in, a, k, ncred < max_cr) != 0)
        goto nomem;
      if (fresh && k->present)
        ncred++;
      if (!k->present) {
        if (st.n_withheld < CP_BUILD_WITHHELD_LIST) {
          cp_build_withheld *h = &st.withheld[st.n_withheld++];
          snprintf(h->proxy_id, sizeof(h->proxy_id), "%s", r->proxy_id);
          snprintf(h->secret_ref, sizeof(h->secret_ref), "%s", r->secret_ref);
        }
        st.credential_missing++;
        continue;
      }
    }
    if (m->n_proxies >= in->limits.max_proxies) {
      res = CP_BUILD_ETOOBIG;
      full = 1;
      continue;
    }
    Controlplane__V1__OwnedProxy *p =
        in->shared_lease
            ? proxy_msg(a, r, &lens, r->expires_at_ms,
                        r->expires_at_ms - margin, r->expires_at_ms > 0)
            : proxy_msg(a, r, &lens, exp, usable, 1);
    if (!p)
      goto nomem;
    if (o->reclaim)
      p->draining = 1;
    if (o->health > 0 && o->health <= CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNHEALTHY)
      p->health = (Controlplane__V1__ProxyHealth)o->health;
    m->proxies[m->n_proxies++] = p;
    if (p->draining)
      st.draining++;
    if (o->lease_expiry_ms > latest_lease)
      latest_lease = o->lease_expiry_ms;
    if (shared_lease == 0 || o->lease_expiry_ms < shared_lease)
      shared_lease = o->lease_expiry_ms;
    if (r->expires_at_ms <= 0)
      own_less = 1;
    else if (r->expires_at_ms > latest_own)
      latest_own = r->expires_at_ms;
    if (exp == o->lease_expiry_ms &&
        (st.renewable_until_ms == 0 || usable < st.renewable_until_ms))
      st.renewable_until_ms = usable;
  }
  if (full)
    goto done;
  if (ncred > in->limits.max_credentials) {
    res = CP_BUILD_ETOOBIG;
    goto done;
  }

  /* The credentials in (secret_ref, version) order: ncred of them, so
   * the sort is of the distinct ones only. */
  m->credentials = cp_arena_array(a, ncred, sizeof *m->credentials);
  m->routing = cp_arena_array(a, nr, sizeof *m->routing);
  if (!m->credentials || !m->routing)
    goto nomem;
  for (size_t i = 0; i <= sc.creds.mask; i++)
    if (sc.creds.slots[i].msg)
      m->credentials[m->n_credentials++] = sc.creds.slots[i].msg;
  cp_sort(m->credentials, m->n_credentials, sizeof *m->credentials,
          cp_credential_ptr_cmp);
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
  if (in->shared_lease && m->n_proxies) {
    /* Every delivered lease is >= it, and it - margin > now (each
     * delivered proxy's usable_until is). What a renewal moves is then
     * this one time, whenever a proxy ends with it. */
    m->lease_expires_at = cp_new_ts(a, shared_lease, &oom);
    m->lease_usable_until = cp_new_ts(a, shared_lease - margin, &oom);
    st.renewable_until_ms =
        own_less || latest_own >= shared_lease ? shared_lease - margin : 0;
  }
  uint8_t *sum = cp_arena_alloc(a, CP_CHECKSUM_LEN);
  if (oom || !sum || cp_checksum_snapshot(m, sum) != 0)
    goto nomem;
  m->checksum.data = sum;
  m->checksum.len = CP_CHECKSUM_LEN;

  /* The gateway's rules, applied here too, as far as the construction
   * above does not already guarantee them: the rule rows are copied
   * unchecked, so a rule out of its bounds (or two with one id) fails the
   * build (leaving a rule out would change where traffic goes), and an
   * expired snapshot is never produced (CP-3-10). Guaranteed, and not
   * checked again: the counts (the limits above); identity, version and
   * generated_at (input_ok); each proxy's fields (row_ok checks the same
   * bounds as cp_check_proxy, the times are built in range with
   * usable_until <= expires_at); each credential's (its reference is a
   * checked row's, the material checked in resolve_key); the references
   * (ids strictly ascending, keys distinct, every credential built for a
   * delivered proxy and every delivered proxy's present); the checksum,
   * computed just above. t/unit/cp/test_cp_snapshot holds every built
   * snapshot to the full cp_snapshot_check. */
  if (vu <= now ||
      cp_snapshot_check_rules(m, NULL) !=
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

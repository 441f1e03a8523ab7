/* SPDX-License-Identifier: BSD-2-Clause */
/* Compiles a WorkerSnapshot into a view (cp_view.h): two passes over the
 * message, one to size the block and one to fill it, with temporary
 * sorted indexes (proxies by id, credentials by reference, group
 * memberships by group) freed before returning. Runs off the loop. */
#include "cp_view.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>
#include <proxyhost/pool_store.h>

#include "cp_common/snapshot/cp_sort.h"
#include "cp_view_int.h"
#include "lib/host_norm.h"

typedef Controlplane__V1__OwnedProxy owned_proxy;
typedef Controlplane__V1__Credential credential;
typedef Controlplane__V1__RoutingRule routing_rule;

/* Unix ms of a Timestamp; a missing one is 0, which every deadline
 * comparison treats as already passed (fail closed). Seconds are clamped
 * so that the product cannot overflow. */
static int64_t ts_ms(const Google__Protobuf__Timestamp *t) {
  if (!t)
    return 0;
  const int64_t lim = INT64_MAX / 1000 - 1;
  int64_t s = t->seconds > lim ? lim : t->seconds < -lim ? -lim : t->seconds;
  /* Floor to the millisecond: a deadline never moves later. */
  return s * 1000 + (t->nanos >= 0 ? t->nanos / 1000000 : 0);
}

/* A proxy's time in either form: its own (own; NULL: none), or with the
 * snapshot's shared lease (lease, issue 26) the earlier of the two. */
static int64_t end_ms(const Google__Protobuf__Timestamp *own,
                      const Google__Protobuf__Timestamp *lease) {
  if (!lease)
    return ts_ms(own);
  int64_t l = ts_ms(lease);
  if (!own)
    return l;
  int64_t m = ts_ms(own);
  return m < l ? m : l;
}

static uint32_t dur_ms(const Google__Protobuf__Duration *d) {
  if (!d || d->seconds < 0)
    return 0;
  if (d->seconds > UINT32_MAX / 1000)
    return UINT32_MAX;
  uint64_t ms = (uint64_t)d->seconds * 1000 +
                (d->nanos > 0 ? (uint64_t)d->nanos / 1000000 : 0);
  return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* ---- temporary indexes ------------------------------------------------ */

static int cmp_proxy(const void *a, const void *b) {
  const owned_proxy *x = *(const owned_proxy *const *)a;
  const owned_proxy *y = *(const owned_proxy *const *)b;
  return strcmp(str_or_empty(x->proxy_id), str_or_empty(y->proxy_id));
}

static int cred_key_cmp(const char *ref_a, uint64_t ver_a, const char *ref_b,
                        uint64_t ver_b) {
  int c = strcmp(ref_a, ref_b);
  if (c)
    return c;
  return ver_a < ver_b ? -1 : ver_a > ver_b;
}

static int cmp_cred(const void *a, const void *b) {
  const credential *x = *(const credential *const *)a;
  const credential *y = *(const credential *const *)b;
  return cred_key_cmp(str_or_empty(x->secret_ref), x->credential_version,
                      str_or_empty(y->secret_ref), y->credential_version);
}

/* Position of (ref, ver) in the sorted credentials, or -1. */
static long find_cred(const credential *const *creds, size_t n,
                      const char *ref, uint64_t ver) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cred_key_cmp(str_or_empty(creds[mid]->secret_ref),
                         creds[mid]->credential_version, ref, ver);
    if (c == 0)
      return (long)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* One group membership: proxy `idx` (a view index) is in `group`. */
typedef struct membership {
  const char *group;
  uint32_t idx;
} membership;

static int cmp_membership(const void *a, const void *b) {
  const membership *x = a, *y = b;
  int c = strcmp(x->group, y->group);
  if (c)
    return c;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* ---- memberships in (group, proxy) order -----------------------------
 * What a sort by cmp_membership returns, without comparing group names
 * pair by pair (t/bench/cpsnap: that sort was 45% of a compile): each
 * distinct name gets an id from a hash table (open addressing, doubled at
 * half full, so probes end), the distinct names (few) are sorted, and a
 * stable counting sort by a name's rank keeps the proxy order in which
 * the memberships were made (idx ascending). Ties, one proxy naming a
 * group twice, are equal memberships and stay adjacent. */

typedef struct group_ids {
  uint32_t *slot;     /* 1 + an index into names; 0: empty */
  size_t mask;        /* slots - 1 */
  const char **names; /* the distinct names, room for every membership */
  size_t n;
} group_ids;

static size_t name_hash(const char *s) {
  uint64_t h = 14695981039346656037u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    h = (h ^ *p) * 1099511628211u;
  return (size_t)(h ^ (h >> 29));
}

static void group_ids_put(group_ids *t, uint32_t id) {
  size_t i = name_hash(t->names[id]) & t->mask;
  while (t->slot[i])
    i = (i + 1) & t->mask;
  t->slot[i] = id + 1;
}

/* name's id, a new one for a new name; UINT32_MAX on no memory. */
static uint32_t group_id(group_ids *t, const char *name) {
  size_t i = name_hash(name) & t->mask;
  for (; t->slot[i]; i = (i + 1) & t->mask)
    if (strcmp(t->names[t->slot[i] - 1], name) == 0)
      return t->slot[i] - 1;
  uint32_t id = (uint32_t)t->n++;
  t->names[id] = name;
  if (2 * t->n <= t->mask + 1) {
    t->slot[i] = id + 1;
    return id;
  }
  size_t size = 2 * (t->mask + 1);
  uint32_t *grown = calloc(size, sizeof *grown);
  if (!grown)
    return UINT32_MAX;
  free(t->slot);
  t->slot = grown;
  t->mask = size - 1;
  for (uint32_t k = 0; k <= id; k++)
    group_ids_put(t, k);
  return id;
}

typedef struct ranked_name {
  const char *name;
  uint32_t id;
} ranked_name;

static int cmp_ranked(const void *a, const void *b) {
  return strcmp(((const ranked_name *)a)->name,
                ((const ranked_name *)b)->name);
}

/* m[0..n) (n <= PH_POOL_PROXIES_MAX * PH_POOL_GROUPS_MAX) reordered by
 * (group, idx), given that it was made in idx order. */
static int order_members(membership *m, size_t n) {
  if (n < 2)
    return PH_OK;
  group_ids t = {calloc(64, sizeof(uint32_t)), 63,
                 malloc(n * sizeof(const char *)), 0};
  uint32_t *gid = malloc(n * sizeof *gid);
  membership *out = malloc(n * sizeof *out);
  ranked_name *rn = NULL;
  uint32_t *rank = NULL; /* per id: its name's place in strcmp order */
  size_t *start = NULL;
  int rc = PH_ENOMEM;
  if (!t.slot || !t.names || !gid || !out)
    goto done;
  for (size_t i = 0; i < n; i++)
    if ((gid[i] = group_id(&t, m[i].group)) == UINT32_MAX)
      goto done;
  rn = malloc(t.n * sizeof *rn);
  rank = malloc(t.n * sizeof *rank);
  start = calloc(t.n + 1, sizeof *start);
  if (!rn || !rank || !start)
    goto done;
  for (uint32_t k = 0; k < t.n; k++) {
    rn[k].name = t.names[k];
    rn[k].id = k;
  }
  qsort(rn, t.n, sizeof *rn, cmp_ranked); /* distinct names: no ties */
  for (uint32_t r = 0; r < t.n; r++)
    rank[rn[r].id] = r;
  for (size_t i = 0; i < n; i++)
    start[rank[gid[i]] + 1]++;
  for (size_t r = 0; r < t.n; r++)
    start[r + 1] += start[r];
  for (size_t i = 0; i < n; i++)
    out[start[rank[gid[i]]]++] = m[i];
  memcpy(m, out, n * sizeof *m);
  rc = PH_OK;
done:
  free(t.slot);
  free(t.names);
  free(gid);
  free(out);
  free(rn);
  free(rank);
  free(start);
  return rc;
}

/* The first membership of group in m[0..n), or n. */
static size_t group_lower(const membership *m, size_t n, const char *group) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(m[mid].group, group) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* ---- host patterns --------------------------------------------------- */

static int is_address(const char *norm) {
  unsigned char buf[16];
  return inet_pton(AF_INET, norm, buf) == 1 ||
         inet_pton(AF_INET6, norm, buf) == 1;
}

/* Compiles pattern into kind and the normal form in out (HOST_NORM_MAX +
 * 2 bytes: a suffix keeps its leading dot). Same language as
 * ph_az_policy.host_pattern's names (authz_store.h) minus CIDRs. */
static int compile_host(const char *pattern, char *out) {
  out[0] = '\0';
  if (!pattern || !*pattern || strcmp(pattern, "*") == 0)
    return PH_POOL_VIEW_HOST_ANY;
  if (pattern[0] == '*') {
    if (pattern[1] != '.' || strchr(pattern + 2, '*'))
      return PH_POOL_VIEW_HOST_NEVER;
    out[0] = '.';
    if (host_norm(pattern + 2, out + 1) != 0 || is_address(out + 1)) {
      out[0] = '\0';
      return PH_POOL_VIEW_HOST_NEVER;
    }
    return PH_POOL_VIEW_HOST_SUFFIX;
  }
  if (strchr(pattern, '*') || host_norm(pattern, out) != 0) {
    out[0] = '\0';
    return PH_POOL_VIEW_HOST_NEVER;
  }
  return PH_POOL_VIEW_HOST_EXACT;
}

/* ---- the block ------------------------------------------------------- */

/* A bump allocator over the block, with a sizing mode (base NULL). */
typedef struct bump {
  char *base;
  size_t off;
} bump;

static size_t align_up(size_t n) {
  const size_t a = sizeof(void *) > 8 ? sizeof(void *) : 8;
  return (n + a - 1) & ~(a - 1);
}

static void *bump_take(bump *b, size_t n) {
  void *p = b->base ? b->base + b->off : NULL;
  b->off += n;
  return p;
}

static const char *bump_str(bump *b, const char *s, size_t *len_out) {
  size_t n = strlen(str_or_empty(s));
  char *p = bump_take(b, n + 1);
  if (p) {
    memcpy(p, str_or_empty(s), n);
    p[n] = '\0';
  }
  if (len_out)
    *len_out = n;
  return p;
}

/* NULL for an empty "any" field. */
static const char *bump_opt_str(bump *b, const char *s) {
  return s && *s ? bump_str(b, s, NULL) : NULL;
}

typedef struct plan {
  const owned_proxy **proxies; /* sorted by id */
  const credential **creds;    /* sorted by (ref, version) */
  size_t n_creds_in;
  long *cred_slot;             /* per sorted credential: its view index, -1 unused */
  long *proxy_cred;            /* per view proxy: sorted credential or -1 */
  uint32_t n_creds;            /* used, distinct */
  membership *members;
  size_t n_members;
} plan;

static void plan_free(plan *p) {
  free(p->proxies);
  free(p->creds);
  free(p->cred_slot);
  free(p->proxy_cred);
  free(p->members);
}

static int plan_make(const Controlplane__V1__WorkerSnapshot *s, plan *p,
                     const char **why) {
  size_t np = s->n_proxies, nc = s->n_credentials;
  p->proxies = calloc(np ? np : 1, sizeof *p->proxies);
  p->creds = calloc(nc ? nc : 1, sizeof *p->creds);
  p->cred_slot = calloc(nc ? nc : 1, sizeof *p->cred_slot);
  p->proxy_cred = calloc(np ? np : 1, sizeof *p->proxy_cred);
  size_t nm = 0;
  for (size_t i = 0; i < np; i++)
    nm += s->proxies[i]->n_groups;
  p->members = calloc(nm ? nm : 1, sizeof *p->members);
  if (!p->proxies || !p->creds || !p->cred_slot || !p->proxy_cred ||
      !p->members)
    return PH_ENOMEM;

  for (size_t i = 0; i < np; i++)
    p->proxies[i] = s->proxies[i];
  cp_sort(p->proxies, np, sizeof *p->proxies, cmp_proxy);
  for (size_t i = 0; i < np; i++) {
    if (!p->proxies[i]->proxy_id || !*p->proxies[i]->proxy_id) {
      *why = "a proxy without an id";
      return PH_EINVAL;
    }
    if (i && strcmp(p->proxies[i - 1]->proxy_id, p->proxies[i]->proxy_id) ==
                 0) {
      *why = "a proxy id appears twice";
      return PH_EINVAL;
    }
  }

  for (size_t i = 0; i < nc; i++) {
    p->creds[i] = s->credentials[i];
    p->cred_slot[i] = -1;
  }
  cp_sort(p->creds, nc, sizeof *p->creds, cmp_cred);
  p->n_creds_in = nc;
  for (size_t i = 0; i < np; i++) {
    const owned_proxy *op = p->proxies[i];
    p->proxy_cred[i] = -1;
    if (!op->secret_ref || !*op->secret_ref)
      continue;
    long c = find_cred(p->creds, nc, op->secret_ref, op->credential_version);
    if (c < 0) {
      /* Routing through it without its credentials would fail at the
       * upstream; sending none is worse. Refuse the snapshot. */
      *why = "a proxy names credentials the snapshot does not carry";
      return PH_EINVAL;
    }
    p->proxy_cred[i] = c;
    if (p->cred_slot[c] < 0)
      p->cred_slot[c] = 0; /* used; numbered below in sorted order */
  }
  for (size_t c = 0; c < nc; c++)
    if (p->cred_slot[c] >= 0)
      p->cred_slot[c] = p->n_creds++;

  for (size_t i = 0; i < np; i++)
    for (size_t g = 0; g < p->proxies[i]->n_groups; g++) {
      p->members[p->n_members].group = str_or_empty(p->proxies[i]->groups[g]);
      p->members[p->n_members].idx = (uint32_t)i;
      p->n_members++;
    }
  if (order_members(p->members, p->n_members) != PH_OK)
    return PH_ENOMEM;
  /* A proxy listing one group twice is one candidate. */
  size_t w = 0;
  for (size_t r = 0; r < p->n_members; r++)
    if (w == 0 || cmp_membership(&p->members[w - 1], &p->members[r]) != 0)
      p->members[w++] = p->members[r];
  p->n_members = w;
  return PH_OK;
}

/* Lays the block out (b->base NULL: only sizes it). */
static void lay_out(const Controlplane__V1__WorkerSnapshot *s,
                    const cp_view_opts *o, const plan *p, bump *b,
                    size_t *secret_off) {
  cp_view_block *blk = bump_take(b, align_up(sizeof *blk));
  uint32_t nr = (uint32_t)s->n_routing, np = (uint32_t)s->n_proxies;
  int shared = s->lease_expires_at && s->lease_usable_until;
  ph_pool_view_rule *rules = bump_take(b, align_up(nr * sizeof *rules));
  ph_pool_view_proxy *px = bump_take(b, align_up(np * sizeof *px));
  ph_pool_view_credential *cr =
      bump_take(b, align_up(p->n_creds * sizeof *cr));
  uint32_t *cand = bump_take(b, align_up(p->n_members * sizeof *cand));
  uint8_t *health = bump_take(b, align_up(np ? np : 1));

  if (blk) {
    memset(blk, 0, sizeof *blk);
    ph_pool_view *v = &blk->pub;
    v->size = sizeof *v;
    v->version = s->version;
    v->epoch = s->ownership_epoch;
    v->generated_at_ms = ts_ms(s->generated_at);
    v->valid_until_ms = ts_ms(s->valid_until);
    v->obtained_at_ms = o->obtained_at_ms;
    v->stale_deadline_ms =
        o->max_stale_age_ms <= 0 ? o->obtained_at_ms
        : o->obtained_at_ms > INT64_MAX - o->max_stale_age_ms
            ? INT64_MAX
            : o->obtained_at_ms + o->max_stale_age_ms;
    if (s->checksum.len == sizeof v->checksum)
      memcpy(v->checksum, s->checksum.data, sizeof v->checksum);
    v->rules = rules;
    v->n_rules = nr;
    v->proxies = px;
    v->n_proxies = np;
    v->health = health;
    for (size_t i = 0; i < p->n_members; i++)
      cand[i] = p->members[i].idx;
  }
  const char *cluster = bump_str(b, s->cluster_id, NULL);
  const char *worker = bump_str(b, s->worker_id, NULL);
  if (blk) {
    blk->pub.cluster_id = cluster;
    blk->pub.worker_id = worker;
  }

  for (uint32_t i = 0; i < nr; i++) {
    const routing_rule *rr = s->routing[i];
    char host[HOST_NORM_MAX + 2];
    int kind = compile_host(rr->host_pattern, host);
    size_t host_len;
    ph_pool_view_rule r = {0};
    r.rule_id = bump_str(b, rr->rule_id, NULL);
    r.index = i;
    r.host_kind = kind;
    r.host = bump_str(b, host, &host_len);
    r.host_len = (uint32_t)host_len;
    r.port_min = (uint16_t)(rr->port_min > 65535 ? 65535 : rr->port_min);
    r.port_max = (uint16_t)(rr->port_max > 65535 ? 65535 : rr->port_max);
    r.client_identity = bump_opt_str(b, rr->client_identity);
    r.listener = bump_opt_str(b, rr->listener);
    r.target_group = bump_str(b, rr->target_group, NULL);
    r.strategy = bump_str(b, rr->strategy, NULL);
    r.on_unavailable = (int)rr->on_unavailable;
    r.wait_timeout_ms = dur_ms(rr->wait_timeout);
    r.sticky_key = bump_str(b, rr->sticky_key, NULL);
    if (rules) {
      const char *g = str_or_empty(rr->target_group);
      size_t lo = *g ? group_lower(p->members, p->n_members, g)
                     : p->n_members;
      size_t hi = lo;
      while (hi < p->n_members && strcmp(p->members[hi].group, g) == 0)
        hi++;
      r.candidates = cand + lo;
      r.n_candidates = (uint32_t)(hi - lo);
      rules[i] = r;
    }
  }

  for (uint32_t i = 0; i < np; i++) {
    const owned_proxy *op = p->proxies[i];
    ph_pool_view_proxy x = {0};
    x.proxy_id = bump_str(b, op->proxy_id, NULL);
    x.index = i;
    x.protocol = (int)op->protocol;
    x.host = bump_str(b, op->host, NULL);
    x.port = (uint16_t)(op->port > 65535 ? 0 : op->port);
    x.capacity = op->capacity;
    x.weight = op->weight;
    x.usable_until_ms =
        end_ms(op->usable_until, shared ? s->lease_usable_until : NULL);
    x.expires_at_ms =
        end_ms(op->expires_at, shared ? s->lease_expires_at : NULL);
    x.draining = op->draining ? 1 : 0;
    x.zone = bump_str(b, op->zone, NULL);
    if (px) {
      if (p->proxy_cred[i] >= 0)
        x.credential = &cr[p->cred_slot[p->proxy_cred[i]]];
      px[i] = x;
      /* an unknown (newer) verdict is no verdict */
      health[i] = (int)op->health >= 0 && (int)op->health <= PH_POOL_HEALTH_UNHEALTHY
                      ? (uint8_t)op->health
                      : PH_POOL_HEALTH_NONE;
    }
  }

  /* Credentials last: their references, then the secrets together. */
  for (size_t c = 0; c < p->n_creds_in; c++) {
    if (p->cred_slot[c] < 0)
      continue;
    const char *ref = bump_str(b, p->creds[c]->secret_ref, NULL);
    if (cr) {
      cr[p->cred_slot[c]].secret_ref = ref;
      cr[p->cred_slot[c]].credential_version =
          p->creds[c]->credential_version;
    }
  }
  *secret_off = b->off;
  for (size_t c = 0; c < p->n_creds_in; c++) {
    if (p->cred_slot[c] < 0)
      continue;
    size_t ul, pl;
    const char *u = bump_str(b, p->creds[c]->username, &ul);
    const char *pw = bump_str(b, p->creds[c]->password, &pl);
    if (cr) {
      ph_pool_view_credential *d = &cr[p->cred_slot[c]];
      d->username = u;
      d->username_len = (uint32_t)ul;
      d->password = pw;
      d->password_len = (uint32_t)pl;
    }
  }
}

int cp_view_compile(const Controlplane__V1__WorkerSnapshot *s,
                    const cp_view_opts *o, ph_pool_view **out,
                    const char **why) {
  static const char *none;
  if (!why)
    why = &none;
  *why = NULL;
  if (!out)
    return PH_EINVAL;
  *out = NULL;
  if (!s || !o) {
    *why = "no snapshot";
    return PH_EINVAL;
  }
  if (s->n_proxies > PH_POOL_PROXIES_MAX || s->n_routing > PH_POOL_ROUTES_MAX ||
      s->n_credentials > PH_POOL_PROXIES_MAX) {
    *why = "more proxies, rules or credentials than the pool's bounds";
    return PH_EINVAL;
  }
  for (size_t i = 0; i < s->n_proxies; i++)
    if (s->proxies[i]->n_groups > PH_POOL_GROUPS_MAX) {
      *why = "a proxy in more groups than the pool's bound";
      return PH_EINVAL;
    }

  plan p = {0};
  int rc = plan_make(s, &p, why);
  if (rc != PH_OK) {
    if (rc == PH_ENOMEM)
      *why = "out of memory";
    plan_free(&p);
    return rc;
  }
  bump b = {NULL, 0};
  size_t secret_off = 0;
  lay_out(s, o, &p, &b, &secret_off);
  size_t len = b.off;
  char *mem = calloc(1, len);
  if (!mem) {
    plan_free(&p);
    *why = "out of memory";
    return PH_ENOMEM;
  }
  b.base = mem;
  b.off = 0;
  lay_out(s, o, &p, &b, &secret_off);
  plan_free(&p);
  cp_view_block *blk = (cp_view_block *)(void *)mem;
  blk->len = len;
  blk->secret_off = secret_off;
  blk->secret_len = len - secret_off;
  atomic_init(&blk->refs, 1);
  *out = &blk->pub;
  return PH_OK;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Deltas (CP-3-15, CP-3-16): the gateway applies one to the snapshot it
 * holds only when it names that snapshot's version as its base and the
 * result is exactly what the controller hashed; the controller's diff
 * makes one from the acknowledged snapshot and a newly built one. A delta
 * carries no credentials: the result keeps the held credentials its
 * proxies still name, and a diff whose new snapshot needs any other
 * material answers NEED_FULL. */
#include <stdlib.h>
#include <string.h>

#include "cp_checksum.h"
#include "cp_snapshot_int.h"
#include "cp_sort.h"

#define NEED_FULL(text)                                                     \
  do {                                                                      \
    *why = (text);                                                          \
    res = CP_DELTA_NEED_FULL;                                               \
    goto done;                                                              \
  } while (0)

static int str_ptr_cmp(const void *a, const void *b) {
  return cp_id_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* A sorted copy of a pointer array; *ok = 0 on no memory. */
static void **sorted_copy(void *const *v, size_t n,
                          int (*cmp)(const void *, const void *), int *ok) {
  void **s = malloc((n ? n : 1) * sizeof *s);
  if (!s) {
    *ok = 0;
    return NULL;
  }
  if (n)
    memcpy(s, v, n * sizeof *s);
  cp_sort(s, n, sizeof *s, cmp);
  return s;
}

static int has_dup(void **s, size_t n, int (*cmp)(const void *, const void *)) {
  for (size_t i = 1; i < n; i++)
    if (cmp(&s[i - 1], &s[i]) == 0)
      return 1;
  return 0;
}

/* 1 when a proxy of id is among proxies sorted by id. */
static int has_proxy(void **s, size_t n, const char *id) {
  Controlplane__V1__OwnedProxy key = CONTROLPLANE__V1__OWNED_PROXY__INIT;
  key.proxy_id = (char *)id; /* read only */
  const Controlplane__V1__OwnedProxy *kp = &key;
  return n && bsearch(&kp, s, n, sizeof *s, cp_proxy_ptr_cmp) != NULL;
}

static int find_str(void **s, size_t n, const char *id) {
  const char *k = id;
  return bsearch(&k, s, n, sizeof *s, str_ptr_cmp) != NULL;
}

cp_delta_result cp_snapshot_apply_delta(
    const Controlplane__V1__WorkerSnapshot *held,
    const Controlplane__V1__SnapshotDelta *d, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *limp, cp_snapshot **out,
    const char **whyp) {
  return cp_snapshot_apply_delta_from(held, d, expect, now_ms, limp, NULL,
                                      NULL, out, whyp);
}

cp_delta_result cp_snapshot_apply_delta_from(
    const Controlplane__V1__WorkerSnapshot *held,
    const Controlplane__V1__SnapshotDelta *d, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *limp, cp_material_fn material,
    void *material_arg, cp_snapshot **out, const char **whyp) {
  const char *dummy;
  const char **why = whyp ? whyp : &dummy;
  cp_delta_result res = CP_DELTA_OK;
  cp_snapshot *snap = NULL;
  void **hp = NULL, **up = NULL, **rm = NULL, **hc = NULL;
  int ok = 1, oom = 0;
  *out = NULL;
  *why = "ok";
  cp_snapshot_limits lim = cp_limits_or_max(limp);
  if (!held || !d)
    NEED_FULL("no held snapshot or no delta");
  /* CP-3-16: exactly the held version, forward only. */
  if (d->base_version != held->version)
    NEED_FULL("base_version is not the held version");
  if (d->version <= d->base_version)
    NEED_FULL("delta version not above its base");
  if (d->ownership_epoch < held->ownership_epoch)
    NEED_FULL("delta ownership_epoch below the held one"); /* CP-2-6 */
  if (d->n_routing > lim.max_routes || d->n_upserted_proxies > lim.max_proxies ||
      d->n_removed_proxy_ids > lim.max_proxies)
    NEED_FULL("delta over the limits");
  if (!d->routing_replaced && d->n_routing)
    NEED_FULL("routing rules without routing_replaced");
  /* What the delta brings is checked before anything is copied, so that
   * the copies stay within their bound (a full check of the result
   * follows). */
  int shared;
  if (cp_check_lease(d->lease_expires_at, d->lease_usable_until, &shared,
                     why) !=
      CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED) {
    res = CP_DELTA_NEED_FULL;
    goto done;
  }
  for (size_t i = 0; i < d->n_upserted_proxies; i++)
    if (cp_check_proxy(d->upserted_proxies[i], shared, why) !=
        CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED) {
      res = CP_DELTA_NEED_FULL;
      goto done;
    }
  for (size_t i = 0; i < d->n_routing; i++)
    if (cp_check_rule(d->routing[i], why) !=
        CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED) {
      res = CP_DELTA_NEED_FULL;
      goto done;
    }
  for (size_t i = 0; i < d->n_removed_proxy_ids; i++)
    if (!cp_str_ok(d->removed_proxy_ids[i], 1, PH_POOL_ID_MAX))
      NEED_FULL("a removed proxy id out of its bounds");

  hp = sorted_copy((void *const *)held->proxies, held->n_proxies,
                   cp_proxy_ptr_cmp, &ok);
  up = sorted_copy((void *const *)d->upserted_proxies, d->n_upserted_proxies,
                   cp_proxy_ptr_cmp, &ok);
  rm = sorted_copy((void *const *)d->removed_proxy_ids, d->n_removed_proxy_ids,
                   str_ptr_cmp, &ok);
  hc = sorted_copy((void *const *)held->credentials, held->n_credentials,
                   cp_credential_ptr_cmp, &ok);
  if (!ok)
    goto nomem;
  if (has_dup(up, d->n_upserted_proxies, cp_proxy_ptr_cmp) ||
      has_dup(rm, d->n_removed_proxy_ids, str_ptr_cmp))
    NEED_FULL("a proxy id twice in the delta");
  for (size_t i = 0; i < d->n_removed_proxy_ids; i++) {
    if (!has_proxy(hp, held->n_proxies, rm[i]))
      NEED_FULL("removes a proxy the held snapshot does not have");
    if (has_proxy(up, d->n_upserted_proxies, rm[i]))
      NEED_FULL("removes and upserts the same proxy");
  }

  /* The result: held's proxies less the removed and the replaced, then
   * the upserted (all in id order, as a build lists them). */
  size_t kept = 0;
  for (size_t i = 0; i < held->n_proxies; i++) {
    const char *id = ((Controlplane__V1__OwnedProxy *)hp[i])->proxy_id;
    if (!find_str(rm, d->n_removed_proxy_ids, id) &&
        !has_proxy(up, d->n_upserted_proxies, id))
      hp[kept++] = hp[i];
  }
  size_t np = kept + d->n_upserted_proxies;
  if (np > lim.max_proxies)
    NEED_FULL("the result has more proxies than max_proxies");
  size_t nrules = d->routing_replaced ? d->n_routing : held->n_routing;
  snap = cp_snapshot_new(cp_arena_cap_for(nrules, np, held->n_credentials));
  if (!snap)
    goto nomem;
  cp_arena *a = snap->arena;
  Controlplane__V1__WorkerSnapshot *m = snap->msg;
  m->proxies = cp_arena_array(a, np, sizeof *m->proxies);
  m->routing = cp_arena_array(a, nrules, sizeof *m->routing);
  m->credentials = cp_arena_array(a, held->n_credentials,
                                  sizeof *m->credentials);
  unsigned char *used = cp_arena_alloc(a, held->n_credentials);
  if (!m->proxies || !m->routing || !m->credentials || !used)
    goto nomem;
  /* Merge the two sorted runs. */
  size_t i = 0, j = 0;
  while (i < kept || j < d->n_upserted_proxies) {
    const Controlplane__V1__OwnedProxy *p;
    if (j >= d->n_upserted_proxies ||
        (i < kept && cp_proxy_ptr_cmp(&hp[i], &up[j]) < 0))
      p = hp[i++];
    else
      p = up[j++];
    m->proxies[m->n_proxies++] = cp_copy_proxy(a, p, &oom);
    if (p->secret_ref && *p->secret_ref) {
      long k = cp_find_credential((Controlplane__V1__Credential *const *)hc,
                                  held->n_credentials, p->secret_ref,
                                  p->credential_version);
      if (k < 0)
        NEED_FULL("a proxy names a credential the held snapshot lacks");
      used[k] = 1;
    }
  }
  for (size_t k = 0; k < held->n_credentials; k++) {
    if (!used[k])
      continue;
    const Controlplane__V1__Credential *c = hc[k];
    Controlplane__V1__Credential with; /* held's identity, the material */
    if (material) {
      const char *u = NULL, *pw = NULL;
      if (material(material_arg, c->secret_ref, c->credential_version, &u,
                   &pw) != 0)
        NEED_FULL("a proxy names a credential whose material is not held");
      with = *c;
      with.username = (char *)u;
      with.password = (char *)pw;
      c = &with;
    }
    m->credentials[m->n_credentials++] = cp_copy_credential(a, c, &oom);
  }
  Controlplane__V1__RoutingRule *const *src =
      d->routing_replaced ? d->routing : held->routing;
  for (size_t k = 0; k < nrules; k++) {
    if (!src[k])
      NEED_FULL("routing rule missing");
    m->routing[m->n_routing++] = cp_copy_rule(a, src[k], &oom);
  }
  m->version = d->version;
  m->ownership_epoch = d->ownership_epoch;
  m->generated_at = cp_copy_ts(a, d->generated_at, &oom);
  m->valid_until = cp_copy_ts(a, d->valid_until, &oom);
  /* The shared lease is the delta's: a renewal is these two times. */
  m->lease_expires_at = cp_copy_ts(a, d->lease_expires_at, &oom);
  m->lease_usable_until = cp_copy_ts(a, d->lease_usable_until, &oom);
  m->cluster_id = cp_copy_str(a, held->cluster_id, &oom);
  m->worker_id = cp_copy_str(a, held->worker_id, &oom);
  m->session_id = cp_copy_str(a, held->session_id, &oom);
  m->checksum.len = d->checksum.len;
  m->checksum.data = cp_arena_memdup(a, d->checksum.data, d->checksum.len);
  if (oom || !m->checksum.data)
    goto nomem;

  /* The whole result, checksum included, as a full snapshot would be
   * checked: a delta never lets through what a full snapshot could not. */
  Controlplane__V1__RejectReason r =
      cp_snapshot_check(m, expect, now_ms, &lim, why);
  if (r == CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_BAD_CHECKSUM)
    NEED_FULL("the result's checksum is not the delta's");
  if (r != CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED) {
    res = CP_DELTA_NEED_FULL; /* *why is the checker's */
    goto done;
  }
  goto done;

nomem:
  res = CP_DELTA_ENOMEM;
  *why = "no memory for the delta";
done:
  free(hp);
  free(up);
  free(rm);
  free(hc);
  if (res == CP_DELTA_OK)
    *out = snap;
  else
    cp_snapshot_free(snap);
  return res;
}

static int same_id(const char *a, const char *b) { return cp_id_cmp(a, b) == 0; }

cp_delta_result cp_snapshot_diff(const Controlplane__V1__WorkerSnapshot *old,
                                 const Controlplane__V1__WorkerSnapshot *nw,
                                 cp_delta **outp, const char **whyp) {
  const char *dummy;
  const char **why = whyp ? whyp : &dummy;
  cp_delta_result res = CP_DELTA_OK;
  void **op = NULL, **np = NULL, **oc = NULL;
  cp_arena *a = NULL;
  cp_delta *out = NULL;
  int ok = 1, oom = 0;
  *outp = NULL;
  *why = "ok";
  if (!old || !nw)
    NEED_FULL("no snapshot");
  if (!same_id(old->cluster_id, nw->cluster_id) ||
      !same_id(old->worker_id, nw->worker_id) ||
      !same_id(old->session_id, nw->session_id))
    NEED_FULL("another identity");
  if (nw->version <= old->version)
    NEED_FULL("new version not above the old one");
  if (nw->ownership_epoch < old->ownership_epoch)
    NEED_FULL("new ownership_epoch below the old one"); /* CP-2-6 */
  op = sorted_copy((void *const *)old->proxies, old->n_proxies,
                   cp_proxy_ptr_cmp, &ok);
  np = sorted_copy((void *const *)nw->proxies, nw->n_proxies,
                   cp_proxy_ptr_cmp, &ok);
  oc = sorted_copy((void *const *)old->credentials, old->n_credentials,
                   cp_credential_ptr_cmp, &ok);
  if (!ok)
    goto nomem;
  /* Deltas carry no material: every credential of the new snapshot must
   * be in the old one, unchanged. */
  for (size_t i = 0; i < nw->n_credentials; i++) {
    const Controlplane__V1__Credential *c = nw->credentials[i];
    long k = cp_find_credential((Controlplane__V1__Credential *const *)oc,
                                old->n_credentials, c->secret_ref,
                                c->credential_version);
    uint8_t x[CP_CHECKSUM_LEN], y[CP_CHECKSUM_LEN];
    if (k < 0)
      NEED_FULL("a new credential");
    cp_checksum_credential(c, x);
    cp_checksum_credential(oc[k], y);
    if (memcmp(x, y, sizeof x) != 0)
      NEED_FULL("credential material changed");
  }

  a = cp_arena_new(cp_arena_cap_for(nw->n_routing, nw->n_proxies, 0) +
                   old->n_proxies * (size_t)(PH_POOL_ID_MAX + 32));
  if (!a)
    goto nomem;
  out = cp_arena_alloc(a, sizeof *out);
  Controlplane__V1__SnapshotDelta *m = cp_arena_alloc(a, sizeof *m);
  if (!out || !m)
    goto nomem;
  controlplane__v1__snapshot_delta__init(m);
  out->arena = a;
  out->msg = m;
  m->base_version = old->version;
  m->version = nw->version;
  m->ownership_epoch = nw->ownership_epoch;
  m->generated_at = cp_copy_ts(a, nw->generated_at, &oom);
  m->valid_until = cp_copy_ts(a, nw->valid_until, &oom);
  m->lease_expires_at = cp_copy_ts(a, nw->lease_expires_at, &oom);
  m->lease_usable_until = cp_copy_ts(a, nw->lease_usable_until, &oom);

  /* Routing: replaced as a whole when any rule or the order differs. */
  int same = old->n_routing == nw->n_routing;
  for (size_t i = 0; same && i < nw->n_routing; i++) {
    uint8_t x[CP_CHECKSUM_LEN], y[CP_CHECKSUM_LEN];
    cp_checksum_rule(old->routing[i], x);
    cp_checksum_rule(nw->routing[i], y);
    same = memcmp(x, y, sizeof x) == 0;
  }
  if (!same) {
    m->routing_replaced = 1;
    m->routing = cp_arena_array(a, nw->n_routing, sizeof *m->routing);
    if (!m->routing)
      goto nomem;
    for (size_t i = 0; i < nw->n_routing; i++)
      m->routing[m->n_routing++] = cp_copy_rule(a, nw->routing[i], &oom);
  }

  /* Proxies: a walk over both id orders. */
  m->upserted_proxies = cp_arena_array(a, nw->n_proxies,
                                       sizeof *m->upserted_proxies);
  m->removed_proxy_ids = cp_arena_array(a, old->n_proxies,
                                        sizeof *m->removed_proxy_ids);
  if (!m->upserted_proxies || !m->removed_proxy_ids)
    goto nomem;
  size_t i = 0, j = 0;
  while (i < old->n_proxies || j < nw->n_proxies) {
    int c = i >= old->n_proxies  ? 1
            : j >= nw->n_proxies ? -1
                                 : cp_proxy_ptr_cmp(&op[i], &np[j]);
    if (c < 0) {
      const Controlplane__V1__OwnedProxy *p = op[i++];
      m->removed_proxy_ids[m->n_removed_proxy_ids++] =
          cp_copy_str(a, p->proxy_id, &oom);
    } else if (c > 0) {
      m->upserted_proxies[m->n_upserted_proxies++] =
          cp_copy_proxy(a, np[j++], &oom);
    } else {
      uint8_t x[CP_CHECKSUM_LEN], y[CP_CHECKSUM_LEN];
      cp_checksum_proxy(op[i++], x);
      cp_checksum_proxy(np[j], y);
      if (memcmp(x, y, sizeof x) != 0)
        m->upserted_proxies[m->n_upserted_proxies++] =
            cp_copy_proxy(a, np[j], &oom);
      j++;
    }
  }
  /* The checksum of the full snapshot the worker will hold. */
  uint8_t *sum = cp_arena_alloc(a, CP_CHECKSUM_LEN);
  if (oom || !sum || cp_checksum_snapshot(nw, sum) != 0)
    goto nomem;
  m->checksum.data = sum;
  m->checksum.len = CP_CHECKSUM_LEN;
  goto done;

nomem:
  res = CP_DELTA_ENOMEM;
  *why = "no memory for the delta";
done:
  free(op);
  free(np);
  free(oc);
  if (res == CP_DELTA_OK) {
    *outp = out;
  } else {
    cp_arena_free(a);
  }
  return res;
}

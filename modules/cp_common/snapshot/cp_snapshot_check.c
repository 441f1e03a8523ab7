/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's validation of a full snapshot (CP-3-7, CP-2-2, CP-7-3,
 * CP-8-3): every field against its bound before anything is built from
 * it, so that a view never holds a value the controller could not have
 * meant. The rules are listed in docs/protocol/controlplane-snapshots.md
 * ("Validation"). */
#include <stdlib.h>
#include <string.h>

#include "cp_checksum.h"
#include "cp_snapshot_int.h"
#include "cp_sort.h"
#include "cp_snapshot_time.h"

#define R_OK CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_UNSPECIFIED
#define R_EXPIRED CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_EXPIRED
#define R_CHECKSUM CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_BAD_CHECKSUM
#define R_MALFORMED CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_MALFORMED
#define R_TOO_LARGE CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_TOO_LARGE
#define R_IDENTITY CONTROLPLANE__V1__REJECT_REASON__REJECT_REASON_IDENTITY

/* Sets the reason's text and returns the reason. */
#define REJECT(r, text)                                                     \
  do {                                                                      \
    *why = (text);                                                          \
    return (r);                                                             \
  } while (0)

static int identity_ok(const char *got, const char *want) {
  return !want || strcmp(got ? got : "", want) == 0;
}

Controlplane__V1__RejectReason cp_check_rule(
    const Controlplane__V1__RoutingRule *r, const char **why) {
  if (!r)
    REJECT(R_MALFORMED, "routing rule missing");
  if (!cp_str_ok(r->rule_id, 1, PH_POOL_ID_MAX))
    REJECT(R_MALFORMED, "rule_id out of its bounds");
  if (!cp_str_ok(r->host_pattern, 1, PH_POOL_HOST_MAX))
    REJECT(R_MALFORMED, "host_pattern out of its bounds");
  if (!(r->port_min == 0 && r->port_max == 0) &&
      (r->port_min < 1 || r->port_max > 65535 || r->port_min > r->port_max))
    REJECT(R_MALFORMED, "rule ports not 0 0 nor 1 <= min <= max <= 65535");
  if (!cp_str_ok(r->client_identity, 0, PH_POOL_NAME_MAX))
    REJECT(R_MALFORMED, "client_identity out of its bounds");
  if (!cp_str_ok(r->listener, 0, PH_POOL_NAME_MAX))
    REJECT(R_MALFORMED, "listener out of its bounds");
  if (!cp_str_ok(r->target_group, 1, PH_POOL_GROUP_MAX))
    REJECT(R_MALFORMED, "target_group out of its bounds");
  if (!cp_strategy_ok(r->strategy))
    REJECT(R_MALFORMED, "strategy is not 1..64 of [a-z0-9_]");
  if (!cp_str_ok(r->sticky_key, 0, PH_POOL_STICKY_MAX))
    REJECT(R_MALFORMED, "sticky_key out of its bounds");
  switch (r->on_unavailable) {
  case CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_REJECT:
  case CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT:
  case CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_DIRECT:
    break;
  default: /* UNSPECIFIED or a value this build does not know (CP-7-3) */
    REJECT(R_MALFORMED, "on_unavailable unspecified or unknown");
  }
  int wait = r->on_unavailable ==
             CONTROLPLANE__V1__ON_UNAVAILABLE__ON_UNAVAILABLE_WAIT;
  if (wait && !r->wait_timeout)
    REJECT(R_MALFORMED, "WAIT without wait_timeout");
  if (r->wait_timeout) {
    int64_t ms;
    if (!cp_dur_to_ms(r->wait_timeout, &ms) || ms < 1 ||
        ms > (int64_t)PH_POOL_WAIT_TIMEOUT_MAX_MS)
      REJECT(R_MALFORMED, "wait_timeout not 1 ms..60 s");
  }
  return R_OK;
}

Controlplane__V1__RejectReason cp_check_proxy(
    const Controlplane__V1__OwnedProxy *p, int shared, const char **why) {
  if (!p)
    REJECT(R_MALFORMED, "proxy missing");
  if (!cp_str_ok(p->proxy_id, 1, PH_POOL_ID_MAX))
    REJECT(R_MALFORMED, "proxy_id out of its bounds");
  switch (p->protocol) {
  case CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP_CONNECT:
  case CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_SOCKS5:
  case CONTROLPLANE__V1__UPSTREAM_PROTOCOL__UPSTREAM_PROTOCOL_HTTP:
    break;
  default:
    REJECT(R_MALFORMED, "proxy protocol unspecified or unknown");
  }
  if (!cp_str_ok(p->host, 1, PH_POOL_HOST_MAX))
    REJECT(R_MALFORMED, "proxy host out of its bounds");
  if (p->port < 1 || p->port > 65535)
    REJECT(R_MALFORMED, "proxy port not 1..65535");
  if (p->n_groups < 1 || p->n_groups > PH_POOL_GROUPS_MAX)
    REJECT(R_MALFORMED, "proxy groups not 1..8");
  for (size_t i = 0; i < p->n_groups; i++)
    if (!cp_str_ok(p->groups[i], 1, PH_POOL_GROUP_MAX))
      REJECT(R_MALFORMED, "proxy group out of its bounds");
  if (!cp_str_ok(p->zone, 0, PH_POOL_NAME_MAX))
    REJECT(R_MALFORMED, "proxy zone out of its bounds");
  if (p->capacity < 1 || p->capacity > PH_POOL_CAPACITY_MAX)
    REJECT(R_MALFORMED, "proxy capacity not 1..1000000");
  if (p->weight < 1 || p->weight > PH_POOL_WEIGHT_MAX)
    REJECT(R_MALFORMED, "proxy weight not 1..1000");
  /* The shared lease form: both absent is a proxy with no expiry of its
   * own (the snapshot's lease ends it). */
  if (!(shared && !p->expires_at && !p->usable_until)) {
    if (!cp_ts_ok(p->expires_at) || !cp_ts_ok(p->usable_until))
      REJECT(R_MALFORMED, "proxy expires_at or usable_until missing or "
                          "malformed");
    if (cp_ts_cmp(p->usable_until, p->expires_at) > 0)
      REJECT(R_MALFORMED, "proxy usable_until after expires_at");
  }
  if (!cp_str_ok(p->secret_ref, 0, PH_POOL_SECRET_REF_MAX))
    REJECT(R_MALFORMED, "proxy secret_ref out of its bounds");
  int has_ref = p->secret_ref && *p->secret_ref;
  if (has_ref != (p->credential_version != 0))
    REJECT(R_MALFORMED, "proxy credential_version without secret_ref or "
                        "the reverse");
  return R_OK;
}

Controlplane__V1__RejectReason cp_check_lease(
    const Google__Protobuf__Timestamp *exp,
    const Google__Protobuf__Timestamp *usable, int *shared, const char **why) {
  *shared = 0;
  if (!exp && !usable)
    return R_OK;
  if (!cp_ts_ok(exp) || !cp_ts_ok(usable))
    REJECT(R_MALFORMED, "lease_expires_at or lease_usable_until alone or "
                        "malformed");
  if (cp_ts_cmp(usable, exp) > 0)
    REJECT(R_MALFORMED, "lease_usable_until after lease_expires_at");
  *shared = 1;
  return R_OK;
}

/* The earlier of own (NULL: none) and the lease's (NULL: no lease). */
static int earlier_ms(const Google__Protobuf__Timestamp *own,
                      const Google__Protobuf__Timestamp *lease, int64_t *ms) {
  int64_t a, b;
  if (!lease)
    return cp_ts_to_ms(own, ms);
  if (!cp_ts_to_ms(lease, &b))
    return 0;
  if (!own) {
    *ms = b;
    return 1;
  }
  if (!cp_ts_to_ms(own, &a))
    return 0;
  *ms = a < b ? a : b;
  return 1;
}

int cp_proxy_times(const Controlplane__V1__WorkerSnapshot *s,
                   const Controlplane__V1__OwnedProxy *p,
                   int64_t *expires_ms, int64_t *usable_ms) {
  int shared = s && s->lease_expires_at && s->lease_usable_until;
  return earlier_ms(p->expires_at, shared ? s->lease_expires_at : NULL,
                    expires_ms) &&
         earlier_ms(p->usable_until, shared ? s->lease_usable_until : NULL,
                    usable_ms);
}

static Controlplane__V1__RejectReason check_credential(
    const Controlplane__V1__Credential *c, const char **why) {
  if (!c)
    REJECT(R_MALFORMED, "credential missing");
  if (!cp_str_ok(c->secret_ref, 1, PH_POOL_SECRET_REF_MAX) ||
      c->credential_version < 1)
    REJECT(R_MALFORMED, "credential reference out of its bounds");
  if (!cp_str_ok(c->username, 0, 255) || !cp_str_ok(c->password, 0, 255))
    REJECT(R_MALFORMED, "credential material out of its bounds");
  return R_OK;
}

static int rule_ptr_cmp(const void *a, const void *b) {
  const Controlplane__V1__RoutingRule *x = *(const void *const *)a;
  const Controlplane__V1__RoutingRule *y = *(const void *const *)b;
  return cp_id_cmp(x->rule_id, y->rule_id);
}

/* No two rules with one rule_id (a sorted copy; the message untouched). */
static Controlplane__V1__RejectReason check_rule_ids(
    const Controlplane__V1__WorkerSnapshot *m, const char **why) {
  size_t nr = m->n_routing;
  void **ru = malloc((nr ? nr : 1) * sizeof *ru);
  if (!ru)
    REJECT(R_TOO_LARGE, "no memory to check the snapshot");
  if (nr)
    memcpy(ru, m->routing, nr * sizeof *ru);
  cp_sort(ru, nr, sizeof *ru, rule_ptr_cmp);
  Controlplane__V1__RejectReason r = R_OK;
  for (size_t i = 1; i < nr && r == R_OK; i++)
    if (rule_ptr_cmp(&ru[i - 1], &ru[i]) == 0) {
      *why = "duplicate rule_id";
      r = R_MALFORMED;
    }
  free(ru);
  return r;
}

/* The cross-field rules: unique ids, every named credential carried,
 * every carried credential named (a snapshot carries no material its
 * proxies do not need). The items were checked one by one before. */
static Controlplane__V1__RejectReason check_references(
    const Controlplane__V1__WorkerSnapshot *m, const char **why) {
  Controlplane__V1__RejectReason r = R_OK;
  size_t np = m->n_proxies, nc = m->n_credentials;
  void **px = malloc((np ? np : 1) * sizeof *px);
  Controlplane__V1__Credential **cr = malloc((nc ? nc : 1) * sizeof *cr);
  unsigned char *used = calloc(nc ? nc : 1, 1);
  if (!px || !cr || !used) {
    *why = "no memory to check the snapshot";
    r = R_TOO_LARGE;
    goto out;
  }
  if (np)
    memcpy(px, m->proxies, np * sizeof *px);
  cp_sort(px, np, sizeof *px, cp_proxy_ptr_cmp);
  for (size_t i = 1; i < np; i++)
    if (cp_proxy_ptr_cmp(&px[i - 1], &px[i]) == 0) {
      *why = "duplicate proxy_id";
      r = R_MALFORMED;
      goto out;
    }
  if ((r = check_rule_ids(m, why)) != R_OK)
    goto out;
  if (nc)
    memcpy(cr, m->credentials, nc * sizeof *cr);
  cp_sort(cr, nc, sizeof *cr, cp_credential_ptr_cmp);
  for (size_t i = 1; i < nc; i++)
    if (cp_credential_ptr_cmp(&cr[i - 1], &cr[i]) == 0) {
      *why = "duplicate credential (secret_ref, credential_version)";
      r = R_MALFORMED;
      goto out;
    }
  for (size_t i = 0; i < np; i++) {
    const Controlplane__V1__OwnedProxy *p = m->proxies[i];
    if (!p->secret_ref || !*p->secret_ref)
      continue;
    long k = cp_find_credential(cr, nc, p->secret_ref, p->credential_version);
    if (k < 0) {
      *why = "a proxy names a credential the snapshot does not carry";
      r = R_MALFORMED;
      goto out;
    }
    used[k] = 1;
  }
  for (size_t i = 0; i < nc; i++)
    if (!used[i]) {
      *why = "a credential no proxy names";
      r = R_MALFORMED;
      goto out;
    }
out:
  free(px);
  free(cr);
  free(used);
  return r;
}

Controlplane__V1__RejectReason cp_snapshot_check(
    const Controlplane__V1__WorkerSnapshot *m, const cp_expect *expect,
    int64_t now_ms, const cp_snapshot_limits *limp, const char **whyp) {
  const char *dummy;
  const char **why = whyp ? whyp : &dummy;
  *why = "ok";
  if (!m)
    REJECT(R_MALFORMED, "no snapshot");
  cp_snapshot_limits lim = cp_limits_or_max(limp);
  /* Counts first: nothing is sorted or hashed past the worker's limits
   * (CP-8-3). */
  if (m->n_proxies > lim.max_proxies)
    REJECT(R_TOO_LARGE, "more proxies than max_proxies");
  if (m->n_routing > lim.max_routes)
    REJECT(R_TOO_LARGE, "more routing rules than max_routes");
  if (m->n_credentials > lim.max_credentials)
    REJECT(R_TOO_LARGE, "more credentials than max_credentials");
  /* Identity (CP-2-2): another cluster's, worker's or session's snapshot
   * is never applied, whatever else it holds. */
  if (expect && (!identity_ok(m->cluster_id, expect->cluster_id) ||
                 !identity_ok(m->worker_id, expect->worker_id) ||
                 !identity_ok(m->session_id, expect->session_id)))
    REJECT(R_IDENTITY, "cluster_id, worker_id or session_id is not ours");
  /* valid_until (CP-3-7): missing, malformed or reached. */
  int64_t vu;
  if (!m->valid_until)
    REJECT(R_EXPIRED, "valid_until missing");
  if (!cp_ts_to_ms(m->valid_until, &vu))
    REJECT(R_EXPIRED, "valid_until malformed");
  if (vu <= now_ms)
    REJECT(R_EXPIRED, "valid_until reached");
  /* Every field in its bounds (CP-7-3 for the enums). */
  if (!cp_str_ok(m->cluster_id, 1, PH_POOL_ID_MAX) ||
      !cp_str_ok(m->worker_id, 1, PH_POOL_ID_MAX) ||
      !cp_str_ok(m->session_id, 1, PH_POOL_ID_MAX))
    REJECT(R_MALFORMED, "cluster_id, worker_id or session_id out of its "
                        "bounds");
  if (m->version < 1)
    REJECT(R_MALFORMED, "version 0");
  if (m->generated_at && !cp_ts_ok(m->generated_at))
    REJECT(R_MALFORMED, "generated_at malformed");
  Controlplane__V1__RejectReason r;
  int shared;
  if ((r = cp_check_lease(m->lease_expires_at, m->lease_usable_until,
                          &shared, why)) != R_OK)
    return r;
  for (size_t i = 0; i < m->n_routing; i++)
    if ((r = cp_check_rule(m->routing[i], why)) != R_OK)
      return r;
  for (size_t i = 0; i < m->n_proxies; i++)
    if ((r = cp_check_proxy(m->proxies[i], shared, why)) != R_OK)
      return r;
  for (size_t i = 0; i < m->n_credentials; i++)
    if ((r = check_credential(m->credentials[i], why)) != R_OK)
      return r;
  if ((r = check_references(m, why)) != R_OK)
    return r;
  /* Last, the checksum over what is now known to be well-formed. */
  uint8_t sum[CP_CHECKSUM_LEN];
  if (m->checksum.len != CP_CHECKSUM_LEN)
    REJECT(R_CHECKSUM, "checksum is not 32 bytes");
  if (cp_checksum_snapshot(m, sum) != 0)
    REJECT(R_TOO_LARGE, "no memory to check the snapshot");
  if (!cp_checksum_equal(&m->checksum, sum))
    REJECT(R_CHECKSUM, "checksum does not match the content");
  *why = "ok";
  return R_OK;
}

Controlplane__V1__RejectReason cp_snapshot_check_rules(
    const Controlplane__V1__WorkerSnapshot *m, const char **whyp) {
  const char *dummy;
  const char **why = whyp ? whyp : &dummy;
  *why = "ok";
  Controlplane__V1__RejectReason r;
  for (size_t i = 0; i < m->n_routing; i++)
    if ((r = cp_check_rule(m->routing[i], why)) != R_OK)
      return r;
  return check_rule_ids(m, why);
}

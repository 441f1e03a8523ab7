/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_server's keys: see cs_conf.h and the .ini.sample. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/grpc/cp_grpc_held.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "contracts/cp_authority.h"
#include "cs_conf.h"
#include "cs_sched_plan.h"
#include "cs_hyst.h"

/* cs_conf_keys, the key table, is generated from
 * controlplane_server.ini.sample (its "; type:" lines) by
 * tools/gen_conf_keys.awk into cs_conf_keys.c. Where this code relies on
 * a bound the sample states, cs_conf_read holds it again (held below,
 * through ph_conf_limits; the other string keys through ph_conf_copy into
 * their arrays), so that a wrong sample fails the start, closed. */

/* The bounds the code relies on: counts cast to uint32_t and
 * sizing arrays (health_forward_max: one push's buffer and the
 * authority's CP_AUTH_PASSIVE_PUSH_MAX), the hysteresis counters
 * (CS_HYST_MAX) and percents; the transport's (the gRPC limits, the TLS
 * paths kept for reloads) by cp_grpc_held (cp_grpc_held.h). */
static const ph_conf_limit held[] = {
    {"max_runtime_counters", 1, 100000, 0},
    {"check_spread", 0, 50, 0},
    {"max_checkers", 1, 1024, 0},
    {"max_tasks", 1, 1000000, 0},
    {"max_checker_concurrency", 1, 65536, 0},
    {"health_rise", 1, CS_HYST_MAX, 0},
    {"health_fall", 1, CS_HYST_MAX, 0},
    {"health_panic_threshold", 1, 100, 0},
    {"health_weight_dial", 0, 100, 0},
    {"health_weight_handshake", 0, 100, 0},
    {"health_weight_response", 0, 100, 0},
    {"health_weight_tunnel", 0, 100, 0},
    {"health_forward_max", 1, CP_AUTH_PASSIVE_PUSH_MAX, 0},
};

static int seg_ok(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (*s == '/' || *s == '%' || *s <= 0x20 || *s >= 0x7f)
      return 0;
  return 1;
}

/* The key at fault and why: return ph_conf_fail's PH_EINVAL. */
#define FAIL(k, ...) return ph_conf_fail(key, (k), why, whylen, __VA_ARGS__)

/* The rules that span the controller and its authority (redis_ownership,
 * the only cp.authority provider in the tree: `authority` names its
 * section, empty is "redis_ownership"). Read with conf_peer_str and
 * conf_peer_int (ABI 1.4), so --check-config refuses them too; a rule
 * whose key the section does not declare (another provider) is not
 * judged, and a key no source sets is its default there (cluster_id:
 * "default" on both sides). Each combination refused cannot work:
 *  - a cluster_id other than the authority's: RegisterWorker is checked
 *    against the controller's, while the authority keeps its state under
 *    ph:cp:{its cluster_id}:, so the controller would hand out another
 *    cluster's sessions and ownership;
 *  - a session_ttl told to workers that is not the TTL Redis gives
 *    sessions: workers pace heartbeats on the wrong one, and a Redis TTL
 *    below 2 x runtime_interval expires live sessions between reports;
 *  - runtime_ttl not above runtime_interval: every report's counts
 *    expire before the next one, so proxies count as zero capacity;
 *  - ownership_lease not above refresh_before + allocation_safety_margin:
 *    a snapshot's proxies are usable until their lease minus the margin,
 *    and the refresh comes refresh_before ahead of the earliest of them,
 *    so every snapshot would be due for a refresh as soon as it is built
 *    (one per renewal, and the worker reports after every ACK);
 *  - runtime_interval not below ownership_lease / 2: reports renew the
 *    leases and an ownership ends with its lease (issue 22 item 13), so
 *    one late report would move a live worker's proxies. */
static int authority_cluster(ph_ctx *ctx, const ph_api *a, const cs_conf *c,
                             const char *sec, const char **key, char *why,
                             size_t whylen) {
  if (a->size <= offsetof(ph_api, conf_peer_str) || !a->conf_peer_str)
    return PH_OK; /* a host without conf_peer_str */
  const char *theirs = NULL;
  if (a->conf_peer_str(ctx, sec, "cluster_id", &theirs) != PH_OK)
    return PH_OK;
  if (strcmp(theirs, c->cluster_id) != 0)
    FAIL("cluster_id",
         "must equal [%.64s] cluster_id (\"%.64s\" here, \"%.64s\" there): "
         "the authority keeps another cluster's sessions and ownership",
         sec, c->cluster_id, theirs);
  return PH_OK;
}

static int authority_rules(ph_ctx *ctx, const ph_api *a, const cs_conf *c,
                           const char **key, char *why, size_t whylen) {
  if (a->size <= offsetof(ph_api, conf_peer_int) || !a->conf_peer_int)
    return PH_OK; /* a host older than 1.4 */
  const char *sec = c->authority[0] ? c->authority : "redis_ownership";
  int rc = authority_cluster(ctx, a, c, sec, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  int64_t ttl = 0, rt_ttl = 0, lease = 0;
  if (a->conf_peer_int(ctx, sec, "session_ttl", &ttl) != PH_OK)
    return PH_OK;
  if (ttl != c->session_ttl_ms)
    FAIL("session_ttl",
         "must equal [%.64s] session_ttl (%lldms here, %lldms there): the "
         "TTL workers are told is the one Redis gives their sessions",
         sec, (long long)c->session_ttl_ms, (long long)ttl);
  if (a->conf_peer_int(ctx, sec, "runtime_ttl", &rt_ttl) == PH_OK &&
      rt_ttl <= c->runtime_interval_ms)
    FAIL("runtime_interval",
         "must be below [%.64s] runtime_ttl (%lldms), or every report's "
         "counts expire before the next one",
         sec, (long long)rt_ttl);
  if (a->conf_peer_int(ctx, sec, "ownership_lease", &lease) != PH_OK)
    return PH_OK;
  if (lease <= c->refresh_before_ms + c->safety_margin_ms)
    FAIL("refresh_before",
         "plus allocation_safety_margin must be below [%.64s] "
         "ownership_lease (%lldms): a snapshot's proxies are usable only "
         "until their lease minus the margin",
         sec, (long long)lease);
  if (c->runtime_interval_ms * 2 >= lease)
    FAIL("runtime_interval",
         "must be below [%.64s] ownership_lease / 2 (%lldms): a worker's "
         "accepted reports renew its leases, and an ownership ends with "
         "its lease",
         sec, (long long)lease);
  return PH_OK;
}

/* issue 26: the checkers' keys and their cross-key rules. */
static int checker_keys(ph_ctx *ctx, const ph_api *a, cs_conf *c,
                        const char **key, char *why, size_t whylen) {
  c->check_interval_ms = a->conf_int(ctx, "check_interval");
  c->fast_interval_ms = a->conf_int(ctx, "fast_interval");
  c->member_lease_ms = a->conf_int(ctx, "member_lease");
  c->check_spread_pct = (uint32_t)a->conf_int(ctx, "check_spread");
  c->task_deadline_ms = a->conf_int(ctx, "task_deadline");
  c->max_checkers = (uint32_t)a->conf_int(ctx, "max_checkers");
  c->max_tasks = (uint32_t)a->conf_int(ctx, "max_tasks");
  c->max_checker_concurrency =
      (uint32_t)a->conf_int(ctx, "max_checker_concurrency");
  c->target_host_interval_ms = a->conf_int(ctx, "target_host_interval");
  if (c->fast_interval_ms > c->check_interval_ms)
    FAIL("fast_interval", "must not exceed check_interval");
  if (ph_conf_copy(c->echo_url, sizeof(c->echo_url),
                   a->conf_str(ctx, "echo_url")) ||
      (c->echo_url[0] && strncmp(c->echo_url, "http://", 7) != 0) ||
      strpbrk(c->echo_url, " \t\r\n"))
    FAIL("echo_url", "empty, or an http:// URL without spaces");
  if (ph_conf_copy(c->target_probes, sizeof(c->target_probes),
                   a->conf_str(ctx, "target_probes")))
    FAIL("target_probes", "too long");
  cs_probe p[CS_PROBES_MAX];
  size_t n;
  const char *w = NULL;
  if (cs_probe_parse(c->target_probes, p, &n, &w) != 0)
    FAIL("target_probes", "%s", w);
  return PH_OK;
}

int cs_conf_read(ph_ctx *ctx, const ph_api *a, cs_conf *c, const char **key,
                 char *why, size_t whylen) {
  memset(c, 0, sizeof(*c));
  int rc = cp_grpc_held(ctx, a, CP_GRPC_SERVER, held,
                        sizeof(held) / sizeof(held[0]), key, why, whylen);
  if (rc != PH_OK)
    return rc;
  rc = cp_grpc_conf_check_server(ctx, a, "listen", key, why, whylen);
  if (rc != PH_OK)
    return rc;
  c->mtls = strcmp(a->conf_str(ctx, "tls.mode"), "mtls") == 0;
  const char *cluster = a->conf_str(ctx, "cluster_id");
  if (!ph_conf_id_ok(cluster, 1, PH_POOL_ID_MAX) ||
      ph_conf_copy(c->cluster_id, sizeof(c->cluster_id), cluster))
    FAIL("cluster_id", "must be 1-%d bytes of [A-Za-z0-9._-]",
         PH_POOL_ID_MAX);
  if (ph_conf_copy(c->trust_domain, sizeof(c->trust_domain),
           a->conf_str(ctx, "trust_domain")) || !seg_ok(c->trust_domain))
    FAIL("trust_domain", "printable ASCII without '/', '%%' or spaces");
  if (ph_conf_copy(c->environment, sizeof(c->environment),
           a->conf_str(ctx, "environment")) || !seg_ok(c->environment))
    FAIL("environment", "printable ASCII without '/', '%%' or spaces");
  if (ph_conf_copy(c->authority, sizeof(c->authority), a->conf_str(ctx, "authority")))
    FAIL("authority", "too long");
  if (ph_conf_copy(c->store, sizeof(c->store), a->conf_str(ctx, "store")))
    FAIL("store", "too long");
  if (ph_conf_copy(c->secrets_dir, sizeof(c->secrets_dir),
           a->conf_str(ctx, "secrets_dir")) || c->secrets_dir[0] != '/')
    FAIL("secrets_dir", "must be an absolute path");
  if (ph_conf_copy(c->reference_key_file, sizeof(c->reference_key_file),
           a->conf_str(ctx, "reference_key_file")))
    FAIL("reference_key_file", "too long");
  c->snapshot_validity_ms = a->conf_int(ctx, "snapshot_validity");
  c->safety_margin_ms = a->conf_int(ctx, "allocation_safety_margin");
  c->max_stale_age_ms = a->conf_int(ctx, "max_stale_age");
  c->session_ttl_ms = a->conf_int(ctx, "session_ttl");
  c->runtime_interval_ms = a->conf_int(ctx, "runtime_interval");
  c->max_runtime_counters = (uint32_t)a->conf_int(ctx, "max_runtime_counters");
  c->min_snapshot_interval_ms = a->conf_int(ctx, "min_snapshot_interval");
  c->refresh_before_ms = a->conf_int(ctx, "refresh_before");
  c->assign_interval_ms = a->conf_int(ctx, "assign_interval");
  c->watch_poll_ms = a->conf_int(ctx, "watch_poll_interval");
  c->health.rules.rise = (uint32_t)a->conf_int(ctx, "health_rise");
  c->health.rules.fall = (uint32_t)a->conf_int(ctx, "health_fall");
  c->health.panic_pct = (uint32_t)a->conf_int(ctx, "health_panic_threshold");
  c->health.weight[0] = (uint32_t)a->conf_int(ctx, "health_weight_dial");
  c->health.weight[1] = (uint32_t)a->conf_int(ctx, "health_weight_handshake");
  c->health.weight[2] = (uint32_t)a->conf_int(ctx, "health_weight_response");
  c->health.weight[3] = (uint32_t)a->conf_int(ctx, "health_weight_tunnel");
  c->health.passive_hold_ms = a->conf_int(ctx, "health_passive_hold");
  c->health.sync_ms = a->conf_int(ctx, "health_sync_interval");
  c->health.forward_max = (uint32_t)a->conf_int(ctx, "health_forward_max");
  if (c->runtime_interval_ms * 2 >= c->session_ttl_ms)
    FAIL("runtime_interval", "must be below session_ttl / 2");
  rc = checker_keys(ctx, a, c, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  if (c->refresh_before_ms >= c->snapshot_validity_ms)
    FAIL("refresh_before", "must be below snapshot_validity");
  if (c->min_snapshot_interval_ms >= c->snapshot_validity_ms - c->refresh_before_ms)
    FAIL("min_snapshot_interval",
         "must be below snapshot_validity - refresh_before");
  if (c->safety_margin_ms > CP_MARGIN_MAX_MS)
    FAIL("allocation_safety_margin", "at most one hour");
  if (c->assign_interval_ms >= c->session_ttl_ms)
    FAIL("assign_interval", "must be below session_ttl");
  if (c->watch_poll_ms > c->refresh_before_ms)
    FAIL("watch_poll_interval", "must not exceed refresh_before");
  /* A healthy stream refreshes a snapshot when less than refresh_before
   * of its validity is left, seen at its next watch round: up to this long
   * after the last one. A gateway stops routing max_stale_age after it
   * obtained its snapshot (CP-3-18), so a shorter one leaves every gateway
   * behind a healthy controller unready between refreshes (issue 23 item
   * 15: with 4 s, 10-13 % of requests refused). */
  int64_t refresh_ms =
      c->snapshot_validity_ms - c->refresh_before_ms + c->watch_poll_ms;
  if (c->max_stale_age_ms <= refresh_ms)
    FAIL("max_stale_age",
         "must be above snapshot_validity - refresh_before + "
         "watch_poll_interval (%lldms), the longest time between two "
         "snapshots on a healthy stream: gateways stop routing "
         "max_stale_age after their last one",
         (long long)refresh_ms);
  if (a->service_provider_loaded && c->authority[0] &&
      !a->service_provider_loaded(ctx, "cp.authority", c->authority))
    FAIL("authority", "no such cp.authority provider loaded");
  if (a->service_provider_loaded && c->store[0] &&
      !a->service_provider_loaded(ctx, PH_POOL_STORE_SERVICE, c->store))
    FAIL("store", "no such pool.store provider loaded");
  return authority_rules(ctx, a, c, key, why, whylen);
}

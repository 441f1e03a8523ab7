/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * controlplane_server's keys (controlplane_server.ini.sample documents
 * each): the transport (cp_grpc_conf.h), the controller's identity
 * (cluster, SPIFFE trust domain and environment), the providers it uses,
 * and the timing of sessions, snapshots and ownership, with the cross-key
 * rules that per-key bounds cannot say.
 */
#ifndef CS_CONF_H
#define CS_CONF_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "cs_hyst.h"

extern const ph_conf_key cs_conf_keys[];

typedef struct cs_conf {
  char cluster_id[PH_POOL_ID_MAX + 1];
  char trust_domain[256];
  char environment[PH_POOL_NAME_MAX + 1];
  char authority[PH_POOL_NAME_MAX + 1]; /* provider instance, "" = the only */
  char store[PH_POOL_NAME_MAX + 1];
  char secrets_dir[4096];
  char reference_key_file[4096]; /* "" = a random key per process */
  int mtls;
  int64_t snapshot_validity_ms;
  int64_t safety_margin_ms;
  int64_t max_stale_age_ms;
  int64_t session_ttl_ms;
  int64_t runtime_interval_ms;
  uint32_t max_runtime_counters;
  int64_t min_snapshot_interval_ms;
  int64_t refresh_before_ms;
  int64_t assign_interval_ms;
  int64_t watch_poll_ms;
  /* issue 26: the checkers and the scheduler (cs_checker.h) */
  int64_t check_interval_ms, fast_interval_ms, task_deadline_ms;
  int64_t member_lease_ms; /* cs_members.c */
  uint32_t check_spread_pct;
  uint32_t max_checkers, max_tasks, max_checker_concurrency;
  int64_t target_host_interval_ms;
  char echo_url[1024];
  char target_probes[4096];
  /* The reducer (cs_health.c): health_* keys. */
  struct {
    cs_hyst_rules rules;
    uint32_t panic_pct;
    uint32_t weight[4]; /* DIAL, PROXY_HANDSHAKE, RESPONSE_HEADERS, TUNNEL */
    int64_t passive_hold_ms;
    int64_t sync_ms;
    uint32_t forward_max; /* proxies per push to another member */
  } health;
} cs_conf;

/* Reads and cross-checks the keys. PH_OK, or PH_EINVAL with *key and why
 * (never a secret). */
int cs_conf_read(ph_ctx *ctx, const ph_api *a, cs_conf *c, const char **key,
                 char *why, size_t whylen);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* auth_cache: the TunnelMesh CachingStreamAuthorizer (TM-P1-1). A
 * decorator of the "access" service: it provides "access" under its own
 * instance name and answers from a cache in front of the provider its
 * `store` key names (store_sqlite, store_pg), which consumers then name
 * instead of the store.
 *
 * The cache keeps the store's verdicts for the store's ttl_ms, cut to
 * max_positive_ttl / max_negative_ttl, in generations of one revision
 * each; the store's revision decides which generation is current and
 * whether a cached allow may be served at all (revision_watch.c).
 * Concurrent misses share one store check (store_check.c, lib/sflight). Nothing of a
 * request but its five key fields is kept, and the contract keeps secrets
 * out of them (TM-P1-5, TM-SEC-3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_cache_int.h"
#include "lib/metric_table.h"
#include "frontend/provider_check.h"

static const ph_api *api;

/* The key table, generated from auth_cache.ini.sample (its "; type:" lines)
 * by tools/gen_conf_keys.awk into auth_cache_keys.c. */
extern const ph_conf_key keys[];

/* The store names a loaded provider of "access" other than this one. */
static int cache_check(ph_ctx *ctx, const ph_api *a, const char **key,
                       char *why, size_t whylen) {
  const char *store = a->conf_str(ctx, "store");
  if (store && strcmp(store, a->module_name(ctx)) == 0) {
    *key = "store";
    snprintf(why, whylen,
             "auth_cache cannot wrap itself: name the store's "
             "instance (store_sqlite, store_pg)");
    return PH_EINVAL;
  }
  return check_named_provider(ctx, a, "store", PH_ACCESS_SERVICE, key, why,
                              whylen);
}

static void read_config(acache *s) {
  s->enabled = (int)api->conf_int(s->ctx, "enabled");
  s->max_entries = (size_t)api->conf_int(s->ctx, "max_entries");
  s->max_positive_ttl = (uint32_t)api->conf_int(s->ctx, "max_positive_ttl");
  s->max_negative_ttl = (uint32_t)api->conf_int(s->ctx, "max_negative_ttl");
  s->interval = api->conf_int(s->ctx, "revision_interval");
}

static const char *const caches[] = {"hit", "miss", "shared", "bypass", NULL};
static const ph_label_def cache_label[] = {{"cache", caches}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table ac_metrics[] = {
    PH_METRIC("tunnelmesh_authorization_cache_requests_total",
              PH_METRIC_COUNTER,
              "Authorization cache lookups: hit, miss (a store check), "
              "shared (joined one in flight), bypass (cache off)",
              PH_METRIC_LABELS(cache_label), PH_METRIC_NO_BUCKETS, acache,
              m_req),
    PH_METRIC("proxyhost_auth_cache_entries", PH_METRIC_GAUGE,
              "Verdicts in the current generation", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, acache, m_entries),
    PH_METRIC("proxyhost_auth_cache_evictions_total", PH_METRIC_COUNTER,
              "Verdicts evicted to make room (max_entries)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, acache, m_evictions),
    PH_METRIC("proxyhost_auth_cache_generations_total", PH_METRIC_COUNTER,
              "Generations started (a revision rise, a "
              "recovery, a reload)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, acache,
              m_generations),
    PH_METRIC_END};

static int declare_metrics(acache *s) {
  return ph_metric_table_register(api, s->ctx, ac_metrics, s);
}

static int cache_init(ph_ctx *ctx, const ph_api *host, void **state) {
  api = host;
  acache *s = calloc(1, sizeof(*s));
  if (!s)
    return PH_ENOMEM;
  *state = s;
  s->ctx = ctx;
  s->api = host;
  read_config(s);
  s->max_pending = api->conf_int(ctx, "max_pending");
  s->max_waiters = api->conf_int(ctx, "max_waiters");
  if (cache_key_seed() != 0) {
    PH_LOG(api, ctx, PH_LOG_ERROR,
           "auth_cache: no randomness for the key "
           "hash");
    return PH_EINVAL;
  }
  s->tick_t = api->timer_new(ctx, rw_tick, s);
  s->reap_t = api->timer_new(ctx, rw_reap, s);
  if (!s->tick_t || !s->reap_t || sc_init(s) != PH_OK)
    return PH_ENOMEM;
  int rc = declare_metrics(s);
  if (rc != PH_OK)
    return rc;
  return api->service_register(ctx, PH_ACCESS_SERVICE, PH_ACCESS_MAJOR,
                               PH_ACCESS_MINOR, &access_cache_vt, s);
}

/* Not ready until the store's revision was read (TM-P1-26). */
static int cache_start(void *state) {
  acache *s = state;
  const char *store = api->conf_str(s->ctx, "store");
  s->store = api->service_get_named(s->ctx, PH_ACCESS_SERVICE, store,
                                    PH_ACCESS_MAJOR, 0, &s->store_self);
  if (!s->store) {
    PH_LOG(api, s->ctx, PH_LOG_ERROR,
           "auth_cache: the store did not register \"access\", or its "
           "version does not fit",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  s->started = 1;
  api->set_ready(s->ctx, 0);
  rw_refresh(s);
  rw_update_ready(s);
  api->timer_set(s->tick_t, (uint64_t)s->interval, (uint64_t)s->interval);
  return PH_OK;
}

/* New bounds or caps start a fresh generation: no entry outlives a cap
 * lowered now, and entries from before the cache was switched off are
 * not trusted when it comes back on. */
static int cache_reload(void *state) {
  acache *s = state;
  acache old = *s;
  read_config(s);
  if (s->interval != old.interval && s->started)
    api->timer_set(s->tick_t, (uint64_t)s->interval, (uint64_t)s->interval);
  if (s->cur &&
      (s->enabled != old.enabled || s->max_entries != old.max_entries ||
       s->max_positive_ttl != old.max_positive_ttl ||
       s->max_negative_ttl != old.max_negative_ttl))
    rw_new_generation(s, cache_gen_revision(s->cur));
  rw_update_ready(s);
  return PH_OK;
}

/* Users are destroyed before us and the store after us: its checks
 * still running are cancelled there, and no caller is called. */
static void cache_destroy(void *state) {
  acache *s = state;
  if (!s)
    return;
  sc_free_all(s);
  if (s->tick_t)
    api->timer_free(s->tick_t);
  if (s->reap_t)
    api->timer_free(s->reap_t);
  rw_free_all(s);
  free(s);
}

static const char *const cache_provides[] = {PH_ACCESS_SERVICE, NULL};
static const char *const cache_requires[] = {PH_ACCESS_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("auth_cache", "1.0.0"),
    .description = "authorization cache in front of a store's \"access\" "
                   "service",
    .provides = cache_provides,
    .requires = cache_requires,
    .config = keys,
    .check = cache_check,
    .init = cache_init,
    .start = cache_start,
    .reload = cache_reload,
    .destroy = cache_destroy,
};

/* SPDX-License-Identifier: BSD-2-Clause */
/* pool: the gateway's dispatch (issue 13; the 000 design's gateway data
 * path, CP-1-20..25, CP-3-6, CP-3-9, CP-4-2..3, CP-5-2..7). A "connector"
 * that the gateway's frontends (http_proxy, socks5) open streams with:
 * it matches the request against the routing of the snapshot view
 * (pool.view), lets the rule's strategy (dispatch.strategy) pick one of
 * the proxies this worker owns, reserves its capacity, opens a tunnel
 * through it (CONNECT or SOCKS5) and hands the socket over with a lease;
 * each attempt's outcome goes to outcome.sink. The counts per proxy go to
 * the controller in controlplane_client's runtime reports (pool.runtime).
 *
 * Files: pool_gen.c (the view's generations, the counts, pool.runtime),
 * one request: pool_attempt.c (open, cancel, answers, outcomes),
 * pool_match.c (rule and candidate), pool_wait.c (on_unavailable, the
 * wait queue), pool_dial.c (the proxy's connection and handshake, or
 * DIRECT), pool_lease.c (the lease); pool_drain.c (the streams of a
 * proxy the gateway may no longer use: drained, then cut); pool_gate.c
 * (traffic.gate). The handshakes are the upstream kit's
 * (modules/upstream). The user guide is docs/user-guide/gateway.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "lib/metric_table.h"
#include "pool_int.h"

const ph_api *pool_api;

static const char *const result_names[] = {POOL_RESULT_NAMES, NULL};
static const char *const cut_names[] = {POOL_CUT_NAMES, NULL};
/* In ph_outcome_stage / ph_outcome_result order, from 1. */
static const char *const stage_names[] = {"dial", "proxy_handshake",
                                          "response_headers", "tunnel", NULL};
static const char *const oresult_names[] = {"success", "failure", "timeout",
                                            NULL};
_Static_assert(sizeof(result_names) / sizeof(result_names[0]) == N_PR + 1,
               "one name per result");

/* The key table, generated from pool.ini.sample (its "; type:" lines) by
 * tools/gen_conf_keys.awk into pool_keys.c. strategies' count there is
 * POOL_STRATS_MAX, which pool_start checks again (more fail the start), and
 * max_attempts' maximum PH_STRATEGY_TRIED_MAX, which pool_match.c holds
 * every request to whatever max_attempts says. */
extern const ph_conf_key pool_keys[];

/* ---- configuration ------------------------------------------------------- */

static int pool_check(ph_ctx *ctx, const ph_api *a, const char **key,
                      char *why, size_t whylen) {
  const char *self = a->module_name(ctx);
  static const char *const conn_keys[] = {"upstream_connector",
                                          "direct_connector"};
  for (size_t i = 0; i < 2; i++) {
    const char *v = a->conf_str(ctx, conn_keys[i]);
    if (!v || !*v || strcmp(v, self) == 0 ||
        !a->service_provider_loaded(ctx, PH_CONNECTOR_SERVICE, v)) {
      *key = conn_keys[i];
      snprintf(why, whylen,
               "must name a loaded connector instance other than the pool "
               "itself (a direct instance)");
      return PH_EINVAL;
    }
  }
  const char *v = a->conf_str(ctx, "view");
  if (!v || !*v || !a->service_provider_loaded(ctx, PH_POOL_VIEW_SERVICE, v)) {
    *key = "view";
    snprintf(why, whylen,
             "must name a loaded controlplane_client instance (pool.view)");
    return PH_EINVAL;
  }
  size_t n = a->conf_list_len(ctx, "strategies");
  for (size_t i = 0; i < n; i++) {
    const char *s = a->conf_list_at(ctx, "strategies", i);
    if (!a->service_provider_loaded(ctx, PH_STRATEGY_SERVICE, s)) {
      *key = "strategies";
      snprintf(why, whylen,
               "\"%.64s\" is not a loaded dispatch.strategy module (load it "
               "in [proxyhost] modules)",
               s);
      return PH_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(s, a->conf_list_at(ctx, "strategies", j)) == 0) {
        *key = "strategies";
        snprintf(why, whylen, "\"%.64s\" is listed twice", s);
        return PH_EINVAL;
      }
  }
  return PH_OK;
}

/* ---- metrics --------------------------------------------------------------- */

static const ph_label_def result_label[] = {{"result", result_names}};
static const ph_label_def outcome_labels[] = {{"stage", stage_names},
                                              {"result", oresult_names}};
static const ph_label_def cut_label[] = {{"reason", cut_names}};

/* In registration order (the order /metrics shows them). */
static const ph_metric_table pool_metrics[] = {
    PH_METRIC("proxyhost_pool_accepting", PH_METRIC_GAUGE,
              "1 while the frontends in front of the pool take "
              "new connections, 0 while its view is past "
              "valid_until or max_stale_age (CP-3-18)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pool, m_accepting),
    PH_METRIC("proxyhost_pool_streams_cut_total", PH_METRIC_COUNTER,
              "streams cut after their drain: their proxy left "
              "the view, or the view went stale (CP-3-18, "
              "CP-4-2)",
              PH_METRIC_LABELS(cut_label), PH_METRIC_NO_BUCKETS, pool, m_cut),
    PH_METRIC("proxyhost_pool_outcomes_total", PH_METRIC_COUNTER,
              "attempts through an upstream proxy, by the stage "
              "they ended at and how (CP-5-2..5)",
              PH_METRIC_LABELS(outcome_labels), PH_METRIC_NO_BUCKETS, pool,
              m_outcome),
    PH_METRIC("proxyhost_pool_opens_total", PH_METRIC_COUNTER,
              "requests the pool answered, by how they ended",
              PH_METRIC_LABELS(result_label), PH_METRIC_NO_BUCKETS, pool,
              m_result),
    PH_METRIC("proxyhost_pool_retries_total", PH_METRIC_COUNTER,
              "another candidate tried after a failed dial or "
              "handshake",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pool, m_retries),
    PH_METRIC("proxyhost_pool_outcomes_dropped_total", PH_METRIC_COUNTER,
              "outcomes the full outcome queue dropped "
              "(CP-5-10)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pool, m_outcome_full),
    PH_METRIC("proxyhost_pool_waiting", PH_METRIC_GAUGE,
              "requests waiting for capacity (WAIT)", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pool, m_waiting),
    PH_METRIC("proxyhost_pool_reserved", PH_METRIC_GAUGE,
              "reservations: proxies being dialed or shaken "
              "hands with",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pool, m_reserved),
    PH_METRIC("proxyhost_pool_active", PH_METRIC_GAUGE,
              "streams up through an upstream proxy", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, pool, m_active),
    PH_METRIC("proxyhost_pool_suspect_picks_total", PH_METRIC_COUNTER,
              "picks of a SUSPECT proxy: no AVAILABLE candidate could take "
              "the request (CP-6-7)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, pool,
              m_suspect_picks),
    PH_METRIC_END};

static int register_metrics(pool *p) {
  if (ph_metric_table_register(pool_api, p->ctx, pool_metrics, p) != PH_OK)
    return PH_EINVAL;
  pool_api->gauge_set(p->m_accepting, 1);
  return PH_OK;
}

/* ---- lifecycle ------------------------------------------------------------- */

static int pool_init(ph_ctx *ctx, const ph_api *a, void **state) {
  pool_api = a;
  pool *p = calloc(1, sizeof(*p));
  if (!p)
    return PH_ENOMEM;
  *state = p;
  p->ctx = ctx;
  ilist_init(&p->wq);
  ilist_init(&p->dq);
  ilist_init(&p->cutq);
  p->conf.max_opens = (uint32_t)a->conf_int(ctx, "max_opens");
  p->conf.max_waiters = (uint32_t)a->conf_int(ctx, "max_waiters");
  p->conf.max_attempts = (uint32_t)a->conf_int(ctx, "max_attempts");
  p->conf.handshake_timeout_ms =
      (uint32_t)a->conf_int(ctx, "handshake_timeout");
  p->conf.drain_timeout_ms = (uint32_t)a->conf_int(ctx, "drain_timeout");
  int ids_rc = idtab_init(&p->ids, p->conf.max_opens);
  p->deliver = a->defer_new(ctx, pool_on_deliver, p);
  p->drain_timer = a->timer_new(ctx, pool_on_drain_timer, p);
  if (ids_rc < 0 || !p->deliver || !p->drain_timer)
    return PH_ENOMEM;
  if (RAND_bytes((unsigned char *)&p->rng, sizeof(p->rng)) != 1 || !p->rng)
    p->rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)a->now_ms(ctx);
  if (register_metrics(p) != PH_OK || pool_status_register(p) != PH_OK)
    return PH_EINVAL;
  int rc = a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                               PH_CONNECTOR_MINOR, &pool_connector_service,
                               p);
  if (rc == PH_OK)
    rc = a->service_register(ctx, POOL_RUNTIME_SERVICE, POOL_RUNTIME_MAJOR,
                             POOL_RUNTIME_MINOR, &pool_runtime_service, p);
  if (rc == PH_OK)
    rc = a->service_register(ctx, TRAFFIC_GATE_SERVICE, TRAFFIC_GATE_MAJOR,
                             TRAFFIC_GATE_MINOR, &pool_gate_service, p);
  return rc;
}

static int missing(pool *p, const char *what, const char *name) {
  PH_LOG(pool_api, p->ctx, PH_LOG_ERROR,
         "pool: a service it needs is not there (check [pool] and "
         "[proxyhost] modules)",
         PH_STR("service", what), PH_STR("provider", name ? name : ""));
  return PH_ENOENT;
}

static int pool_start(void *state) {
  pool *p = state;
  ph_ctx *ctx = p->ctx;
  const char *vn = pool_api->conf_str(ctx, "view");
  p->view = pool_api->service_get_named(ctx, PH_POOL_VIEW_SERVICE, vn,
                                        PH_POOL_VIEW_MAJOR, 1, &p->view_self);
  if (!p->view)
    return missing(p, PH_POOL_VIEW_SERVICE, vn);
  const char *sn = pool_api->conf_str(ctx, "outcome_sink");
  p->sink = pool_api->service_get_named(ctx, PH_OUTCOME_SINK_SERVICE, sn,
                                        PH_OUTCOME_SINK_MAJOR, 0,
                                        &p->sink_self);
  if (!p->sink)
    return missing(p, PH_OUTCOME_SINK_SERVICE, sn);
  const char *un = pool_api->conf_str(ctx, "upstream_connector");
  p->up = pool_api->service_get_named(ctx, PH_CONNECTOR_SERVICE, un,
                                      PH_CONNECTOR_MAJOR, 0, &p->up_self);
  if (!p->up)
    return missing(p, PH_CONNECTOR_SERVICE, un);
  const char *dn = pool_api->conf_str(ctx, "direct_connector");
  p->direct = pool_api->service_get_named(ctx, PH_CONNECTOR_SERVICE, dn,
                                          PH_CONNECTOR_MAJOR, 0,
                                          &p->direct_self);
  if (!p->direct)
    return missing(p, PH_CONNECTOR_SERVICE, dn);
  size_t n = pool_api->conf_list_len(ctx, "strategies");
  if (n > POOL_STRATS_MAX) {
    PH_LOG(pool_api, p->ctx, PH_LOG_ERROR,
           "pool: more strategies than it holds (pool.ini.sample's bound "
           "above POOL_STRATS_MAX)",
           PH_INT("count", n), PH_INT("max", POOL_STRATS_MAX));
    return PH_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    pool_strat *s = &p->strats[p->n_strats];
    const char *name = pool_api->conf_list_at(ctx, "strategies", i);
    s->vt = pool_api->service_get_named(ctx, PH_STRATEGY_SERVICE, name,
                                        PH_STRATEGY_MAJOR, 0, &s->self);
    if (!s->vt)
      return missing(p, PH_STRATEGY_SERVICE, name);
    /* Our own copy: the provider's build job reads it (pool_view_prepare)
     * and a reload frees the configuration's strings. */
    s->name = strdup(name);
    if (!s->name)
      return PH_ENOMEM;
    p->n_strats++;
  }
  /* Each view's generation is then built with the view, not by the
   * first request after its swap (CP-3-17, issue 23 item 13). */
  static const ph_pool_view_sub sub = {pool_view_prepare, pool_view_install};
  int rc = p->view->subscribe(p->view_self, &sub, p);
  if (rc != PH_OK) {
    PH_LOG(pool_api, ctx, PH_LOG_ERROR,
           "pool: another pool already uses this pool.view provider (one "
           "pool per controlplane_client instance)",
           PH_STR("provider", vn));
    return rc;
  }
  p->subscribed = 1;
  return PH_OK;
}

static void unsubscribe(pool *p) {
  if (p->subscribed)
    p->view->subscribe(p->view_self, NULL, NULL); /* waits for a prepare */
  p->subscribed = 0;
}

static int pool_stop(void *state) {
  pool *p = state;
  p->stopping = 1; /* new opens: queue_full; the rest run to their end */
  unsubscribe(p);
  return PH_OK;
}

static void pool_destroy(void *state) {
  pool *p = state;
  if (!p)
    return;
  pool_attempts_abort(p);
  unsubscribe(p);
  pool_gen_clear(p);
  for (uint32_t s = 0; s < p->n_strats; s++)
    free((char *)p->strats[s].name);
  pool_api->defer_free(p->deliver);
  if (p->drain_timer)
    pool_api->timer_free(p->drain_timer);
  idtab_free(&p->ids);
  free(p);
}

static const char *const provides[] = {PH_CONNECTOR_SERVICE,
                                       POOL_RUNTIME_SERVICE,
                                       TRAFFIC_GATE_SERVICE, NULL};
static const char *const requires[] = {PH_POOL_VIEW_SERVICE,
                                       PH_OUTCOME_SINK_SERVICE,
                                       PH_STRATEGY_SERVICE,
                                       PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("pool", "1.0.0"),
    .description = "gateway: dispatch through the proxy pool's snapshot view",
    .provides = provides,
    .requires = requires,
    .config = pool_keys,
    .init = pool_init,
    .start = pool_start,
    .stop = pool_stop,
    .destroy = pool_destroy,
    .check = pool_check,
};

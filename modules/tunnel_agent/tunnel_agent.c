/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent: the TunnelMesh agent role (seed 001 "P0 Agent 有界拨号执行器",
 * issue 11). It connects out to the server over WebSocket (wss with the
 * operator's CA, or ws to loopback), declares its capabilities in the
 * agent metadata, and answers the server's OPEN_STREAMs: each one goes
 * into the connection's bounded dial executor (dial_exec.h), which dials
 * through the named connector (`direct`: DNS, target policy, connect;
 * never on the reader), and a dialed target is joined to its stream by
 * the relay. It keeps connections.min..max connections (agent_pool.c),
 * reconnecting with jittered, bounded exponential backoff. Ready once one
 * connection is established. */
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "lib/metric_table.h"

static const ph_api *api;

static const char *const agent_requires[] = {PH_CONNECTOR_SERVICE, NULL};

void agent_update_ready(agent *a) {
  if (a->started)
    api->set_ready(a->ctx, a->n_up >= 1);
}

void agent_check_stop_done(agent *a) {
  if (a->stop_pending && agent_pool_idle(a)) {
    a->stop_pending = 0;
    api->stop_done(a->ctx);
  }
}

/* dial_exec_cfg.addr_ok: the guard, with the interfaces re-read when
 * stale (an address added since start is this host's too). */
static int agent_addr_ok(void *arg, const struct sockaddr *sa) {
  agent *a = arg;
  guard_refresh(a->guard, api->now_ms(a->ctx));
  return guard_check(a->guard, sa);
}

static int agent_check(ph_ctx *ctx, const ph_api *capi, const char **key,
                       char *why, size_t whylen) {
  return agent_cfg_check(ctx, capi, key, why, whylen);
}

static const char *const decisions[] = {"grow_load", "grow_latency",
                                        "shrink_idle", "hold_errors", NULL};
static const ph_label_def decision_label[] = {{"decision", decisions}};

static const ph_metric_table agent_metrics[] = {
    PH_METRIC("proxyhost_tunnel_agent_connections", PH_METRIC_GAUGE,
              "WebSocket connections to the server established and taking "
              "streams",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, agent, m_conns),
    PH_METRIC("proxyhost_tunnel_agent_pool_decisions_total",
              PH_METRIC_COUNTER,
              "The connection pool controller's decisions: grown for load "
              "or latency, one drained when idle, a growth held back "
              "because most opens failed",
              PH_METRIC_LABELS(decision_label), PH_METRIC_NO_BUCKETS, agent,
              m_pool),
    PH_METRIC("proxyhost_tunnel_agent_host_local_refused_total",
              PH_METRIC_COUNTER,
              "Opens refused because the target is this host "
              "(targets.allow_host_local)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, agent, c_host_local),
    PH_METRIC_END};

static int agent_init(ph_ctx *ctx, const ph_api *a_api, void **state) {
  api = a_api;
  agent *a = calloc(1, sizeof(*a));
  if (!a)
    return PH_ENOMEM;
  ilist_init(&a->conns);
  a->api = api;
  a->ctx = ctx;
  agent_cfg_read(api, ctx, &a->cfg);
  a->m = tm_metrics_register(api, ctx, TM_COMPONENT_AGENT);
  if (!a->m) {
    free(a);
    return PH_EINVAL;
  }
  *state = a; /* destroy frees what follows */
  const char *key = NULL;
  char why[160];
  a->guard = agent_guard_build(api, ctx, &key, why, sizeof(why));
  if (!a->guard) {
    PH_LOG(api, ctx, PH_LOG_ERROR, "invalid key", PH_STR("key", key),
           PH_STR("reason", why));
    return PH_EINVAL;
  }
  if (ph_tls_reload_init(&a->tls, api, ctx, "tunnel_agent",
                         "tunnel agent TLS CA") != PH_OK)
    return PH_EINVAL;
  a->cfg.dial.addr_ok = agent_addr_ok;
  a->cfg.dial.addr_arg = a;
  if (ph_metric_table_register(api, ctx, agent_metrics, a) != PH_OK)
    return PH_EINVAL;
  int rc = agent_status_init(a);
  if (rc != PH_OK)
    return rc;
  /* Not ready until a connection to the server is up. */
  api->set_ready(ctx, 0);
  *state = a;
  return PH_OK;
}

/* tls.ca_file re-read (SIGHUP, or the poll saw a change): the next
 * connections verify the server with it, those up stay. */
static void tls_reload(void *arg, const char *trigger) {
  agent *a = arg;
  const char *err = NULL;
  if (!a->cfg.ca_file[0] || !a->ws)
    return;
  int rc = tm_ws_reload_tls(a->ws, &err);
  ph_tls_reload_done(&a->tls, rc, trigger, err);
}

static int tls_watch(agent *a) {
  const char *files[PH_TLS_WATCH_FILES] = {a->cfg.ca_file, NULL, NULL};
  return ph_tls_watch_key(&a->tls, files, tls_reload, a);
}

/* The agent's keys are restart-only but for the TLS files' contents. */
static int agent_reload(void *state) {
  agent *a = state;
  if (!a->started)
    return PH_OK;
  tls_reload(a, "sighup");
  return tls_watch(a);
}

static int agent_start(void *state) {
  agent *a = state;
  a->conn = api->service_get_named(a->ctx, PH_CONNECTOR_SERVICE,
                                   a->cfg.connector, PH_CONNECTOR_MAJOR, 0,
                                   &a->cself);
  if (!a->conn) {
    PH_LOG(api, a->ctx, PH_LOG_ERROR,
           "the connector this agent's key names did not register the "
           "service, or its version does not fit",
           PH_STR("key", "connector"), PH_STR("provider", a->cfg.connector));
    return PH_ENOENT;
  }
  int rc = agent_pool_start(a);
  if (rc != PH_OK)
    return rc;
  a->started = 1;
  agent_update_ready(a);
  return tls_watch(a);
}

static int agent_stop(void *state) {
  agent *a = state;
  api->set_ready(a->ctx, 0);
  a->started = 0;
  ph_tls_reload_free(&a->tls);
  agent_pool_stop(a);
  if (agent_pool_idle(a))
    return PH_OK;
  a->stop_pending = 1;
  return PH_STOP_PENDING;
}

static void agent_destroy(void *state) {
  agent *a = state;
  if (!a)
    return;
  a->stop_pending = 0;
  ph_tls_reload_free(&a->tls);
  agent_pool_free(a);
  if (a->conn)
    api->service_release(a->ctx, PH_CONNECTOR_SERVICE);
  tm_metrics_free(a->m);
  guard_free(a->guard);
  free(a);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("tunnel_agent", TUNNEL_AGENT_VERSION),
    .description = "TunnelMesh agent: dials targets for the server through a "
                   "bounded dial executor",
    .requires = agent_requires,
    .config = agent_conf_keys,
    .init = agent_init,
    .start = agent_start,
    .reload = agent_reload,
    .stop = agent_stop,
    .destroy = agent_destroy,
    .check = agent_check,
};

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_server: the TunnelMesh server role (seed 001 "P0 Server",
 * docs/user-guide/server.md). Clients and agents connect to its
 * WebSocket listener (tm_ws) with a bearer token; the store named by
 * `store` says who each one is (ts_conn.c); every client stream is
 * authorized by the `access` provider, placed on one of the named
 * agent's connections and relayed stream to stream (ts_open.c).
 *
 * Stop (TM-UPG-13): GOAWAY to every session, no new connection, streams
 * may finish for drain_timeout, then whatever is left is closed.
 * Readiness: after start the listener is bound and both providers were
 * found (start fails otherwise); not ready from stop on.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clocks.h"
#include "ts_int.h"

const ph_api *ts_api;
ts_mod *ts_last_mod;

static const char *const ts_requires[] = {PH_AZ_STORE_SERVICE,
                                          PH_ACCESS_SERVICE, NULL};

static int ts_init(ph_ctx *ctx, const ph_api *api, void **state) {
  ts_api = api;
  ts_mod *m = calloc(1, sizeof(*m));
  if (!m)
    return PH_ENOMEM;
  m->ctx = ctx;
  ilist_init(&m->opens);
  ilist_init(&m->conns);
  ilist_init(&m->tokens);
  ilist_init(&m->users);
  ts_conf_read(ctx, api, &m->c);
  m->metrics = tm_metrics_register_remote(api, ctx, TM_COMPONENT_SERVER,
                                          m->c.relay);
  if (!m->metrics) {
    free(m);
    return PH_EINVAL;
  }
  oexec_init(&m->exec, &m->c.opens);
  ts_opens_init(&m->opens_win, mono_ms() / 1000);
  int rc = ph_tls_reload_init(&m->tls, api, ctx, "tunnel_server",
                              "tunnel TLS certificate");
  if (rc == PH_OK)
    rc = ts_cred_init(m);
  if (rc == PH_OK)
    rc = ts_relay_init(m);
  if (rc == PH_OK)
    rc = ts_status_init(m);
  if (rc != PH_OK) {
    ts_relay_free(m);
    ts_cred_free(m);
    ph_tls_reload_free(&m->tls);
    tm_metrics_free(m->metrics);
    free(m);
    return rc;
  }
  *state = m;
  ts_last_mod = m;
  return PH_OK;
}

/* tls.cert and tls.key re-read, on SIGHUP or when the poll saw a change:
 * new handshakes get the new pair, sessions keep their connections. */
static void tls_reload(void *arg, const char *trigger) {
  ts_mod *m = arg;
  const char *err = NULL;
  if (!m->ws || !tm_ws_has_tls_files(m->ws))
    return;
  int rc = tm_ws_reload_tls(m->ws, &err);
  ph_tls_reload_done(&m->tls, rc, trigger, err);
}

static int tls_watch(ts_mod *m) {
  const char *files[PH_TLS_WATCH_FILES] = {m->c.cert, m->c.key, NULL};
  return ph_tls_watch_key(&m->tls, files, tls_reload, m);
}

static int ts_start(void *state) {
  ts_mod *m = state;
  const char *store = ts_api->conf_str(m->ctx, "store");
  const char *access = ts_api->conf_str(m->ctx, "access");
  m->store = ts_api->service_get_named(m->ctx, PH_AZ_STORE_SERVICE, store,
                                       PH_AZ_STORE_MAJOR, 0, &m->store_self);
  if (!m->store) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR, "authz.store not found",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  m->access = ts_api->service_get_named(m->ctx, PH_ACCESS_SERVICE, access,
                                        PH_ACCESS_MAJOR, 0, &m->access_self);
  if (!m->access) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR, "access provider not found",
           PH_STR("access", access));
    return PH_ENOENT;
  }
  tm_ws_cfg wc = {
      .listen = m->c.listen,
      .cert_file = m->c.cert[0] ? m->c.cert : NULL,
      .key_file = m->c.key[0] ? m->c.key : NULL,
      .allow_plain = m->c.allow_plain,
      .legacy_no_subprotocol = m->c.legacy_no_subprotocol,
      .caps = m->c.caps,
      .max_message = TM_HEADER_LEN + TM_MAX_PAYLOAD,
      .path = m->c.path,
      /* tm_ws answers 503 beyond it at the upgrade; ts_conn counts too. */
      .max_connections = m->c.max_connections,
  };
  const char *err = NULL;
  m->ws = tm_ws_new(ts_api, m->ctx, &wc, &ts_ws_handlers, m, &err);
  if (!m->ws) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR, "tunnel listener failed",
           PH_STR("listen", m->c.listen),
           PH_STR("reason", err ? err : "unknown"));
    return PH_EINVAL;
  }
  ts_cred_start(m);
  if (tls_watch(m) != PH_OK)
    return PH_ENOMEM;
  int mrc = ts_mesh_start(m);
  if (mrc == PH_OK)
    mrc = ts_relay_start(m);
  if (mrc != PH_OK)
    return mrc;
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "tunnel server listening",
         PH_STR("listen", m->c.listen), PH_INT("port", tm_ws_port(m->ws)),
         PH_STR("scheme", m->c.cert[0] ? "wss" : "ws"),
         PH_STR("path", m->c.path));
  return PH_OK;
}

static int ts_reload(void *state) {
  ts_mod *m = state;
  ts_conf n;
  ts_conf_read(m->ctx, ts_api, &n);
  /* The keys without PH_CONF_RESTART; sessions keep what they started
   * with. */
  m->c.max_connections = n.max_connections;
  m->c.opens = n.opens;
  m->c.max_per_connection = n.max_per_connection;
  m->c.max_per_token = n.max_per_token;
  m->c.max_per_agent = n.max_per_agent;
  m->c.agent_max_connections = n.agent_max_connections;
  m->c.max_conns_per_token = n.max_conns_per_token;
  m->c.max_conns_per_user = n.max_conns_per_user;
  m->c.mem_per_session = n.mem_per_session;
  m->c.mem_per_principal = n.mem_per_principal;
  if (m->c.cred_check_ms != n.cred_check_ms) {
    m->c.cred_check_ms = n.cred_check_ms;
    ts_cred_start(m);
  }
  m->c.open_timeout_ms = n.open_timeout_ms;
  m->c.idle_timeout_ms = n.idle_timeout_ms;
  m->c.drain_ms = n.drain_ms;
  memcpy(m->c.node_id, n.node_id, sizeof(m->c.node_id));
  m->c.log_names = n.log_names;
  oexec_set_limits(&m->exec, &n.opens);
  ts_open_pump(m);
  /* The same paths (restart-only keys), their contents anew. */
  tls_reload(m, "sighup");
  int rc = tls_watch(m);
  return rc == PH_OK ? ts_relay_reload(m) : rc;
}

static void drain_end(ph_timer *t, void *arg) {
  ts_mod *m = arg;
  (void)t;
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO,
         "tunnel drain deadline: closing what is left",
         PH_UINT("connections", m->nconns),
         PH_UINT("streams", ts_open_relays(m)));
  /* The host's last line says the stop was cut short (issue 24 item 12). */
  if (ts_open_relays(m) && ts_api->size > offsetof(ph_api, drain_cut) &&
      ts_api->drain_cut)
    ts_api->drain_cut(m->ctx, ts_open_relays(m));
  ts_open_abort_all(m);
  ts_conn_close_all(m);
}

void ts_stop_check(ts_mod *m) {
  if (m->stopping == 1 && m->nconns == 0 && m->stop_pending) {
    m->stopping = 2;
    if (m->drain_timer) {
      ts_api->timer_free(m->drain_timer);
      m->drain_timer = NULL;
    }
    ts_api->stop_done(m->ctx);
  }
}

static int ts_stop(void *state) {
  ts_mod *m = state;
  m->stopping = 1;
  ts_api->set_ready(m->ctx, 0);
  ts_mesh_stop(m);
  ts_relay_stop(m);
  if (m->nconns == 0) {
    m->stopping = 2;
    return PH_OK;
  }
  /* TM-UPG-13: GOAWAY; sessions close by themselves once their last
   * stream ended, the others at the deadline. */
  ts_conn_goaway_all(m);
  m->drain_timer = ts_api->timer_new(m->ctx, drain_end, m);
  if (!m->drain_timer) {
    drain_end(NULL, m);
  } else {
    ts_api->timer_set(m->drain_timer, m->c.drain_ms ? m->c.drain_ms : 1, 0);
  }
  if (m->nconns == 0) {
    m->stopping = 2;
    return PH_OK;
  }
  m->stop_pending = 1;
  return PH_STOP_PENDING;
}

static void ts_destroy(void *state) {
  ts_mod *m = state;
  if (!m)
    return;
  if (m->drain_timer)
    ts_api->timer_free(m->drain_timer);
  ts_cred_free(m);
  ts_mesh_stop(m);
  ph_tls_reload_free(&m->tls);
  m->stopping = 2;
  ts_open_abort_all(m);
  if (m->ws)
    tm_ws_free(m->ws); /* every connection's on_closed runs */
  ts_relay_free(m);  /* the relay's too */
  while (m->agents) {
    ts_agent *a = m->agents;
    m->agents = a->next;
    free(a);
  }
  ilist *lists[] = {&m->users, &m->tokens};
  for (size_t i = 0; i < 2; i++)
    ILIST_FOREACH_SAFE(lists[i], it, nx) {
      ilist_remove(it);
      free(ILIST_ENTRY(it, ts_tally, node));
    }
  tm_metrics_free(m->metrics);
  if (ts_last_mod == m)
    ts_last_mod = NULL;
  free(m);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("tunnel_server", "1.0.0"),
    .description = "TunnelMesh server: authenticates clients and agents, "
                   "authorizes and relays every stream",
    .requires = ts_requires,
    .config = ts_keys,
    .check = ts_check,
    .init = ts_init,
    .start = ts_start,
    .reload = ts_reload,
    .stop = ts_stop,
    .destroy = ts_destroy,
};

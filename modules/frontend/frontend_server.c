/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-listener part of the session skeleton (frontend_server.h):
 * the sessions' list and count, the stop and the drain, destroy. */
#include "frontend_server.h"
#include "frontend_gate.h"
#include "frontend_services.h"

#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "access_log.h"

static const char *const denied_reasons[] = {"not_allowed", NULL};
static const ph_label_def denied_labels[] = {{"reason", denied_reasons}};
static const ph_metric_def denied_def = {
    "proxyhost_frontend_clients_denied_total",
    "Client connections closed at accept: their address is not in "
    "allow_clients",
    PH_METRIC_COUNTER,
    denied_labels,
    1,
    NULL,
    0};

void frontend_server_init(frontend_server *srv, const ph_api *api,
                          ph_ctx *ctx, const frontend_session_ops *ops,
                          stream_metrics *sm, ph_series *clients) {
  *srv = (frontend_server){.api = api, .ctx = ctx, .ops = ops, .sm = sm,
                           .clients = clients,
                           .name = api->module_name(ctx)};
  ilist_init(&srv->sessions);
  ph_metric *m = api->metric(ctx, &denied_def);
  const char *reason = "not_allowed";
  srv->denied = m ? api->series(m, &reason) : NULL;
  frontend_server_reload(srv);
}

void frontend_server_reload(frontend_server *srv) {
  char why[160];
  /* Checked before: a failure leaves the list empty, which admits no
   * one (fail closed). */
  if (client_acl_load(&srv->acl, srv->ctx, srv->api, why, sizeof(why)) < 0)
    PH_LOG(srv->api, srv->ctx, PH_LOG_ERROR, "allow_clients unusable",
           PH_STR("reason", why));
  srv->log_target = (int)srv->api->conf_int(srv->ctx, "log_target");
}

int frontend_server_admit(frontend_server *srv, int fd,
                          const struct sockaddr *peer) {
  if (client_acl_allows(&srv->acl, peer))
    return 1;
  frontend_server_refuse(srv, fd);
  srv->api->inc(srv->denied, 1);
  if (srv->api->log_enabled(srv->ctx, PH_LOG_WARN)) {
    struct sockaddr_storage ss = {0};
    if (peer)
      memcpy(&ss, peer,
             peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                         : sizeof(struct sockaddr_in));
    char text[ACCESS_PEER_TEXT];
    PH_LOG_RL(srv->api, srv->ctx, PH_LOG_WARN,
              "client refused: not in allow_clients",
              PH_STR("client", access_peer_text(&ss, text)));
  }
  return 0;
}

void frontend_server_refuse(frontend_server *srv, int fd) {
  close(fd);
  listener_release(srv->listener);
}

int frontend_server_stop(frontend_server *srv) {
  srv->stopping = 1;
  frontend_gate_detach(srv);
  listener_close(srv->listener); /* announces bound = 0 */
  srv->listener = NULL;
  ILIST_FOREACH_SAFE(&srv->sessions, n, nx) {
    frontend_session *s = ILIST_ENTRY(n, frontend_session, link);
    if (!srv->ops->stop)
      continue;
    frontend_session_enter(s);
    srv->ops->stop(s->owner);
    frontend_session_leave(s);
  }
  if (srv->n_sessions == 0)
    return PH_OK;
  srv->stop_pending = 1;
  return PH_STOP_PENDING;
}

void frontend_server_destroy(frontend_server *srv) {
  srv->stop_pending = 0; /* the host is past waiting */
  frontend_gate_detach(srv);
  ilist_node *n;
  while ((n = ilist_first(&srv->sessions)))
    frontend_session_close(ILIST_ENTRY(n, frontend_session, link),
                           FRONTEND_END_QUIET);
  listener_close(srv->listener);
  srv->listener = NULL;
}

int frontend_server_services_get(frontend_server *srv, int password) {
  if (frontend_services_get(srv->ctx, srv->api, password, &srv->connector,
                            &srv->connector_self, &srv->authorizer,
                            &srv->authorizer_self) != PH_OK ||
      frontend_validation_get(srv->ctx, srv->api, &srv->validation,
                              &srv->validation_self) != PH_OK)
    return PH_ENOENT;
  return PH_OK;
}

void frontend_server_services_release(frontend_server *srv) {
  if (srv->connector)
    srv->api->service_release(srv->ctx, PH_CONNECTOR_SERVICE);
  if (srv->authorizer)
    srv->api->service_release(srv->ctx, PH_AUTHORIZER_SERVICE);
  if (srv->validation)
    srv->api->service_release(srv->ctx, PH_VALIDATION_SERVICE);
  srv->connector = NULL;
  srv->authorizer = NULL;
  srv->validation = NULL;
  srv->connector_self = srv->authorizer_self = srv->validation_self = NULL;
}

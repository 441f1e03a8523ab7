/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-listener part of the frontend session skeleton
 * (frontend_session.h): the sessions of one module instance, their count
 * (and its gauge), giving the listener slot back, and the stop: close the
 * listener, let each session decide (ops->stop), PH_STOP_PENDING until the
 * last one ends, then api->stop_done; destroy ends what is left. The
 * types are in frontend_session.h. Loop thread only. */
#ifndef PH_FRONTEND_SERVER_H
#define PH_FRONTEND_SERVER_H

#include "frontend_session.h"

/* Init: fills srv in (no allocation), registers
 * proxyhost_frontend_clients_denied_total{reason} and reads allow_clients and
 * log_target (frontend.keys). sm and ops stay the frontend's and must
 * outlive srv. */
void frontend_server_init(frontend_server *srv, const ph_api *api,
                          ph_ctx *ctx, const frontend_session_ops *ops,
                          stream_metrics *sm, ph_series *clients);
/* The module's reload: reads allow_clients and log_target again; the new
 * list applies to connections accepted from now on. */
void frontend_server_reload(frontend_server *srv);
/* The first thing a frontend's accept callback does: 1 when the client's
 * address is in allow_clients; otherwise the client is closed at once
 * (nothing read, nothing written), its listener slot given back, counted
 * in proxyhost_frontend_clients_denied_total{reason="not_allowed"}, logged at warn
 * rate-limited (the client's address: not a secret), and 0. */
int frontend_server_admit(frontend_server *srv, int fd,
                          const struct sockaddr *peer);
/* The module's stop: closes the listener (announcing bound = 0), calls
 * ops->stop for each session, and returns PH_OK when none is left, or
 * PH_STOP_PENDING; then api->stop_done is called when the last one
 * ends. */
int frontend_server_stop(frontend_server *srv);
/* 1 after frontend_server_stop. */
static inline int frontend_server_stopping(const frontend_server *srv) {
  return srv->stopping;
}
/* The module's destroy: closes every session (FRONTEND_END_QUIET; no
 * stop_done) and the listener. The services stay the frontend's to
 * release (frontend_server_services_release). */
void frontend_server_destroy(frontend_server *srv);

/* Start only: frontend_services_get and frontend_validation_get
 * (frontend_services.h) into srv's connector, authorizer (with password)
 * and validation, so a frontend's start is one call. PH_OK, or PH_ENOENT
 * (logged); what was got before a failure stays srv's, for
 * frontend_server_services_release. */
int frontend_server_services_get(frontend_server *srv, int password);
/* Destroy, after frontend_server_destroy: releases the services srv
 * holds (each one it got) and forgets them. */
void frontend_server_services_release(frontend_server *srv);

/* An accept the frontend could not take (no memory for its struct):
 * closes fd and gives the listener slot back. */
void frontend_server_refuse(frontend_server *srv, int fd);

#endif

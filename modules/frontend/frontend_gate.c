/* SPDX-License-Identifier: BSD-2-Clause */
/* A frontend's listener follows its connector's traffic.gate (issue 23
 * item 9, CP-3-18; traffic_gate.h): paused while the gate is closed (a
 * gateway whose view is past max_stale_age takes no new connection: they
 * wait in the kernel's backlog, served if the view comes back, refused by
 * the kernel once the backlog is full), resumed when it opens. Connections
 * already accepted go on; the connector drains what they carry. */
#include "frontend_gate.h"

static void on_gate(void *arg, int open) {
  frontend_server *srv = arg;
  if (srv->stopping || !srv->listener)
    return;
  if (open)
    listener_resume(srv->listener);
  else
    listener_pause(srv->listener);
  PH_LOG(srv->api, srv->ctx, open ? PH_LOG_INFO : PH_LOG_WARN,
         open ? "accepting new connections again: the connector can serve"
              : "not accepting new connections: the connector cannot serve "
                "(its view is stale, CP-3-18)");
}

void frontend_gate_attach(frontend_server *srv) {
  const ph_api *api = srv->api;
  const char *cname = api->conf_str(srv->ctx, "connector");
  if (!srv->listener || !cname || !*cname ||
      !api->service_provider_loaded(srv->ctx, TRAFFIC_GATE_SERVICE, cname))
    return; /* a connector without a gate (direct, tunnel_client) */
  srv->gate = api->service_get_named(srv->ctx, TRAFFIC_GATE_SERVICE, cname,
                                     TRAFFIC_GATE_MAJOR, 0, &srv->gate_self);
  if (!srv->gate)
    return;
  srv->gate_watch.changed = on_gate;
  srv->gate_watch.arg = srv;
  srv->gate->watch(srv->gate_self, &srv->gate_watch);
  if (!srv->gate->is_open(srv->gate_self))
    on_gate(srv, 0);
}

void frontend_gate_detach(frontend_server *srv) {
  if (!srv->gate)
    return;
  srv->gate->unwatch(srv->gate_self, &srv->gate_watch);
  srv->api->service_release(srv->ctx, TRAFFIC_GATE_SERVICE);
  srv->gate = NULL;
}

/* http_proxy: getting an upstream for an authorized request. A forward
 * reuses the connection kept from the previous request to the same
 * host:port, unless the configuration was reloaded since (the connector's
 * policy may deny that target now); otherwise the connector opens a
 * stream, and the request goes on as a tunnel (CONNECT) or an exchange
 * (forwarding). */
#include <strings.h>
#include <unistd.h>

#include "http_proxy_int.h"
#include "open_map.h"

/* Authorized: CONNECT opens a stream; a forward reuses the kept upstream
 * when it goes to the same place, or opens one. */
int proceed(conn *c) {
  if (conn_dead(c))
    return GONE;
  if (c->method_class == MC_FORWARD && c->up_idle &&
      c->up_generation == c->hp->generation &&
      c->up_port == c->target.port &&
      strcasecmp(c->up_host, c->target.host) == 0) {
    c->reused = 1;
    return run_exchange(c);
  }
  close_upstream(c);
  return start_open(c);
}

static void open_done(void *arg, const ph_open_result *res);

int start_open(conn *c) {
  hp *h = c->hp;
  if (conn_dead(c))
    return GONE;
  /* The upstream may be a socket or a stream (stream.h), for a tunnel
   * and for forwarding alike. */
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = c->target.port,
                        .host = c->target.host,
                        .principal = c->principal[0] ? c->principal : NULL,
                        .flags = PH_OPEN_F_STREAM};
  c->state = S_OPEN;
  c->t_open_us = now_us();
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  int64_t id = h->connector->open(h->connector_self, &rq, open_done, c);
  if (id <= 0)
    return reply(c, 400, AFTER_CLOSE);
  c->open_id = id;
  update_io(c);
  return 0;
}

static void open_result(conn *c, const ph_open_result *res) {
  hp *h = c->hp;
  c->open_id = 0;
  stream_end up;
  int code = relay_take_open(res, &up);
  stream_metrics_stage(&h->sm, SM_OPEN, stream_metrics_result(code),
                       seconds_since(c->t_open_us));
  stream_metrics_open(&h->sm, code);
  if (code != PH_OPEN_OK) {
    reply(c, open_map_http_status(code), AFTER_CLOSE);
    return;
  }
  c->ufd = up.fd;
  c->ust = up.stream;
  c->up_active = 1;
  hp_api->gauge_add(h->sm.active, 1);
  if (!c->ust && !(c->uio = hp_api->io_new(h->ctx, c->ufd, 0, upstream_io, c))) {
    reply(c, 502, AFTER_CLOSE);
    return;
  }
  if (c->method_class == MC_CONNECT) {
    reply(c, 200, AFTER_TUNNEL);
    return;
  }
  c->uout.off = 0; /* the head built for this request (again on a retry) */
  run_exchange(c);
}

static void open_done(void *arg, const ph_open_result *res) {
  conn *c = arg;
  conn_enter(c);
  open_result(c, res);
  conn_leave(c);
}

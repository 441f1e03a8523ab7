/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: an HTTP/1.1 proxy frontend.
 *
 * - CONNECT host:port: the connector opens the stream, the client gets
 *   "200 Connection established" only then, and the shared relay copies
 *   bytes both ways (bytes the client sent after the head go first).
 * - Absolute-form requests (GET http://host[:port]/path, any method): the
 *   request goes to the origin in origin-form with a correct Host and
 *   without hop-by-hop headers; request and response bodies are forwarded
 *   as they arrive, framed as they were (Content-Length, chunked, or until
 *   close), through bounded buffers; client connections stay open between
 *   requests when both sides allow it, and the upstream connection is
 *   kept for the next request to the same host:port.
 * - Proxy-Authorization: Basic through the "authorizer" service when
 *   auth = password.
 * - Limits: request line, header bytes and count, header and idle
 *   timeouts, concurrent clients, buffer sizes. A bad or oversized head
 *   gets its status and closes only its own connection.
 *
 * This file: the module descriptor, its configuration keys and metrics,
 * the lifecycle (init, start, reload, stop, destroy) and the listener's
 * accept callback. http_proxy_int.h describes a connection's states, the
 * dispatcher and its phases, and which file does what.
 */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_check.h"
#include "frontend/frontend_gate.h"
#include "frontend/frontend_services.h"
#include "http_proxy_int.h"
#include "lib/conf_values.h"
#include "lib/metric_table.h"

const ph_api *hp_api;

/* The key table, generated from http_proxy.ini.sample (its "; type:"
 * lines) by tools/gen_conf_keys.awk into http_proxy_keys.c. The bounds
 * the code needs are held again in hp_check: the head limits here (each
 * head's field array is max_headers entries, and its bytes are
 * max_request_line + max_header_bytes), the shared keys' in
 * frontend_check (frontend_check.h). */
extern const ph_conf_key hp_keys[];

#define HP_REQUEST_LINE_MIN 256
#define HP_REQUEST_LINE_MAX 16384
#define HP_HEADER_BYTES_MIN 1024
#define HP_HEADER_BYTES_MAX 65536
#define HP_HEADERS_MAX 1000

static const ph_conf_limit hp_held[] = {
    {"max_request_line", HP_REQUEST_LINE_MIN, HP_REQUEST_LINE_MAX, 0},
    {"max_header_bytes", HP_HEADER_BYTES_MIN, HP_HEADER_BYTES_MAX, 0},
    {"max_headers", 1, HP_HEADERS_MAX, 0},
};

/* ph_module.check: the head limits within what the code holds, then the
 * frontends' shared check. */
static int hp_check(ph_ctx *ctx, const ph_api *api, const char **key,
                    char *why, size_t whylen) {
  int r = ph_conf_limits(ctx, api, hp_held,
                         sizeof(hp_held) / sizeof(hp_held[0]), key, why,
                         whylen);
  return r != PH_OK ? r : frontend_check(ctx, api, key, why, whylen);
}

const char *const hp_method_classes[] = {"connect", "forward", NULL};
static const char *const status_classes[] = {"2xx", "3xx", "4xx", "5xx", NULL};
static const ph_label_def request_labels[] = {
    {"method_class", hp_method_classes}, {"status_class", status_classes}};
/* The proxy answers a CONNECT itself, never with a 3xx; a forwarded
 * request gets the origin's status. */
static const char *const produced[] = {"connect", "2xx", "connect", "4xx",
                                       "connect", "5xx", "forward", NULL};
static const ph_metric_table hp_metrics[] = {
    PH_METRIC_ONLY("proxyhost_http_proxy_requests_total", PH_METRIC_COUNTER,
                   "HTTP proxy requests by method class and the status the "
                   "client got",
                   PH_METRIC_LABELS(request_labels), PH_METRIC_NO_BUCKETS,
                   PH_METRIC_COMBOS(produced, 4), hp, requests),
    PH_METRIC("proxyhost_http_proxy_clients", PH_METRIC_GAUGE,
              "HTTP proxy client connections open now", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, hp, m_clients),
    PH_METRIC("proxyhost_http_proxy_clients_refused_total", PH_METRIC_COUNTER,
              "HTTP proxy connections closed at once because max_clients was "
              "reached",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, hp, m_refused),
    PH_METRIC_END};

static void on_accept(void *arg, int fd, const struct sockaddr *peer,
                      socklen_t peerlen) {
  hp_conn_accept(arg, fd, peer, peerlen);
}

static void read_conf(hp *h) {
  hp_conf *k = &h->conf;
  k->lim.max_line = (size_t)hp_api->conf_int(h->ctx, "max_request_line");
  k->lim.max_header_bytes =
      (size_t)hp_api->conf_int(h->ctx, "max_header_bytes");
  k->lim.max_headers = (size_t)hp_api->conf_int(h->ctx, "max_headers");
  k->header_timeout_ms = hp_api->conf_int(h->ctx, "header_timeout");
  k->idle_timeout_ms = hp_api->conf_int(h->ctx, "idle_timeout");
  k->buffer_size = (size_t)hp_api->conf_int(h->ctx, "buffer_size");
  k->splice = (int)hp_api->conf_int(h->ctx, "splice");
  k->next_hop = (int)hp_api->conf_int(h->ctx, "proxy_status.next_hop");
  const char *auth = hp_api->conf_str(h->ctx, "auth");
  k->auth = auth && strcmp(auth, "password") == 0 ? AUTH_PASSWORD : AUTH_NONE;
}

static int hp_init(ph_ctx *ctx, const ph_api *a, void **state) {
  hp_api = a;
  hp *h = calloc(1, sizeof(*h));
  if (!h)
    return PH_ENOMEM;
  *state = h;
  h->ctx = ctx;
  read_conf(h);
  if (stream_metrics_init(
          &h->sm, hp_api, ctx, SM_CLIENT,
          SM_FRONTEND | SM_USES_HTTP |
              (h->conf.auth == AUTH_PASSWORD ? SM_STAGE_BIT(SM_AUTHORIZATION)
                                             : 0) |
              (frontend_uses_validation(ctx, hp_api)
                   ? SM_STAGE_BIT(SM_REMOTE_VALIDATION)
                   : 0)) != PH_OK)
    return PH_EINVAL;
  if (ph_metric_table_register(hp_api, ctx, hp_metrics, h) != PH_OK)
    return PH_EINVAL;
  frontend_server_init(&h->fs, hp_api, ctx, &hp_conn_ops, &h->sm,
                       h->m_clients);
  h->announce = hp_api->topic(ctx, PH_LISTENER_TOPIC, PH_LISTENER_TYPE);
  return h->announce ? PH_OK : PH_EINVAL;
}

static int hp_start(void *state) {
  hp *h = state;
  if (frontend_server_services_get(&h->fs, h->conf.auth == AUTH_PASSWORD) !=
      PH_OK)
    return PH_ENOENT;
  listener_opts o = {
      .address = hp_api->conf_str(h->ctx, "listen"),
      .backlog = (int)hp_api->conf_int(h->ctx, "backlog"),
      .reuseport = (int)hp_api->conf_int(h->ctx, "reuseport"),
      .max_clients = (int)hp_api->conf_int(h->ctx, "max_clients"),
      .announce = h->announce,
      .on_accept = on_accept,
      .arg = h,
      .refused_total = h->m_refused,
  };
  char err[256];
  h->fs.listener = listener_open(hp_api, h->ctx, &o, err, sizeof(err));
  if (!h->fs.listener) {
    PH_LOG(hp_api, h->ctx, PH_LOG_ERROR, "cannot listen",
           PH_STR("reason", err));
    return PH_EINVAL;
  }
  listener_resume(h->fs.listener);
  frontend_gate_attach(&h->fs); /* paused while the pool is stale */
  PH_LOG(hp_api, h->ctx, PH_LOG_INFO, "http proxy listening",
         PH_STR("listen", o.address),
         PH_INT("port", listener_port(h->fs.listener)),
         PH_STR("auth", h->conf.auth == AUTH_PASSWORD ? "password" : "none"));
  return PH_OK;
}

static int hp_reload(void *state) {
  hp *h = state;
  int auth = h->conf.auth;
  read_conf(h);
  h->conf.auth = auth; /* the authorizer is looked up at start only */
  /* The target policy or the users may have changed: kept upstreams and
   * verified credentials are not trusted for later requests. */
  h->generation++;
  frontend_server_reload(&h->fs); /* allow_clients, log_target */
  return PH_OK;
}

/* Stop accepting, close the connections that wait for a request head
 * (idle, or with half a head: a client is not waited for), let the others
 * finish their request (without keep-alive) or their tunnel, within the
 * host's drain deadline (the dispatcher's on_stop decides per
 * connection). */
static int hp_stop(void *state) {
  hp *h = state;
  return frontend_server_stop(&h->fs);
}

static void hp_destroy(void *state) {
  hp *h = state;
  if (!h)
    return;
  frontend_server_destroy(&h->fs); /* ends the connections, quietly */
  frontend_server_services_release(&h->fs);
  free(h);
}

static const char *const hp_requires[] = {PH_CONNECTOR_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("http_proxy", "1.0.0"),
    .description = "HTTP proxy: CONNECT tunnels and absolute-form "
                   "forwarding with keep-alive",
    .requires = hp_requires,
    .config = hp_keys,
    .check = hp_check,
    .init = hp_init,
    .start = hp_start,
    .reload = hp_reload,
    .stop = hp_stop,
    .destroy = hp_destroy,
};

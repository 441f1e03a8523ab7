/* SPDX-License-Identifier: BSD-2-Clause */
/* GET /v1/cp/view (cpc_view_route.h). The body is built from one acquired
 * view, so it describes exactly one snapshot; its size is bounded by the
 * view's proxies (ids are at most PH_POOL_ID_MAX bytes, zones likewise)
 * and allocated for the one reply. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/pool_store.h>
#include <proxyhost/pool_view.h>

#include "lib/clocks.h"
#include "cpc_view_route.h"
#include "lib/json.h"

/* One proxy's entry: two ids of at most PH_POOL_ID_MAX bytes (each may
 * grow sixfold when escaped: \u00XX), five numbers and the keys. */
#define ENTRY_MAX (2 * 6 * PH_POOL_ID_MAX + 256)
#define HEAD_MAX 1024

typedef cpc_view_route route;

static void reply(route *r, int64_t req, int status, const char *body,
                  size_t len) {
  r->api->route_reply(r->ctx, req, status, "application/json", body, len);
}

static long render(const ph_pool_view *v, int64_t now, char *buf,
                   size_t cap) {
  json_w w;
  json_w_init(&w, buf, cap);
  json_w_obj(&w);
  json_w_key(&w, "held");
  json_w_bool(&w, v != NULL);
  json_w_key(&w, "version");
  json_w_uint(&w, v ? v->version : 0);
  json_w_key(&w, "ownership_epoch");
  json_w_uint(&w, v ? v->epoch : 0);
  json_w_key(&w, "generated_at_ms");
  json_w_int(&w, v ? v->generated_at_ms : 0);
  json_w_key(&w, "valid_until_ms");
  json_w_int(&w, v ? v->valid_until_ms : 0);
  json_w_key(&w, "stale_deadline_ms");
  json_w_int(&w, v ? v->stale_deadline_ms : 0);
  json_w_key(&w, "live");
  json_w_bool(&w, v && cp_view_live(v, now));
  json_w_key(&w, "now_ms");
  json_w_int(&w, now);
  json_w_key(&w, "proxies");
  json_w_arr(&w);
  for (uint32_t i = 0; v && i < v->n_proxies; i++) {
    const ph_pool_view_proxy *p = &v->proxies[i];
    json_w_obj(&w);
    json_w_key(&w, "proxy_id");
    json_w_str(&w, p->proxy_id);
    json_w_key(&w, "zone");
    json_w_str(&w, p->zone ? p->zone : "");
    json_w_key(&w, "capacity");
    json_w_uint(&w, p->capacity);
    json_w_key(&w, "usable_until_ms");
    json_w_int(&w, p->usable_until_ms);
    json_w_key(&w, "expires_at_ms");
    json_w_int(&w, p->expires_at_ms);
    json_w_key(&w, "draining");
    json_w_bool(&w, p->draining);
    /* the controller's verdict (CP-6-7): none, available, suspect,
     * unhealthy */
    static const char *const hn[] = {"none", "available", "suspect",
                                     "unhealthy"};
    json_w_key(&w, "health");
    json_w_str(&w, hn[v->health && v->health[i] <= 3 ? v->health[i] : 0]);
    json_w_obj_end(&w);
  }
  json_w_arr_end(&w);
  json_w_obj_end(&w);
  return json_w_finish(&w);
}

static void on_request(void *arg, int64_t req, const ph_http_request *hr) {
  route *r = arg;
  static const char not_allowed[] =
      "{\"error\":\"method_not_allowed\",\"message\":\"GET only\"}";
  static const char no_mem[] =
      "{\"error\":\"unavailable\",\"message\":\"no memory\"}";
  if (strcmp(hr->method, "GET") != 0 || strcmp(hr->path, CPC_VIEW_ROUTE)) {
    int nf = strcmp(hr->path, CPC_VIEW_ROUTE) != 0;
    static const char not_found[] =
        "{\"error\":\"not_found\",\"message\":\"no such route\"}";
    reply(r, req, nf ? 404 : 405, nf ? not_found : not_allowed,
          nf ? sizeof(not_found) - 1 : sizeof(not_allowed) - 1);
    return;
  }
  const ph_pool_view *v = cp_view_acquire(r->slot);
  size_t cap = HEAD_MAX + (size_t)(v ? v->n_proxies : 0) * ENTRY_MAX;
  char *buf = malloc(cap);
  long n = buf ? render(v, wall_ms(), buf, cap) : -1;
  cp_view_release(v);
  if (n < 0)
    reply(r, req, 503, no_mem, sizeof(no_mem) - 1);
  else
    reply(r, req, 200, buf, (size_t)n);
  free(buf);
}

static void on_cancel(void *arg, int64_t req) {
  (void)arg;
  (void)req; /* answered inside on_request: never pending */
}

int cpc_view_route_register(cpc_view_route *r, ph_ctx *ctx,
                            const ph_api *api, cp_view_slot *slot) {
  r->ctx = ctx;
  r->api = api;
  r->slot = slot;
  return api->route_register(ctx, CPC_VIEW_ROUTE, on_request, on_cancel, r,
                             4);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* A test module (t/integration/sdk_example.sh): the consumer side of
 * "dispatch.strategy" in a real process, standing in for the gateway's
 * pool until a rule selects a strategy there. At start it looks the
 * strategy its key `strategy` names up with service_get_named, as the
 * pool does, and fails the start when there is none (exit 4). Its route
 *   GET /v1/test/strategy?full=K[&key=S]
 * attaches the strategy to a canned view of four proxies "a" "b" "c" "d"
 * (one rule, all four candidates, the first K full), picks once (with
 * sticky key S), detaches, and answers "pick=ID" or "pick=none". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <proxyhost/module.h>
#include <proxyhost/strategy.h>

enum { NP = 4 };

typedef struct sprobe {
  ph_ctx *ctx;
  const ph_strategy_v1 *vt;
  void *self;
} sprobe;

static const ph_api *api;

static const ph_conf_key keys[] = {
    PH_CONF_KEY("strategy", PH_CONF_STRING, NULL, 1, 64, PH_CONF_REQUIRED,
                NULL, "the dispatch.strategy provider to look up", NULL),
    PH_CONF_END};

/* The value of name in q copied into out (at most outlen - 1 bytes), or
 * NULL. */
static const char *query_str(const char *q, const char *name, char *out,
                             size_t outlen) {
  size_t l = strlen(name);
  for (const char *p = q; p && *p;) {
    if (!strncmp(p, name, l) && p[l] == '=') {
      size_t n = strcspn(p + l + 1, "&");
      if (n >= outlen)
        n = outlen - 1;
      memcpy(out, p + l + 1, n);
      out[n] = 0;
      return out;
    }
    p = strchr(p, '&');
    if (p)
      p++;
  }
  return NULL;
}

static void route_handle(void *arg, int64_t id, const ph_http_request *r) {
  sprobe *sp = arg;
  char fbuf[8], kbuf[128];
  const char *full_s = query_str(r->query, "full", fbuf, sizeof(fbuf));
  const char *key = query_str(r->query, "key", kbuf, sizeof(kbuf));
  long full = full_s ? strtol(full_s, NULL, 10) : 0;
  if (full < 0 || full > NP) {
    api->route_reply(sp->ctx, id, 400, "text/plain", "bad full\n", 9);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;

  static const char *ids[NP] = {"a", "b", "c", "d"};
  ph_pool_view_proxy px[NP];
  uint32_t cand[NP], active[NP] = {0}, reserved[NP] = {0};
  uint8_t revoked[NP] = {0};
  memset(px, 0, sizeof(px));
  for (uint32_t i = 0; i < NP; i++) {
    px[i].proxy_id = ids[i];
    px[i].index = i;
    px[i].host = "127.0.0.1";
    px[i].port = 1;
    px[i].capacity = 2;
    px[i].weight = 1;
    px[i].usable_until_ms = now + 60000;
    px[i].expires_at_ms = now + 120000;
    px[i].zone = "";
    cand[i] = i;
    if (i < (uint32_t)full)
      active[i] = 2;
  }
  ph_pool_view_rule rule = {0};
  rule.rule_id = "r1";
  rule.host_kind = PH_POOL_VIEW_HOST_ANY;
  rule.host = "";
  rule.target_group = "g";
  rule.strategy = api->conf_str(sp->ctx, "strategy");
  rule.sticky_key = key ? "username" : "";
  rule.candidates = cand;
  rule.n_candidates = NP;
  ph_pool_view v = {0};
  v.size = sizeof(v);
  v.version = 1;
  v.valid_until_ms = now + 60000;
  v.obtained_at_ms = now;
  v.stale_deadline_ms = now + 60000;
  v.cluster_id = "c";
  v.worker_id = "w";
  v.rules = &rule;
  v.n_rules = 1;
  v.proxies = px;
  v.n_proxies = NP;
  ph_pool_load load = {active, reserved, revoked};

  void *st = sp->vt->attach(sp->self, &v, NULL, NULL, NULL);
  if (!st) {
    api->route_reply(sp->ctx, id, 500, "text/plain", "attach failed\n", 14);
    return;
  }
  ph_strategy_pick in = {0};
  in.size = sizeof(in);
  in.view = &v;
  in.rule = &rule;
  in.load = &load;
  in.now_ms = now;
  in.key = key;
  in.key_len = key ? (uint32_t)strlen(key) : 0;
  in.random = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u;
  uint32_t p = sp->vt->pick(sp->self, st, &in);
  sp->vt->detach(sp->self, st);
  char body[64];
  int len = snprintf(body, sizeof(body), "pick=%s\n",
                     p == PH_POOL_VIEW_NONE ? "none"
                     : p < NP               ? ids[p]
                                            : "out-of-range");
  api->route_reply(sp->ctx, id, 200, "text/plain", body, (size_t)len);
}

static void route_cancel(void *arg, int64_t id) {
  (void)arg;
  (void)id;
}

static int sp_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  sprobe *sp = calloc(1, sizeof(*sp));
  if (!sp)
    return PH_ENOMEM;
  *state = sp;
  sp->ctx = ctx;
  return api->route_register(ctx, "/v1/test/strategy", route_handle,
                             route_cancel, sp, 4);
}

static int sp_start(void *state) {
  sprobe *sp = state;
  const char *name = api->conf_str(sp->ctx, "strategy");
  sp->vt = api->service_get_named(sp->ctx, PH_STRATEGY_SERVICE, name,
                                  PH_STRATEGY_MAJOR, 0, &sp->self);
  if (!sp->vt) {
    PH_LOG(api, sp->ctx, PH_LOG_ERROR, "no such strategy",
           PH_STR("strategy", name));
    return PH_ENOENT;
  }
  PH_LOG(api, sp->ctx, PH_LOG_INFO, "strategy found", PH_STR("strategy", name));
  return PH_OK;
}

static void sp_destroy(void *state) { free(state); }

static const char *const requires[] = {PH_STRATEGY_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("strategy_probe", "1.0.0"),
    .description = "test: looks a dispatch.strategy up by name and picks on demand",
    .requires = requires,
    .config = keys,
    .init = sp_init,
    .start = sp_start,
    .destroy = sp_destroy,
};

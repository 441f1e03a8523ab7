/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's keys and their checks (agent_conf.h). */
#include "agent_conf.h"

#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "tunnel_common/session/tm_conf.h"
#include "tunnel_common/session/tm_token.h"

/* agent_conf_keys, the key table, is generated from tunnel_agent.ini.sample
 * (its "; type:" lines) by tools/gen_conf_keys.awk into
 * tunnel_agent_keys.c. */

static void copy_str(char *dst, size_t cap, const char *s) {
  snprintf(dst, cap, "%s", s ? s : "");
}

static uint32_t u32(const ph_api *api, ph_ctx *ctx, const char *k) {
  int64_t v = api->conf_int(ctx, k);
  return v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void agent_cfg_read(const ph_api *api, ph_ctx *ctx, agent_cfg *c) {
  memset(c, 0, sizeof(*c));
  copy_str(c->urls[0], sizeof(c->urls[0]), api->conf_str(ctx, "server_url"));
  c->n_urls = 1;
  size_t n = api->conf_list_len(ctx, "extra_server_urls");
  for (size_t i = 0; i < n && c->n_urls < AGENT_URLS_MAX; i++)
    copy_str(c->urls[c->n_urls++], sizeof(c->urls[0]),
             api->conf_list_at(ctx, "extra_server_urls", i));
  copy_str(c->token_file, sizeof(c->token_file),
           api->conf_str(ctx, "token_file"));
  copy_str(c->ca_file, sizeof(c->ca_file), api->conf_str(ctx, "tls.ca_file"));
  copy_str(c->agent_id, sizeof(c->agent_id), api->conf_str(ctx, "agent_id"));
  copy_str(c->connector, sizeof(c->connector),
           api->conf_str(ctx, "connector"));
  c->allow_plain = (int)api->conf_int(ctx, "allow_plain");
  c->log_target = (int)api->conf_int(ctx, "log_target");
  c->pool.min = u32(api, ctx, "connections.min");
  c->pool.max = u32(api, ctx, "connections.max");
  c->pool.high = u32(api, ctx, "connections.high_watermark");
  c->pool.low = u32(api, ctx, "connections.low_watermark");
  c->pool.eval_ms = api->conf_int(ctx, "connections.evaluation_interval");
  c->pool.cooldown_ms = api->conf_int(ctx, "connections.cooldown");
  c->pool.latency_high_us =
      (uint64_t)api->conf_int(ctx, "connections.latency_high") * 1000;
  c->pool.error_rate_max = u32(api, ctx, "connections.error_rate_max");
  c->reconnect_min_ms = u32(api, ctx, "reconnect.min");
  c->reconnect_max_ms = u32(api, ctx, "reconnect.max");
  c->dial.max_concurrent = u32(api, ctx, "streams.max_concurrent_dials");
  c->dial.max_pending = u32(api, ctx, "streams.max_pending_dials");
  c->dial.open_timeout_ms = u32(api, ctx, "streams.open_timeout");
  c->dial.connect_timeout_ms = u32(api, ctx, "streams.connect_timeout");
  c->idle_timeout_ms = api->conf_int(ctx, "streams.idle_timeout");
  c->buffer_size = (size_t)api->conf_int(ctx, "streams.buffer_size");
  tm_session_cfg *s = &c->session;
  s->component = TM_COMPONENT_AGENT;
  s->opener = 0; /* the server opens streams towards the agent */
  tm_conf_session(ctx, api, "streams.", s);
  s->max_streams = u32(api, ctx, "streams.max_streams");
  c->caps = tm_conf_caps(ctx, api) | s->local_caps;
}

static int bad(const char **key, const char *k, char *why, size_t whylen,
               const char *msg) {
  return ph_conf_fail(key, k, why, whylen, "%s", msg);
}

target_guard *agent_guard_build(const ph_api *api, ph_ctx *ctx,
                                const char **key, char *why, size_t whylen) {
  target_guard *g = guard_new();
  if (!g) {
    bad(key, "targets.allow_host_local", why, whylen, "out of memory");
    return NULL;
  }
  size_t n = api->conf_list_len(ctx, "targets.allow_host_local");
  for (size_t i = 0; i < n; i++) {
    const char *item = api->conf_list_at(ctx, "targets.allow_host_local", i);
    if (guard_allow(g, item) == 0)
      continue;
    *key = "targets.allow_host_local";
    snprintf(why, whylen, "\"%s\" is not an IP address or address/prefix",
             item ? item : "");
    guard_free(g);
    return NULL;
  }
  return g;
}

static int ws_url(const char *u) {
  return u && (strncmp(u, "ws://", 5) == 0 || strncmp(u, "wss://", 6) == 0);
}

#define CAP(m) (sizeof(((agent_cfg *)0)->m) - 1)

/* The strings agent_cfg_read copies into fixed arrays, held to them here
 * whatever the sample declares (ph_conf_limits: a longer value fails the
 * start, never cut); the session's own keys: tm_conf_check. */
static const ph_conf_limit agent_strs[] = {
    {"server_url", 0, CAP(urls[0]), 1},  {"token_file", 0, CAP(token_file), 1},
    {"tls.ca_file", 0, CAP(ca_file), 1}, {"agent_id", 0, CAP(agent_id), 1},
    {"connector", 0, CAP(connector), 1},
};

static int strings_fit(ph_ctx *ctx, const ph_api *api, const char **key,
                       char *why, size_t whylen) {
  int rc = ph_conf_limits(ctx, api, agent_strs,
                          sizeof(agent_strs) / sizeof(agent_strs[0]), key,
                          why, whylen);
  if (rc != PH_OK)
    return rc;
  if (api->conf_list_len(ctx, "extra_server_urls") > AGENT_URLS_MAX - 1)
    return ph_conf_fail(key, "extra_server_urls", why, whylen,
                        "at most %d URLs", AGENT_URLS_MAX - 1);
  return PH_OK;
}

int agent_cfg_check(ph_ctx *ctx, const ph_api *api, const char **key,
                    char *why, size_t whylen) {
  if (strings_fit(ctx, api, key, why, whylen) != PH_OK)
    return PH_EINVAL;
  if (!ws_url(api->conf_str(ctx, "server_url")))
    return bad(key, "server_url", why, whylen,
               "must start with wss:// (or ws://)");
  size_t n = api->conf_list_len(ctx, "extra_server_urls");
  for (size_t i = 0; i < n; i++) {
    const char *u = api->conf_list_at(ctx, "extra_server_urls", i);
    if (!ws_url(u) || strlen(u) > AGENT_URL_MAX)
      return bad(key, "extra_server_urls", why, whylen,
                 "each must start with wss:// (or ws://) and be at most "
                 "2048 bytes");
  }
  const char *tf = api->conf_str(ctx, "token_file");
  const char *tok = api->conf_str(ctx, "token");
  int has_file = tf && *tf, has_tok = tok && *tok;
  if (has_file && has_tok)
    return bad(key, "token", why, whylen,
               "set token_file or token, not both");
  if (!has_file && !has_tok)
    return bad(key, "token_file", why, whylen,
               "the agent needs a token: set token_file (or token)");
  const char *cn = api->conf_str(ctx, "connector");
  if (cn && *cn && !api->service_provider_loaded(ctx, "connector", cn))
    return bad(key, "connector", why, whylen,
               "no loaded instance of that name provides the connector "
               "service (add it to [proxyhost] modules, e.g. direct)");
  pool_policy p;
  p.min = (uint32_t)api->conf_int(ctx, "connections.min");
  p.max = (uint32_t)api->conf_int(ctx, "connections.max");
  p.high = (uint32_t)api->conf_int(ctx, "connections.high_watermark");
  p.low = (uint32_t)api->conf_int(ctx, "connections.low_watermark");
  p.eval_ms = api->conf_int(ctx, "connections.evaluation_interval");
  p.cooldown_ms = api->conf_int(ctx, "connections.cooldown");
  const char *pp = pool_policy_problem(&p);
  if (*pp)
    return bad(key, p.min > p.max ? "connections.min"
                                  : "connections.low_watermark",
               why, whylen, pp);
  static const ph_conf_order order[] = {
      {"reconnect.min", "reconnect.max", "reconnect.min",
       "must not exceed reconnect.max"},
      {"streams.connect_timeout", "streams.open_timeout",
       "streams.connect_timeout", "must not exceed streams.open_timeout"}};
  if (ph_conf_orders(ctx, api, order, sizeof(order) / sizeof(order[0]), key,
                     why, whylen) != PH_OK)
    return PH_EINVAL;
  target_guard *g = agent_guard_build(api, ctx, key, why, whylen);
  if (!g)
    return PH_EINVAL;
  guard_free(g);
  return tm_conf_check(ctx, api, "streams.", agent_conf_keys, key, why,
                       whylen);
}

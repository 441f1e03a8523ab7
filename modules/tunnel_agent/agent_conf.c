/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's keys and their checks (agent_conf.h). */
#include "agent_conf.h"
#include "lib/tls_reload.h"

#include <stdio.h>
#include <string.h>

#include "lib/conf_values.h"
#include "tunnel_common/session/tm_conf.h"
#include "tunnel_common/session/tm_token.h"

/* Read once at start: every key is PH_CONF_RESTART (the token file's
 * contents are re-read at every connection attempt, its path is not). */
#define R PH_CONF_RESTART

const ph_conf_key agent_conf_keys[] = {
    PH_CONF_KEY("server_url", PH_CONF_STRING, NULL, 1, AGENT_URL_MAX,
                PH_CONF_REQUIRED | R, NULL,
                "the server's tunnel endpoint: wss://host:port/path (or "
                "ws:// to loopback, or anywhere with allow_plain)",
                NULL),
    PH_CONF_KEY("extra_server_urls", PH_CONF_LIST, "", 0,
                AGENT_URLS_MAX - 1, R, NULL,
                "other nodes of the same mesh (up to 7 URLs, same form as "
                "server_url): the connections are spread over server_url "
                "and these, a failed node skipped while it backs off",
                NULL),
    PH_CONF_KEY("token_file", PH_CONF_STRING, "", 0, AGENT_PATH_MAX, R, NULL,
                "file holding the agent's bearer token (re-read at every "
                "connection attempt; trailing newline stripped)",
                NULL),
    PH_CONF_KEY("token", PH_CONF_STRING, "", 0, TM_TOKEN_MAX,
                PH_CONF_SENSITIVE | R, NULL,
                "the agent's bearer token itself, when token_file is empty",
                NULL),
    PH_CONF_KEY("agent_id", PH_CONF_STRING, "", 0, TM_AGENT_MAX, R, NULL,
                "name sent in the agent metadata: empty, or the name of the "
                "agent its token was made for (the server closes a "
                "connection that names another)",
                NULL),
    PH_CONF_KEY("tls.ca_file", PH_CONF_STRING, "", 0, AGENT_PATH_MAX, R, NULL,
                "CA certificates that verify a wss:// server; empty: the "
                "system store; re-read on SIGHUP",
                NULL),
    PH_TLS_RELOAD_KEY,
    PH_CONF_KEY("allow_plain", PH_CONF_BOOL, "false", 0, 0, R, NULL,
                "allow ws:// (no TLS) to a non-loopback server", NULL),
    PH_CONF_KEY("connector", PH_CONF_STRING, "direct", 1, 128, R, NULL,
                "the connector instance that dials targets (its DNS, target "
                "policy and connect)",
                NULL),
    PH_CONF_KEY("log_target", PH_CONF_BOOL, "false", 0, 0, R, NULL,
                "name the target in the per-stream debug line; off: never "
                "logged",
                NULL),
    /* the host-local guard (issue 22 item 5, target_guard.h) */
    PH_CONF_KEY("targets.allow_host_local", PH_CONF_LIST, "", 0,
                GUARD_MAX_ALLOW, R, NULL,
                "host-local destinations the agent may dial anyway "
                "(addresses or CIDRs; empty: loopback, link-local, "
                "unspecified and this host's addresses are all refused)",
                NULL),
    /* the connection pool (TM-P2-23..28) */
    PH_CONF_KEY("connections.min", PH_CONF_INT, "1", 1, 64, R, NULL,
                "WebSocket connections kept to the server", NULL),
    PH_CONF_KEY("connections.max", PH_CONF_INT, "1", 1, 64, R, NULL,
                "connections at most (more than min: grown by load)", NULL),
    PH_CONF_KEY("connections.high_watermark", PH_CONF_INT, "16", 1, 65536, R,
                NULL,
                "load per connection (pending dials + active streams) above "
                "which one more is opened",
                NULL),
    PH_CONF_KEY("connections.low_watermark", PH_CONF_INT, "2", 0, 65535, R,
                NULL, "load per connection below which one is drained", NULL),
    PH_CONF_KEY("connections.evaluation_interval", PH_CONF_DURATION, "10s",
                100, 3600000, R, NULL,
                "how long the load must stay above high_watermark", NULL),
    PH_CONF_KEY("connections.cooldown", PH_CONF_DURATION, "30s", 100, 3600000,
                R, NULL,
                "how long below low_watermark (and since the last change) "
                "before draining one",
                NULL),
    PH_CONF_KEY("connections.latency_high", PH_CONF_DURATION, "0", 0,
                600000, R, NULL,
                "also grow when the p95 of the pending dials' wait, the open, "
                "the time to first byte or the writer's wait, or the "
                "heartbeat RTT, stayed above this for evaluation_interval "
                "while loaded above low_watermark (0: load alone)",
                NULL),
    PH_CONF_KEY("connections.error_rate_max", PH_CONF_INT, "50", 1, 100, R,
                NULL,
                "percent of failed opens in a second above which the pool "
                "does not grow (failures are not load)",
                NULL),
    PH_CONF_KEY("reconnect.min", PH_CONF_DURATION, "500ms", 10, 600000, R,
                NULL, "first reconnect delay (jittered, doubled per failure)",
                NULL),
    PH_CONF_KEY("reconnect.max", PH_CONF_DURATION, "30s", 10, 3600000, R, NULL,
                "largest reconnect delay", NULL),
    /* the dial executor (TM-P0-1..6) */
    PH_CONF_KEY("streams.max_concurrent_dials", PH_CONF_INT, "32", 1, 4096, R,
                NULL, "dials running at once per connection", NULL),
    PH_CONF_KEY("streams.max_pending_dials", PH_CONF_INT, "128", 0, 65536, R,
                NULL,
                "dials waiting for a slot per connection; beyond it an open "
                "is refused queue_full at once",
                NULL),
    PH_CONF_KEY("streams.open_timeout", PH_CONF_DURATION, "8s", 10, 600000, R,
                NULL, "limit of an open: queue and dial", NULL),
    PH_CONF_KEY("streams.connect_timeout", PH_CONF_DURATION, "5s", 10, 300000,
                R, NULL, "limit of one dial (the connector's DNS and connect)",
                NULL),
    PH_CONF_KEY("streams.max_streams", PH_CONF_INT, "1024", 1, 65536, R, NULL,
                "streams open or opening at once per connection", NULL),
    PH_CONF_KEY("streams.idle_timeout", PH_CONF_DURATION, "300s", 1000,
                86400000, R, NULL,
                "a relayed stream with no bytes either way for this long ends",
                NULL),
    PH_CONF_KEY("streams.buffer_size", PH_CONF_SIZE, "64KiB", 4096, 1048576,
                R, NULL, "relay buffer from the target, per stream", NULL),
    /* the session (tm_conf.h) */
    TM_SESSION_KEYS("streams."),
    PH_CONF_END};

#undef R

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

int agent_cfg_check(ph_ctx *ctx, const ph_api *api, const char **key,
                    char *why, size_t whylen) {
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

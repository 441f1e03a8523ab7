/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_client: the TunnelMesh client role as a "connector" (minor 1,
 * answering with streams), so that socks5 and http_proxy reach targets
 * through a server and an agent by naming it in their connector key
 * (TM-P0-22: the frontend keeps the local protocol and the error mapping;
 * the session owns open state, queues, windows and the fair writer).
 *
 * It keeps `connections` WebSocket connections to server_url (tc_conn.c),
 * opens one stream per open() on the least loaded (tc_open.c) and hands
 * it over as a ph_stream (tc_stream.c). This file: the keys, their
 * check, and the lifecycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/module.h>

#include "lib/conf_values.h"
#include "tunnel_common/session/tm_conf.h"
#include "tunnel_common/session/tm_ws_url.h"
#include "tunnel_client_int.h"

static const char *const tc_provides[] = {PH_CONNECTOR_SERVICE, NULL};

/* tc_keys, the key table, is generated from tunnel_client.ini.sample (its
 * "; type:" lines) by tools/gen_conf_keys.awk into tunnel_client_keys.c. */
extern const ph_conf_key tc_keys[];

/* The bounds this file relies on, held again here whatever the sample
 * declares (ph_conf_limits): connections indexes conns[TC_MAX_CONNECTIONS];
 * the stream count (the session's id table, 2^20 at most) and the
 * durations are u32; tls.ca_file is copied into ca_file[1025]. The
 * session's own keys: tm_conf_check. */
static const ph_conf_limit tc_limits[] = {
    {"connections", 1, TC_MAX_CONNECTIONS, 0},
    {"stream.max_streams", 1, 1 << 20, 0},
    {"reconnect.min", 0, UINT32_MAX, 0},
    {"reconnect.max", 0, UINT32_MAX, 0},
    {"stream.open_timeout", 0, UINT32_MAX, 0},
    {"tls.ca_file", 0, sizeof(((tc_client *)0)->ca_file) - 1, 1},
};

/* Agent names as the store has them: [a-z0-9._-], a letter or digit
 * first. */
static int agent_valid(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > TM_AGENT_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
      return 0;
  }
  return 1;
}

static int bad(const char **key, const char *k, char *why, size_t whylen,
               const char *fmt, const char *arg) {
  *key = k;
  snprintf(why, whylen, fmt, arg);
  return PH_EINVAL;
}

/* ph_module.check: every rule init relies on (TM-CFG-25: windows and
 * frames within the protocol, no byte computation that overflows). */
static int tc_check(ph_ctx *ctx, const ph_api *a, const char **key, char *why,
                    size_t whylen) {
  const char *url = a->conf_str(ctx, "server_url");
  tm_ws_url u;
  const char *uerr = "bad URL";
  /* tm_ws's own parser: what the check accepts, tm_ws_connect does. */
  if (tm_ws_url_parse(url, strlen(url), &u, &uerr) < 0)
    return bad(key, "server_url", why, whylen, "%s", uerr);
  if (strchr(u.path, '?'))
    return bad(key, "server_url", why, whylen, "%s",
               "no query in the URL (the token goes in token_file)");
  if (!u.tls && !a->conf_int(ctx, "allow_plain") &&
      !tm_ws_host_is_loopback(u.host))
    return bad(key, "server_url", why, whylen,
               "plain ws:// to %s, which is not loopback: use wss:// or set "
               "allow_plain = true",
               u.host);
  if (!agent_valid(a->conf_str(ctx, "agent")))
    return bad(key, "agent", why, whylen, "%s",
               "must be 1 to 64 of [a-z0-9._-], starting with a letter or "
               "digit");
  const char *tf = a->conf_str(ctx, "token_file");
  const char *tok = a->conf_str(ctx, "token");
  if (tf && *tf && tok && *tok)
    return bad(key, "token", why, whylen, "%s",
               "set token_file or token, not both");
  if (!(tf && *tf) && !(tok && *tok))
    return bad(key, "token_file", why, whylen, "%s",
               "required (or token): the server needs a bearer token");
  if (tok && *tok) {
    char tmp[TM_TOKEN_MAX + 1];
    int st = tm_token_take(tok, strlen(tok), tmp, sizeof(tmp));
    tm_token_wipe(tmp, sizeof(tmp));
    if (st != TM_TOKEN_OK) /* never the value: it is sensitive */
      return bad(key, "token", why, whylen, "%s",
                 "must be visible ASCII characters without spaces");
  }
  int rc = ph_conf_limits(ctx, a, tc_limits,
                          sizeof(tc_limits) / sizeof(tc_limits[0]), key, why,
                          whylen);
  if (rc != PH_OK)
    return rc;
  if (a->conf_int(ctx, "reconnect.min") > a->conf_int(ctx, "reconnect.max"))
    return bad(key, "reconnect.min", why, whylen, "%s",
               "must not exceed reconnect.max");
  return tm_conf_check(ctx, a, "stream.", tc_keys, key, why, whylen);
}

static char *dup_or_null(const char *s) {
  return s && *s ? strdup(s) : NULL;
}

static uint32_t u32(const ph_api *a, ph_ctx *ctx, const char *k) {
  return (uint32_t)a->conf_int(ctx, k);
}

static int read_cfg(tc_client *tc) {
  const ph_api *a = tc->api;
  ph_ctx *ctx = tc->ctx;
  tc_cfg *c = &tc->cfg;
  c->url = strdup(a->conf_str(ctx, "server_url"));
  c->agent = strdup(a->conf_str(ctx, "agent"));
  c->token_file = dup_or_null(a->conf_str(ctx, "token_file"));
  c->token = dup_or_null(a->conf_str(ctx, "token"));
  if (!c->url || !c->agent)
    return PH_ENOMEM;
  if (!c->token_file && !c->token)
    return PH_EINVAL;
  c->connections = u32(a, ctx, "connections");
  c->reconnect_min_ms = u32(a, ctx, "reconnect.min");
  c->reconnect_max_ms = u32(a, ctx, "reconnect.max");
  c->open_timeout_ms = u32(a, ctx, "stream.open_timeout");
  c->log_target = (int)a->conf_int(ctx, "log_target");
  tm_session_cfg *s = &c->scfg;
  tm_conf_session(ctx, a, "stream.", s);
  s->max_streams = u32(a, ctx, "stream.max_streams");
  c->caps = tm_conf_caps(ctx, a) | s->local_caps;
  return PH_OK;
}

static int tc_init(ph_ctx *ctx, const ph_api *a, void **state) {
  tc_client *tc = calloc(1, sizeof(*tc));
  if (!tc)
    return PH_ENOMEM;
  *state = tc;
  tc->api = a;
  tc->ctx = ctx;
  int rc = read_cfg(tc);
  if (rc != PH_OK)
    return rc;
  tc->metrics = tm_metrics_register(a, ctx, TM_COMPONENT_CLIENT);
  if (!tc->metrics)
    return PH_EINVAL;
  if ((rc = tc_opens_init(tc)) != PH_OK)
    return rc;
  if ((rc = tc_status_init(tc)) != PH_OK)
    return rc;
  tc->lops = tc_link_active();
  const char *ca = a->conf_str(ctx, "tls.ca_file");
  snprintf(tc->ca_file, sizeof(tc->ca_file), "%s", ca ? ca : "");
  if ((rc = ph_tls_reload_init(&tc->tls, a, ctx, "tunnel_client",
                               "tunnel client TLS CA")) != PH_OK)
    return rc;
  tc_link_cfg lc = {
      .ca_file = tc->ca_file[0] ? tc->ca_file : NULL,
      .allow_plain = (int)a->conf_int(ctx, "allow_plain"),
      .caps = tc->cfg.caps,
      .max_message = TM_HEADER_LEN + TM_MAX_PAYLOAD,
  };
  const char *err = "cannot create the WebSocket context";
  tc->lenv = tc->lops->env_new(a, ctx, &lc, &err);
  if (!tc->lenv) {
    PH_LOG(a, ctx, PH_LOG_ERROR, "tunnel client setup failed",
           PH_STR("reason", err));
    return PH_EINVAL;
  }
  return a->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                             PH_CONNECTOR_MINOR, &tc_connector, tc);
}

/* tls.ca_file re-read (SIGHUP, or the poll saw a change): the next
 * connections verify the server with it, the sessions up stay. */
static void tls_reload(void *arg, const char *trigger) {
  tc_client *tc = arg;
  const char *err = NULL;
  if (!tc->ca_file[0] || !tc->lenv || !tc->lops->reload_tls)
    return;
  int rc = tc->lops->reload_tls(tc->lenv, &err);
  ph_tls_reload_done(&tc->tls, rc, trigger, err);
}

static int tls_watch(tc_client *tc) {
  const char *files[PH_TLS_WATCH_FILES] = {tc->ca_file, NULL, NULL};
  return ph_tls_watch_key(&tc->tls, files, tls_reload, tc);
}

static int tc_start(void *state) {
  tc_client *tc = state;
  tc->api->set_ready(tc->ctx, 0); /* until a connection is up */
  tc->started = 1;
  if (tls_watch(tc) != PH_OK)
    return PH_ENOMEM;
  PH_LOG(tc->api, tc->ctx, PH_LOG_INFO, "tunnel client starting",
         PH_UINT("connections", tc->cfg.connections),
         PH_STR("agent", tc->cfg.agent),
         PH_STR("open_result",
                tc->cfg.caps & TM_CAP_OPEN_RESULT ? "on" : "off"));
  return tc_conns_start(tc);
}

static int tc_reload(void *state) {
  tc_client *tc = state;
  const ph_api *a = tc->api;
  /* The keys read again; the others are PH_CONF_RESTART. */
  char *agent = strdup(a->conf_str(tc->ctx, "agent"));
  if (!agent)
    return PH_ENOMEM;
  free(tc->cfg.agent);
  tc->cfg.agent = agent;
  tc->cfg.reconnect_min_ms = u32(a, tc->ctx, "reconnect.min");
  tc->cfg.reconnect_max_ms = u32(a, tc->ctx, "reconnect.max");
  tc->cfg.open_timeout_ms = u32(a, tc->ctx, "stream.open_timeout");
  tc->cfg.log_target = (int)a->conf_int(tc->ctx, "log_target");
  tls_reload(tc, "sighup");
  return tls_watch(tc);
}

static int tc_stop(void *state) {
  tc_client *tc = state;
  return tc_conns_stop(tc) ? PH_STOP_PENDING : PH_OK;
}

static void tc_destroy(void *state) {
  tc_client *tc = state;
  if (!tc)
    return;
  tc_opens_destroy(tc); /* first: cancels the opens on live sessions */
  ph_tls_reload_free(&tc->tls);
  tc_conns_destroy(tc);
  tm_metrics_free(tc->metrics);
  free(tc->cfg.url);
  free(tc->cfg.agent);
  free(tc->cfg.token_file);
  if (tc->cfg.token) {
    tm_token_wipe(tc->cfg.token, strlen(tc->cfg.token));
    free(tc->cfg.token);
  }
  free(tc);
}

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("tunnel_client", "1.0.0"),
    .description = "TunnelMesh client: a connector whose streams go over "
                   "WebSocket to a server and an agent",
    .provides = tc_provides,
    .config = tc_keys,
    .check = tc_check,
    .init = tc_init,
    .start = tc_start,
    .reload = tc_reload,
    .stop = tc_stop,
    .destroy = tc_destroy,
};

/* SPDX-License-Identifier: BSD-2-Clause */
/* The client's links over libwebsockets (tm_ws.h): one tm_ws context per
 * module instance, client connections only. The token goes in the
 * Authorization header, never in the URL (tm_ws copies and wipes it). */
#include <stddef.h>

#include "tunnel_common/session/tm_ws.h"
#include "tunnel_client_int.h"


static void ws_connected(void *arg, tm_ws_conn *c, const char *subproto) {
  (void)arg;
  tc_sess *ts = tm_ws_conn_user(c);
  if (ts)
    tc_link_up(ts, subproto);
}

static void ws_connect_error(void *arg, tm_ws_conn *c) {
  (void)arg;
  tc_sess *ts = tm_ws_conn_user(c);
  tm_ws_conn_set_user(c, NULL);
  if (ts)
    tc_link_failed(ts);
}

static void ws_closed(void *arg, tm_ws_conn *c) {
  (void)arg;
  tc_sess *ts = tm_ws_conn_user(c);
  tm_ws_conn_set_user(c, NULL);
  if (ts)
    tc_link_closed(ts);
}

static const tm_ws_handlers ws_handlers = {
    .on_connected = ws_connected,
    .on_connect_error = ws_connect_error,
    .on_closed = ws_closed,
};

static void *ws_env_new(const ph_api *api, ph_ctx *ctx, const tc_link_cfg *cfg,
                        const char **err) {
  tm_ws_cfg wc = {
      .listen = NULL,
      .ca_file = cfg->ca_file,
      .allow_plain = cfg->allow_plain,
      .caps = cfg->caps,
      .max_message = cfg->max_message,
  };
  return tm_ws_new(api, ctx, &wc, &ws_handlers, NULL, err);
}

static void ws_env_free(void *env) { tm_ws_free(env); }

static void *ws_connect(void *env, tc_sess *ts, const char *url,
                        const char *bearer, const char **err) {
  tm_ws_conn *c = tm_ws_connect(env, url, bearer, err);
  if (c)
    tm_ws_conn_set_user(c, ts);
  return c;
}

static void ws_bind(void *link, tm_session *s) { tm_ws_conn_bind(link, s); }

static void ws_close(void *link, int status, const char *reason) {
  tm_ws_conn_close(link, status, reason);
}

static int ws_reload_tls(void *env, const char **err) {
  return tm_ws_reload_tls(env, err);
}

static const tc_link_ops tc_link_ws = {
    .env_new = ws_env_new,
    .env_free = ws_env_free,
    .connect = ws_connect,
    .transport = tm_ws_transport,
    .bind = ws_bind,
    .close = ws_close,
    .reload_tls = ws_reload_tls,
};

const tc_link_ops *tc_link_active(void) { return &tc_link_ws; }

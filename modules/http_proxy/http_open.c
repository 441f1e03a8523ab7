/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: getting an upstream for an authorized request. A
 * forward reuses the connection kept from the previous request to the
 * same host:port, unless the configuration was reloaded since (the
 * connector's policy may deny that target now); otherwise the connector
 * opens a stream (through the session skeleton, which cancels it if the
 * client leaves), and the request goes on as a tunnel (CONNECT) or an
 * exchange (forwarding). A forwarded request's open says the request
 * can go in absolute form (open_http_forward.h): a connector may then
 * answer with a socket to an HTTP forward proxy, which the upstream
 * remembers with the Proxy-Authorization to add.
 * Returns what comes next. */
#include <string.h>
#include <strings.h>

#include "http_proxy_int.h"
#include "frontend/open_map.h"

/* The longest Proxy-Authorization value a connector may give (the
 * pool's is at most 690 bytes). */
#define HP_PROXY_AUTH_MAX 4096u

int hp_open_proceed(conn *c) {
  hp_upstream *u = &c->up;
  /* With a validation step every request is validated before its open,
   * so a kept upstream is not reused past it. A kept connection to an
   * HTTP proxy, too, serves only the target it was opened for: the
   * connector chose that proxy for that host:port. */
  if (c->method_class == MC_FORWARD && u->idle && !c->hp->fs.validation &&
      u->generation == c->hp->generation && u->port == c->target.port &&
      strcasecmp(u->host, c->target.host) == 0) {
    c->x.reused = 1;
    return HP_EXCHANGE;
  }
  hp_close_upstream(c, PH_LEASE_END_CLOSED); /* a kept one, not needed */
  return HP_OPEN;
}

int hp_open_start(conn *c) {
  hp *h = c->hp;
  c->state = S_OPEN;
  hp_arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  /* The answer comes to the dispatcher (hp_open_result); a connector that
   * answers inside the call has run it already. */
  const char *principal = c->cred.principal[0] ? c->cred.principal : NULL;
  c->fs.open_forward = c->method_class == MC_FORWARD;
  int r;
  if (!h->fs.validation) {
    r = frontend_session_open(&c->fs, c->target.host, c->target.port,
                              principal);
  } else {
    /* The validation step gets the credentials verified for this
     * request: decoded again from the kept value, wiped right after the
     * provider copied them. */
    char pair[520];
    const char *user = NULL, *pass = NULL;
    size_t ulen = 0, plen = 0;
    if (c->authed && c->cred.token &&
        hp_head_basic_decode(c->cred.token, c->cred.token_len, pair,
                             sizeof(pair), &user, &ulen, &pass, &plen) < 0) {
      explicit_bzero(pair, sizeof(pair));
      return hp_want_reply(c, 403, AFTER_CLOSE);
    }
    r = frontend_session_open_validated(&c->fs, c->target.host,
                                        c->target.port, principal, user, ulen,
                                        pass, plen);
    explicit_bzero(pair, sizeof(pair));
  }
  if (r != PH_OK)
    return hp_want_reply(c, 400, AFTER_CLOSE);
  return HP_WAIT;
}

/* What the open's result says of an HTTP proxy upstream, into c->up:
 * 0, or -1 for what no connector may answer (the flag to a CONNECT, a
 * value that could end its header line or is too long). */
static int take_http_proxy(conn *c) {
  hp_upstream *u = &c->up;
  u->http_proxy = c->fs.open_http_proxy;
  u->proxy_auth = NULL;
  u->proxy_auth_len = 0;
  if (!u->http_proxy)
    return 0;
  if (c->method_class != MC_FORWARD)
    return -1; /* it was not asked for: a tunnel must not reach a proxy */
  const char *auth = c->fs.open_proxy_auth;
  uint32_t len = c->fs.open_proxy_auth_len;
  if (auth) {
    if (len > HP_PROXY_AUTH_MAX || !hp_head_value_ok(auth, len))
      return -1;
    u->proxy_auth = auth;
    u->proxy_auth_len = len;
  }
  return 0;
}

int hp_open_result(conn *c, int code, stream_end up, ph_open_lease *lease) {
  if (code != PH_OPEN_OK)
    return hp_want_reply(c, open_map_http_status(code), AFTER_CLOSE);
  c->up.fd = up.fd;
  c->up.st = up.stream;
  c->up.lease = lease;
  c->up.told_first = 0;
  c->up_how = PH_LEASE_END_CLIENT_ERROR; /* closed before it served */
  c->up.active = 1;
  hp_api->gauge_add(c->hp->sm.active, 1);
  if (take_http_proxy(c) < 0) {
    PH_LOG(hp_api, c->hp->ctx, PH_LOG_WARN,
           "connector answered an HTTP proxy upstream it may not",
           PH_UINT("stream", c->fs.id));
    hp_close_upstream(c, PH_LEASE_END_CLIENT_ERROR);
    return hp_want_reply(c, 502, AFTER_CLOSE);
  }
  return HP_ATTACH;
}

int hp_open_attached(conn *c) {
  if (c->method_class == MC_CONNECT)
    return hp_want_reply(c, 200, AFTER_TUNNEL);
  c->x.uout.off = 0; /* the head built for this request (again on a retry) */
  return HP_EXCHANGE;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server end of a tm_ws (tm_ws.h): our RFC 6455 server (tm_wsc.h) on
 * a libwebsockets raw listener (issue 22 item 6). libwebsockets 4.1's ws
 * role accepts a client's unmasked frames and cannot report them (RFC
 * 6455 section 5.1: the server must close with 1002), and unmasks four
 * bytes a step in its own parser; so, as the client end already did, lws
 * only accepts the sockets (a raw listener:
 * LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG, alias ONLY_RAW),
 * runs the loop and keeps what the kernel did not take of a write, and we read
 * the upgrade request, answer it, and frame and parse the messages
 * (tm_ws_end.c, shared with the client end). wss is lws' own TLS on the
 * raw socket (lws 4.1 runs it on a raw server connection, unlike on a
 * raw client one): we see plaintext; the vhost's SSL_CTX is kept for
 * tm_ws_reload_tls.
 *
 * Lifecycle: a socket accepted is a conn in CS_HANDSHAKE (TLS, then the
 * request awaited, within handshake_timeout_ms); the request is checked
 * (tm_wsc_upgrade_parse: anything but an upgrade on cfg->path is 404, no
 * offer or none of ours
 * 400, a version other than 13 426), then the connection cap (503), then
 * the 101 with the first name the client offered among those cfg->caps
 * allows (none at all with legacy_no_subprotocol), then CS_OPEN and
 * on_accept with the Authorization bearer, reading paused until
 * tm_ws_conn_resume (bytes that came with the request wait with it). A
 * refused on_accept closes with 1008 and no on_closed. Only upgraded
 * connections count against max_connections; the others are bounded by
 * the handshake deadline.
 */
#include "tm_ws_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A refusal's answer (tm_wsc_refusal) fits. */
#define REFUSAL_MAX 160
/* The 101 (tm_wsc_accept) fits. */
#define ACCEPT_MAX 320

/* ---- the handshake ------------------------------------------------------ */

/* Answers status and closes (the caller returns -1 to lws, which sends
 * what it kept before it closes). */
static int refuse(tm_ws_conn *c, int status, const char *why) {
  char buf[LWS_PRE + REFUSAL_MAX];
  int n = tm_wsc_refusal(buf + LWS_PRE, REFUSAL_MAX, status);
  PH_LOG(c->w->api, c->w->ctx, PH_LOG_DEBUG, "tunnel upgrade refused",
         PH_INT("http_status", status), PH_STR("why", why ? why : ""),
         PH_STR("peer", c->peer));
  if (n > 0)
    (void)tmws_wire_send(c, (uint8_t *)buf + LWS_PRE, (size_t)n);
  return -1;
}

/* Authorization: Bearer <token>, the token's bytes (none: len 0). */
static void capture_bearer(tm_ws_conn *c, const char *v, size_t n) {
  if (n < 7 || n > TM_WS_BEARER_MAX || strncasecmp(v, "Bearer ", 7))
    return;
  size_t off = 7;
  while (off < n && v[off] == ' ')
    off++;
  if (off == n)
    return;
  c->bearer = malloc(n - off);
  if (!c->bearer)
    return;
  memcpy(c->bearer, v + off, n - off);
  c->bearer_len = n - off;
}

/* The request is whole and valid: the 101, then the role's on_accept. */
static int upgrade(tm_ws_conn *c, const tm_wsc_upgrade *up, uint8_t *rest,
                   size_t rest_len) {
  tm_ws *w = c->w;
  struct tm_ws_end *e = &c->ce;
  char buf[LWS_PRE + ACCEPT_MAX];
  const char *name = w->srv_names[up->chosen];
  c->subproto = w->cfg.legacy_no_subprotocol ? NULL : name;
  int n = tm_wsc_accept(buf + LWS_PRE, ACCEPT_MAX, up->key, c->subproto);
  if (n < 0 || tmws_wire_send(c, (uint8_t *)buf + LWS_PRE, (size_t)n) < 0)
    return -1;
  tm_wsc_rx_init(&e->dec, TM_WSC_SERVER);
  c->state = CS_OPEN;
  c->counted = 1;
  w->n_server_conns++;
  lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
  c->accept_paused = 1;
  lws_rx_flow_control(c->wsi, 0);
  /* Frames that came with the request wait for tm_ws_conn_resume. */
  if (rest_len && tmws_end_keep(c, rest, rest_len) < 0)
    return tmws_end_close_now(c);
  int rc = w->h.on_accept ? w->h.on_accept(w->arg, c, c->bearer,
                                           c->bearer_len, c->subproto, c->peer)
                          : -1;
  tmws_conn_drop_bearer(c);
  if (rc < 0) {
    /* Refused: the role forgets it now, so no on_closed later (and no
     * session, even if one was bound). */
    c->s = NULL;
    tmws_set_close(c, LWS_CLOSE_STATUS_POLICY_VIOLATION, "refused");
    (void)tmws_end_close_now(c);
    c->state = CS_HANDSHAKE;
    return -1;
  }
  if (c->close_pending)
    return tmws_end_close_now(c);
  return 0;
}

/* Plaintext from the client: its request, then frames. */
static int rx_plain(tm_ws_conn *c, uint8_t *in, size_t len) {
  tm_ws *w = c->w;
  struct tm_ws_end *e = &c->ce;
  if (c->state != CS_HANDSHAKE)
    return tmws_end_rx(c, in, len);
  size_t before;
  if (tmws_head_take(c, in, len, TM_WSC_REQ_MAX, &before) < 0)
    return -1;
  tm_wsc_upgrade up;
  const char *why = NULL;
  int n = tm_wsc_upgrade_parse(e->ans, e->ans_len, w->path, w->srv_names,
                               &up, &why);
  if (n == TM_WSC_HS_MORE)
    return 0;
  if (n < 0 || up.status)
    return refuse(c, up.status ? up.status : 400, why);
  if (w->n_server_conns >= w->cfg.max_connections || w->freeing)
    return refuse(c, 503, "max_connections reached");
  if (up.auth_len)
    capture_bearer(c, (const char *)e->ans + up.auth_off, up.auth_len);
  size_t rest = (size_t)n - before; /* the head's bytes in this read */
  int rc = upgrade(c, &up, in + rest, len - rest);
  tmws_head_drop(c); /* it holds the token */
  return rc;
}

/* Never called: a server conn has no TLS of ours (lws runs it). */
static int on_secure(tm_ws_conn *c) {
  (void)c;
  return -1;
}

/* A socket accepted on the listener. */
static int on_adopt(tm_ws *w, struct lws *wsi) {
  if (w->freeing)
    return -1;
  tm_ws_conn *c = tmws_conn_new(w, 0);
  if (!c)
    return -1;
  c->wsi = wsi;
  lws_set_opaque_user_data(wsi, c);
  lws_get_peer_simple(wsi, c->peer, sizeof(c->peer));
  c->state = CS_HANDSHAKE;
  /* Whole seconds (tm_ws.h: the deadline is at least 1 s). With wss, lws
   * accepts TLS after this and arms its own deadline for it (the vhost's
   * timeout_secs: the same), which then bounds the request too. */
  lws_set_timeout(wsi, PENDING_TIMEOUT_AWAITING_CLIENT_HS_SEND,
                  (int)((w->cfg.handshake_timeout_ms + 999) / 1000));
  return 0;
}

int tmws_srv_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                void *in, size_t len) {
  tm_ws *w = lws_vhost_user(lws_get_vhost(wsi));
  tm_ws_conn *c = lws_get_opaque_user_data(wsi);
  switch (reason) {
  case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS: {
    /* The vhost's SSL_CTX (user), as lws made it: kept so that
     * tm_ws_reload_tls can load a renewed certificate into it. */
    tm_ws *vw = in ? lws_vhost_user((struct lws_vhost *)in) : w;
    if (vw && user)
      vw->srv_tls = user;
    return 0;
  }
  case LWS_CALLBACK_OPENSSL_PERFORM_CLIENT_CERT_VERIFICATION:
    /* len is OpenSSL's preverify_ok; lws takes 0 as "accept" whatever it
     * was, so the verdict is OpenSSL's: a client certificate that does
     * not verify against the CA file fails the handshake. */
    return len ? 0 : 1;
  case LWS_CALLBACK_RAW_ADOPT:
    if (!w || c)
      return -1;
    return on_adopt(w, wsi);
  case LWS_CALLBACK_RAW_RX:
    return tmws_wire_on_rx(c, in, len, on_secure, rx_plain);
  case LWS_CALLBACK_RAW_WRITEABLE:
    if (!c)
      return -1;
    if (c->state != CS_OPEN)
      return c->close_pending ? -1 : tmws_wire_flush(c);
    return tmws_end_writable(c);
  case LWS_CALLBACK_RAW_CLOSE:
  case LWS_CALLBACK_WSI_DESTROY:
    if (c)
      tmws_finish(c);
    return 0;
  default:
    return 0;
  }
}

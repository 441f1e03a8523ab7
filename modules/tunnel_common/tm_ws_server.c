/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server end of a tm_ws (tm_ws.h): our RFC 6455 server (tm_wsc.h) on
 * a libwebsockets raw listener (issue 22 item 6). libwebsockets 4.1's ws
 * role accepts a client's unmasked frames and cannot report them (RFC
 * 6455 section 5.1: the server must close with 1002), and costs about
 * 11 ns per byte received; so, as the client end already did, lws only
 * accepts the sockets (a vhost with LWS_SERVER_OPTION_ONLY_RAW), runs the
 * loop and keeps what the kernel did not take of a write, and we read
 * the upgrade request, answer it, and frame and parse the messages
 * (tm_ws_end.c, shared with the client end). wss is OpenSSL over memory
 * BIOs with our own SSL_CTX (tm_ws_tls.c reloads it), as the client does.
 *
 * Lifecycle: a socket accepted is a conn in CS_CONNECTING (wss: the TLS
 * handshake) or CS_HANDSHAKE (the request awaited), both within
 * handshake_timeout_ms; the request is checked (tm_wsc_upgrade_parse:
 * anything but an upgrade on cfg->path is 404, no offer or none of ours
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

#include <openssl/err.h>

/* A refusal's answer (tm_wsc_refusal) fits. */
#define REFUSAL_MAX 160
/* The 101 (tm_wsc_accept) fits. */
#define ACCEPT_MAX 320

/* ---- TLS ------------------------------------------------------------------- */

/* ALPN: a client that offers http/1.1 gets it (a browser's WebSocket
 * does); one that offers nothing we speak gets no ALPN at all. */
static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
  static const unsigned char h11[] = "\x08http/1.1";
  (void)ssl;
  (void)arg;
  if (SSL_select_next_proto((unsigned char **)(uintptr_t)out, outlen, h11,
                            sizeof(h11) - 1, in,
                            inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *tmws_srv_tls_new(tm_ws *w, const char **err) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  ERR_clear_error();
  if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
    SSL_CTX_free(ctx);
    *err = "the server TLS context did not start";
    return NULL;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, w->cert_file) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, w->key_file, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    SSL_CTX_free(ctx);
    *err = "the TLS certificate or key does not load, or the key does not "
           "match the certificate";
    return NULL;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION |
                               SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  return ctx;
}

/* ---- the handshake --------------------------------------------------------- */

/* Answers status and closes (the caller returns -1 to lws, which sends
 * what it kept before it closes). */
static int refuse(tm_ws_conn *c, int status, const char *why) {
  char buf[LWS_PRE + REFUSAL_MAX];
  int n = tm_wsc_refusal(buf + LWS_PRE, REFUSAL_MAX, status);
  PH_LOG(c->w->api, c->w->ctx, PH_LOG_DEBUG, "tunnel upgrade refused",
         PH_INT("status", status), PH_STR("why", why ? why : ""),
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

static void drop_head(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (e->ans) {
    tmws_wipe(e->ans, e->ans_len); /* it holds the token */
    free(e->ans);
  }
  e->ans = NULL;
  e->ans_len = 0;
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
  if (!e->ans) {
    e->ans = malloc(TM_WSC_REQ_MAX);
    if (!e->ans)
      return -1;
  }
  size_t before = e->ans_len;
  size_t take = len < TM_WSC_REQ_MAX - before ? len : TM_WSC_REQ_MAX - before;
  memcpy(e->ans + before, in, take);
  e->ans_len += take;
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
  drop_head(c);
  return rc;
}

static int on_secure(tm_ws_conn *c) {
  c->state = CS_HANDSHAKE;
  return 0;
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
  c->state = w->srv_tls ? CS_CONNECTING : CS_HANDSHAKE;
  /* Whole seconds (tm_ws.h: the deadline is at least 1 s): TLS and the
   * request together. */
  lws_set_timeout(wsi, PENDING_TIMEOUT_AWAITING_CLIENT_HS_SEND,
                  (int)((w->cfg.handshake_timeout_ms + 999) / 1000));
  if (w->srv_tls && tmws_tls_start(c, w->srv_tls, 1) < 0) {
    lws_set_opaque_user_data(wsi, NULL);
    c->wsi = NULL;
    tmws_conn_free(c);
    return -1;
  }
  return 0;
}

int tmws_srv_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                void *in, size_t len) {
  tm_ws *w = lws_vhost_user(lws_get_vhost(wsi));
  tm_ws_conn *c = lws_get_opaque_user_data(wsi);
  (void)user;
  switch (reason) {
  case LWS_CALLBACK_RAW_ADOPT:
    if (!w || c)
      return -1;
    return on_adopt(w, wsi);
  case LWS_CALLBACK_RAW_RX:
    if (!c)
      return -1;
    return tmws_wire_rx(c, in, len, on_secure, rx_plain) < 0
               ? tmws_end_close_now(c)
               : 0;
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

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client end of a tm_ws (tm_ws.h): our RFC 6455 client (tm_wsc.h)
 * over a libwebsockets raw connection. lws connects (to an address we
 * resolved), runs TLS (our SSL_CTX: the certificate and the URL's host
 * name checked), calls us from the loop, and keeps what the kernel did
 * not take of a write; we write the upgrade request, check the 101, and
 * frame, mask and parse the messages ourselves, because lws 4.1's client
 * role costs about 11 ns per byte received and 3 ns per byte sent
 * (docs/benchmarks.md, issue 11).
 *
 * What it does once open (frames in and out, batched writes, pauses,
 * closing, TLS through memory BIOs) it shares with the server end:
 * tm_ws_end.c.
 *
 * Lifecycle: CS_CONNECTING (resolving, TCP, TLS) → CS_HANDSHAKE (request
 * written, the answer awaited within handshake_timeout_ms) → CS_OPEN
 * (on_connected). A conn that ends before CS_OPEN is on_connect_error,
 * after it on_closed (tmws_finish).
 */
#include "tm_ws_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

/* ---- writing the request ------------------------------------------------ */

static int on_writable(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (c->state == CS_CONNECTING)
    return tmws_wire_flush(c); /* the TLS handshake's */
  if (c->state == CS_HANDSHAKE) {
    if (!e->req)
      return tmws_wire_flush(c);
    int rc = tmws_wire_send(c, (uint8_t *)e->req + LWS_PRE, e->req_len);
    /* Sent (or failed): the token's only copy goes now (TLS keeps no
     * plaintext once it encrypted it). */
    tmws_wipe(e->req, LWS_PRE + e->req_len);
    free(e->req);
    e->req = NULL;
    return rc;
  }
  return tmws_end_writable(c);
}

/* The server's answer, then (in the same read, possibly) its first
 * frames. */
static int rx_answer(tm_ws_conn *c, uint8_t *in, size_t len) {
  struct tm_ws_end *e = &c->ce;
  tm_ws *w = c->w;
  tm_wsc_answer ans;
  const char *why = NULL;
  size_t before;
  if (tmws_head_take(c, in, len, TM_WSC_RESP_MAX, &before) < 0)
    return -1;
  int n = tm_wsc_response(e->ans, e->ans_len, e->key, &ans, &why);
  if (n == TM_WSC_HS_MORE)
    return 0;
  if (n < 0) {
    PH_LOG(w->api, w->ctx, PH_LOG_INFO, "tunnel handshake refused",
           PH_INT("http_status", ans.status), PH_STR("why", why));
    return -1;
  }
  const char *sub = NULL;
  if (ans.subproto[0]) {
    int caps = tm_subproto_caps(ans.subproto);
    if (caps < 0 || ((unsigned)caps & ~w->cfg.caps)) {
      /* A name we never offered: refuse (TM-PROTO-15). */
      PH_LOG(w->api, w->ctx, PH_LOG_INFO, "tunnel handshake refused",
             PH_STR("why", "the server chose a subprotocol not offered"));
      return -1;
    }
    sub = !strcmp(ans.subproto, TM_SUBPROTO_PRINCIPAL) ? TM_SUBPROTO_PRINCIPAL
          : !strcmp(ans.subproto, TM_SUBPROTO_TRACE)   ? TM_SUBPROTO_TRACE
          : !strcmp(ans.subproto, TM_SUBPROTO_FULL)    ? TM_SUBPROTO_FULL
          : !strcmp(ans.subproto, TM_SUBPROTO_OPEN)    ? TM_SUBPROTO_OPEN
                                                       : TM_SUBPROTO_BASE;
  }
  /* else: an old server (legacy, TM-PROTO-16). */
  tmws_head_drop(c);
  c->subproto = sub;
  c->state = CS_OPEN;
  lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
  lws_get_peer_simple(c->wsi, c->peer, sizeof(c->peer));
  if (w->h.on_connected)
    w->h.on_connected(w->arg, c, c->subproto);
  if (c->close_pending)
    return -1;
  size_t rest = (size_t)n - before; /* the head's bytes in this read */
  if (rest < len && tmws_end_rx(c, in + rest, len - rest) < 0)
    return -1;
  return 0;
}

/* ---- the connection's callbacks ------------------------------------------- */

/* The connection is ready for the WebSocket (after TLS when wss): the
 * request is written next. */
static int start_ws(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  uint8_t rnd[16];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1)
    return -1;
  tm_wsc_key(rnd, e->key);
  size_t cap = 1024 + c->bearer_len;
  e->req = malloc(LWS_PRE + cap);
  if (!e->req)
    return -1;
  int n = tm_wsc_request(e->req + LWS_PRE, cap, c->url.path, c->hosthdr,
                         c->offer, c->bearer, c->bearer_len, e->key);
  /* The request holds the token now; no other copy stays. */
  tmws_conn_drop_bearer(c);
  if (n < 0)
    return -1;
  e->req_len = (size_t)n;
  tm_wsc_rx_init(&e->dec, TM_WSC_CLIENT);
  c->state = CS_HANDSHAKE;
  lws_callback_on_writable(c->wsi);
  return 0;
}

/* TCP is up: TLS first when wss. The deadline covers TLS and the
 * WebSocket handshake. */
static int on_connected(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  tm_ws *w = c->w;
  struct in_addr a4;
  if (c->state != CS_CONNECTING || e->ssl)
    return 0;
  /* Whole seconds (tm_ws.h: the deadline is at least 1 s). */
  lws_set_timeout(c->wsi, PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE,
                  (int)((w->cfg.handshake_timeout_ms + 999) / 1000));
  if (!c->url.tls)
    return start_ws(c);
  /* lws 4.1 cannot run TLS on a raw client connection (it sets TLS up
   * before the socket exists): ours, through memory BIOs. */
  if (tmws_tls_start(c, w->client_tls, 0) < 0)
    return -1;
  /* The certificate must name the URL's host (an IPv4 literal: as an IP
   * address); SNI for names only (RFC 6066). */
  if (inet_pton(AF_INET, c->url.host, &a4) == 1) {
    if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(e->ssl), c->url.host))
      return -1;
  } else if (!SSL_set1_host(e->ssl, c->url.host) ||
             !SSL_set_tlsext_host_name(e->ssl, c->url.host)) {
    return -1;
  }
  ERR_clear_error();
  int r = SSL_do_handshake(e->ssl);
  if (r != 1 && SSL_get_error(e->ssl, r) != SSL_ERROR_WANT_READ)
    return -1;
  lws_callback_on_writable(c->wsi); /* the ClientHello */
  return 0;
}

/* Plaintext from the server: its answer, then frames. */
static int rx_plain(tm_ws_conn *c, uint8_t *in, size_t len) {
  if (c->state == CS_HANDSHAKE) {
    if (c->ce.req)
      return -1; /* an answer before the request */
    return rx_answer(c, in, len);
  }
  return tmws_end_rx(c, in, len);
}

int tmws_cli_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                void *in, size_t len) {
  tm_ws_conn *c = lws_get_opaque_user_data(wsi);
  (void)user;
  switch (reason) {
  case LWS_CALLBACK_RAW_CONNECTED:
  case LWS_CALLBACK_RAW_ADOPT:
    if (!c)
      return -1;
    c->wsi = wsi;
    return on_connected(c);
  case LWS_CALLBACK_RAW_WRITEABLE:
    if (!c)
      return -1;
    return on_writable(c);
  case LWS_CALLBACK_RAW_RX:
    return tmws_wire_on_rx(c, in, len, start_ws, rx_plain);
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    if (!c)
      return 0;
    if (c->in_connect) {
      /* Inside tm_ws_connect: reported from the loop instead. */
      lws_set_opaque_user_data(wsi, NULL);
      c->wsi = NULL;
      c->deferred_error = 1;
      c->w->api->timer_set(c->w->deferred, 1, 0);
      return 0;
    }
    tmws_finish(c);
    return 0;
  case LWS_CALLBACK_RAW_CLOSE:
  case LWS_CALLBACK_CLIENT_CLOSED:
  case LWS_CALLBACK_WSI_DESTROY:
    if (c)
      tmws_finish(c);
    return 0;
  default:
    return 0;
  }
}

/* ---- connecting ------------------------------------------------------------ */

/* Host names are resolved on a host helper thread (lws 4.1 as Debian
 * builds it has no asynchronous DNS: it would call getaddrinfo on the
 * loop); lws then connects to the address and still checks the name (SNI,
 * the certificate's name), and Host carries it. */

static void resolve_work(void *arg) {
  struct tm_ws_resolve *r = arg;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  if (getaddrinfo(r->host, NULL, &hints, &res) == 0 && res) {
    const void *a =
        res->ai_family == AF_INET6
            ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
            : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    r->ok = inet_ntop(res->ai_family, a, r->addr, sizeof(r->addr)) != NULL;
  }
  if (res)
    freeaddrinfo(res);
}

static int start_connect(tm_ws_conn *c, const char *address);

static void resolve_done(void *arg, int status) {
  struct tm_ws_resolve *r = arg;
  tm_ws_conn *c = r->c;
  if (c) {
    c->resolve = NULL;
    c->job = 0;
    if (status != PH_OK || !r->ok || start_connect(c, r->addr) < 0)
      tmws_finish(c); /* on_connect_error, from the loop */
  }
  free(r);
}

static void defer_error(tm_ws_conn *c) {
  c->wsi = NULL;
  c->deferred_error = 1;
  c->w->api->timer_set(c->w->deferred, 1, 0);
}

/* Hands the conn to lws, connecting to address (an IP literal). A
 * failure inside lws_client_connect_via_info (with or without its
 * CONNECTION_ERROR callback) is reported from the loop. */
static int start_connect(tm_ws_conn *c, const char *address) {
  struct lws_client_connect_info ci;
  tm_ws *w = c->w;
  memset(&ci, 0, sizeof(ci));
  ci.context = w->lws;
  ci.vhost = w->vh_client;
  ci.address = address;
  ci.port = c->url.port;
  /* Raw: lws connects (and runs TLS); the WebSocket is ours. */
  ci.method = "RAW";
  /* The name the certificate is checked against and SNI: the URL's host
   * (our request's Host header is c->hosthdr). */
  ci.host = c->url.host;
  ci.local_protocol_name = "tm-client";
  ci.ssl_connection = 0; /* wss: TLS is ours (see "the wire") */
  ci.opaque_user_data = c;
  ci.pwsi = &c->wsi;
  c->in_connect = 1;
  struct lws *wsi = lws_client_connect_via_info(&ci);
  c->in_connect = 0;
  if (!wsi && !c->deferred_error)
    defer_error(c);
  return 0;
}

tm_ws_conn *tm_ws_connect(tm_ws *w, const char *url, const char *bearer,
                          const char **err) {
  tm_ws_conn *c;
  tm_ws_url u;
  size_t bl = bearer ? strlen(bearer) : 0;
  struct in_addr a4;
  struct in6_addr a6;

  if (!w || !url || w->freeing) {
    *err = w && w->freeing ? "the context is closing" : "bad arguments";
    return NULL;
  }
  if (tm_ws_url_parse(url, strlen(url), &u, err) < 0)
    return NULL;
  if (!u.tls && !w->cfg.allow_plain && !tm_ws_host_is_loopback(u.host)) {
    *err = "plain ws to a host off loopback is refused (use wss, or "
           "allow_plain)";
    return NULL;
  }
  if (u.tls && u.ipv6) {
    /* lws 4.1 cuts the name it checks at the first ':'. */
    *err = "wss to an IPv6 literal is not supported (use a name)";
    return NULL;
  }
  if (bl > TM_WS_BEARER_MAX) {
    *err = "the bearer token is too long";
    return NULL;
  }
  for (size_t i = 0; i < bl; i++)
    if ((unsigned char)bearer[i] <= 0x20 || (unsigned char)bearer[i] >= 0x7f) {
      *err = "the bearer token has a space or a control byte";
      return NULL;
    }
  c = tmws_conn_new(w, 1);
  if (!c) {
    *err = "no memory";
    return NULL;
  }
  c->url = u;
  if (bl) {
    c->bearer = malloc(bl);
    if (!c->bearer) {
      tmws_conn_free(c);
      *err = "no memory";
      return NULL;
    }
    memcpy(c->bearer, bearer, bl);
    c->bearer_len = bl;
  }
  if (tm_subproto_offer(w->cfg.caps, c->offer, sizeof(c->offer)) < 0) {
    tmws_conn_free(c);
    *err = "the subprotocol offer does not fit";
    return NULL;
  }
  if (u.ipv6)
    snprintf(c->hosthdr, sizeof(c->hosthdr), "[%s]:%u", u.host,
             (unsigned)u.port);
  else
    snprintf(c->hosthdr, sizeof(c->hosthdr), "%s:%u", u.host, (unsigned)u.port);
  *err = NULL;
  if (u.ipv6 || inet_pton(AF_INET, u.host, &a4) == 1 ||
      inet_pton(AF_INET6, u.host, &a6) == 1) {
    start_connect(c, c->url.host);
    return c;
  }
  struct tm_ws_resolve *r = calloc(1, sizeof(*r));
  if (!r) {
    tmws_conn_free(c);
    *err = "no memory";
    return NULL;
  }
  r->c = c;
  memcpy(r->host, u.host, strlen(u.host) + 1);
  int64_t job = w->api->submit(w->ctx, resolve_work, resolve_done, r);
  if (job <= 0) {
    free(r);
    defer_error(c); /* the job queue is full: a connect error */
    return c;
  }
  c->resolve = r;
  c->job = job;
  return c;
}

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
 * Writes are batched: the transport's writable event runs the session's
 * writer again and again while the batch has room for one more message
 * (TM_WS_BATCH_BYTES), then the batch goes out in one lws_write. Order
 * is the writer's (control first, then its deficit round-robin), so the
 * batch changes only how many frames share a system call.
 *
 * Reads: every byte lws hands over is used at once; when the session
 * pauses reading mid-buffer the rest is kept (at most TM_WS_PENDING_MAX)
 * and handed over from the loop once it resumes.
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

/* The close frame's reason is short and fixed (tm_ws_conn_close). */
#define CLOSE_FRAME_MAX (TM_WSC_HDR_MAX + 2 + 32)

/* ---- masking keys -------------------------------------------------------- */

/* RFC 6455 section 5.3: a fresh, unpredictable key per frame. */
static int next_mask(tm_ws_conn *c, uint8_t mask[4]) {
  struct tm_ws_client_end *e = &c->ce;
  if (e->mask_at == 0 || e->mask_at + 4 > sizeof(e->masks)) {
    if (RAND_bytes(e->masks, sizeof(e->masks)) != 1)
      return -1;
    e->mask_at = 0;
  }
  memcpy(mask, e->masks + e->mask_at, 4);
  e->mask_at += 4;
  return 0;
}

/* ---- the wire: plain, or TLS through memory BIOs --------------------------- */

/* lws 4.1 cannot run TLS on a raw client connection (it sets TLS up before
 * the socket exists), so wss is OpenSSL here, over memory BIOs: what lws
 * reads goes into rbio, what TLS writes comes out of wbio into lws_write. */

/* What TLS has to send, sent (lws keeps what the kernel did not take). */
static int wire_flush(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  char *p;
  long n;
  if (!e->ssl)
    return 0;
  n = BIO_get_mem_data(e->wbio, &p);
  if (n <= 0)
    return 0;
  int rc = lws_write(c->wsi, (uint8_t *)p, (size_t)n, LWS_WRITE_RAW);
  (void)BIO_reset(e->wbio);
  return rc < n ? -1 : 0;
}

/* Sends n plaintext bytes (p has LWS_PRE bytes before it when plain). */
static int wire_send(tm_ws_conn *c, uint8_t *p, size_t n) {
  struct tm_ws_client_end *e = &c->ce;
  if (!n)
    return 0;
  if (n > INT32_MAX)
    return -1;
  if (!e->ssl)
    return lws_write(c->wsi, p, n, LWS_WRITE_RAW) < (int)n ? -1 : 0;
  /* A memory BIO takes everything: one SSL_write is whole. */
  if (SSL_write(e->ssl, p, (int)n) != (int)n)
    return -1;
  return wire_flush(c);
}

static void tls_log_failure(tm_ws_conn *c) {
  long vr = SSL_get_verify_result(c->ce.ssl);
  PH_LOG(c->w->api, c->w->ctx, PH_LOG_WARN, "tunnel TLS handshake failed",
         PH_STR("why", vr != X509_V_OK ? X509_verify_cert_error_string(vr)
                                       : "the TLS handshake did not complete"));
}

/* ---- writing ------------------------------------------------------------- */

static int out_room(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  if (!e->out) {
    e->out_cap = TM_WS_BATCH_BYTES + c->w->cfg.max_message + TM_WSC_HDR_MAX +
                 TM_WSC_HDR_MAX + TM_WSC_CONTROL_MAX;
    e->out = malloc(LWS_PRE + e->out_cap);
    if (!e->out)
      return -1;
  }
  return 0;
}

/* One frame into the batch (room was checked). */
static int out_frame(tm_ws_conn *c, unsigned op, const uint8_t *p, size_t n) {
  struct tm_ws_client_end *e = &c->ce;
  uint8_t mask[4];
  if (next_mask(c, mask) < 0 ||
      e->out_len + TM_WSC_HDR_MAX + n > e->out_cap)
    return -1;
  uint8_t *at = e->out + LWS_PRE + e->out_len;
  size_t h = tm_wsc_frame_header(at, op, n, mask);
  tm_wsc_mask(at + h, p, n, mask, 0);
  e->out_len += h + n;
  return 0;
}

static int flush_out(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  if (!e->out_len)
    return 0;
  size_t n = e->out_len;
  e->out_len = 0;
  /* lws keeps what the kernel did not take and reports the whole length. */
  return wire_send(c, e->out + LWS_PRE, n);
}

/* Inside a callback of c's wsi: the close frame (ours, or the echo of the
 * server's), then -1 so that lws closes the socket. */
static int close_now(tm_ws_conn *c) {
  uint8_t buf[LWS_PRE + CLOSE_FRAME_MAX], pay[2 + 32], mask[4];
  struct tm_ws_client_end *e = &c->ce;
  if (c->state != CS_OPEN)
    return -1;
  unsigned code = e->close_code ? e->close_code : (unsigned)c->close_status;
  size_t rl = e->close_code ? 0 : strlen(c->close_reason);
  if (rl > 32)
    rl = 32;
  pay[0] = (uint8_t)(code >> 8);
  pay[1] = (uint8_t)code;
  memcpy(pay + 2, c->close_reason, rl);
  if (flush_out(c) == 0 && next_mask(c, mask) == 0) {
    size_t h = tm_wsc_frame_header(buf + LWS_PRE, TM_WSC_OP_CLOSE, 2 + rl, mask);
    tm_wsc_mask(buf + LWS_PRE + h, pay, 2 + rl, mask, 0);
    (void)wire_send(c, buf + LWS_PRE, h + 2 + rl);
  }
  return -1;
}

void tmws_cli_want_write(tm_ws_conn *c) {
  c->want_write = 1;
  if (!c->in_writable && c->wsi && c->state == CS_OPEN)
    lws_callback_on_writable(c->wsi);
}

int tmws_cli_write(tm_ws_conn *c, const uint8_t *buf, size_t len) {
  /* The session writes only from its writable event, which runs only
   * inside ours. */
  if (!c->in_writable)
    return -1;
  return out_frame(c, TM_WSC_OP_BINARY, buf, len);
}

static int on_writable(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  if (c->state == CS_CONNECTING)
    return wire_flush(c); /* the TLS handshake's */
  if (c->state == CS_HANDSHAKE) {
    if (!e->req)
      return wire_flush(c);
    int rc = wire_send(c, (uint8_t *)e->req + LWS_PRE, e->req_len);
    /* Sent (or failed): the token's only copy goes now (TLS keeps no
     * plaintext once it encrypted it). */
    tmws_wipe(e->req, LWS_PRE + e->req_len);
    free(e->req);
    e->req = NULL;
    return rc;
  }
  if (c->state != CS_OPEN || c->close_pending)
    return close_now(c);
  if (out_room(c) < 0) {
    tmws_set_close(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "no memory");
    return close_now(c);
  }
  if (e->pong_due) {
    e->pong_due = 0;
    if (out_frame(c, TM_WSC_OP_PONG, e->pong, e->pong_len) < 0)
      return -1;
  }
  c->in_writable = 1;
  while (c->want_write && c->s && !c->close_pending &&
         e->out_len <= TM_WS_BATCH_BYTES) {
    c->want_write = 0;
    tm_session_on_writable(c->s);
  }
  c->in_writable = 0;
  if (flush_out(c) < 0 || wire_flush(c) < 0)
    return -1;
  if (c->close_pending)
    return close_now(c);
  if (c->want_write && c->s)
    lws_callback_on_writable(c->wsi);
  return 0;
}

/* ---- reading ------------------------------------------------------------- */

static int keep_pending(tm_ws_conn *c, const uint8_t *in, size_t len) {
  return tmws_append(c, &c->ce.pend, in, len, TM_WS_PENDING_MAX,
                     LWS_CLOSE_STATUS_POLICY_VIOLATION, "too much unread");
}

/* The server's frames. 0, or -1 with the close set (close now). */
static int rx_frames(tm_ws_conn *c, const uint8_t *in, size_t len) {
  struct tm_ws_client_end *e = &c->ce;
  while (len) {
    if (c->user_paused)
      return keep_pending(c, in, len);
    tm_wsc_ev ev;
    size_t used;
    enum tm_wsc_event k = tm_wsc_rx_next(&e->dec, in, len, &used, &ev);
    in += used;
    len -= used;
    switch (k) {
    case TM_WSC_EV_NEED:
      return 0;
    case TM_WSC_EV_ERROR:
      tmws_set_close(c, LWS_CLOSE_STATUS_PROTOCOL_ERR, "protocol error");
      return -1;
    case TM_WSC_EV_CONTROL:
      if (ev.opcode == TM_WSC_OP_PING) {
        memcpy(e->pong, ev.data, ev.len);
        e->pong_len = ev.len;
        e->pong_due = 1;
        lws_callback_on_writable(c->wsi);
      } else if (ev.opcode == TM_WSC_OP_CLOSE) {
        /* Echo the server's code (RFC 6455 section 5.5.1), then close. */
        e->close_code = ev.len >= 2
                            ? (uint16_t)((ev.data[0] << 8) | ev.data[1])
                            : LWS_CLOSE_STATUS_NORMAL;
        /* The code says why (4401: the token was refused), in words
         * too; the reason text is the peer's and is not logged. */
        PH_LOG(c->w->api, c->w->ctx,
               e->close_code >= 4000 ? PH_LOG_WARN : PH_LOG_INFO,
               "tunnel connection closed by the server",
               PH_UINT("close_code", e->close_code),
               PH_STR("close", tm_ws_close_name(e->close_code)));
        tmws_set_close(c, e->close_code, "");
        return -1;
      }
      continue; /* a pong: nothing to do */
    case TM_WSC_EV_DATA:
      break;
    }
    if (ev.opcode == TM_WSC_OP_TEXT) {
      /* The protocol is binary frames only (TM-PROTO-2). */
      tmws_set_close(c, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, "binary only");
      return -1;
    }
    if (ev.first)
      c->rx.len = 0;
    if (ev.first && ev.last) {
      /* The whole message in this read: handed over in place. */
      if (ev.len > c->w->cfg.max_message) {
        tmws_set_close(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
                       "message too large");
        return -1;
      }
      tmws_deliver(c, ev.data, ev.len);
    } else {
      size_t left = ev.frame_left < c->w->cfg.max_message
                        ? (size_t)ev.frame_left
                        : c->w->cfg.max_message;
      if (tmws_rx_append(c, ev.data, ev.len, left) < 0)
        return -1;
      if (ev.last)
        tmws_deliver(c, c->rx.p, c->rx.len);
    }
    if (c->close_pending)
      return -1;
  }
  return 0;
}

void tmws_cli_resumed(tm_ws_conn *c) {
  if (c->ce.pend.len)
    c->w->api->timer_set(c->w->deferred, 1, 0);
}

void tmws_cli_deferred(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  if (!e->pend.len || c->user_paused || c->state != CS_OPEN || !c->wsi ||
      c->close_pending)
    return;
  uint8_t *p = e->pend.p;
  size_t n = e->pend.len;
  memset(&e->pend, 0, sizeof(e->pend));
  int rc = rx_frames(c, p, n);
  free(p);
  if (rc < 0 && c->wsi) {
    /* Outside lws' callbacks: the close goes out from the writable one. */
    lws_callback_on_writable(c->wsi);
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, TM_WS_CLOSE_GRACE_S);
  }
}

/* The server's answer, then (in the same read, possibly) its first
 * frames. */
static int rx_answer(tm_ws_conn *c, const uint8_t *in, size_t len) {
  struct tm_ws_client_end *e = &c->ce;
  tm_ws *w = c->w;
  tm_wsc_answer ans;
  const char *why = NULL;
  if (!e->ans) {
    e->ans = malloc(TM_WSC_RESP_MAX);
    if (!e->ans)
      return -1;
  }
  size_t before = e->ans_len;
  size_t take = len < TM_WSC_RESP_MAX - before ? len : TM_WSC_RESP_MAX - before;
  memcpy(e->ans + before, in, take);
  e->ans_len += take;
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
    sub = !strcmp(ans.subproto, TM_SUBPROTO_FULL)   ? TM_SUBPROTO_FULL
          : !strcmp(ans.subproto, TM_SUBPROTO_OPEN) ? TM_SUBPROTO_OPEN
                                                    : TM_SUBPROTO_BASE;
  }
  /* else: an old server (legacy, TM-PROTO-16). */
  free(e->ans);
  e->ans = NULL;
  e->ans_len = 0;
  c->subproto = sub;
  c->state = CS_OPEN;
  lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
  lws_get_peer_simple(c->wsi, c->peer, sizeof(c->peer));
  if (w->h.on_connected)
    w->h.on_connected(w->arg, c, c->subproto);
  if (c->close_pending)
    return -1;
  size_t rest = (size_t)n - before; /* the head's bytes in this read */
  if (rest < len && rx_frames(c, in + rest, len - rest) < 0)
    return -1;
  return 0;
}

/* ---- the connection's callbacks ------------------------------------------- */

/* The connection is ready for the WebSocket (after TLS when wss): the
 * request is written next. */
static int start_ws(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
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
  tm_wsc_rx_init(&e->dec);
  c->state = CS_HANDSHAKE;
  lws_callback_on_writable(c->wsi);
  return 0;
}

/* TCP is up: TLS first when wss. The deadline covers TLS and the
 * WebSocket handshake. */
static int on_connected(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  tm_ws *w = c->w;
  struct in_addr a4;
  if (c->state != CS_CONNECTING || e->ssl)
    return 0;
  /* Whole seconds (tm_ws.h: the deadline is at least 1 s). */
  lws_set_timeout(c->wsi, PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE,
                  (int)((w->cfg.handshake_timeout_ms + 999) / 1000));
  if (!c->url.tls)
    return start_ws(c);
  e->ssl = SSL_new(w->client_tls);
  e->rbio = BIO_new(BIO_s_mem());
  e->wbio = BIO_new(BIO_s_mem());
  if (!e->ssl || !e->rbio || !e->wbio) {
    BIO_free(e->rbio);
    BIO_free(e->wbio);
    e->rbio = e->wbio = NULL;
    return -1;
  }
  SSL_set_bio(e->ssl, e->rbio, e->wbio); /* the SSL owns both now */
  SSL_set_connect_state(e->ssl);
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
static int rx_plain(tm_ws_conn *c, const uint8_t *in, size_t len) {
  if (c->state == CS_HANDSHAKE) {
    if (c->ce.req)
      return -1; /* an answer before the request */
    return rx_answer(c, in, len);
  }
  if (c->state != CS_OPEN || c->close_pending)
    return 0;
  if (c->ce.pend.len) {
    /* Older bytes, kept while reading was paused, wait for the deferred
     * pass (reading resumed before it ran): these go behind them, or the
     * session would see frames out of order (issue 22 item 7). */
    if (keep_pending(c, in, len) < 0)
      return -1;
    tmws_cli_resumed(c);
    return 0;
  }
  return rx_frames(c, in, len);
}

/* What lws read: plaintext, or TLS records to decrypt. */
static int rx_wire(tm_ws_conn *c, const uint8_t *in, size_t len) {
  struct tm_ws_client_end *e = &c->ce;
  if (!e->ssl)
    return rx_plain(c, in, len);
  if (len > INT32_MAX || BIO_write(e->rbio, in, (int)len) != (int)len)
    return -1;
  if (c->state == CS_CONNECTING) {
    ERR_clear_error();
    int r = SSL_do_handshake(e->ssl);
    if (r != 1) {
      if (SSL_get_error(e->ssl, r) != SSL_ERROR_WANT_READ) {
        tls_log_failure(c);
        return -1;
      }
      if (BIO_ctrl_pending(e->wbio))
        lws_callback_on_writable(c->wsi);
      return 0;
    }
    if (start_ws(c) < 0)
      return -1;
  }
  if (!e->plain) {
    e->plain = malloc(TM_WS_READ_CHUNK);
    if (!e->plain)
      return -1;
  }
  for (;;) {
    ERR_clear_error();
    int n = SSL_read(e->ssl, e->plain, TM_WS_READ_CHUNK);
    if (n <= 0) {
      int err = SSL_get_error(e->ssl, n);
      if (err == SSL_ERROR_WANT_READ)
        break;
      return -1; /* a TLS error, or the server's close_notify */
    }
    if (rx_plain(c, e->plain, (size_t)n) < 0)
      return -1;
    if (!c->wsi || c->close_pending)
      break;
  }
  if (BIO_ctrl_pending(e->wbio))
    lws_callback_on_writable(c->wsi);
  return 0;
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
    if (!c)
      return -1;
    return rx_wire(c, in, len) < 0 ? close_now(c) : 0;
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

void tmws_cli_goodbye(tm_ws_conn *c) {
  tmws_set_close(c, LWS_CLOSE_STATUS_GOINGAWAY, "shutdown");
  (void)close_now(c);
}

void tmws_cli_free(tm_ws_conn *c) {
  struct tm_ws_client_end *e = &c->ce;
  if (e->req) {
    tmws_wipe(e->req, LWS_PRE + e->req_len);
    free(e->req);
  }
  free(e->ans);
  free(e->out);
  free(e->pend.p);
  free(e->plain);
  if (e->ssl)
    SSL_free(e->ssl); /* and its BIOs */
  memset(e, 0, sizeof(*e));
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

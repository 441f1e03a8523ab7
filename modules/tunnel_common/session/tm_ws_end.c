/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What both ends of a tm_ws connection do once their socket is up (moved
 * here from tm_ws_client.c when the server end left lws' ws role, issue
 * 22 item 6): RFC 6455 (tm_wsc.h) over a libwebsockets raw connection.
 * lws moves the bytes, calls us from the loop and keeps what the kernel
 * did not take of a write. The client's TLS is OpenSSL over memory BIOs
 * here (lws 4.1 sets TLS up on a raw client connection before the socket
 * exists); the server's is lws' own (it runs on a raw server socket), so
 * a server end sees plaintext.
 *
 * Writes are batched: the transport's writable event runs the session's
 * writer again and again while the batch has room for one more message
 * (TM_WS_BATCH_BYTES), then the batch goes out in one lws_write. Order
 * is the writer's (control first, then its deficit round-robin), so the
 * batch changes only how many frames share a system call. A client
 * masks each frame with a fresh key; a server's frames are unmasked.
 *
 * Reads: every byte lws hands over is used at once; while reading is
 * paused (the session's pause, or a server's until tm_ws_conn_resume)
 * the rest is kept (at most TM_WS_PENDING_MAX) and handed over from the
 * loop once it resumes. The decoder has the end's role: a server closes
 * with 1002 on an unmasked frame, a client on a masked one.
 */
#include "tm_ws_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

/* The close frame's reason is short and fixed (tm_ws_conn_close). */
/* A memory BIO that held more than this is replaced once empty. */
#define TM_WS_BIO_KEEP 16384
#define CLOSE_FRAME_MAX (TM_WSC_HDR_MAX + 2 + 32)

/* ---- masking keys (client) ----------------------------------------------- */

/* RFC 6455 section 5.3: a fresh, unpredictable key per frame. */
static int next_mask(tm_ws_conn *c, uint8_t mask[4]) {
  struct tm_ws_end *e = &c->ce;
  if (e->mask_at == 0 || e->mask_at + 4 > sizeof(e->masks)) {
    if (RAND_bytes(e->masks, sizeof(e->masks)) != 1)
      return -1;
    e->mask_at = 0;
  }
  memcpy(mask, e->masks + e->mask_at, 4);
  e->mask_at += 4;
  return 0;
}

/* One frame's header into out: masked (its key in mask) for a client. */
static int frame_header(tm_ws_conn *c, uint8_t *out, unsigned op, size_t n,
                        uint8_t mask[4], size_t *hlen) {
  if (c->client && next_mask(c, mask) < 0)
    return -1;
  *hlen = tm_wsc_frame_header(out, op, n, c->client ? mask : NULL);
  return 0;
}

/* ---- the wire: plain, or TLS through memory BIOs ------------------------ */

/* What lws reads goes into rbio, what TLS writes comes out of wbio into
 * lws_write. */

/* A memory BIO keeps the largest buffer it ever held: once a large read
 * or write passed and it is empty again, a fresh one replaces it (one
 * allocation per large transfer; idle connections stay small). */
static void fresh_bio(tm_ws_conn *c, int wbio) {
  struct tm_ws_end *e = &c->ce;
  BIO *b = BIO_new(BIO_s_mem());
  if (!b)
    return; /* the old one stays */
  if (wbio) {
    SSL_set0_wbio(e->ssl, b); /* frees the old one */
    e->wbio = b;
  } else {
    SSL_set0_rbio(e->ssl, b);
    e->rbio = b;
  }
}

int tmws_wire_flush(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  char *p;
  long n;
  if (!e->ssl || !c->wsi)
    return 0;
  n = BIO_get_mem_data(e->wbio, &p);
  if (n <= 0)
    return 0;
  /* lws keeps what the kernel did not take and reports the whole length. */
  int rc = lws_write(c->wsi, (uint8_t *)p, (size_t)n, LWS_WRITE_RAW);
  (void)BIO_reset(e->wbio);
  if (n > TM_WS_BIO_KEEP)
    fresh_bio(c, 1);
  return rc < n ? -1 : 0;
}

int tmws_wire_send(tm_ws_conn *c, uint8_t *p, size_t n) {
  struct tm_ws_end *e = &c->ce;
  if (!n)
    return 0;
  if (n > INT32_MAX || !c->wsi)
    return -1;
  if (!e->ssl)
    return lws_write(c->wsi, p, n, LWS_WRITE_RAW) < (int)n ? -1 : 0;
  /* A memory BIO takes everything: one SSL_write is whole. */
  if (SSL_write(e->ssl, p, (int)n) != (int)n)
    return -1;
  return tmws_wire_flush(c);
}

int tmws_tls_start(tm_ws_conn *c, SSL_CTX *ctx, int server) {
  struct tm_ws_end *e = &c->ce;
  e->ssl = SSL_new(ctx);
  e->rbio = BIO_new(BIO_s_mem());
  e->wbio = BIO_new(BIO_s_mem());
  if (!e->ssl || !e->rbio || !e->wbio) {
    BIO_free(e->rbio);
    BIO_free(e->wbio);
    e->rbio = e->wbio = NULL;
    return -1;
  }
  SSL_set_bio(e->ssl, e->rbio, e->wbio); /* the SSL owns both now */
  if (server)
    SSL_set_accept_state(e->ssl);
  else
    SSL_set_connect_state(e->ssl);
  return 0;
}

static void tls_log_failure(tm_ws_conn *c) {
  long vr = SSL_get_verify_result(c->ce.ssl);
  PH_LOG(c->w->api, c->w->ctx, PH_LOG_WARN, "tunnel TLS handshake failed",
         PH_STR("why", vr != X509_V_OK ? X509_verify_cert_error_string(vr)
                                       : "the TLS handshake did not complete"));
}

int tmws_wire_rx(tm_ws_conn *c, uint8_t *in, size_t len,
                 int (*on_secure)(tm_ws_conn *c),
                 int (*plain)(tm_ws_conn *c, uint8_t *in, size_t len)) {
  struct tm_ws_end *e = &c->ce;
  if (!e->ssl)
    return plain(c, in, len);
  if (len > INT32_MAX || BIO_write(e->rbio, in, (int)len) != (int)len)
    return -1;
  if (c->state == CS_CONNECTING) {
    ERR_clear_error();
    int r = SSL_do_handshake(e->ssl);
    if (r != 1) {
      if (SSL_get_error(e->ssl, r) != SSL_ERROR_WANT_READ) {
        tls_log_failure(c);
        (void)tmws_wire_flush(c); /* the alert, if any */
        return -1;
      }
      if (BIO_ctrl_pending(e->wbio))
        lws_callback_on_writable(c->wsi);
      return 0;
    }
    if (on_secure(c) < 0)
      return -1;
  }
  tm_ws *w = c->w;
  if (!w->plain) {
    w->plain = malloc(TM_WS_READ_CHUNK);
    if (!w->plain)
      return -1;
  }
  for (;;) {
    ERR_clear_error();
    int n = SSL_read(e->ssl, w->plain, TM_WS_READ_CHUNK);
    if (n <= 0) {
      int err = SSL_get_error(e->ssl, n);
      if (err == SSL_ERROR_WANT_READ)
        break;
      return -1; /* a TLS error, or the peer's close_notify */
    }
    if (plain(c, w->plain, (size_t)n) < 0)
      return -1;
    if (!c->wsi || c->close_pending)
      break;
  }
  if (BIO_ctrl_pending(e->wbio))
    lws_callback_on_writable(c->wsi);
  if (len > TM_WS_BIO_KEEP && c->wsi && BIO_ctrl_pending(e->rbio) == 0)
    fresh_bio(c, 0);
  return 0;
}

int tmws_wire_on_rx(tm_ws_conn *c, void *in, size_t len,
                    int (*on_secure)(tm_ws_conn *c),
                    int (*plain)(tm_ws_conn *c, uint8_t *in, size_t len)) {
  if (!c)
    return -1;
  return tmws_wire_rx(c, in, len, on_secure, plain) < 0 ? tmws_end_close_now(c)
                                                        : 0;
}

/* ---- writing ------------------------------------------------------------- */

static int out_room(tm_ws_conn *c) {
  tm_ws *w = c->w;
  if (!w->out) {
    w->out_cap = TM_WS_BATCH_BYTES + w->cfg.max_message + TM_WSC_HDR_MAX +
                 TM_WSC_HDR_MAX + TM_WSC_CONTROL_MAX;
    w->out = malloc(LWS_PRE + w->out_cap);
    if (!w->out)
      return -1;
  }
  return 0;
}

/* One frame into the batch (room was checked). */
static int out_frame(tm_ws_conn *c, unsigned op, const uint8_t *p, size_t n) {
  struct tm_ws_end *e = &c->ce;
  uint8_t mask[4];
  size_t h;
  if (!c->w->out || e->out_len + TM_WSC_HDR_MAX + n > c->w->out_cap)
    return -1;
  uint8_t *at = c->w->out + LWS_PRE + e->out_len;
  if (frame_header(c, at, op, n, mask, &h) < 0)
    return -1;
  if (c->client)
    tm_wsc_mask(at + h, p, n, mask, 0);
  else if (n)
    memcpy(at + h, p, n);
  e->out_len += h + n;
  return 0;
}

static int flush_out(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (!e->out_len)
    return 0;
  size_t n = e->out_len;
  e->out_len = 0;
  return tmws_wire_send(c, c->w->out + LWS_PRE, n);
}

int tmws_end_close_now(tm_ws_conn *c) {
  uint8_t buf[LWS_PRE + CLOSE_FRAME_MAX], pay[2 + 32], mask[4];
  struct tm_ws_end *e = &c->ce;
  size_t h;
  if (c->state != CS_OPEN || !c->wsi)
    return -1;
  unsigned code = e->close_code ? e->close_code : (unsigned)c->close_status;
  size_t rl = e->close_code ? 0 : strlen(c->close_reason);
  if (rl > 32)
    rl = 32;
  pay[0] = (uint8_t)(code >> 8);
  pay[1] = (uint8_t)code;
  memcpy(pay + 2, c->close_reason, rl);
  if (flush_out(c) == 0 &&
      frame_header(c, buf + LWS_PRE, TM_WSC_OP_CLOSE, 2 + rl, mask, &h) == 0) {
    if (c->client)
      tm_wsc_mask(buf + LWS_PRE + h, pay, 2 + rl, mask, 0);
    else
      memcpy(buf + LWS_PRE + h, pay, 2 + rl);
    (void)tmws_wire_send(c, buf + LWS_PRE, h + 2 + rl);
  }
  return -1;
}

void tmws_end_want_write(tm_ws_conn *c) {
  c->want_write = 1;
  if (!c->in_writable && c->wsi && c->state == CS_OPEN)
    lws_callback_on_writable(c->wsi);
}

int tmws_end_write(tm_ws_conn *c, const uint8_t *buf, size_t len) {
  /* The session writes only from its writable event, which runs only
   * inside ours. */
  if (!c->in_writable)
    return -1;
  return out_frame(c, TM_WSC_OP_BINARY, buf, len);
}

int tmws_end_writable(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (c->state != CS_OPEN || c->close_pending)
    return tmws_end_close_now(c);
  if (out_room(c) < 0) {
    tmws_set_close(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "no memory");
    return tmws_end_close_now(c);
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
  if (flush_out(c) < 0 || tmws_wire_flush(c) < 0)
    return -1;
  if (c->close_pending)
    return tmws_end_close_now(c);
  if (c->want_write && c->s)
    lws_callback_on_writable(c->wsi);
  return 0;
}

/* ---- reading ------------------------------------------------------------- */

int tmws_end_keep(tm_ws_conn *c, const uint8_t *in, size_t len) {
  return tmws_append(c, &c->ce.pend, in, len, TM_WS_PENDING_MAX,
                     LWS_CLOSE_STATUS_POLICY_VIOLATION, "too much unread");
}

static int paused(const tm_ws_conn *c) {
  return c->user_paused || c->accept_paused;
}

/* A decoder error: 1002, logged with the decoder's sentence (static, never
 * the peer's bytes); the session ends as a protocol error. */
static int protocol_error(tm_ws_conn *c, const char *why) {
  PH_LOG(c->w->api, c->w->ctx, PH_LOG_INFO, "tunnel WebSocket protocol error",
         PH_STR("end", c->client ? "client" : "server"), PH_STR("why", why),
         PH_STR("peer", c->peer));
  tmws_set_close(c, LWS_CLOSE_STATUS_PROTOCOL_ERR, "protocol error");
  if (c->s)
    tm_session_on_transport_error(c->s);
  return -1;
}

/* The peer's frames. 0, or -1 with the close set (close now). */
static int rx_frames(tm_ws_conn *c, uint8_t *in, size_t len) {
  struct tm_ws_end *e = &c->ce;
  while (len) {
    if (paused(c))
      return tmws_end_keep(c, in, len);
    tm_wsc_ev ev;
    size_t used;
    enum tm_wsc_event k = tm_wsc_rx_next(&e->dec, in, len, &used, &ev);
    in += used;
    len -= used;
    switch (k) {
    case TM_WSC_EV_NEED:
      return 0;
    case TM_WSC_EV_ERROR:
      return protocol_error(c, ev.why);
    case TM_WSC_EV_CONTROL:
      if (ev.opcode == TM_WSC_OP_PING) {
        memcpy(e->pong, ev.data, ev.len);
        e->pong_len = ev.len;
        e->pong_due = 1;
        lws_callback_on_writable(c->wsi);
      } else if (ev.opcode == TM_WSC_OP_CLOSE) {
        /* Echo the peer's code (RFC 6455 section 5.5.1), then close. */
        e->close_code = ev.len >= 2
                            ? (uint16_t)((ev.data[0] << 8) | ev.data[1])
                            : LWS_CLOSE_STATUS_NORMAL;
        /* The code says why (4401: the token was refused), in words
         * too; the reason text is the peer's and is not logged. */
        if (c->client)
          PH_LOG(c->w->api, c->w->ctx,
                 e->close_code >= 4000 ? PH_LOG_WARN : PH_LOG_INFO,
                 "tunnel connection closed by the server",
                 PH_UINT("close_code", e->close_code),
                 PH_STR("close", tm_ws_close_name(e->close_code)));
        else /* the server's role logs its sessions' ends */
          PH_LOG(c->w->api, c->w->ctx, PH_LOG_DEBUG,
                 "tunnel connection closed by the client",
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

int tmws_end_rx(tm_ws_conn *c, uint8_t *in, size_t len) {
  if (c->state != CS_OPEN || c->close_pending)
    return 0;
  if (c->ce.pend.len) {
    /* Older bytes, kept while reading was paused, wait for the deferred
     * pass (reading resumed before it ran): these go behind them, or the
     * session would see frames out of order (issue 22 item 7). */
    if (tmws_end_keep(c, in, len) < 0)
      return -1;
    tmws_end_resumed(c);
    return 0;
  }
  return rx_frames(c, in, len);
}

void tmws_end_resumed(tm_ws_conn *c) {
  if (c->ce.pend.len && !paused(c))
    c->w->api->timer_set(c->w->deferred, 1, 0);
}

void tmws_end_deferred(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (!e->pend.len || paused(c) || c->state != CS_OPEN || !c->wsi ||
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

void tmws_end_goodbye(tm_ws_conn *c) {
  tmws_set_close(c, LWS_CLOSE_STATUS_GOINGAWAY, "shutdown");
  (void)tmws_end_close_now(c);
}

int tmws_head_take(tm_ws_conn *c, const uint8_t *in, size_t len, size_t max,
                   size_t *before) {
  struct tm_ws_end *e = &c->ce;
  if (!e->ans) {
    e->ans = malloc(max);
    if (!e->ans)
      return -1;
  }
  *before = e->ans_len;
  size_t take = len < max - e->ans_len ? len : max - e->ans_len;
  memcpy(e->ans + e->ans_len, in, take);
  e->ans_len += take;
  return 0;
}

void tmws_head_drop(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (e->ans) {
    tmws_wipe(e->ans, e->ans_len);
    free(e->ans);
  }
  e->ans = NULL;
  e->ans_len = 0;
}

void tmws_end_free(tm_ws_conn *c) {
  struct tm_ws_end *e = &c->ce;
  if (e->req) {
    tmws_wipe(e->req, LWS_PRE + e->req_len);
    free(e->req);
  }
  tmws_head_drop(c);
  free(e->pend.p);
  if (e->ssl)
    SSL_free(e->ssl); /* and its BIOs */
  memset(e, 0, sizeof(*e));
}

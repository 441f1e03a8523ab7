/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: absolute-form forwarding. The request goes to the
 * origin in origin-form with a correct Host and without hop-by-hop
 * headers (to an upstream HTTP proxy: in absolute form, with the
 * Proxy-Authorization its connector gave, and a 407 from it is not the
 * client's); request and response bodies are decoded as they arrive and
 * framed again (http_body.h), through bounded buffers. The upstream
 * connection is kept for the next request when both sides allow it.
 * Returns what comes next; HP_WAIT (0) inside this file also means "go
 * on". */
#include <stdio.h>
#include <stdlib.h>

#include "http_proxy_int.h"

/* Interim (1xx) responses accepted before the final one. */
#define MAX_INTERIM 8

static int decode_response_body(conn *c);

/* What the origin sent cannot be read one way only: 502, or closing once
 * the client has part of the response (the target's fault, for the
 * lease). The reason is static text. */
static int bad_response(conn *c, const char *why) {
  PH_LOG(hp_api, c->hp->ctx, PH_LOG_DEBUG, "http response refused",
         PH_UINT("stream", c->fs.id), PH_STR("reason", why));
  return hp_fail_exchange(c, 502, PH_LEASE_END_TARGET_ERROR);
}

/* Framing bytes of an encoder not written yet. */
static int frame_pending(const hp_body_encoder *e) {
  return e->frame_off < e->frame_len;
}

int hp_forward_request_ready(const conn *c) {
  const hp_exchange *x = &c->x;
  return x->up_state == U_BODY &&
         (x->cdec > c->cin.off || x->req_body.done ||
          frame_pending(&x->req_out));
}

int hp_forward_response_ready(const conn *c) {
  const hp_exchange *x = &c->x;
  return x->down_state == D_BODY && !hp_body_encode_finished(&x->resp_out) &&
         (x->udec > x->uin.off || x->resp_body.done ||
          frame_pending(&x->resp_out));
}

/* Sends what the upstream should get next: the head, then the body. */
static void pump_up(conn *c) {
  hp_exchange *x = &c->x;
  if (x->up_state == U_HEAD) {
    iobuf *head = x->via_proxy ? &x->upx : &x->uout;
    while (hp_pending(head)) {
      ssize_t w = hp_send_some(hp_up_end(c), head->data + head->off,
                               hp_pending(head));
      if (w < 0)
        goto upstream_gone;
      if (w == 0)
        return;
      head->off += (size_t)w;
      c->bytes_up += (uint64_t)w;
      hp_api->inc(c->hp->sm.bytes[SM_HTTP][SM_UP], (uint64_t)w);
    }
    if (x->via_proxy)
      hp_buf_wipe(&x->upx); /* sent: its credential is not kept */
    x->up_state = U_BODY;
  }
  if (x->up_state == U_BODY) {
    ssize_t w = hp_buf_send_body(hp_up_end(c), &c->cin, x->cdec, &x->req_out,
                                 x->req_body.done);
    if (w < 0)
      goto upstream_gone;
    if (w > 0) {
      c->bytes_up += (uint64_t)w;
      x->body_sent += (uint64_t)w;
      c->last_ms = hp_api->now_ms(c->hp->ctx);
      hp_api->inc(c->hp->sm.bytes[SM_HTTP][SM_UP], (uint64_t)w);
    }
    if (hp_body_encode_finished(&x->req_out))
      x->up_state = U_DONE;
  }
  return;
upstream_gone:
  /* The upstream stopped reading: it may still answer (say, 413), so keep
   * reading its response; the client connection closes after it. */
  x->up_state = U_DONE;
  x->up_dirty = 1;
  x->close_after = 1;
}

int hp_forward_request_body(conn *c) {
  if (hp_buf_decode(&c->cin, &c->x.cdec, &c->x.req_body) == HB_ERROR) {
    PH_LOG(hp_api, c->hp->ctx, PH_LOG_DEBUG, "http request refused",
           PH_STR("reason", "malformed chunked body"));
    return hp_fail_exchange(c, 400, PH_LEASE_END_CLIENT_ERROR);
  }
  pump_up(c);
  return HP_WAIT;
}

static int finish_exchange(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  int stopping = frontend_server_stopping(&h->fs);
  int keep_up = !x->up_dirty && x->up_state == U_DONE &&
                hp_head_keep_alive(&x->resp) && hp_pending(&x->uin) == 0 &&
                !stopping;
  /* The response is complete: whatever closes the upstream now ends its
   * lease cleanly. */
  c->up_how = PH_LEASE_END_CLOSED;
  if (keep_up) {
    c->up.idle = 1;
    snprintf(c->up.host, sizeof(c->up.host), "%s", c->target.host);
    c->up.port = c->target.port;
    c->up.generation = h->generation;
  } else {
    hp_close_upstream(c, PH_LEASE_END_CLOSED);
  }
  if (x->close_after || stopping)
    return HP_CLOSE;
  hp_access_log(c);
  return HP_BEGIN;
}

/* 0, or -1 when the client cannot be written. */
static int flush_response_body(conn *c) {
  hp_exchange *x = &c->x;
  ssize_t w = hp_buf_send_body(hp_client_end(c), &x->uin, x->udec, &x->resp_out,
                               x->resp_body.done);
  if (w < 0)
    return -1;
  if (w > 0) {
    x->resp_started = 1;
    hp_up_first_byte(c); /* after a head, so told already: a no-op */
    c->bytes_down += (uint64_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    hp_api->inc(c->hp->sm.bytes[SM_HTTP][SM_DOWN], (uint64_t)w);
  }
  if (x->uin.off == x->uin.len)
    x->uin.off = x->uin.len = x->udec = 0;
  return 0;
}

static void start_response(conn *c) {
  hp_exchange *x = &c->x;
  hp_head_free(&x->resp);
  hp_head_init(&x->resp, HTTP_RESPONSE, &c->hp->conf.lim);
  if (hp_head_method(&c->req) == HTTP_HEAD)
    hp_head_expect_no_body(&x->resp);
  hp_buf_compact(&x->uin, NULL);
  x->udec = 0;
}

static int write_response_head(conn *c, const hp_head_frame *fr, int interim) {
  hp_exchange *x = &c->x;
  size_t max = hp_head_write_max(&x->resp);
  if (c->cout.cap - c->cout.len < max) {
    char *d = realloc(c->cout.data, c->cout.len + max);
    if (!d)
      return -1;
    c->cout.data = d;
    c->cout.cap = c->cout.len + max;
  }
  ssize_t n = hp_head_write_response(
      &x->resp, x->uin.data, fr, interim ? 0 : x->close_after,
      interim ? 1 : hp_head_minor(&c->req), c->cout.data + c->cout.len,
      c->cout.cap - c->cout.len);
  if (n < 0)
    return -1;
  c->cout.len += (size_t)n;
  return 0;
}

/* An interim (1xx) head is at the start of uin: forwarded to an HTTP/1.1
 * client, then the next head is read. */
static int on_interim(conn *c) {
  hp_exchange *x = &c->x;
  hp_head_frame none = {HB_NONE, 0};
  if (++x->interim > MAX_INTERIM)
    return bad_response(c, "too many interim responses");
  if (hp_head_minor(&c->req) && write_response_head(c, &none, 1) < 0)
    return bad_response(c, "out of memory");
  x->uin.off = x->resp.head_len;
  start_response(c);
  return HP_WAIT;
}

/* A complete final response head is at the start of uin. Its body is
 * decoded from the framing the origin used and framed again for the
 * client: Content-Length as it was; chunked or close-delimited as chunked
 * for an HTTP/1.1 client, by closing for an HTTP/1.0 one. */
static int on_response_head(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  int status = hp_head_status(&x->resp);
  /* 101: we never forward Upgrade, so never asked for it. */
  if (status < 100 || status > 599 || status == 101)
    return bad_response(c, status == 101 ? "101 without an Upgrade asked"
                                         : "status out of range");
  /* An upstream HTTP proxy refusing the connector's credentials (the
   * client's were never forwarded): not the client's to answer. */
  if (status == 407 && c->up.http_proxy)
    return bad_response(c, "upstream proxy refused its credentials");
  if (status / 100 == 1)
    return on_interim(c);
  int kind, has_length;
  uint64_t length;
  if (hp_head_framing(&x->resp, x->uin.data, &kind, &length, &has_length))
    return bad_response(c, "ambiguous body framing");
  int out = hp_head_reframe(kind, hp_head_minor(&c->req));
  /* A response without a body (to HEAD, 304) still tells its length. */
  hp_head_frame fr = {out, length};
  if (kind == HB_NONE && has_length && status != 204)
    fr.kind = HB_LENGTH;
  x->close_after = x->close_after || !hp_head_keep_alive(&c->req) ||
                   out == HB_CLOSE || x->up_state != U_DONE ||
                   frontend_server_stopping(&h->fs);
  if (write_response_head(c, &fr, 0) < 0)
    return bad_response(c, "out of memory");
  if (!hp_head_keep_alive(&x->resp) || kind == HB_CLOSE)
    x->up_dirty = 1;
  hp_count_status(c, status);
  x->uin.off = x->resp.head_len;
  x->udec = x->uin.off;
  hp_body_limits lim = hp_body_limits_of(h);
  hp_body_decoder_init(&x->resp_body, kind, length, &lim);
  hp_body_encoder_init(&x->resp_out, kind == HB_NONE ? HB_NONE : out);
  x->down_state = D_BODY;
  return decode_response_body(c);
}

/* Decodes the response body bytes that arrived in uin. */
static int decode_response_body(conn *c) {
  hp_exchange *x = &c->x;
  if (hp_buf_decode(&x->uin, &x->udec, &x->resp_body) == HB_ERROR)
    return bad_response(c, "malformed chunked body");
  if (x->resp_body.done && x->uin.len > x->udec)
    x->up_dirty = 1; /* bytes after the response: not reusable */
  return HP_WAIT;
}

/* Parses what upstream sent while a response head is expected. */
static int parse_response(conn *c) {
  hp_exchange *x = &c->x;
  while (c->state == S_EXCHANGE && x->down_state == D_HEAD &&
         !hp_pending(&c->cout) && x->uin.len > 0) {
    int r = hp_head_parse(&x->resp, x->uin.data, x->uin.len);
    if (r == HH_MORE)
      return HP_WAIT;
    if (r == HH_ERROR)
      return bad_response(c, "malformed response head");
    int next = on_response_head(c);
    if (next != HP_WAIT)
      return next;
  }
  return HP_WAIT;
}

int hp_forward_response(conn *c) {
  hp_exchange *x = &c->x;
  if (x->down_state == D_HEAD) {
    if (x->uin.len == 0)
      return HP_WAIT;
    int next = parse_response(c);
    if (next != HP_WAIT)
      return next;
    if (x->down_state == D_HEAD && !hp_pending(&c->cout))
      return HP_WAIT; /* more of the head to come */
    return HP_PUMP;   /* a head to write */
  }
  if (x->down_state == D_BODY) {
    if (flush_response_body(c) < 0)
      return HP_CLOSE;
    if (!hp_body_encode_finished(&x->resp_out))
      return HP_WAIT;
    x->down_state = D_DONE;
  }
  if (x->up_state == U_DONE)
    return finish_exchange(c);
  /* The response came, complete, before the request ended. */
  c->up_how = PH_LEASE_END_CLOSED;
  return HP_CLOSE;
}

/* The upstream closed (or failed) while this exchange ran. */
static int upstream_eof(conn *c, int error) {
  hp_exchange *x = &c->x;
  x->up_dirty = 1;
  if (x->down_state == D_HEAD) {
    /* A kept connection the origin closed just as we used it: open a new
     * one once, when nothing of the body was sent yet. */
    if (x->reused && !x->retried && !x->resp_seen && x->body_sent == 0 &&
        x->interim == 0) {
      x->retried = 1;
      /* Its responses so far were complete: a keep-alive ending. */
      hp_close_upstream(c, PH_LEASE_END_CLOSED);
      x->uin.off = x->uin.len = x->udec = 0;
      return HP_OPEN;
    }
    return hp_fail_exchange(c, 502, PH_LEASE_END_TARGET_ERROR);
  }
  /* A body framed by the close ends here; any other is cut short, and
   * only closing tells the client. */
  if (error || hp_body_decode_eof(&x->resp_body) != HB_DONE) {
    c->up_how = PH_LEASE_END_TARGET_ERROR;
    return HP_CLOSE;
  }
  hp_close_upstream(c, PH_LEASE_END_CLOSED);
  return HP_PUMP;
}

static int exchange_upstream_readable(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  size_t max = x->down_state == D_HEAD ? hp_head_cap(h) : hp_buf_max(h);
  size_t got = 0;
  size_t *dec = x->down_state == D_BODY ? &x->udec : NULL;
  if (x->down_state == D_HEAD && x->uin.off > 0)
    hp_buf_compact(&x->uin, NULL);
  int r = hp_buf_read(hp_up_end(c), &x->uin, max, dec, &got);
  if (r == RD_AGAIN || (r == RD_FULL && x->down_state != D_HEAD))
    return HP_WAIT;
  if (r == RD_FULL) /* cannot happen: hp_head_parse fails before */
    return hp_fail_exchange(c, 502, PH_LEASE_END_TARGET_ERROR);
  if (r == RD_EOF || r == RD_ERROR)
    return upstream_eof(c, r == RD_ERROR);
  x->resp_seen = 1;
  c->last_ms = hp_api->now_ms(h->ctx);
  if (x->down_state == D_HEAD)
    return parse_response(c);
  return decode_response_body(c);
}

/* The head for an upstream HTTP proxy, from the origin-form one: 0, or
 * -1 out of memory (or a head that is not ours: cannot happen). */
static int build_proxy_head(conn *c) {
  hp_exchange *x = &c->x;
  hp_upstream *u = &c->up;
  size_t max = x->uout.len + HP_HEAD_ABSOLUTE_EXTRA + u->proxy_auth_len;
  hp_buf_wipe(&x->upx);
  if (!(x->upx.data = malloc(max)))
    return -1;
  x->upx.cap = max;
  ssize_t n = hp_head_write_absolute(x->uout.data, x->uout.len, &c->target,
                                     u->proxy_auth, u->proxy_auth_len,
                                     x->upx.data, x->upx.cap);
  if (n < 0) {
    hp_buf_wipe(&x->upx);
    return -1;
  }
  x->upx.len = (size_t)n;
  return 0;
}

int hp_forward_start(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  x->via_proxy = c->up.http_proxy;
  if (x->via_proxy && build_proxy_head(c) < 0) {
    PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request refused",
           PH_UINT("stream", c->fs.id),
           PH_STR("reason", "no memory for the proxy's head"));
    return hp_fail_exchange(c, 503, PH_LEASE_END_CLIENT_ERROR);
  }
  c->up.idle = 0;
  c->up_how = PH_LEASE_END_CLIENT_ERROR; /* until the phases say more */
  x->up_dirty = 0;
  x->close_after = 0;
  c->state = S_EXCHANGE;
  x->up_state = U_HEAD;
  x->down_state = D_HEAD;
  x->resp_seen = 0;
  x->interim = 0;
  hp_buf_free(&c->cout);
  start_response(c);
  hp_arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  return hp_forward_request_body(c);
}

static int upstream_readable(conn *c) {
  if (c->up.idle) {
    /* A kept upstream said something (EOF, or bytes nobody asked for):
     * its keep-alive ended, after complete responses. */
    hp_close_upstream(c, PH_LEASE_END_CLOSED);
    return HP_WAIT;
  }
  if (c->state != S_EXCHANGE)
    return HP_WAIT;
  int next = exchange_upstream_readable(c);
  if (next != HP_WAIT || c->state != S_EXCHANGE)
    return next;
  return HP_PUMP;
}

int hp_forward_upstream(conn *c, int revents) {
  int next = HP_WAIT;
  if (revents & PH_READ)
    next = upstream_readable(c);
  if ((next == HP_WAIT || next == HP_PUMP) && (revents & PH_WRITE) &&
      c->state == S_EXCHANGE) {
    pump_up(c);
    next = HP_PUMP;
  }
  return next;
}

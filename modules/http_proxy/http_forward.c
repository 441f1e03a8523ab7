/* http_proxy: absolute-form forwarding. The request goes to the origin in
 * origin-form with a correct Host and without hop-by-hop headers; request
 * and response bodies are decoded as they arrive and framed again
 * (http_body.h), through bounded buffers. The upstream connection is kept
 * for the next request when both sides allow it. */
#include <stdio.h>
#include <stdlib.h>

#include "http_proxy_int.h"

/* Interim (1xx) responses accepted before the final one. */
#define MAX_INTERIM 8

static int decode_response_body(conn *c);

/* What the origin sent cannot be read one way only: 502, or closing once
 * the client has part of the response. The reason is static text. */
static int bad_response(conn *c, const char *why) {
  PH_LOG(hp_api, c->hp->ctx, PH_LOG_DEBUG, "http response refused",
         PH_STR("reason", why));
  return fail_exchange(c, 502);
}

/* A body's size lines and trailers are bounded like a head's lines. */
static hb_limits body_limits(const hp *h) {
  hb_limits l = {h->conf.lim.max_line, h->conf.lim.max_header_bytes};
  return l;
}

/* Framing bytes of an encoder not written yet. */
static int frame_pending(const hb_encoder *e) {
  return e->frame_off < e->frame_len;
}

/* Whether the request body (or its framing) has bytes to send now. */
int request_body_ready(const conn *c) {
  return c->up_state == U_BODY &&
         (c->cdec > c->cin.off || c->req_body.done ||
          frame_pending(&c->req_out));
}

/* Whether the response body (or its framing) has bytes to send now. */
int response_body_ready(const conn *c) {
  return c->down_state == D_BODY && !hb_encode_finished(&c->resp_out) &&
         (c->udec > c->uin.off || c->resp_body.done ||
          frame_pending(&c->resp_out));
}

/* Sends what the upstream should get next: the head, then the body. */
static int pump_up(conn *c) {
  if (c->up_state == U_HEAD) {
    while (pending(&c->uout)) {
      ssize_t w = send_some(up_end(c), c->uout.data + c->uout.off,
                            pending(&c->uout));
      if (w < 0)
        goto upstream_gone;
      if (w == 0)
        return 0;
      c->uout.off += (size_t)w;
      c->bytes_up += (uint64_t)w;
      hp_api->inc(c->hp->sm.bytes[SM_UP], (uint64_t)w);
    }
    c->up_state = U_BODY;
  }
  if (c->up_state == U_BODY) {
    ssize_t w = send_body(up_end(c), &c->cin, c->cdec, &c->req_out,
                          c->req_body.done);
    if (w < 0)
      goto upstream_gone;
    if (w > 0) {
      c->bytes_up += (uint64_t)w;
      c->body_sent += (uint64_t)w;
      c->last_ms = hp_api->now_ms(c->hp->ctx);
      hp_api->inc(c->hp->sm.bytes[SM_UP], (uint64_t)w);
    }
    if (hb_encode_finished(&c->req_out))
      c->up_state = U_DONE;
  }
  return 0;
upstream_gone:
  /* The upstream stopped reading: it may still answer (say, 413), so keep
   * reading its response; the client connection closes after it. */
  c->up_state = U_DONE;
  c->up_dirty = 1;
  c->close_after = 1;
  return 0;
}

int forward_request_body(conn *c) {
  if (conn_dead(c))
    return GONE;
  if (body_decode(&c->cin, &c->cdec, &c->req_body) == HB_ERROR) {
    PH_LOG(hp_api, c->hp->ctx, PH_LOG_DEBUG, "http request refused",
           PH_STR("reason", "malformed chunked body"));
    return fail_exchange(c, 400);
  }
  return pump_up(c);
}

static int finish_exchange(conn *c) {
  hp *h = c->hp;
  int keep_up = !c->up_dirty && c->up_state == U_DONE &&
                hh_keep_alive(&c->resp) && pending(&c->uin) == 0 &&
                !h->stopping;
  if (keep_up) {
    c->up_idle = 1;
    snprintf(c->up_host, sizeof(c->up_host), "%s", c->target.host);
    c->up_port = c->target.port;
    c->up_generation = h->generation;
  } else {
    close_upstream(c);
  }
  if (c->close_after || h->stopping)
    return conn_close(c);
  access_log(c);
  return begin_head(c);
}

static int flush_response_body(conn *c) {
  ssize_t w = send_body(client_end(c), &c->uin, c->udec, &c->resp_out,
                        c->resp_body.done);
  if (w < 0)
    return conn_close(c);
  if (w > 0) {
    c->resp_started = 1;
    c->bytes_down += (uint64_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    hp_api->inc(c->hp->sm.bytes[SM_DOWN], (uint64_t)w);
  }
  if (c->uin.off == c->uin.len)
    c->uin.off = c->uin.len = c->udec = 0;
  return 0;
}

static void start_response(conn *c) {
  hh_free(&c->resp);
  hh_init(&c->resp, HTTP_RESPONSE, &c->hp->conf.lim);
  if (hh_method(&c->req) == HTTP_HEAD)
    hh_expect_no_body(&c->resp);
  buf_compact(&c->uin, NULL);
  c->udec = 0;
}

static int write_response_head(conn *c, const hh_frame *fr, int interim) {
  size_t max = hh_write_max(&c->resp);
  if (c->cout.cap - c->cout.len < max) {
    char *d = realloc(c->cout.data, c->cout.len + max);
    if (!d)
      return -1;
    c->cout.data = d;
    c->cout.cap = c->cout.len + max;
  }
  ssize_t n = hh_write_response(
      &c->resp, c->uin.data, fr, interim ? 0 : c->close_after,
      interim ? 1 : hh_minor(&c->req), c->cout.data + c->cout.len,
      c->cout.cap - c->cout.len);
  if (n < 0)
    return -1;
  c->cout.len += (size_t)n;
  return 0;
}

/* An interim (1xx) head is at the start of uin: forwarded to an HTTP/1.1
 * client, then the next head is read. */
static int on_interim(conn *c) {
  hh_frame none = {HB_NONE, 0};
  if (++c->interim > MAX_INTERIM)
    return bad_response(c, "too many interim responses");
  if (hh_minor(&c->req) && write_response_head(c, &none, 1) < 0)
    return bad_response(c, "out of memory");
  c->uin.off = c->resp.head_len;
  start_response(c);
  return 0;
}

/* A complete final response head is at the start of uin. Its body is
 * decoded from the framing the origin used and framed again for the
 * client: Content-Length as it was; chunked or close-delimited as chunked
 * for an HTTP/1.1 client, by closing for an HTTP/1.0 one. */
static int on_response_head(conn *c) {
  hp *h = c->hp;
  int status = hh_status(&c->resp);
  /* 101: we never forward Upgrade, so never asked for it. */
  if (status < 100 || status > 599 || status == 101)
    return bad_response(c, status == 101 ? "101 without an Upgrade asked"
                                         : "status out of range");
  if (status / 100 == 1)
    return on_interim(c);
  int kind, has_length;
  uint64_t length;
  if (hh_framing(&c->resp, c->uin.data, &kind, &length, &has_length))
    return bad_response(c, "ambiguous body framing");
  int out = hh_reframe(kind, hh_minor(&c->req));
  /* A response without a body (to HEAD, 304) still tells its length. */
  hh_frame fr = {out, length};
  if (kind == HB_NONE && has_length && status != 204)
    fr.kind = HB_LENGTH;
  c->close_after = c->close_after || !hh_keep_alive(&c->req) ||
                   out == HB_CLOSE || c->up_state != U_DONE || h->stopping;
  if (write_response_head(c, &fr, 0) < 0)
    return bad_response(c, "out of memory");
  if (!hh_keep_alive(&c->resp) || kind == HB_CLOSE)
    c->up_dirty = 1;
  count_status(c, status);
  c->uin.off = c->resp.head_len;
  c->udec = c->uin.off;
  hb_limits lim = body_limits(h);
  hb_decoder_init(&c->resp_body, kind, length, &lim);
  hb_encoder_init(&c->resp_out, kind == HB_NONE ? HB_NONE : out);
  c->down_state = D_BODY;
  return decode_response_body(c);
}

/* Decodes the response body bytes that arrived in uin. */
static int decode_response_body(conn *c) {
  if (body_decode(&c->uin, &c->udec, &c->resp_body) == HB_ERROR)
    return bad_response(c, "malformed chunked body");
  if (c->resp_body.done && c->uin.len > c->udec)
    c->up_dirty = 1; /* bytes after the response: not reusable */
  return 0;
}

/* Parses what upstream sent while a response head is expected. */
static int parse_response(conn *c) {
  while (c->state == S_EXCHANGE && c->down_state == D_HEAD &&
         !pending(&c->cout) && c->uin.len > 0) {
    int r = hh_parse(&c->resp, c->uin.data, c->uin.len);
    if (r == HH_MORE)
      return 0;
    if (r == HH_ERROR)
      return bad_response(c, "malformed response head");
    if (on_response_head(c) == GONE)
      return GONE;
  }
  return 0;
}

int forward_response(conn *c) {
  if (conn_dead(c))
    return GONE;
  if (c->down_state == D_HEAD) {
    if (c->uin.len == 0)
      return 0;
    if (parse_response(c) == GONE)
      return GONE;
    if (c->down_state == D_HEAD && !pending(&c->cout))
      return 0;           /* more of the head to come */
    return FORWARD_AGAIN; /* a head to write */
  }
  if (c->down_state == D_BODY) {
    if (flush_response_body(c) == GONE)
      return GONE;
    if (!hb_encode_finished(&c->resp_out))
      return 0;
    c->down_state = D_DONE;
  }
  if (c->up_state == U_DONE)
    return finish_exchange(c);
  return conn_close(c); /* the response came before the request ended */
}

/* The upstream closed (or failed) while this exchange ran. */
static int upstream_eof(conn *c, int error) {
  c->up_dirty = 1;
  if (c->down_state == D_HEAD) {
    /* A kept connection the origin closed just as we used it: open a new
     * one once, when nothing of the body was sent yet. */
    if (c->reused && !c->retried && !c->resp_seen && c->body_sent == 0 &&
        c->interim == 0) {
      c->retried = 1;
      close_upstream(c);
      c->uin.off = c->uin.len = c->udec = 0;
      return start_open(c);
    }
    return fail_exchange(c, 502);
  }
  /* A body framed by the close ends here; any other is cut short, and
   * only closing tells the client. */
  if (error || hb_decode_eof(&c->resp_body) != HB_DONE)
    return conn_close(c);
  close_upstream(c);
  return pump_client(c);
}

static int exchange_upstream_readable(conn *c) {
  hp *h = c->hp;
  size_t max = c->down_state == D_HEAD ? head_cap(h) : buf_max(h);
  size_t got = 0;
  size_t *dec = c->down_state == D_BODY ? &c->udec : NULL;
  if (c->down_state == D_HEAD && c->uin.off > 0)
    buf_compact(&c->uin, NULL);
  int r = buf_read(up_end(c), &c->uin, max, dec, &got);
  if (r == RD_AGAIN || (r == RD_FULL && c->down_state != D_HEAD))
    return 0;
  if (r == RD_FULL) /* cannot happen: hh_parse fails before */
    return fail_exchange(c, 502);
  if (r == RD_EOF || r == RD_ERROR)
    return upstream_eof(c, r == RD_ERROR);
  c->resp_seen = 1;
  c->last_ms = hp_api->now_ms(h->ctx);
  if (c->down_state == D_HEAD)
    return parse_response(c);
  return decode_response_body(c);
}

static int build_request(conn *c, const hh_frame *fr) {
  size_t max = hh_write_max(&c->req);
  if (c->uout.cap < max) {
    char *d = realloc(c->uout.data, max);
    if (!d)
      return -1;
    c->uout.data = d;
    c->uout.cap = max;
  }
  ssize_t n = hh_write_request(&c->req, c->cin.data, &c->target, fr,
                               c->uout.data, c->uout.cap);
  if (n < 0)
    return -1;
  c->uout.off = 0;
  c->uout.len = (size_t)n;
  return 0;
}

int start_request_body(conn *c, int kind, uint64_t length) {
  hb_limits lim = body_limits(c->hp);
  hb_decoder_init(&c->req_body, kind, length, &lim);
  hb_encoder_init(&c->req_out, kind);
  if (c->method_class != MC_FORWARD)
    return 0;
  hh_frame fr = {kind, length};
  return build_request(c, &fr);
}

int run_exchange(conn *c) {
  hp *h = c->hp;
  if (conn_dead(c))
    return GONE;
  c->up_idle = 0;
  c->up_dirty = 0;
  c->close_after = 0;
  c->state = S_EXCHANGE;
  c->up_state = U_HEAD;
  c->down_state = D_HEAD;
  c->resp_seen = 0;
  c->interim = 0;
  buf_free(&c->cout);
  start_response(c);
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  if (forward_request_body(c) == GONE)
    return GONE;
  update_io(c);
  return 0;
}

static int upstream_step(conn *c) {
  if (c->up_idle) {
    /* A kept upstream said something (EOF, or bytes nobody asked for). */
    close_upstream(c);
    return 0;
  }
  if (c->state != S_EXCHANGE)
    return 0;
  if (exchange_upstream_readable(c) == GONE)
    return GONE;
  if (c->state != S_EXCHANGE)
    return 0;
  return pump_client(c);
}

static void upstream_event(conn *c, int revents) {
  if ((revents & PH_READ) && upstream_step(c) == GONE)
    return;
  if ((revents & PH_WRITE) && c->state == S_EXCHANGE) {
    if (pump_up(c) == GONE)
      return;
    if (pump_client(c) == GONE)
      return;
  }
  update_io(c);
}

void upstream_io(ph_io *io, int fd, int revents, void *arg) {
  conn *c = arg;
  (void)io;
  (void)fd;
  conn_enter(c);
  upstream_event(c, revents);
  conn_leave(c);
}

void upstream_stream(ph_stream *s, int revents, void *arg) {
  conn *c = arg;
  (void)s;
  conn_enter(c);
  upstream_event(c, revents);
  conn_leave(c);
}

/* http_proxy: absolute-form forwarding. The request goes to the origin in
 * origin-form with a correct Host and without hop-by-hop headers; request
 * and response bodies are forwarded as they arrive, framed as they were
 * (Content-Length, chunked, or until close), through bounded buffers. The
 * upstream connection is kept for the next request when both sides allow
 * it. */
#include <stdio.h>
#include <stdlib.h>

#include "http_proxy_int.h"

/* Interim (1xx) responses accepted before the final one. */
#define MAX_INTERIM 8

/* Frames the request body bytes that arrived. */
static int scan_request_body(conn *c) {
  if (c->req_body_done || c->cscan >= c->cin.len)
    return 0;
  size_t used = 0;
  int r = hh_body(&c->req, c->cin.data + c->cscan, c->cin.len - c->cscan,
                  &used);
  c->cscan += used;
  if (r == HH_DONE)
    c->req_body_done = 1;
  else if (r == HH_ERROR)
    return fail_exchange(c, 400);
  return 0;
}

static int scan_response_body(conn *c) {
  if (c->resp_done || c->uscan >= c->uin.len)
    return 0;
  size_t used = 0;
  int r = hh_body(&c->resp, c->uin.data + c->uscan, c->uin.len - c->uscan,
                  &used);
  c->uscan += used;
  if (r == HH_DONE) {
    c->resp_done = 1;
    if (c->uscan < c->uin.len) /* bytes after the response: not reusable */
      c->up_dirty = 1;
  } else if (r == HH_ERROR) {
    return fail_exchange(c, 502);
  }
  return 0;
}

/* Sends what the upstream should get next: the head, then body bytes. */
static int pump_up(conn *c) {
  if (c->up_state == U_HEAD) {
    while (pending(&c->uout)) {
      ssize_t w = send_some(c->ufd, c->uout.data + c->uout.off,
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
  while (c->up_state == U_BODY && c->cscan > c->cin.off) {
    ssize_t w = send_some(c->ufd, c->cin.data + c->cin.off,
                          c->cscan - c->cin.off);
    if (w < 0)
      goto upstream_gone;
    if (w == 0)
      return 0;
    c->cin.off += (size_t)w;
    c->bytes_up += (uint64_t)w;
    c->body_sent += (uint64_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    hp_api->inc(c->hp->sm.bytes[SM_UP], (uint64_t)w);
  }
  if (c->up_state == U_BODY && c->req_body_done && c->cscan == c->cin.off)
    c->up_state = U_DONE;
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
  if (scan_request_body(c) == GONE)
    return GONE;
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
  } else {
    close_upstream(c);
  }
  if (c->close_after || h->stopping)
    return conn_close(c);
  access_log(c);
  return begin_head(c);
}

static int flush_response_body(conn *c) {
  while (c->uscan > c->uin.off) {
    ssize_t w = send_some(c->cfd, c->uin.data + c->uin.off,
                          c->uscan - c->uin.off);
    if (w < 0)
      return conn_close(c);
    if (w == 0)
      return 0;
    c->uin.off += (size_t)w;
    c->resp_started = 1;
    c->bytes_down += (uint64_t)w;
    c->last_ms = hp_api->now_ms(c->hp->ctx);
    hp_api->inc(c->hp->sm.bytes[SM_DOWN], (uint64_t)w);
  }
  if (c->uin.off == c->uin.len)
    c->uin.off = c->uin.len = c->uscan = 0;
  return 0;
}

static void start_response(conn *c) {
  hh_free(&c->resp);
  hh_init(&c->resp, HTTP_RESPONSE, &c->hp->conf.lim);
  if (hh_method(&c->req) == HTTP_HEAD)
    hh_expect_no_body(&c->resp);
  buf_compact(&c->uin, NULL);
  c->uscan = 0;
}

static int write_response_head(conn *c, int interim) {
  size_t max = hh_write_max(&c->resp);
  if (c->cout.cap - c->cout.len < max) {
    char *d = realloc(c->cout.data, c->cout.len + max);
    if (!d)
      return -1;
    c->cout.data = d;
    c->cout.cap = c->cout.len + max;
  }
  ssize_t n = hh_write_response(
      &c->resp, c->uin.data, interim ? 0 : c->close_after,
      interim ? 1 : hh_minor(&c->req), c->cout.data + c->cout.len,
      c->cout.cap - c->cout.len);
  if (n < 0)
    return -1;
  c->cout.len += (size_t)n;
  return 0;
}

/* A complete response head is at the start of uin. */
static int on_response_head(conn *c) {
  hp *h = c->hp;
  int status = hh_status(&c->resp);
  /* 101: we never forward Upgrade, so never asked for it. */
  if (status < 100 || status > 599 || status == 101)
    return fail_exchange(c, 502);
  if (status / 100 == 1) {
    if (++c->interim > MAX_INTERIM)
      return fail_exchange(c, 502);
    if (hh_minor(&c->req) && write_response_head(c, 1) < 0)
      return fail_exchange(c, 502);
    c->uin.off = c->resp.head_len;
    start_response(c);
    return 0;
  }
  c->close_after = c->close_after || !hh_keep_alive(&c->req) ||
                   hh_needs_eof(&c->resp) || c->up_state != U_DONE ||
                   h->stopping;
  if (write_response_head(c, 0) < 0)
    return fail_exchange(c, 502);
  if (!hh_keep_alive(&c->resp))
    c->up_dirty = 1;
  count_status(c, status);
  c->uin.off = c->resp.head_len;
  c->uscan = c->uin.off;
  int r = hh_body_begin(&c->resp);
  if (r == HH_ERROR)
    return fail_exchange(c, 502);
  c->down_state = D_BODY;
  c->resp_done = r == HH_DONE;
  if (c->resp_done && pending(&c->uin))
    c->up_dirty = 1;
  return scan_response_body(c);
}

/* Parses what upstream sent while a response head is expected. */
static int parse_response(conn *c) {
  while (c->state == S_EXCHANGE && c->down_state == D_HEAD &&
         !pending(&c->cout) && c->uin.len > 0) {
    int r = hh_parse(&c->resp, c->uin.data, c->uin.len);
    if (r == HH_MORE)
      return 0;
    if (r == HH_ERROR)
      return fail_exchange(c, 502);
    if (on_response_head(c) == GONE)
      return GONE;
  }
  return 0;
}

int forward_response(conn *c) {
  if (c->down_state == D_HEAD) {
    if (c->uin.len == 0 || parse_response(c) == GONE)
      return c->uin.len == 0 ? 0 : GONE;
    if (c->down_state == D_HEAD && !pending(&c->cout))
      return 0;           /* more of the head to come */
    return FORWARD_AGAIN; /* a head to write */
  }
  if (flush_response_body(c) == GONE)
    return GONE;
  if (c->uscan > c->uin.off)
    return 0;
  if (c->down_state == D_BODY && c->resp_done)
    c->down_state = D_DONE;
  if (c->down_state != D_DONE)
    return 0;
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
      c->uin.off = c->uin.len = c->uscan = 0;
      return start_open(c);
    }
    return fail_exchange(c, 502);
  }
  if (!error && c->down_state == D_BODY && !c->resp_done &&
      hh_body_eof(&c->resp) == HH_DONE) {
    c->resp_done = 1;
    close_upstream(c);
    return pump_client(c);
  }
  if (c->down_state == D_BODY && c->resp_done) {
    close_upstream(c);
    return pump_client(c);
  }
  return conn_close(c); /* cut short: only closing tells the client */
}

static int exchange_upstream_readable(conn *c) {
  hp *h = c->hp;
  size_t max = c->down_state == D_HEAD ? head_cap(h) : buf_max(h);
  size_t got = 0;
  size_t *scan = c->down_state == D_BODY ? &c->uscan : NULL;
  if (c->down_state == D_HEAD && c->uin.off > 0)
    buf_compact(&c->uin, NULL);
  int r = buf_read(c->ufd, &c->uin, max, scan, &got);
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
  return scan_response_body(c);
}

int build_request(conn *c) {
  size_t max = hh_write_max(&c->req);
  if (c->uout.cap < max) {
    char *d = realloc(c->uout.data, max);
    if (!d)
      return -1;
    c->uout.data = d;
    c->uout.cap = max;
  }
  ssize_t n = hh_write_request(&c->req, c->cin.data, &c->target,
                               c->uout.data, c->uout.cap);
  if (n < 0)
    return -1;
  c->uout.off = 0;
  c->uout.len = (size_t)n;
  return 0;
}

int run_exchange(conn *c) {
  hp *h = c->hp;
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

void upstream_io(ph_io *io, int fd, int revents, void *arg) {
  conn *c = arg;
  (void)io;
  (void)fd;
  if (revents & PH_READ) {
    if (upstream_step(c) == GONE)
      return;
  }
  if ((revents & PH_WRITE) && c->state == S_EXCHANGE) {
    if (pump_up(c) == GONE)
      return;
    if (c->state == S_EXCHANGE && pump_client(c) == GONE)
      return;
  }
  update_io(c);
}

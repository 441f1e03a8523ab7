/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: request heads. Waiting for one (between requests
 * too), reading and parsing it, and taking a complete one apart: its
 * target, its body framing (strict: a request whose framing could be read
 * two ways is refused), the rewritten head for upstream, and its
 * Proxy-Authorization for the auth phase. Returns what comes next. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontend/access_log.h"
#include "http_proxy_int.h"

static int build_request(conn *c, const hp_head_frame *fr) {
  hp_exchange *x = &c->x;
  size_t max = hp_head_write_max(&c->req);
  if (x->uout.cap < max) {
    char *d = realloc(x->uout.data, max);
    if (!d)
      return -1;
    x->uout.data = d;
    x->uout.cap = max;
  }
  ssize_t n = hp_head_write_request(&c->req, c->cin.data, &c->target, fr,
                                    x->uout.data, x->uout.cap);
  if (n < 0)
    return -1;
  x->uout.off = 0;
  x->uout.len = (size_t)n;
  return 0;
}

/* The request body's decoding and framing (kind and length from
 * hp_head_framing), and the head for upstream in uout; 0 or -1. */
static int prepare_upstream(conn *c, int kind, uint64_t length) {
  hp_body_limits lim = hp_body_limits_of(c->hp);
  hp_body_decoder_init(&c->x.req_body, kind, length, &lim);
  hp_body_encoder_init(&c->x.req_out, kind);
  if (c->method_class != MC_FORWARD)
    return 0;
  hp_head_frame fr = {kind, length};
  return build_request(c, &fr);
}

static int on_request_head(conn *c) {
  hp *h = c->hp;
  c->t_req_us = mono_us();
  c->method_class =
      hp_head_method(&c->req) == HTTP_CONNECT ? MC_CONNECT : MC_FORWARD;
  int st = hp_head_target_parse(&c->req, c->cin.data, &c->target);
  if (st)
    return hp_want_reply(c, st, AFTER_CLOSE);
  c->target_ok = 1;
  if (h->fs.log_target && c->target.form == HH_FORM_ABSOLUTE) {
    size_t n = c->target.path.len;
    if (n >= sizeof(c->log_path))
      n = sizeof(c->log_path) - 1;
    memcpy(c->log_path, c->cin.data + c->target.path.off, n);
    c->log_path[n] = '\0';
  }
  if (hp_api->log_enabled(h->ctx, PH_LOG_DEBUG)) {
    char target[300];
    if (h->fs.log_target)
      PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request target",
             PH_UINT("stream", c->fs.id),
             PH_STR("method_class", hp_method_classes[c->method_class]),
             PH_STR("target", access_target_text(c->target.host,
                                                 c->target.port, target,
                                                 sizeof(target))));
    else
      PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request target",
             PH_UINT("stream", c->fs.id),
             PH_STR("method_class", hp_method_classes[c->method_class]));
  }
  /* CONNECT has no body: what follows its head is the tunnel's. */
  int kind = HB_NONE, has_length;
  uint64_t length = 0;
  if (c->method_class == MC_FORWARD &&
      (st = hp_head_framing(&c->req, c->cin.data, &kind, &length,
                            &has_length))) {
    PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request refused",
           PH_UINT("stream", c->fs.id), PH_STR("reason", st == 501 ? "unsupported transfer coding"
                                      : "ambiguous body framing"));
    return hp_want_reply(c, st, AFTER_CLOSE);
  }
  if (prepare_upstream(c, kind, length) < 0)
    return hp_want_reply(c, 503, AFTER_CLOSE);
  /* The value stays in cin (before off) until the next head. */
  c->has_authz =
      hp_head_find(&c->req, c->cin.data, "proxy-authorization", &c->authz) != 0;
  /* The head's bytes are not needed any more: body bytes follow. */
  c->cin.off = c->req.head_len;
  c->x.cdec = c->cin.off;
  return HP_AUTHORIZE;
}

const char *hp_request_header(void *arg, const char *name, size_t *len) {
  conn *c = arg;
  hp_head_span v;
  if (len)
    *len = 0;
  /* Only for the open of a parsed head, whose bytes are still in cin
   * where the parser saw them (update_io does not compact cin in
   * S_AUTH and S_OPEN). */
  if (!name || !len || c->state != S_OPEN || !c->req.done || c->req.failed ||
      !c->cin.data || strcasecmp(name, "proxy-authorization") == 0 ||
      !hp_head_find(&c->req, c->cin.data, name, &v) ||
      (size_t)v.off + v.len > c->cin.len)
    return NULL;
  *len = v.len;
  return c->cin.data + v.off;
}

void hp_request_guess_class(conn *c) {
  c->method_class = c->cin.len >= 8 && memcmp(c->cin.data, "CONNECT ", 8) == 0
                        ? MC_CONNECT
                        : MC_FORWARD;
}

int hp_request_parse(conn *c) {
  int r = hp_head_parse(&c->req, c->cin.data, c->cin.len);
  if (r == HH_MORE)
    return HP_WAIT;
  if (r == HH_ERROR) {
    hp_request_guess_class(c);
    return hp_want_reply(c, c->req.status, AFTER_CLOSE);
  }
  frontend_session_deadline(&c->fs, 0);
  c->timer_kind = T_NONE;
  return on_request_head(c);
}

int hp_request_read(conn *c) {
  hp *h = c->hp;
  size_t got = 0;
  int r = hp_buf_read(hp_client_end(c), &c->cin, hp_head_cap(h), NULL, &got);
  if (r == RD_AGAIN)
    return HP_WAIT;
  if (r != RD_DATA) /* EOF or error: nothing to answer */
    return HP_CLOSE;
  if (c->timer_kind == T_KEEPALIVE)
    hp_arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
  if (c->timer_kind == T_NEXT)
    return HP_WAIT; /* the timer parses what is there */
  return HP_PARSE;
}

int hp_request_begin(conn *c) {
  hp *h = c->hp;
  hp_exchange *x = &c->x;
  if (frontend_server_stopping(&h->fs) && !hp_pending(&c->cin))
    return HP_CLOSE;
  c->state = S_HEAD;
  c->open_failed = 0;
  hp_head_free(&c->req);
  hp_head_free(&x->resp);
  hp_head_init(&c->req, HTTP_REQUEST, &h->conf.lim);
  hp_head_init(&x->resp, HTTP_RESPONSE, &h->conf.lim);
  hp_buf_free(&c->cout);
  hp_buf_free(&x->uout);
  hp_buf_wipe(&x->upx);
  if (!c->up.idle)
    hp_buf_free(&x->uin);
  else
    x->uin.off = x->uin.len = 0;
  if (hp_pending(&c->cin) == 0)
    hp_buf_free(&c->cin); /* an idle connection holds no buffer */
  else
    hp_buf_compact(&c->cin, NULL);
  x->cdec = x->udec = 0;
  c->status = 0;
  c->method_class = MC_FORWARD;
  c->counted = x->reused = x->retried = 0;
  x->resp_seen = x->resp_started = x->close_after = x->via_proxy = 0;
  x->up_dirty = 0;
  c->bytes_up = c->bytes_down = x->body_sent = 0;
  c->t_req_us = 0;
  c->has_authz = c->authed = c->target_ok = 0;
  c->log_path[0] = '\0';
  if (c->begun)
    frontend_session_new_id(&c->fs); /* one stream id per request */
  c->begun = 1;
  if (hp_pending(&c->cin)) {
    /* Parsed on the next loop turn, not here: a client that pipelines
     * many refused requests gets one request per turn, like the
     * others. */
    hp_arm_timer(c, T_NEXT, 1);
  } else if (c->first) {
    hp_arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
  } else {
    hp_arm_timer(c, T_KEEPALIVE, h->conf.idle_timeout_ms);
  }
  return HP_WAIT;
}

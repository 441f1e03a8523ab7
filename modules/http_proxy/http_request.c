/* http_proxy: request heads. Waiting for one (between requests too),
 * parsing it, and acting on a complete one: its target, its body framing
 * (strict: a request whose framing could be read two ways is refused),
 * the rewritten head for upstream, then authorization. */
#include <string.h>

#include "http_proxy_int.h"

static int on_request_head(conn *c) {
  hp *h = c->hp;
  c->t_req_us = now_us();
  c->method_class =
      hh_method(&c->req) == HTTP_CONNECT ? MC_CONNECT : MC_FORWARD;
  int st = hh_target_parse(&c->req, c->cin.data, &c->target);
  if (st)
    return reply(c, st, AFTER_CLOSE);
  PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request target",
         PH_STR("method_class", hp_method_classes[c->method_class]),
         PH_STR("host", c->target.host), PH_INT("port", c->target.port));
  /* CONNECT has no body: what follows its head is the tunnel's. */
  int kind = HB_NONE, has_length;
  uint64_t length = 0;
  if (c->method_class == MC_FORWARD &&
      (st = hh_framing(&c->req, c->cin.data, &kind, &length, &has_length))) {
    PH_LOG(hp_api, h->ctx, PH_LOG_DEBUG, "http request refused",
           PH_STR("reason", st == 501 ? "unsupported transfer coding"
                                      : "ambiguous body framing"));
    return reply(c, st, AFTER_CLOSE);
  }
  if (start_request_body(c, kind, length) < 0)
    return reply(c, 503, AFTER_CLOSE);
  hh_span v;
  int has = hh_find(&c->req, c->cin.data, "proxy-authorization", &v);
  /* The head's bytes are not needed any more: body bytes follow. */
  c->cin.off = c->req.head_len;
  c->cdec = c->cin.off;
  int a = authorize(c, has ? c->cin.data + v.off : NULL, has ? v.len : 0);
  if (a != 0)
    return a == GONE ? GONE : 0;
  return proceed(c);
}

void guess_class(conn *c) {
  c->method_class = c->cin.len >= 8 && memcmp(c->cin.data, "CONNECT ", 8) == 0
                        ? MC_CONNECT
                        : MC_FORWARD;
}

int parse_request(conn *c) {
  if (conn_dead(c))
    return GONE;
  int r = hh_parse(&c->req, c->cin.data, c->cin.len);
  if (r == HH_MORE)
    return 0;
  if (r == HH_ERROR) {
    guess_class(c);
    return reply(c, c->req.status, AFTER_CLOSE);
  }
  hp_api->timer_set(c->timer, 0, 0);
  c->timer_kind = T_NONE;
  return on_request_head(c);
}

int begin_head(conn *c) {
  hp *h = c->hp;
  if (conn_dead(c))
    return GONE;
  if (h->stopping && !pending(&c->cin))
    return conn_close(c);
  c->state = S_HEAD;
  hh_free(&c->req);
  hh_free(&c->resp);
  hh_init(&c->req, HTTP_REQUEST, &h->conf.lim);
  hh_init(&c->resp, HTTP_RESPONSE, &h->conf.lim);
  buf_free(&c->cout);
  buf_free(&c->uout);
  if (!c->up_idle)
    buf_free(&c->uin);
  else
    c->uin.off = c->uin.len = 0;
  if (pending(&c->cin) == 0)
    buf_free(&c->cin); /* an idle connection holds no buffer */
  else
    buf_compact(&c->cin, NULL);
  c->cdec = c->udec = 0;
  c->status = 0;
  c->method_class = MC_FORWARD;
  c->counted = c->reused = c->retried = 0;
  c->resp_seen = c->resp_started = c->close_after = 0;
  c->up_dirty = 0;
  c->bytes_up = c->bytes_down = c->body_sent = 0;
  c->t_req_us = 0;
  c->open_id = c->auth_id = 0;
  if (pending(&c->cin)) {
    /* Parsed on the next loop turn, not here: a client that pipelines
     * many refused requests must not make this recurse. */
    arm_timer(c, T_NEXT, 1);
  } else if (c->first) {
    arm_timer(c, T_HEADER, h->conf.header_timeout_ms);
  } else {
    arm_timer(c, T_KEEPALIVE, h->conf.idle_timeout_ms);
  }
  update_io(c);
  return 0;
}

/* http_proxy: Proxy-Authorization: Basic, checked by the "authorizer"
 * service when auth = password. A value verified once is remembered on
 * its connection, so later requests on it are not checked again, until
 * a reload (the user may have been removed): then it is checked anew. */
#include <stdlib.h>
#include <string.h>

#include "http_proxy_int.h"

/* A Proxy-Authorization value remembered as verified on a connection. */
#define MAX_TOKEN 1024

static int deny(conn *c, int status);

static void auth_result(conn *c, int verdict) {
  hp *h = c->hp;
  c->auth_id = 0;
  int allow = verdict == PH_AUTH_ALLOW;
  stream_metrics_stage(&h->sm, SM_AUTHORIZATION,
                       allow ? SM_SUCCESS : SM_REJECTED,
                       seconds_since(c->t_auth_us));
  if (!allow) {
    wipe_free(&c->pending_token, &c->pending_len);
    deny(c, verdict == PH_AUTH_UNAVAILABLE ? 503 : 407);
    return;
  }
  memcpy(c->principal, c->pending_user, sizeof(c->principal));
  wipe_free(&c->token, &c->token_len);
  c->token = c->pending_token;
  c->token_len = c->pending_len;
  c->token_generation = c->auth_generation;
  c->pending_token = NULL;
  c->pending_len = 0;
  proceed(c);
}

static void auth_done(void *arg, int verdict) {
  conn *c = arg;
  conn_enter(c);
  auth_result(c, verdict);
  conn_leave(c);
}

static int deny(conn *c, int status) {
  int after = status == 407 && c->req_body.done && hh_keep_alive(&c->req)
                  ? AFTER_NEXT
                  : AFTER_CLOSE;
  return reply(c, status, after) == GONE ? GONE : 1;
}

int authorize(conn *c, const char *value, size_t len) {
  hp *h = c->hp;
  if (h->conf.auth == AUTH_NONE)
    return 0;
  if (!value)
    return deny(c, 407);
  if (c->token && c->token_len == len &&
      c->token_generation == h->generation &&
      memcmp(c->token, value, len) == 0)
    return 0; /* verified earlier on this connection, since the reload */
  char pair[520];
  const char *user, *pass;
  size_t ulen, plen;
  if (len > MAX_TOKEN ||
      hh_basic_decode(value, len, pair, sizeof(pair), &user, &ulen, &pass,
                      &plen) < 0) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 407);
  }
  memcpy(c->pending_user, user, ulen + 1);
  c->pending_token = malloc(len);
  if (!c->pending_token) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 503);
  }
  memcpy(c->pending_token, value, len);
  c->pending_len = len;
  c->state = S_AUTH;
  c->t_auth_us = now_us();
  c->auth_generation = h->generation;
  int64_t id = h->authorizer->check_password(h->authorizer_self, user, ulen,
                                              pass, plen, auth_done, c);
  explicit_bzero(pair, sizeof(pair));
  if (id <= 0) {
    wipe_free(&c->pending_token, &c->pending_len);
    return deny(c, 407);
  }
  c->auth_id = id;
  arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  update_io(c);
  return 1;
}

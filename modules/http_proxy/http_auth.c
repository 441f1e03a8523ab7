/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy, phase: Proxy-Authorization: Basic, checked by the
 * "authorizer" service when auth = password. A value verified once is
 * remembered on its connection, so later requests on it are not checked
 * again, until a reload (the user may have been removed): then it is
 * checked anew. Returns what comes next. */
#include <stdlib.h>
#include <string.h>

#include "http_proxy_int.h"

/* A Proxy-Authorization value remembered as verified on a connection. */
#define MAX_TOKEN 1024

static int deny(conn *c, int status) {
  int after = status == 407 && c->x.req_body.done && hp_head_keep_alive(&c->req)
                  ? AFTER_NEXT
                  : AFTER_CLOSE;
  return hp_want_reply(c, status, after);
}

int hp_auth_result(conn *c, int verdict) {
  hp *h = c->hp;
  hp_credentials *cr = &c->cred;
  int allow = verdict == PH_AUTH_ALLOW;
  stream_metrics_stage(&h->sm, SM_AUTHORIZATION,
                       allow ? SM_SUCCESS : SM_REJECTED,
                       mono_seconds_since(cr->t_check_us));
  if (!allow) {
    hp_wipe_free(&cr->pending_token, &cr->pending_len);
    return deny(c, verdict == PH_AUTH_UNAVAILABLE ? 503 : 407);
  }
  memcpy(cr->principal, cr->pending_user, sizeof(cr->principal));
  hp_wipe_free(&cr->token, &cr->token_len);
  cr->token = cr->pending_token;
  cr->token_len = cr->pending_len;
  cr->token_generation = cr->check_generation;
  cr->pending_token = NULL;
  cr->pending_len = 0;
  c->authed = 1;
  return HP_PROCEED;
}

int hp_auth_check(conn *c) {
  hp *h = c->hp;
  hp_credentials *cr = &c->cred;
  if (h->conf.auth == AUTH_NONE)
    return HP_PROCEED;
  if (!c->has_authz)
    return deny(c, 407);
  const char *value = c->cin.data + c->authz.off;
  size_t len = c->authz.len;
  if (cr->token && cr->token_len == len &&
      cr->token_generation == h->generation &&
      memcmp(cr->token, value, len) == 0) {
    c->authed = 1;
    return HP_PROCEED; /* verified earlier on this connection, since the
                          reload */
  }
  char pair[520];
  const char *user, *pass;
  size_t ulen, plen;
  if (len > MAX_TOKEN || hp_head_basic_decode(value, len, pair, sizeof(pair),
                                              &user, &ulen, &pass, &plen) < 0) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 407);
  }
  memcpy(cr->pending_user, user, ulen + 1);
  cr->pending_token = malloc(len);
  if (!cr->pending_token) {
    explicit_bzero(pair, sizeof(pair));
    return deny(c, 503);
  }
  memcpy(cr->pending_token, value, len);
  cr->pending_len = len;
  c->state = S_AUTH;
  cr->t_check_us = mono_us();
  cr->check_generation = h->generation;
  hp_arm_timer(c, T_IDLE, h->conf.idle_timeout_ms);
  /* The verdict comes to the dispatcher (hp_auth_result); an authorizer
   * that answers inside the call has run it already. */
  int r = frontend_session_auth(&c->fs, user, ulen, pass, plen);
  explicit_bzero(pair, sizeof(pair));
  if (r != PH_OK) {
    hp_wipe_free(&cr->pending_token, &cr->pending_len);
    return deny(c, 407);
  }
  return HP_WAIT;
}

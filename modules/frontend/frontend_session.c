/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontend session skeleton (frontend_session.h): a session's entries
 * under the guard, its watcher, deadline and hangup probe, its check and
 * open with cancellation, its relay, its one end. */
#include "frontend_session.h"


#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/clocks.h"
#include "frontend_services.h"
#include "hangup.h"

/* ---- the lease of the relay's target ---------------------------------- */

/* Once: the pointer is dead after end. */
static void end_lease(frontend_session *s, int how) {
  ph_open_lease *l = s->lease;
  s->lease = NULL;
  ph_open_lease_end(l, how);
}

/* ---- entries -------------------------------------------------------- */

void frontend_session_enter(frontend_session *s) { guard_enter(&s->g); }

void frontend_session_leave(frontend_session *s) {
  if (guard_leave(&s->g))
    s->srv->ops->free(s->owner);
}

/* The deadline, or the next hangup probe if that comes first. */
static void arm_timer(frontend_session *s) {
  const ph_api *api = s->srv->api;
  uint64_t after = 0; /* stopped */
  if (s->deadline_ms > 0) {
    int64_t left = s->deadline_ms - api->now_ms(s->srv->ctx);
    after = left > 0 ? (uint64_t)left : 1;
  }
  if (s->probing && (after == 0 || after > HANGUP_PROBE_MS))
    after = HANGUP_PROBE_MS;
  if (s->timer)
    api->timer_set(s->timer, after, 0);
}

static void on_timer(frontend_session *s) {
  const frontend_session_ops *ops = s->srv->ops;
  if (s->probing && hangup_seen(s->fd))
    ops->hangup(s->owner);
  else if (s->deadline_ms == 0 ||
           s->srv->api->now_ms(s->srv->ctx) < s->deadline_ms)
    arm_timer(s); /* a probe before the deadline */
  else {
    s->deadline_ms = 0;
    ops->deadline(s->owner);
  }
}

static void session_timer(ph_timer *t, void *arg) {
  (void)t;
  frontend_session *s = arg;
  frontend_session_enter(s);
  on_timer(s);
  frontend_session_leave(s);
}

static void session_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  frontend_session *s = arg;
  frontend_session_enter(s);
  if (s->relay)
    relay_client_io(s->relay, revents); /* may end it, and close s */
  else
    s->srv->ops->client_io(s->owner, revents);
  frontend_session_leave(s);
}

/* The session joins and leaves its server's list (and clients gauge);
 * the last one out of a stopping server ends its drain. */
static void server_link(frontend_server *srv, frontend_session *s) {
  ilist_push_front(&srv->sessions, &s->link);
  srv->n_sessions++;
  if (srv->clients)
    srv->api->gauge_add(srv->clients, 1);
}

static void server_unlink(frontend_server *srv, frontend_session *s) {
  ilist_remove(&s->link);
  srv->n_sessions--;
  if (srv->clients)
    srv->api->gauge_add(srv->clients, -1);
  listener_release(srv->listener);
  if (srv->stop_pending && srv->n_sessions == 0) {
    srv->stop_pending = 0;
    srv->api->stop_done(srv->ctx);
  }
}

int frontend_session_start(frontend_server *srv, frontend_session *s,
                           void *owner, int fd, const struct sockaddr *peer,
                           socklen_t peerlen) {
  *s = (frontend_session){.srv = srv, .owner = owner, .fd = fd};
  if (peer && peerlen > 0)
    memcpy(&s->peer, peer,
           peerlen < sizeof(s->peer) ? (size_t)peerlen : sizeof(s->peer));
  frontend_session_new_id(s);
  server_link(srv, s);
  s->io = srv->api->io_new(srv->ctx, fd, 0, session_io, s);
  s->timer = srv->api->timer_new(srv->ctx, session_timer, s);
  return s->io && s->timer ? PH_OK : PH_ENOMEM;
}

uint64_t frontend_session_new_id(frontend_session *s) {
  s->id = ++s->srv->last_id;
  return s->id;
}

void frontend_session_close(frontend_session *s, int how) {
  frontend_server *srv = s->srv;
  const ph_api *api = srv->api;
  if (guard_dead(&s->g))
    return;
  s->g.dead = 1; /* from here on: ended, once */
  srv->ops->end(s->owner, how);
  frontend_session_cancel_auth(s);
  frontend_session_cancel_open(s);
  if (s->relay) {
    relay_abort(s->relay); /* closes the client's socket and the target */
    s->relay = NULL;
    s->fd = -1;
  }
  end_lease(s, PH_LEASE_END_CLIENT_ERROR); /* cut by us: says nothing
                                               about the target */
  api->io_free(s->io);
  api->timer_free(s->timer);
  s->io = NULL;
  s->timer = NULL;
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  server_unlink(srv, s);
  if (guard_end(&s->g))
    srv->ops->free(s->owner);
}

/* ---- the watcher and the deadline ------------------------------------ */

void frontend_session_watch(frontend_session *s, int events) {
  if (guard_dead(&s->g) || !s->io)
    return;
  if (events != s->events) {
    s->srv->api->io_set(s->io, events);
    s->events = events;
  }
  int probe = (s->auth_id > 0 || s->open_id > 0 || s->val_id > 0) &&
              !(events & PH_READ);
  if (probe != s->probing) {
    s->probing = (unsigned)probe;
    arm_timer(s);
  }
}

void frontend_session_deadline(frontend_session *s, int64_t ms) {
  if (guard_dead(&s->g))
    return;
  s->deadline_ms = ms > 0 ? s->srv->api->now_ms(s->srv->ctx) + ms : 0;
  arm_timer(s);
}

/* ---- the check ------------------------------------------------------- */

static void auth_answer(void *arg, int verdict) {
  frontend_session *s = arg;
  frontend_session_enter(s);
  s->auth_id = 0;
  if (s->in_call)
    s->answered = 1;
  s->srv->ops->auth_done(s->owner, verdict);
  frontend_session_leave(s);
}

int frontend_session_auth(frontend_session *s, const char *user,
                          size_t user_len, const char *pass,
                          size_t pass_len) {
  frontend_server *srv = s->srv;
  if (guard_dead(&s->g) || !srv->authorizer || s->auth_id > 0)
    return PH_ESTATE;
  s->in_call = 1;
  s->answered = 0;
  int64_t id = srv->authorizer->check_password(srv->authorizer_self, user,
                                               user_len, pass, pass_len,
                                               auth_answer, s);
  s->in_call = 0;
  if (id <= 0)
    return id < 0 ? (int)id : PH_EINVAL;
  if (!s->answered)
    s->auth_id = id;
  return PH_OK;
}

void frontend_session_cancel_auth(frontend_session *s) {
  if (s->auth_id > 0 && s->srv->authorizer)
    s->srv->authorizer->cancel(s->srv->authorizer_self, s->auth_id);
  s->auth_id = 0;
}

/* ---- the open -------------------------------------------------------- */

/* The connector cuts the stream (connector.h on_cut; the pool, when the
 * upstream proxy left the gateway's view and the drain is over: issue 22
 * item 14): the whole client connection closes, which ends the lease,
 * whoever holds it (the relay, or the frontend between two requests),
 * with CLIENT_ERROR: nothing against the target. */
static void session_cut(void *arg) {
  frontend_session *s = arg;
  frontend_session_enter(s);
  frontend_session_close(s, FRONTEND_END_LOG);
  frontend_session_leave(s);
}

/* A success's lease (open_lease.h: the extension, or an older
 * connector's field); a failure's is never taken (none there). */
static ph_open_lease *result_lease(const ph_open_result *res) {
  return res->code == PH_OPEN_OK ? ph_open_result_lease(res) : NULL;
}

/* Whether a success's stream goes to an HTTP forward proxy, and what to
 * add (open_http_forward.h); 0 and NULL otherwise. */
static void result_extras(frontend_session *s, const ph_open_result *res,
                          int code) {
  s->open_http_proxy = 0;
  s->open_proxy_auth = NULL;
  s->open_proxy_auth_len = 0;
  const char *hop = ph_open_result_upstream(res);
  snprintf(s->open_upstream, sizeof(s->open_upstream), "%s", hop ? hop : "");
  if (code == PH_OPEN_OK)
    s->open_http_proxy = ph_open_result_http_proxy(
        res, &s->open_proxy_auth, &s->open_proxy_auth_len);
}

static void open_answer(void *arg, const ph_open_result *res) {
  frontend_session *s = arg;
  frontend_server *srv = s->srv;
  frontend_session_enter(s);
  s->open_id = 0;
  if (s->in_call)
    s->answered = 1;
  stream_end target;
  ph_open_lease *lease = result_lease(res);
  int code = relay_take_open(res, &target);
  if (code != PH_OPEN_OK && lease) {
    /* A success without a socket or a stream (a connector's bug): there
     * is nothing to hold, so its lease ends now. */
    ph_open_lease_end(lease, PH_LEASE_END_CLIENT_ERROR);
    lease = NULL;
  }
  ph_open_lease_on_cut(lease, session_cut, s); /* lives as long as s */
  stream_metrics_stage(srv->sm, SM_OPEN, stream_metrics_result(code),
                       mono_seconds_since(s->t_open_us));
  stream_metrics_open(srv->sm, code, stream_metrics_mode_of(res));
  result_extras(s, res, code);
  srv->ops->open_done(s->owner, code, res->stage, target, lease);
  frontend_session_leave(s);
}

/* An open that failed in the call (the connector's refusal, a misuse):
 * counted here, as an answered open is, for every frontend. */
static int open_failed(frontend_server *srv, int rc) {
  stream_metrics_open(srv->sm, PH_OPEN_INTERNAL_ERROR, SM_STRICT);
  return rc;
}

int frontend_session_open(frontend_session *s, const char *host,
                          uint16_t port, const char *principal) {
  frontend_server *srv = s->srv;
  if (guard_dead(&s->g) || !srv->connector || s->open_id > 0)
    return open_failed(srv, PH_ESTATE);
  /* The upstream may be a socket or a stream (stream.h); a lease is
   * honoured (open_lease.h). */
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = port,
                        .host = host,
                        .principal = principal,
                        .flags = PH_OPEN_F_STREAM,
                        .listener = srv->name,
                        .headers = s->headers};
  ph_open_lease_ask lease_ask;
  ph_open_http_forward_ask fwd_ask;
  ph_open_lease_request(&rq, &lease_ask);
  if (s->open_forward)
    ph_open_http_forward_request(&rq, &fwd_ask);
  s->t_open_us = mono_us();
  s->open_upstream[0] = '\0';
  s->in_call = 1;
  s->answered = 0;
  int64_t id = srv->connector->open(srv->connector_self, &rq, open_answer, s);
  s->in_call = 0;
  if (id <= 0)
    return open_failed(srv, id < 0 ? (int)id : PH_EINVAL);
  if (!s->answered)
    s->open_id = id;
  return PH_OK;
}

void frontend_session_cancel_open(frontend_session *s) {
  if (s->val_id > 0 && s->srv->validation)
    s->srv->validation->cancel(s->srv->validation_self, s->val_id);
  s->val_id = 0;
  if (s->open_id > 0 && s->srv->connector)
    s->srv->connector->cancel(s->srv->connector_self, s->open_id);
  s->open_id = 0;
}

/* ---- the validation before the open ---------------------------------- */

/* Not opened: a denial (or a failed open) reported as the open's answer,
 * counted as the connector's answers are. */
static void open_refused(frontend_session *s, int code, int stage) {
  frontend_server *srv = s->srv;
  stream_end none = {-1, NULL};
  s->open_upstream[0] = '\0';
  s->open_http_proxy = 0;
  s->open_proxy_auth = NULL;
  s->open_proxy_auth_len = 0;
  stream_metrics_open(srv->sm, code, SM_STRICT);
  srv->ops->open_done(s->owner, code, stage, none, NULL);
}

static void validation_over(frontend_session *s, int verdict) {
  frontend_server *srv = s->srv;
  int allow = verdict == PH_VALIDATION_ALLOW;
  stream_metrics_stage(srv->sm, SM_REMOTE_VALIDATION,
                       allow                                   ? SM_SUCCESS
                       : verdict == PH_VALIDATION_DENY         ? SM_REJECTED
                                                               : SM_FAILURE,
                       mono_seconds_since(s->t_val_us));
  if (!allow)
    open_refused(s, PH_OPEN_FORBIDDEN, PH_STAGE_AUTHORIZATION);
  else if (frontend_session_open(s, s->v_host, s->v_port, s->v_principal) !=
               PH_OK &&
           !guard_dead(&s->g))
    open_refused(s, PH_OPEN_INTERNAL_ERROR, PH_STAGE_PROTOCOL);
}

static void validation_answer(void *arg, int verdict) {
  frontend_session *s = arg;
  frontend_session_enter(s);
  s->val_id = 0;
  validation_over(s, verdict);
  frontend_session_leave(s);
}

int frontend_session_open_validated(frontend_session *s, const char *host,
                                    uint16_t port, const char *principal,
                                    const char *user, size_t user_len,
                                    const char *pass, size_t pass_len) {
  frontend_server *srv = s->srv;
  if (!srv->validation) /* the one test on the path without validation */
    return frontend_session_open(s, host, port, principal);
  if (guard_dead(&s->g) || s->open_id > 0 || s->val_id > 0)
    return open_failed(srv, PH_ESTATE);
  ph_validation_request rq = {.size = sizeof(rq),
                              .protocol = PH_PROTO_TCP,
                              .port = port,
                              .host = host,
                              .agent = frontend_connector_agent(
                                  srv->ctx, srv->api),
                              .username = user ? user : "",
                              .username_len = user ? user_len : 0,
                              .password = pass ? pass : "",
                              .password_len = pass ? pass_len : 0};
  s->v_host = host;
  s->v_port = port;
  s->v_principal = principal;
  s->t_val_us = mono_us();
  int64_t id = srv->validation->validate(srv->validation_self, &rq,
                                         validation_answer, s);
  if (id == PH_VALIDATION_BYPASS)
    return frontend_session_open(s, host, port, principal);
  if (id > 0) {
    s->val_id = id;
    return PH_OK;
  }
  /* Refused by the provider (its bound, a malformed request): fail
   * closed, as a denial, answered now. */
  frontend_session_enter(s);
  validation_over(s, PH_VALIDATION_UNAVAILABLE);
  frontend_session_leave(s);
  return PH_OK;
}

/* ---- the relay ------------------------------------------------------- */

static void relay_first_down(void *arg) {
  frontend_session *s = arg;
  frontend_session_enter(s);
  stream_metrics_stage(s->srv->sm, SM_TTFB, SM_SUCCESS,
                       mono_seconds_since(s->t_relay_us));
  ph_open_lease_first_byte(s->lease); /* the relay calls this once */
  frontend_session_leave(s);
}

static void relay_finished(void *arg, const relay_stats *st, int end) {
  frontend_session *s = arg;
  frontend_server *srv = s->srv;
  frontend_session_enter(s);
  s->relay = NULL; /* ended: it closed both ends */
  s->fd = -1;
  end_lease(s, relay_lease_end(end, st->error_side));
  srv->api->inc(srv->sm->bytes[SM_TCP][SM_UP], st->up);
  srv->api->inc(srv->sm->bytes[SM_TCP][SM_DOWN], st->down);
  srv->ops->relay_done(s->owner, st, end);
  frontend_session_leave(s);
}

int frontend_session_relay(frontend_session *s, stream_end target,
                           ph_open_lease *lease, const void *pre,
                           size_t pre_len, const frontend_relay_opts *o) {
  frontend_server *srv = s->srv;
  relay_opts ro = {.idle_timeout_ms = o->idle_timeout_ms,
                   .buffer_size = o->buffer_size,
                   .use_splice = o->use_splice,
                   .first_down = relay_first_down,
                   .done = relay_finished,
                   .arg = s,
                   .client_io = s->io}; /* session_io passes events on */
  stream_end client = end_fd(s->fd);
  s->io = NULL;
  s->events = 0;
  s->fd = -1; /* the relay owns it, even on failure */
  s->deadline_ms = 0;
  s->probing = 0;
  arm_timer(s);
  s->t_relay_us = mono_us();
  s->lease = lease; /* the relay's callbacks end it (relay_finished) */
  s->relay = relay_start(srv->api, srv->ctx, client, target, pre, pre_len,
                         &ro);
  if (!s->relay) {
    end_lease(s, PH_LEASE_END_CLIENT_ERROR); /* closed by relay_start */
    return PH_ENOMEM;
  }
  return PH_OK;
}

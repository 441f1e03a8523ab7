/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: leaf helpers every phase uses, calling no phase back: the
 * connection's timer kinds, the upstream's release, counting and logging
 * a request, wiping secrets. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/access_log.h"
#include "http_proxy_int.h"

static int status_class(int status) {
  if (status < 300)
    return SC_2XX;
  if (status < 400)
    return SC_3XX;
  if (status < 500)
    return SC_4XX;
  return SC_5XX;
}

void hp_arm_timer(conn *c, int kind, int64_t ms) {
  if (hp_conn_dead(c))
    return;
  c->timer_kind = kind;
  c->last_ms = hp_api->now_ms(c->hp->ctx);
  /* While the client is not read during a check or an open, the skeleton
   * probes for its hangup first; T_IDLE keeps counting idle_timeout. */
  frontend_session_deadline(&c->fs, ms > 0 ? ms : 1);
}

void hp_close_upstream(conn *c, int how) {
  hp_upstream *u = &c->up;
  int kept = u->idle;
  if (u->io) {
    hp_api->io_free(u->io);
    u->io = NULL;
    u->ev = 0;
  }
  if (u->fd >= 0) {
    close(u->fd);
    u->fd = -1;
  }
  if (u->st) {
    ph_stream_close(u->st);
    u->st = NULL;
    u->ev = 0;
  }
  if (u->active) {
    hp_api->gauge_add(c->hp->sm.active, -1);
    u->active = 0;
  }
  /* The proxy's credential dies with the lease: the pointer, and the
   * head that carried a copy of it. */
  u->proxy_auth = NULL;
  u->proxy_auth_len = 0;
  u->http_proxy = 0;
  hp_buf_wipe(&c->x.upx);
  /* After the socket or stream closed (connector.h): once, as the
   * pointer dies with it. */
  ph_open_lease *l = u->lease;
  u->lease = NULL;
  if (l)
    ph_open_lease_end(l, kept ? PH_LEASE_END_CLOSED : how);
  u->told_first = 0;
  u->idle = 0;
  u->host[0] = '\0';
}

void hp_up_first_byte(conn *c) {
  hp_upstream *u = &c->up;
  if (!u->told_first && u->lease) {
    u->told_first = 1;
    ph_open_lease_first_byte(u->lease);
  }
}

void hp_wipe_free(char **p, size_t *len) {
  if (*p) {
    explicit_bzero(*p, *len);
    free(*p);
  }
  *p = NULL;
  *len = 0;
}

void hp_count_status(conn *c, int status) {
  c->status = status;
  if (!c->counted) {
    c->counted = 1;
    hp_api->inc(c->hp->requests[c->method_class][status_class(status)], 1);
  }
}

static const char *const status_class_names[] = {"2xx", "3xx", "4xx",
                                                  "5xx"};

/* The access line (access_log.h): one per request, one per CONNECT
 * tunnel. The target (and a forwarded request's path, never its query)
 * only with log_target; the user only once verified for this request. */
void hp_access_log(conn *c) {
  hp *h = c->hp;
  if (!c->counted)
    return;
  int st = c->status;
  int parsed = c->req.done && !c->req.failed;
  int has_target = parsed && c->target_ok;
  access_line l = {
      .method = parsed ? http_method_str((enum http_method)hp_head_method(
                             &c->req))
                       : NULL,
      .user = c->authed && c->cred.principal[0] ? c->cred.principal : NULL,
      .status = status_class_names[status_class(st)],
      .code = st,
      .result = st < 400                ? "success"
                : st == 407 || st == 403 ? "rejected"
                : st == 504 || st == 408 ? "timeout"
                                         : "failure",
      .bytes_up = c->bytes_up,
      .bytes_down = c->bytes_down,
      .duration_us = c->t_req_us ? (int64_t)(mono_us() - c->t_req_us) : 0,
      .host = has_target ? c->target.host : NULL,
      .port = c->target.port,
  };
  if (has_target && c->method_class == MC_FORWARD &&
      c->target.form == HH_FORM_ABSOLUTE) {
    l.path = c->log_path[0] ? c->log_path : "/";
    l.path_len = strlen(l.path);
  }
  (void)h;
  access_log_write(&c->fs, &l, 0);
}

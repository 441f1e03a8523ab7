/* SPDX-License-Identifier: BSD-2-Clause */
/* http_proxy: leaf helpers every phase uses, calling no phase back: the
 * connection's timer kinds, the upstream's release, counting and logging
 * a request, wiping secrets. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void hp_close_upstream(conn *c) {
  hp_upstream *u = &c->up;
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
  u->idle = 0;
  u->host[0] = '\0';
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

void hp_access_log(conn *c) {
  hp *h = c->hp;
  if (!c->counted)
    return;
  PH_LOG(hp_api, h->ctx, PH_LOG_INFO, "http request",
         PH_STR("method_class", hp_method_classes[c->method_class]),
         PH_INT("status", c->status), PH_UINT("bytes_up", c->bytes_up),
         PH_UINT("bytes_down", c->bytes_down),
         PH_UINT("duration_us", c->t_req_us ? hp_now_us() - c->t_req_us : 0));
}

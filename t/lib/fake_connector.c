/* SPDX-License-Identifier: BSD-2-Clause */
/* The scriptable fake connector of the unit tests (fake_connector.h). */
#include "fake_connector.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- leases ------------------------------------------------------------- */

static void fl_on_cut(ph_open_lease *l, void (*cut)(void *), void *arg) {
  fake_lease *f = (fake_lease *)l;
  f->cut = cut;
  f->cut_arg = arg;
}

static void fl_first_byte(ph_open_lease *l) {
  fake_lease *f = (fake_lease *)l;
  if (f->first || f->ended)
    f->owner->broken++;
  f->first = 1;
  f->owner->first_bytes++;
}

static void fl_end(ph_open_lease *l, int how) {
  fake_lease *f = (fake_lease *)l;
  if (f->ended || how < 0 || how > PH_LEASE_END_CLIENT_ERROR) {
    f->owner->broken++;
    return;
  }
  f->ended = 1;
  f->how = how;
  f->owner->ends[how]++;
}

static const ph_open_lease_ops fl_ops = {.size = sizeof(ph_open_lease_ops),
                                         .first_byte = fl_first_byte,
                                         .end = fl_end,
                                         .on_cut = fl_on_cut};

ph_open_lease *fake_lease_new(fake_leases *ls) {
  if (ls->n == FAKE_LEASE_MAX)
    return NULL;
  fake_lease *f = &ls->l[ls->n++];
  memset(f, 0, sizeof(*f));
  f->base.ops = &fl_ops;
  f->owner = ls;
  return &f->base;
}

fake_lease *fake_lease_last(fake_leases *ls) {
  return ls->n > 0 ? &ls->l[ls->n - 1] : NULL;
}

int fake_lease_cut(fake_lease *l) {
  if (!l || !l->cut)
    return 0;
  l->cut(l->cut_arg);
  return 1;
}

int fake_lease_live(const fake_leases *ls) {
  int n = 0;
  for (int i = 0; i < ls->n; i++)
    n += !ls->l[i].ended;
  return n;
}

/* ---- the connector ------------------------------------------------------ */

static const fc_row fc_default = {.host = NULL};

static const fc_row *match(const fake_connector *fc, const char *host) {
  for (const fc_row *r = fc->rows; r && r->host; r++) {
    size_t n = strlen(r->host);
    if (n && r->host[n - 1] == '*' ? strncmp(host, r->host, n - 1) == 0
                                   : strcmp(host, r->host) == 0)
      return r;
  }
  return &fc_default;
}

static int dial(uint16_t port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

/* The lease and the forwarding of q's result r, as q's shape says (lx:
 * the chain's lease struct, living during the callback). */
static void shape(fake_connector *fc, const fc_pending *q, ph_open_result *r,
                  ph_open_lease_res *lx) {
  const fc_shape *sh = &q->shape;
  int asked = q->lease_asked;
  if (sh->lease == FC_LEASE_FIELD)
    asked = asked ? PH_OPEN_ASKED_FLAG : 0;
  else if (sh->lease == FC_LEASE_EXT)
    asked = asked ? PH_OPEN_ASKED_EXT : 0;
  else if (sh->lease == FC_LEASE_NONE)
    asked = 0;
  if (asked) {
    ph_open_lease *l = fake_lease_new(&fc->lease);
    if (l)
      ph_open_lease_give(r, lx, l, asked);
  }
  if (sh->fwd == FC_FWD_NONE)
    return;
  int k = fc->n_fwd++ % FC_FWD_MAX;
  ph_open_http_forward_res *x = &fc->fwd[k].x;
  ph_open_http_forward *old = &fc->fwd[k].old;
  uint32_t alen = sh->proxy_auth ? (uint32_t)strlen(sh->proxy_auth) : 0;
  switch (sh->fwd) {
  case FC_FWD_ASKED:
    ph_open_http_forward_give(r, x, old, q->fwd_asked, sh->proxy_auth, alen);
    break;
  case FC_FWD_EXT:
    x->proxy_authorization = sh->proxy_auth;
    x->proxy_authorization_len = alen;
    ph_open_ext_push(&r->ext, &x->ext, PH_OPEN_EXT_HTTP_FORWARD,
                     sh->fwd_size ? sh->fwd_size : sizeof(*x));
    break;
  case FC_FWD_FLAG:
  case FC_FWD_POINTER:
    *old = (ph_open_http_forward){.size = sh->fwd_size ? sh->fwd_size
                                                       : sizeof(*old),
                                  .proxy_authorization = sh->proxy_auth,
                                  .proxy_authorization_len = alen};
    r->http_forward = old;
    if (sh->fwd == FC_FWD_FLAG)
      r->flags |= PH_OPEN_R_HTTP_PROXY;
    break;
  case FC_FWD_NONE:
    break;
  }
}

/* Answers the open q and frees its slot. */
static fc_request *logged(fake_connector *fc, int64_t id) {
  return id >= 1 && id <= FC_LOG_MAX ? &fc->log[id - 1] : NULL;
}

static void answer(fc_pending *q) {
  fake_connector *fc = q->fc;
  fc_request *lg = logged(fc, q->id);
  if (lg)
    lg->answered = 1;
  ph_open_result r = {.size = sizeof(r), .fd = -1};
  r.code = q->code;
  if (r.code == PH_OPEN_OK && q->shape.no_socket) {
    /* no socket: the caller must refuse the success */
  } else if (r.code == PH_OPEN_OK) {
    if (q->row->give == FC_SOCKETPAIR) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        if (q->row->peer_nonblock)
          fcntl(sv[1], F_SETFL, O_NONBLOCK);
        if (fc->peer >= 0)
          close(fc->peer);
        fc->peer = sv[1];
        r.fd = sv[0];
      }
    } else {
      r.fd = dial(q->row->port ? q->row->port : q->port);
    }
    if (r.fd < 0)
      r.code = PH_OPEN_CONNECTION_REFUSED;
  }
  if (r.code == PH_OPEN_OK) {
    r.stage = PH_STAGE_NONE;
  } else {
    r.stage = q->row->stage ? q->row->stage : PH_STAGE_CONNECT;
    r.retryable = q->row->retryable;
    r.retry_after_ms = q->row->retry_after_ms;
  }
  ph_open_lease_res lx;
  ph_open_ext junk;
  if (r.code == PH_OPEN_OK || q->shape.on_failure)
    shape(fc, q, &r, &lx);
  if (q->shape.junk)
    ph_open_ext_push(&r.ext, &junk, 999, sizeof(junk));
  if (q->shape.v16) {
    r.size = offsetof(ph_open_result, ext);
    r.ext = (const ph_open_ext *)(uintptr_t)1; /* beyond size: never read */
  }
  if (fc->decorate)
    fc->decorate(fc->hook_arg, q, &r);
  ph_open_cb cb = q->cb;
  void *arg = q->arg;
  q->id = 0;
  fc->answered++;
  cb(arg, &r);
}

static void answer_cb(ph_timer *t, void *arg) {
  fc_pending *q = arg;
  q->fc->api->timer_free(t);
  q->t = NULL;
  answer(q);
}

static void answer_later(fc_pending *q, int ms) {
  q->t = q->fc->api->timer_new(q->fc->ctx, answer_cb, q);
  q->fc->api->timer_set(q->t, (uint64_t)(ms > 0 ? ms : 1), 0);
}

static void record(fake_connector *fc, int64_t id,
                   const ph_open_request *rq) {
  fc_request *l = &fc->last;
  memset(l, 0, sizeof(*l));
  l->id = id;
  snprintf(l->host, sizeof(l->host), "%s", rq->host);
  l->port = rq->port;
  l->flags = rq->flags;
  snprintf(l->principal, sizeof(l->principal), "%s",
           rq->principal ? rq->principal : "(none)");
  snprintf(l->listener, sizeof(l->listener), "%s",
           rq->listener ? rq->listener : "(none)");
  snprintf(l->session, sizeof(l->session), "(none)");
  l->saw_proxy_authz = 0;
  l->lease_asked = ph_open_lease_asked(rq);
  l->fwd_asked = ph_open_http_forward_asked(rq);
  if (rq->headers) {
    size_t n = 0;
    const char *v = rq->headers->get(rq->headers->arg, "x-session", &n);
    l->header_calls++;
    if (v)
      snprintf(l->session, sizeof(l->session), "[%.*s]", (int)n, v);
    l->saw_proxy_authz =
        rq->headers->get(rq->headers->arg, "Proxy-Authorization", &n) != NULL;
  }
  fc_request *lg = logged(fc, id);
  if (lg)
    *lg = *l;
  fc->n_log++;
}

static int64_t fc_open(void *self, const ph_open_request *rq, ph_open_cb cb,
                       void *arg) {
  fake_connector *fc = self;
  if (!rq || !rq->host || rq->port == 0)
    return PH_EINVAL;
  int rc = fc->admit ? fc->admit(fc->hook_arg, rq) : PH_OK;
  if (rc != PH_OK)
    return rc;
  fc_pending *q = NULL;
  for (int i = 0; i < FC_MAX_PENDING && !q; i++)
    if (fc->p[i].id == 0)
      q = &fc->p[i];
  if (!q)
    return PH_EINVAL;
  memset(q, 0, sizeof(*q));
  q->fc = fc;
  q->id = ++fc->next_id;
  q->cb = cb;
  q->arg = arg;
  q->port = rq->port;
  q->flags = rq->flags;
  q->lease_asked = ph_open_lease_asked(rq);
  q->fwd_asked = ph_open_http_forward_asked(rq);
  q->lease = q->lease_asked != 0;
  fc->opens++;
  fc->leases_asked += q->lease;
  record(fc, q->id, rq);
  q->row = match(fc, rq->host);
  q->code = q->row->code;
  q->when = q->row->when;
  q->shape = q->row->shape;
  if (q->row->code_from_host)
    q->code = atoi(rq->host + strlen(q->row->host) - 1);
  if (fc->prepare)
    fc->prepare(fc->hook_arg, rq, q);
  int64_t id = q->id;
  switch (q->when) {
  case FC_INSIDE:
    answer(q);
    break;
  case FC_HELD:
    q->held = 1;
    break;
  case FC_NEVER:
    break;
  case FC_LATER:
    answer_later(q, q->row->delay_ms);
    break;
  }
  return id;
}

static int fc_cancel(void *self, int64_t id) {
  fake_connector *fc = self;
  for (int i = 0; i < FC_MAX_PENDING; i++)
    if (id > 0 && fc->p[i].id == id) {
      if (fc->p[i].t)
        fc->api->timer_free(fc->p[i].t);
      fc->p[i].t = NULL;
      fc_request *lg = logged(fc, id);
      if (lg)
        lg->cancelled = 1;
      fc->p[i].id = 0;
      fc->cancels++;
      return PH_OK;
    }
  return PH_ENOENT;
}

const ph_connector_v1 fake_connector_vt = {fc_open, fc_cancel};

void fake_connector_init(fake_connector *fc, const ph_api *api, ph_ctx *ctx,
                         const fc_row *rows) {
  memset(fc, 0, sizeof(*fc));
  fc->api = api;
  fc->ctx = ctx;
  fc->rows = rows;
  fc->peer = -1;
}

int fake_connector_serve(fake_connector *fc, const ph_api *api, ph_ctx *ctx,
                         const fc_row *rows) {
  fake_connector_init(fc, api, ctx, rows);
  return api->service_register(ctx, PH_CONNECTOR_SERVICE, PH_CONNECTOR_MAJOR,
                               PH_CONNECTOR_MINOR, &fake_connector_vt, fc);
}

void fake_connector_clear(fake_connector *fc) {
  fake_connector keep = *fc;
  fake_connector_free(fc);
  fake_connector_init(fc, keep.api, keep.ctx, keep.rows);
  fc->next_id = keep.next_id;
  fc->admit = keep.admit;
  fc->prepare = keep.prepare;
  fc->decorate = keep.decorate;
  fc->hook_arg = keep.hook_arg;
}

int fake_connector_release(fake_connector *fc) {
  int n = 0;
  for (int i = 0; i < FC_MAX_PENDING; i++)
    if (fc->p[i].id != 0 && fc->p[i].held && !fc->p[i].t) {
      fc->p[i].held = 0;
      answer_later(&fc->p[i], 1);
      n++;
    }
  return n;
}

int fake_connector_answer(fake_connector *fc, int64_t id, int code) {
  for (int i = 0; i < FC_MAX_PENDING; i++)
    if (id > 0 && fc->p[i].id == id) {
      fc_pending *q = &fc->p[i];
      if (q->t)
        fc->api->timer_free(q->t);
      q->t = NULL;
      q->held = 0;
      q->code = code;
      answer(q);
      return PH_OK;
    }
  return PH_ENOENT;
}

int fake_connector_pending(const fake_connector *fc) {
  int n = 0;
  for (int i = 0; i < FC_MAX_PENDING; i++)
    n += fc->p[i].id != 0;
  return n;
}

int fake_connector_peer(fake_connector *fc) {
  int fd = fc->peer;
  fc->peer = -1;
  return fd;
}

void fake_connector_free(fake_connector *fc) {
  for (int i = 0; i < FC_MAX_PENDING; i++) {
    if (fc->p[i].id != 0 && fc->p[i].t)
      fc->api->timer_free(fc->p[i].t);
    fc->p[i].t = NULL;
    fc->p[i].id = 0;
  }
  if (fc->peer >= 0)
    close(fc->peer);
  fc->peer = -1;
}

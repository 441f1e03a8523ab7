/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The server side of cp_grpc (cp_grpc.h): one generic request_call armed
 * at a time, dispatch by method path, and each call's state machine.
 *
 * A call's tags: req (request_call), close (RECV_CLOSE_ON_SERVER, armed
 * at once: it completes when the call ends, and says whether it was
 * cancelled), recv (RECV_MESSAGE), send (SEND_MESSAGE), status
 * (SEND_STATUS_FROM_SERVER). The handler owns the call from its handler
 * until cp_grpc_call_finish or the cancel callback; the call is freed
 * when it has ended and no tag is in flight.
 */
#include "cp_grpc_front.h"
#include "cp_grpc_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

typedef struct method {
  char path[CP_GRPC_PATH_MAX + 1];
  cp_rpc_kind kind;
  cp_grpc_handler_fn fn;
  void *arg;
} method;

struct cp_grpc_server {
  cp_grpc_cq *q;
  grpc_server *srv;
  cp_front *front; /* the public listener, or NULL (gRPC listens itself) */
  cp_cert_source *certs; /* mtls: gRPC's fetcher reads it (reload_tls) */
  cp_grpc_server *next; /* q->servers */
  method *methods;
  size_t n_methods;
  int port;
  long calls;          /* call structs, the armed slot included */
  long active, max_calls; /* calls given a state machine (max_calls) */
  cp_grpc_call *armed; /* the slot of the request_call in flight */
  cp_tag shutdown_tag;
  int shutting, shut_done; /* shutdown started / its tag came */
  void (*done)(void *);
  void *done_arg;
};

enum { ST_NEW, ST_REQUEST, ST_USER, ST_ENDED };

struct cp_grpc_call {
  cp_grpc_server *s;
  grpc_call *call;
  grpc_call_details details;
  grpc_metadata_array md;
  cp_tag t_req, t_close, t_recv, t_send, t_status;
  int pending;
  int state;           /* ST_* */
  int close_done, cancelled_flag; /* RECV_CLOSE came; its cancelled */
  int cancelled;       /* known cancelled (close, or a failed op) */
  int counted; /* in s->active */
  int md_sent, sending, recving, finished, status_started;
  const method *m;
  char path[CP_GRPC_PATH_MAX + 1];
  char *peer_id;
  int64_t deadline_ms;
  grpc_byte_buffer *recv_bb, *send_bb, *resp_bb;
  grpc_slice status_msg;
  int status_code, have_status_msg;
  cp_grpc_cancel_fn on_cancel;
  void *cancel_arg;
  cp_grpc_recv_fn recv_fn;
  void *recv_arg;
  cp_grpc_sent_fn sent_fn;
  void *sent_arg;
};

static void arm(cp_grpc_server *s);
static void on_send(cp_tag *t, int ok);
static void server_maybe_done(cp_grpc_server *s);

/* gRPC's own handshake bound behind a front: the front's, plus this. */
#define FRONT_BACKSTOP_MS 5000

#define OWNER(t, field) \
  ((cp_grpc_call *)((char *)(t)-offsetof(cp_grpc_call, field)))

/* ---- a call's end ------------------------------------------------------ */

static void call_free(cp_grpc_call *c) {
  cp_grpc_server *s = c->s;
  if (c->call)
    grpc_call_unref(c->call);
  grpc_call_details_destroy(&c->details);
  grpc_metadata_array_destroy(&c->md);
  if (c->recv_bb)
    grpc_byte_buffer_destroy(c->recv_bb);
  if (c->send_bb)
    grpc_byte_buffer_destroy(c->send_bb);
  if (c->resp_bb)
    grpc_byte_buffer_destroy(c->resp_bb);
  if (c->have_status_msg)
    grpc_slice_unref(c->status_msg);
  free(c->peer_id);
  if (c->counted)
    s->active--;
  free(c);
  s->calls--;
  s->q->live--;
  server_maybe_done(s);
}

/* After each tag: free when nothing is in flight and the call has ended
 * for gRPC (close came) and for the handler. */
static void settle(cp_grpc_call *c) {
  if (c->pending == 0 && c->close_done &&
      (c->state == ST_ENDED || c->state == ST_NEW || c->state == ST_REQUEST))
    call_free(c);
}

/* The handler loses the call to a cancellation: tell it once. */
static void lost(cp_grpc_call *c) {
  c->cancelled = 1;
  if (c->state != ST_USER || c->finished)
    return;
  c->state = ST_ENDED;
  if (c->on_cancel && !c->s->q->closing)
    c->on_cancel(c->cancel_arg, c);
}

/* ---- sending the status ------------------------------------------------ */

static void on_status(cp_tag *t, int ok) {
  cp_grpc_call *c = OWNER(t, t_status);
  (void)ok;
  c->pending--;
  settle(c);
}

static void start_status(cp_grpc_call *c) {
  grpc_op ops[3];
  size_t n = 0;
  memset(ops, 0, sizeof(ops));
  if (!c->md_sent) {
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    n++;
    c->md_sent = 1;
  }
  if (c->resp_bb) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = c->resp_bb;
    n++;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status =
      (grpc_status_code)c->status_code;
  ops[n].data.send_status_from_server.status_details =
      c->have_status_msg ? &c->status_msg : NULL;
  n++;
  c->status_started = 1;
  if (cp_batch(c->call, ops, n, &c->t_status) == GRPC_CALL_OK)
    c->pending++;
}

static void set_status(cp_grpc_call *c, int code, const char *msg) {
  c->status_code = code;
  if (msg && *msg) {
    size_t l = strlen(msg);
    if (l > CP_GRPC_STATUS_MSG_MAX)
      l = CP_GRPC_STATUS_MSG_MAX;
    c->status_msg = grpc_slice_from_copied_buffer(msg, l);
    c->have_status_msg = 1;
  }
}

/* A status the layer answers by itself (UNIMPLEMENTED, a missing request,
 * too many calls): the handler never sees the call. */
static void answer(cp_grpc_call *c, int code, const char *msg) {
  c->state = ST_ENDED;
  c->finished = 1;
  set_status(c, code, msg);
  start_status(c);
}

/* ---- receiving --------------------------------------------------------- */

static void on_recv(cp_tag *t, int ok) {
  cp_grpc_call *c = OWNER(t, t_recv);
  c->pending--;
  c->recving = 0;
  grpc_byte_buffer *bb = c->recv_bb;
  c->recv_bb = NULL;
  grpc_slice sl = bb ? cp_bb_read(bb) : grpc_empty_slice();
  if (bb)
    grpc_byte_buffer_destroy(bb);
  if (c->s->q->closing || c->cancelled) {
    /* nothing to deliver */
  } else if (c->state == ST_REQUEST) {
    if (!ok) {
      c->cancelled = 1; /* close tells the rest */
    } else if (!bb) {
      answer(c, CP_GRPC_INVALID_ARGUMENT, "a request message is required");
    } else {
      c->state = ST_USER;
      c->m->fn(c->m->arg, c, GRPC_SLICE_START_PTR(sl),
               GRPC_SLICE_LENGTH(sl));
    }
  } else if (c->state == ST_USER && !c->finished) {
    if (!ok)
      c->cancelled = 1; /* over max_recv_bytes, or gone: close follows */
    else if (c->recv_fn)
      c->recv_fn(c->recv_arg, c, bb ? GRPC_SLICE_START_PTR(sl) : NULL,
                 bb ? GRPC_SLICE_LENGTH(sl) : 0);
  }
  grpc_slice_unref(sl);
  settle(c);
}

static int start_recv(cp_grpc_call *c) {
  if (cp_batch_recv(c->call, &c->recv_bb, &c->t_recv) != GRPC_CALL_OK)
    return PH_ESTATE;
  c->pending++;
  c->recving = 1;
  return PH_OK;
}

/* ---- the call's end as gRPC sees it -------------------------------- */

static void on_close(cp_tag *t, int ok) {
  cp_grpc_call *c = OWNER(t, t_close);
  c->pending--;
  c->close_done = 1;
  if (!ok || c->cancelled_flag)
    lost(c);
  if (c->state == ST_USER && c->finished)
    c->state = ST_ENDED;
  settle(c);
}

/* ---- a new call ---------------------------------------------------- */

static char *peer_spiffe_id(grpc_call *call) {
  grpc_auth_context *ac = grpc_call_auth_context(call);
  char *id = NULL;
  if (!ac)
    return NULL;
  grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(
      ac, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);
  if (p && p->value_length == strlen(GRPC_SSL_TRANSPORT_SECURITY_TYPE) &&
      memcmp(p->value, GRPC_SSL_TRANSPORT_SECURITY_TYPE, p->value_length) ==
          0) {
    it = grpc_auth_context_find_properties_by_name(
        ac, GRPC_PEER_SPIFFE_ID_PROPERTY_NAME);
    p = grpc_auth_property_iterator_next(&it);
    /* Exactly one, bounded, without a NUL inside. */
    if (p && !grpc_auth_property_iterator_next(&it) && p->value_length > 0 &&
        p->value_length <= CP_GRPC_PEER_ID_MAX &&
        !memchr(p->value, '\0', p->value_length)) {
      id = malloc(p->value_length + 1);
      if (id) {
        memcpy(id, p->value, p->value_length);
        id[p->value_length] = '\0';
      }
    }
  }
  grpc_auth_context_release(ac);
  return id;
}

static const method *find(const cp_grpc_server *s, grpc_slice path) {
  size_t l = GRPC_SLICE_LENGTH(path);
  for (size_t i = 0; i < s->n_methods; i++)
    if (strlen(s->methods[i].path) == l &&
        memcmp(s->methods[i].path, GRPC_SLICE_START_PTR(path), l) == 0)
      return &s->methods[i];
  return NULL;
}

static void on_req(cp_tag *t, int ok) {
  cp_grpc_call *c = OWNER(t, t_req);
  cp_grpc_server *s = c->s;
  c->pending--;
  s->armed = NULL;
  if (!ok) { /* the server is shutting down: the slot was never a call */
    c->close_done = 1;
    settle(c);
    return;
  }
  if (!s->shutting && !s->q->closing)
    arm(s);
  grpc_op op;
  memset(&op, 0, sizeof(op));
  op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  op.data.recv_close_on_server.cancelled = &c->cancelled_flag;
  if (cp_batch(c->call, &op, 1, &c->t_close) == GRPC_CALL_OK)
    c->pending++;
  else
    c->close_done = 1;
  size_t pl = GRPC_SLICE_LENGTH(c->details.method);
  if (pl > CP_GRPC_PATH_MAX)
    pl = CP_GRPC_PATH_MAX;
  memcpy(c->path, GRPC_SLICE_START_PTR(c->details.method), pl);
  c->path[pl] = '\0';
  c->deadline_ms = cp_timespec_ms(c->details.deadline);
  c->m = find(s, c->details.method);
  if (s->q->closing || s->shutting) {
    c->state = ST_ENDED;
    grpc_call_cancel(c->call, NULL);
  } else if (!c->m) {
    answer(c, CP_GRPC_UNIMPLEMENTED, "unknown method");
  } else if (s->active >= s->max_calls) {
    answer(c, CP_GRPC_RESOURCE_EXHAUSTED, "too many calls");
  } else {
    c->counted = 1;
    s->active++;
    c->peer_id = peer_spiffe_id(c->call);
    if (s->front) { /* its connection is authenticated now */
      char *peer = grpc_call_get_peer(c->call);
      cp_front_call_seen(s->front, peer);
      gpr_free(peer);
    }
    if (c->m->kind == CP_RPC_CLIENT_STREAM) {
      c->state = ST_USER;
      c->m->fn(c->m->arg, c, NULL, 0);
    } else {
      c->state = ST_REQUEST;
      if (start_recv(c) < 0)
        answer(c, CP_GRPC_INTERNAL, "cannot read the request");
    }
  }
  settle(c);
}

/* One generic request_call in flight: its slot becomes the next call. */
static void arm(cp_grpc_server *s) {
  cp_grpc_call *c = calloc(1, sizeof(*c));
  if (!c) {
    /* No memory: the server accepts no more calls (fail closed); gRPC
     * holds new ones until their deadline. */
    PH_LOG(s->q->api, s->q->ctx, PH_LOG_ERROR,
           "grpc server out of memory: no longer accepting calls");
    return;
  }
  c->s = s;
  c->state = ST_NEW;
  c->t_req.fn = on_req;
  c->t_close.fn = on_close;
  c->t_recv.fn = on_recv;
  c->t_send.fn = on_send;
  c->t_status.fn = on_status;
  grpc_call_details_init(&c->details);
  grpc_metadata_array_init(&c->md);
  s->calls++;
  s->q->live++;
  if (grpc_server_request_call(s->srv, &c->call, &c->details, &c->md, s->q->cq,
                               s->q->cq, &c->t_req) != GRPC_CALL_OK) {
    c->close_done = 1;
    call_free(c);
    return;
  }
  c->pending++;
  s->armed = c;
}

/* ---- sending messages (server streams) ----------------------------- */

static void on_send(cp_tag *t, int ok) {
  cp_grpc_call *c = OWNER(t, t_send);
  c->pending--;
  c->sending = 0;
  if (c->send_bb) {
    grpc_byte_buffer_destroy(c->send_bb);
    c->send_bb = NULL;
  }
  if (!ok)
    c->cancelled = 1;
  if (c->finished && !c->status_started && !c->s->q->closing &&
      !c->cancelled)
    start_status(c);
  else if (ok && c->state == ST_USER && !c->finished && !c->cancelled &&
           !c->s->q->closing && c->sent_fn)
    c->sent_fn(c->sent_arg, c);
  settle(c);
}

int cp_grpc_call_send(cp_grpc_call *c, const uint8_t *msg, size_t len,
                      cp_grpc_sent_fn fn, void *arg) {
  if (!c || (!msg && len) || c->m->kind != CP_RPC_SERVER_STREAM)
    return PH_EINVAL;
  if (c->state != ST_USER || c->finished || c->cancelled || c->s->q->closing)
    return PH_ESTATE;
  if (c->sending)
    return PH_EBUSY;
  grpc_op ops[2];
  size_t n = 0;
  memset(ops, 0, sizeof(ops));
  if (!c->md_sent) {
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  }
  c->send_bb = cp_bb_new(msg ? msg : (const uint8_t *)"", len);
  ops[n].op = GRPC_OP_SEND_MESSAGE;
  ops[n].data.send_message.send_message = c->send_bb;
  n++;
  if (cp_batch(c->call, ops, n, &c->t_send) != GRPC_CALL_OK) {
    grpc_byte_buffer_destroy(c->send_bb);
    c->send_bb = NULL;
    return PH_ESTATE;
  }
  c->md_sent = 1;
  c->pending++;
  c->sending = 1;
  c->sent_fn = fn;
  c->sent_arg = arg;
  return PH_OK;
}

/* ---- the handler's side -------------------------------------------- */

const char *cp_grpc_call_method(const cp_grpc_call *c) { return c->path; }
cp_rpc_kind cp_grpc_call_kind(const cp_grpc_call *c) { return c->m->kind; }
int64_t cp_grpc_call_deadline_ms(const cp_grpc_call *c) {
  return c->deadline_ms;
}
const char *cp_grpc_call_peer_id(const cp_grpc_call *c) { return c->peer_id; }

void cp_grpc_call_on_cancel(cp_grpc_call *c, cp_grpc_cancel_fn fn,
                            void *arg) {
  c->on_cancel = fn;
  c->cancel_arg = arg;
  /* Cancelled before the handler set this: the close tag is still to come
   * in every case (lost() runs from it), so nothing is missed. */
}

int cp_grpc_call_recv(cp_grpc_call *c, cp_grpc_recv_fn fn, void *arg) {
  if (!c || !fn || c->m->kind != CP_RPC_CLIENT_STREAM)
    return PH_EINVAL;
  if (c->state != ST_USER || c->finished || c->cancelled || c->s->q->closing)
    return PH_ESTATE;
  if (c->recving)
    return PH_EBUSY;
  c->recv_fn = fn;
  c->recv_arg = arg;
  return start_recv(c);
}

int cp_grpc_call_finish(cp_grpc_call *c, int status, const char *msg,
                        const uint8_t *resp, size_t len) {
  if (!c || status < 0 || status > 16)
    return PH_EINVAL;
  if (c->state != ST_USER || c->finished || c->cancelled || c->s->q->closing)
    return PH_ESTATE;
  int with_resp = status == CP_GRPC_OK && c->m->kind != CP_RPC_SERVER_STREAM;
  if (with_resp && !resp && len)
    return PH_EINVAL;
  c->finished = 1;
  set_status(c, status, msg);
  if (with_resp)
    c->resp_bb = cp_bb_new(resp ? resp : (const uint8_t *)"", len);
  if (!c->sending)
    start_status(c);
  /* else on_send starts it */
  c->state = ST_ENDED;
  settle(c);
  return PH_OK;
}

/* ---- the server ---------------------------------------------------- */

static int clamp_int(int64_t v) {
  return v < 0 ? 0 : v > INT_MAX ? INT_MAX : (int)v;
}

static void server_free(cp_grpc_server *s) {
  cp_grpc_cq *q = s->q;
  for (cp_grpc_server **pp = &q->servers; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  grpc_server_destroy(s->srv);
  cp_cert_source_free(s->certs); /* no handshake asks for it any more */
  free(s->methods);
  void (*done)(void *) = s->done;
  void *arg = s->done_arg;
  free(s);
  q->live--;
  if (done && !q->closing)
    done(arg);
}

static void server_maybe_done(cp_grpc_server *s) {
  if (s->shut_done && s->calls == 0)
    server_free(s);
}

static void on_shutdown(cp_tag *t, int ok) {
  cp_grpc_server *s =
      (cp_grpc_server *)((char *)t - offsetof(cp_grpc_server, shutdown_tag));
  (void)ok;
  s->shut_done = 1;
  server_maybe_done(s);
}

static void start_shutdown(cp_grpc_server *s) {
  if (s->shutting)
    return;
  s->shutting = 1;
  cp_front_free(s->front); /* no new connection; the open ones end */
  s->front = NULL;
  s->shutdown_tag.fn = on_shutdown;
  grpc_server_shutdown_and_notify(s->srv, s->q->cq, &s->shutdown_tag);
  grpc_server_cancel_all_calls(s->srv);
}

void cp_grpc_server_shutdown(cp_grpc_server *s, void (*done)(void *),
                             void *arg) {
  if (!s)
    return;
  s->done = done;
  s->done_arg = arg;
  start_shutdown(s);
}

void cp_server_close_all(cp_grpc_cq *q) {
  for (cp_grpc_server *s = q->servers; s; s = s->next)
    if (s->shutting)
      grpc_server_cancel_all_calls(s->srv);
    else
      start_shutdown(s);
}

int cp_grpc_server_reload_tls(cp_grpc_server *s, const cp_grpc_tls *tls,
                              char *err, size_t errlen) {
  if (!s || !tls)
    return PH_EINVAL;
  if (!s->certs)
    return PH_OK; /* plaintext: nothing to re-read */
  return cp_cert_source_load(s->certs, tls, err, errlen);
}

int cp_grpc_server_port(const cp_grpc_server *s) { return s->port; }

cp_grpc_server *cp_grpc_server_new(cp_grpc_cq *q,
                                   const cp_grpc_server_cfg *cfg,
                                   const cp_grpc_method *methods, size_t n,
                                   char *err, size_t errlen) {
  if (!q || !cfg || !cfg->listen || (n && !methods) || q->closing) {
    snprintf(err, errlen, "bad arguments");
    return NULL;
  }
  if (cfg->tls.mode == CP_TLS_DISABLED && !cp_addr_is_loopback(cfg->listen)) {
    snprintf(err, errlen,
             "plaintext (tls.mode = disabled) only on a loopback address");
    return NULL;
  }
  cp_grpc_server *s = calloc(1, sizeof(*s));
  method *ms = calloc(n ? n : 1, sizeof(*ms));
  if (!s || !ms) {
    free(s);
    free(ms);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!methods[i].path || strlen(methods[i].path) > CP_GRPC_PATH_MAX ||
        methods[i].path[0] != '/' || !methods[i].fn ||
        methods[i].kind < CP_RPC_UNARY ||
        methods[i].kind > CP_RPC_CLIENT_STREAM) {
      snprintf(err, errlen, "method %zu: bad path, kind or handler", i);
      free(s);
      free(ms);
      return NULL;
    }
    snprintf(ms[i].path, sizeof(ms[i].path), "%s", methods[i].path);
    ms[i].kind = methods[i].kind;
    ms[i].fn = methods[i].fn;
    ms[i].arg = methods[i].arg;
  }
  grpc_server_credentials *creds =
      cp_creds_server(&cfg->tls, &s->certs, err, errlen);
  if (!creds) {
    free(s);
    free(ms);
    return NULL;
  }
  grpc_arg args[] = {
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
       {.integer = clamp_int(cfg->max_recv_bytes)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
       {.integer = clamp_int(cfg->max_send_bytes)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONCURRENT_STREAMS,
       {.integer = clamp_int(cfg->max_streams)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS,
       {.integer = clamp_int(cfg->keepalive_time_ms)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
       {.integer = clamp_int(cfg->keepalive_timeout_ms)}},
      /* Pings only while calls are open, on both sides (the client's
       * args match): an idle client's pings would be strikes. */
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
       {.integer = 0}},
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
       {.integer = clamp_int(cfg->min_ping_interval_ms)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_AGE_MS,
       {.integer = clamp_int(cfg->max_connection_age_ms)}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
       {.integer = clamp_int(cfg->max_connection_age_grace_ms)}},
      /* Before any authentication a connection costs memory and a slot:
       * bound the time it may take to become one (issue 22 item 10).
       * With a front, the front's timer is the bound (it counts and logs
       * the close) and gRPC's, started at the same accept, a backstop a
       * little later: equal, either could fire first. */
      {GRPC_ARG_INTEGER, GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
       {.integer = cfg->handshake_timeout_ms > 0
                       ? clamp_int(cfg->handshake_timeout_ms +
                                   (cfg->max_unauthenticated > 0
                                        ? FRONT_BACKSTOP_MS
                                        : 0))
                       : 120000}},
      /* gRPC sets SO_REUSEPORT by default: a second controller on the
       * same port must fail to bind, not share it. */
      {GRPC_ARG_INTEGER, GRPC_ARG_ALLOW_REUSEPORT, {.integer = 0}},
  };
  grpc_channel_args ca = {sizeof(args) / sizeof(args[0]), args};
  s->q = q;
  s->methods = ms;
  s->n_methods = n;
  s->max_calls = cfg->max_calls > 0 ? cfg->max_calls : LONG_MAX;
  s->srv = grpc_server_create(&ca, NULL);
  grpc_server_register_completion_queue(s->srv, q->cq, NULL);
  /* With a front (cp_grpc_front.h) gRPC listens on loopback only. */
  int fronted = cfg->max_unauthenticated > 0;
  s->port = grpc_server_add_http2_port(
      s->srv, fronted ? "127.0.0.1:0" : cfg->listen, creds);
  grpc_server_credentials_release(creds);
  if (s->port > 0 && fronted) {
    cp_front_cfg fc = {cfg->listen,
                       s->port,
                       clamp_int(cfg->max_unauthenticated),
                       cfg->handshake_timeout_ms > 0 ? cfg->handshake_timeout_ms
                                                     : 120000,
                       cfg->m_unauthenticated,
                       cfg->m_dropped_limit,
                       cfg->m_dropped_timeout};
    s->front = cp_front_new(q->ctx, q->api, &fc, err, errlen);
    s->port = s->front ? cp_front_port(s->front) : -1;
  }
  if (s->port <= 0) {
    if (!fronted)
      snprintf(err, errlen, "cannot listen on the address (in use, or not "
                            "an address of this host)");
    grpc_server_destroy(s->srv);
    cp_cert_source_free(s->certs);
    free(ms);
    free(s);
    return NULL;
  }
  grpc_server_start(s->srv);
  s->next = q->servers;
  q->servers = s;
  q->live++;
  arm(s);
  return s;
}

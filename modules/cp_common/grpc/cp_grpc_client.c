/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client side of cp_grpc (cp_grpc.h): channels and each call's state
 * machine.
 *
 * A call's tags: start (SEND_INITIAL_METADATA + RECV_INITIAL_METADATA,
 * with the request and the half-close for unary and server-streaming
 * calls: gRPC never completes RECV_STATUS_ON_CLIENT without a
 * RECV_INITIAL_METADATA), status (RECV_STATUS_ON_CLIENT), recv (one
 * RECV_MESSAGE at a time), send (client streams: a message or the
 * half-close). on_done waits for the status and the last receive, so
 * every message is delivered before it; the call is freed when on_done
 * ran (or the user is gone) and no tag is in flight.
 */
#include <openssl/crypto.h>

#include "cp_grpc_int.h"
#include "cp_addr_list.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

struct cp_grpc_channel {
  cp_grpc_cq *q;
  grpc_channel *ch;
  ilist_node node; /* in q->channels */
  long calls;  /* calls started on it and not yet freed */
  int retired; /* cp_grpc_channel_retire: freed with its last call */
  /* The connectivity watch (cfg.on_ready): t_watch is in flight while
   * watching; a channel destroyed meanwhile (gone) is freed by it. */
  void (*on_ready)(void *arg);
  void *on_ready_arg;
  cp_tag t_watch;
  grpc_connectivity_state last;
  int watching, gone;
};

struct cp_grpc_ccall {
  cp_grpc_cq *q;
  cp_grpc_channel *ch; /* NULL once the channel is freed */
  ilist_node node;     /* in q->ccalls */
  grpc_call *call;
  cp_rpc_kind kind;
  cp_tag t_start, t_status, t_recv, t_send;
  int pending;
  grpc_metadata_array md_init, md_trail;
  grpc_status_code status;
  grpc_slice details;
  grpc_byte_buffer *req_bb, *recv_bb, *send_bb;
  int status_done, recving, sending, sending_close, close_sent;
  int done_called, user_gone, user_cancelled, got_message;
  cp_grpc_ccall_cbs cbs;
  void *arg;
};

#define OWNER(t, field) \
  ((cp_grpc_ccall *)((char *)(t)-offsetof(cp_grpc_ccall, field)))

static int quiet(const cp_grpc_ccall *c) {
  return c->user_gone || c->q->closing;
}

static void channel_destroy(cp_grpc_channel *ch);

static void ccall_free(cp_grpc_ccall *c) {
  cp_grpc_cq *q = c->q;
  cp_grpc_channel *ch = c->ch;
  ilist_remove(&c->node);
  grpc_call_unref(c->call);
  grpc_metadata_array_destroy(&c->md_init);
  grpc_metadata_array_destroy(&c->md_trail);
  grpc_slice_unref(c->details);
  if (c->req_bb)
    grpc_byte_buffer_destroy(c->req_bb);
  if (c->recv_bb)
    grpc_byte_buffer_destroy(c->recv_bb);
  if (c->send_bb)
    grpc_byte_buffer_destroy(c->send_bb);
  free(c);
  q->live--;
  if (ch && --ch->calls == 0 && ch->retired)
    channel_destroy(ch); /* its last call ended: nothing is cancelled */
}

/* After each tag: on_done once the status came and no receive is in
 * flight; free once on_done ran (or nobody listens) and nothing is in
 * flight. */
static void settle(cp_grpc_ccall *c) {
  if (!c->done_called && c->status_done && !c->recving) {
    c->done_called = 1;
    if (!quiet(c) && c->cbs.on_done) {
      char msg[CP_GRPC_STATUS_MSG_MAX + 1];
      size_t l = GRPC_SLICE_LENGTH(c->details);
      if (l > CP_GRPC_STATUS_MSG_MAX)
        l = CP_GRPC_STATUS_MSG_MAX;
      memcpy(msg, GRPC_SLICE_START_PTR(c->details), l);
      msg[l] = '\0';
      int st = (int)c->status;
      /* A unary or client-streaming call that ended OK without its
       * response is not OK for the caller. */
      if (st == CP_GRPC_OK && c->kind != CP_RPC_SERVER_STREAM &&
          !c->got_message) {
        st = CP_GRPC_INTERNAL;
        snprintf(msg, sizeof(msg), "no response message");
      }
      c->cbs.on_done(c->arg, c, st, msg);
    } else if (quiet(c) && c->cbs.on_drop) {
      c->cbs.on_drop(c->arg); /* cut: only what arg owns is freed */
    }
  }
  if (c->pending == 0 && c->done_called)
    ccall_free(c);
}

static int start_recv(cp_grpc_ccall *c) {
  if (cp_batch_recv(c->call, &c->recv_bb, &c->t_recv) != GRPC_CALL_OK)
    return -1;
  c->pending++;
  c->recving = 1;
  return 0;
}

static void on_start(cp_tag *t, int ok) {
  cp_grpc_ccall *c = OWNER(t, t_start);
  (void)ok; /* a failure shows in the status */
  c->pending--;
  if (c->req_bb) {
    grpc_byte_buffer_destroy(c->req_bb);
    c->req_bb = NULL;
  }
  settle(c);
}

static void on_status(cp_tag *t, int ok) {
  cp_grpc_ccall *c = OWNER(t, t_status);
  c->pending--;
  if (!ok) {
    c->status = GRPC_STATUS_INTERNAL;
  }
  c->status_done = 1;
  settle(c);
}

static void on_recv(cp_tag *t, int ok) {
  cp_grpc_ccall *c = OWNER(t, t_recv);
  c->pending--;
  c->recving = 0;
  grpc_byte_buffer *bb = c->recv_bb;
  c->recv_bb = NULL;
  if (ok && bb) {
    grpc_slice sl = cp_bb_read(bb);
    int first = !c->got_message;
    c->got_message = 1;
    if (!quiet(c) && !c->user_cancelled && c->cbs.on_message &&
        (first || c->kind == CP_RPC_SERVER_STREAM))
      c->cbs.on_message(c->arg, c, GRPC_SLICE_START_PTR(sl),
                        GRPC_SLICE_LENGTH(sl));
    /* A snapshot carries credentials: the message's bytes, flat and as
     * received, are wiped before gRPC frees them (CP-1-18, issue 23 item
     * 10); nobody reads them after on_message. */
    OPENSSL_cleanse(GRPC_SLICE_START_PTR(sl), GRPC_SLICE_LENGTH(sl));
    grpc_slice_unref(sl);
    if (bb->type == GRPC_BB_RAW)
      for (size_t i = 0; i < bb->data.raw.slice_buffer.count; i++) {
        grpc_slice *x = &bb->data.raw.slice_buffer.slices[i];
        OPENSSL_cleanse(GRPC_SLICE_START_PTR(*x), GRPC_SLICE_LENGTH(*x));
      }
    grpc_byte_buffer_destroy(bb);
    /* The next message only now: one at a time. */
    if (!quiet(c) && !c->user_cancelled)
      start_recv(c);
  } else if (bb) {
    grpc_byte_buffer_destroy(bb);
  }
  settle(c);
}

static void on_send(cp_tag *t, int ok) {
  cp_grpc_ccall *c = OWNER(t, t_send);
  c->pending--;
  c->sending = 0;
  int was_close = c->sending_close;
  c->sending_close = 0;
  if (c->send_bb) {
    grpc_byte_buffer_destroy(c->send_bb);
    c->send_bb = NULL;
  }
  if (ok && !was_close && !quiet(c) && !c->user_cancelled &&
      !c->done_called && c->cbs.on_sent)
    c->cbs.on_sent(c->arg, c);
  settle(c);
}

cp_grpc_ccall *cp_grpc_ccall_start(cp_grpc_channel *ch, const char *path,
                                   cp_rpc_kind kind, int64_t timeout_ms,
                                   const uint8_t *req, size_t len,
                                   const cp_grpc_ccall_cbs *cbs, void *arg) {
  if (!ch || !path || path[0] != '/' || strlen(path) > CP_GRPC_PATH_MAX ||
      !cbs || kind < CP_RPC_UNARY || kind > CP_RPC_CLIENT_STREAM ||
      ch->q->closing || ch->retired)
    return NULL;
  int with_req = kind != CP_RPC_CLIENT_STREAM;
  if (with_req && !req && len)
    return NULL;
  cp_grpc_ccall *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->q = ch->q;
  c->ch = ch;
  c->kind = kind;
  c->cbs = *cbs;
  c->arg = arg;
  c->details = grpc_empty_slice();
  c->t_start.fn = on_start;
  c->t_status.fn = on_status;
  c->t_recv.fn = on_recv;
  c->t_send.fn = on_send;
  grpc_metadata_array_init(&c->md_init);
  grpc_metadata_array_init(&c->md_trail);
  gpr_timespec dl =
      timeout_ms > 0
          ? gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                         gpr_time_from_millis(timeout_ms, GPR_TIMESPAN))
          : gpr_inf_future(GPR_CLOCK_REALTIME);
  grpc_slice m = grpc_slice_from_copied_string(path);
  c->call = grpc_channel_create_call(ch->ch, NULL, GRPC_PROPAGATE_DEFAULTS,
                                     ch->q->cq, m, NULL, dl, NULL);
  grpc_slice_unref(m);
  if (!c->call) {
    grpc_metadata_array_destroy(&c->md_init);
    grpc_metadata_array_destroy(&c->md_trail);
    free(c);
    return NULL;
  }
  grpc_op ops[4];
  size_t n = 0;
  memset(ops, 0, sizeof(ops));
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[n++].data.recv_initial_metadata.recv_initial_metadata = &c->md_init;
  if (with_req) {
    c->req_bb = cp_bb_new(req ? req : (const uint8_t *)"", len);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->req_bb;
    ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    c->close_sent = 1;
  }
  ilist_push_front(&ch->q->ccalls, &c->node);
  ch->q->live++;
  ch->calls++;
  if (cp_batch(c->call, ops, n, &c->t_start) == GRPC_CALL_OK)
    c->pending++;
  grpc_op st;
  memset(&st, 0, sizeof(st));
  st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  st.data.recv_status_on_client.trailing_metadata = &c->md_trail;
  st.data.recv_status_on_client.status = &c->status;
  st.data.recv_status_on_client.status_details = &c->details;
  if (cp_batch(c->call, &st, 1, &c->t_status) == GRPC_CALL_OK)
    c->pending++;
  else {
    c->status = GRPC_STATUS_INTERNAL;
    c->status_done = 1;
  }
  start_recv(c);
  if (c->pending == 0) {
    /* gRPC took nothing: undo (the call never started). */
    c->done_called = 1;
    ccall_free(c);
    return NULL;
  }
  return c;
}

/* Whether a send may start on c now: PH_OK; PH_EINVAL (not a client
 * stream), PH_ESTATE (closed, ending or cancelled), PH_EBUSY (one in
 * flight). */
static int send_gate(const cp_grpc_ccall *c) {
  if (!c || c->kind != CP_RPC_CLIENT_STREAM)
    return PH_EINVAL;
  if (c->close_sent || c->done_called || c->user_cancelled || quiet(c))
    return PH_ESTATE;
  return c->sending ? PH_EBUSY : PH_OK;
}

int cp_grpc_ccall_send(cp_grpc_ccall *c, const uint8_t *msg, size_t len) {
  if (!msg && len)
    return PH_EINVAL;
  int rc = send_gate(c);
  if (rc != PH_OK)
    return rc;
  grpc_op op;
  memset(&op, 0, sizeof(op));
  c->send_bb = cp_bb_new(msg ? msg : (const uint8_t *)"", len);
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = c->send_bb;
  if (cp_batch(c->call, &op, 1, &c->t_send) != GRPC_CALL_OK) {
    grpc_byte_buffer_destroy(c->send_bb);
    c->send_bb = NULL;
    return PH_ESTATE;
  }
  c->pending++;
  c->sending = 1;
  return PH_OK;
}

int cp_grpc_ccall_close_send(cp_grpc_ccall *c) {
  int rc = send_gate(c);
  if (rc != PH_OK)
    return rc;
  grpc_op op;
  memset(&op, 0, sizeof(op));
  op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  if (cp_batch(c->call, &op, 1, &c->t_send) != GRPC_CALL_OK)
    return PH_ESTATE;
  c->pending++;
  c->sending = 1;
  c->sending_close = 1;
  c->close_sent = 1;
  return PH_OK;
}

void cp_grpc_ccall_cancel(cp_grpc_ccall *c) {
  if (!c || c->done_called || c->user_cancelled)
    return;
  c->user_cancelled = 1;
  grpc_call_cancel(c->call, NULL);
}

/* ---- channels ------------------------------------------------------ */

/* Watches for the next change from the state the channel is in now. */
static void watch_arm(cp_grpc_channel *ch) {
  ch->last = grpc_channel_check_connectivity_state(ch->ch, 0);
  grpc_channel_watch_connectivity_state(ch->ch, ch->last,
                                        gpr_inf_future(GPR_CLOCK_REALTIME),
                                        ch->q->cq, &ch->t_watch);
  ch->watching = 1;
  ch->q->live++;
}

/* The state changed (ok), or the channel is going (destroyed: gRPC ends
 * every watch with the channel's shutdown). */
static void on_watch(cp_tag *t, int ok) {
  cp_grpc_channel *ch =
      (cp_grpc_channel *)((char *)t - offsetof(cp_grpc_channel, t_watch));
  ch->watching = 0;
  ch->q->live--;
  if (ch->gone) {
    free(ch);
    return;
  }
  if (ch->q->closing || ch->retired || !ch->on_ready)
    return;
  grpc_connectivity_state was = ch->last;
  /* Armed again before the callback, which may free the channel. */
  watch_arm(ch);
  if (ok && was != GRPC_CHANNEL_READY && ch->last == GRPC_CHANNEL_READY)
    ch->on_ready(ch->on_ready_arg);
}

static int clamp_int(int64_t v) {
  return v < 0 ? 0 : v > INT_MAX ? INT_MAX : (int)v;
}

cp_grpc_channel *cp_grpc_channel_new(cp_grpc_cq *q,
                                     const cp_grpc_client_cfg *cfg,
                                     char *err, size_t errlen) {
  if (!q || !cfg || !cfg->address || q->closing) {
    snprintf(err, errlen, "bad arguments");
    return NULL;
  }
  if (cfg->tls.mode == CP_TLS_DISABLED && !cp_addr_list_loopback(cfg->address)) {
    snprintf(err, errlen,
             "plaintext (tls.mode = disabled) only to a loopback address");
    return NULL;
  }
  cp_grpc_channel *ch = calloc(1, sizeof(*ch));
  if (!ch) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  grpc_channel_credentials *creds = cp_creds_client(&cfg->tls, err, errlen);
  if (!creds) {
    free(ch);
    return NULL;
  }
  grpc_arg args[11];
  size_t n = 0;
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER,
                         GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                         {.integer = clamp_int(cfg->max_recv_bytes)}};
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
                         {.integer = clamp_int(cfg->max_send_bytes)}};
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS,
                         {.integer = clamp_int(cfg->keepalive_time_ms)}};
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                         {.integer = clamp_int(cfg->keepalive_timeout_ms)}};
  /* As the server: pings only while a call is open (the server's
   * GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS is 0 too), and gRPC's own
   * throttle (GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, default 2) stays. */
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER,
                         GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                         {.integer = 0}};
  /* A channel is its own connection: gRPC would otherwise share one
   * between channels with equal arguments (its global subchannel pool). */
  args[n++] = (grpc_arg){GRPC_ARG_INTEGER,
                         GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, {.integer = 1}};
  if (cfg->reconnect_max_ms > 0) {
    int lo = clamp_int(cfg->reconnect_min_ms > 0 ? cfg->reconnect_min_ms
                                                 : cfg->reconnect_max_ms);
    int hi = clamp_int(cfg->reconnect_max_ms);
    if (lo > hi)
      lo = hi;
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER,
                           GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                           {.integer = lo}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                           {.integer = lo}};
    args[n++] = (grpc_arg){GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                           {.integer = hi}};
  }
  if (cfg->tls.mode == CP_TLS_MTLS && cfg->tls.server_name &&
      *cfg->tls.server_name)
    args[n++] = (grpc_arg){GRPC_ARG_STRING, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
                           {.string = (char *)cfg->tls.server_name}};
  grpc_channel_args ca = {n, args};
  /* One address, or a list as a static address list (cp_addr_list.h). */
  char target[CP_ADDR_LIST_CHARS + 8];
  ch->ch = cp_addr_list_target(cfg->address, target, sizeof(target)) == 0
               ? grpc_channel_create(target, creds, &ca)
               : NULL;
  grpc_channel_credentials_release(creds);
  if (!ch->ch) {
    free(ch);
    snprintf(err, errlen, "gRPC refused the address");
    return NULL;
  }
  ch->q = q;
  ilist_push_front(&q->channels, &ch->node);
  ch->on_ready = cfg->on_ready;
  ch->on_ready_arg = cfg->on_ready_arg;
  ch->t_watch.fn = on_watch;
  if (ch->on_ready)
    watch_arm(ch);
  return ch;
}

static void channel_destroy(cp_grpc_channel *ch) {
  ilist_remove(&ch->node);
  grpc_channel_destroy(ch->ch);
  if (ch->watching)
    ch->gone = 1; /* on_watch frees it */
  else
    free(ch);
}

/* The user is gone from c: no callback of it any more, the call cut. */
static void cancel_gone(cp_grpc_ccall *c) {
  c->user_gone = 1;
  grpc_call_cancel(c->call, NULL);
}

void cp_grpc_channel_free(cp_grpc_channel *ch) {
  if (!ch)
    return;
  ILIST_FOREACH_SAFE(&ch->q->ccalls, it, nx) {
    cp_grpc_ccall *c = ILIST_ENTRY(it, cp_grpc_ccall, node);
    if (c->ch == ch) {
      c->ch = NULL;
      cancel_gone(c);
    }
  }
  channel_destroy(ch);
}

void cp_grpc_channel_retire(cp_grpc_channel *ch) {
  if (!ch)
    return;
  ch->retired = 1;
  ch->on_ready = NULL; /* its replacement says when it is ready */
  if (ch->calls == 0)
    channel_destroy(ch);
}

void cp_client_close_all(cp_grpc_cq *q) {
  while (!ilist_empty(&q->channels))
    cp_grpc_channel_free(
        ILIST_ENTRY(ilist_first(&q->channels), cp_grpc_channel, node));
  ILIST_FOREACH_SAFE(&q->ccalls, it, nx)
    cancel_gone(ILIST_ENTRY(it, cp_grpc_ccall, node));
}

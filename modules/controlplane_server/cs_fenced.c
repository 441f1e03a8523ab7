/* SPDX-License-Identifier: BSD-2-Clause */
/* A fenced client stream (cs_fenced.h). */
#include <stdlib.h>
#include <string.h>

#include "cs_fenced.h"
#include "cs_unary.h"

#define api cs_api

typedef struct fs {
  cs_link link; /* first */
  cs *m;
  const cs_fenced_kind *k;
  cp_grpc_call *call;
  int64_t start_ms, auth_call, recv_ms;
  uint32_t n; /* batches read */
  uint64_t acked;
  void *first; /* the first batch (kept for the checks) */
  void *cur;   /* the batch being fenced, when not first */
  const void *fenced; /* first or cur */
} fs;

static void fs_free(fs *o) {
  cs_link_del(&o->link);
  if (o->cur)
    protobuf_c_message_free_unpacked(o->cur, NULL);
  if (o->first)
    protobuf_c_message_free_unpacked(o->first, NULL);
  free(o);
}

static void fs_end(fs *o, int status, const char *why) {
  uint8_t buf[32];
  size_t n = status == CP_GRPC_OK ? o->k->pack(o->acked, buf) : 0;
  cs_finish(o->m, o->call, o->k->meth, o->start_ms, status, why,
            status == CP_GRPC_OK ? buf : NULL, n);
  fs_free(o);
}

static void fs_abandon(cs_link *l) {
  fs *o = (fs *)l;
  cs_auth_cancel(o->m, &o->auth_call);
  fs_free(o);
}

static void fs_cancel(void *arg, cp_grpc_call *call) {
  (void)call;
  fs_abandon(arg);
}

static void fs_recv(void *arg, cp_grpc_call *call, const uint8_t *msg,
                    size_t len);

static void fs_next(fs *o) {
  if (cp_grpc_call_recv(o->call, fs_recv, o) != PH_OK)
    fs_end(o, CP_GRPC_INTERNAL, "receive failed");
}

static void fs_fenced(void *arg, const cp_auth_reply *rep) {
  fs *o = arg;
  o->auth_call = 0;
  cs_note_auth(o->m, rep->result);
  if (rep->result != CP_AUTH_OK && rep->result != CP_AUTH_REPLAY) {
    fs_end(o, cp_auth_grpc_status(rep->result), cs_auth_why(rep->result));
    return;
  }
  if (rep->result == CP_AUTH_OK && o->k->apply)
    o->k->apply(o->m, o->fenced, o->recv_ms);
  if (o->cur) {
    protobuf_c_message_free_unpacked(o->cur, NULL);
    o->cur = NULL;
  }
  o->acked = rep->sequence;
  fs_next(o);
}

static void fs_recv(void *arg, cp_grpc_call *call, const uint8_t *msg,
                    size_t len) {
  fs *o = arg;
  cs *m = o->m;
  if (!msg) { /* half-close */
    if (!o->n)
      fs_end(o, CP_GRPC_INVALID_ARGUMENT, "no batch");
    else
      fs_end(o, CP_GRPC_OK, NULL);
    return;
  }
  o->n++;
  o->recv_ms = wall_ms();
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  int st = cs_peer_as(m, call, o->k->role, peer, &why);
  void *q = NULL;
  if (!st)
    q = cp_request_unpack(o->k->desc, msg, len, &st, &why);
  if (!st) {
    cp_caller c = {m->conf.mtls ? peer : NULL, m->conf.cluster_id};
    st = o->k->check(m, q, o->first, &c, o->n, &why);
  }
  uint8_t digest[32];
  if (!st && o->k->digest(q, digest) != PH_OK) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "batch too large";
  }
  if (st) {
    if (q)
      protobuf_c_message_free_unpacked(q, NULL);
    fs_end(o, st, why);
    return;
  }
  if (!o->first)
    o->first = q;
  else
    o->cur = q;
  o->fenced = q;
  int64_t id = o->k->fence(m, q, digest, fs_fenced, o);
  if (id < 0) {
    fs_end(o, id == PH_EINVAL ? CP_GRPC_INVALID_ARGUMENT : CP_GRPC_UNAVAILABLE,
           id == PH_EINVAL ? "a field out of bounds" : "the authority is busy");
    return;
  }
  o->auth_call = id;
}

void cs_fenced_rpc(cs *m, const cs_fenced_kind *k, cp_grpc_call *call) {
  int64_t start = api->now_ms(m->ctx);
  char peer[CS_WORKER_ID_MAX + 1];
  const char *why = NULL;
  int st = cs_peer_as(m, call, k->role, peer, &why);
  fs *o = NULL;
  if (!st && !(o = calloc(1, sizeof(*o)))) {
    st = CP_GRPC_RESOURCE_EXHAUSTED;
    why = "out of memory";
  }
  if (st) {
    cs_finish(m, call, k->meth, start, st, why, NULL, 0);
    return;
  }
  o->m = m;
  o->k = k;
  o->call = call;
  o->start_ms = start;
  cp_grpc_call_on_cancel(call, fs_cancel, o);
  cs_link_add(m, &o->link, fs_abandon);
  fs_next(o);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's ReportOutcomes calls (cpc_outcalls.h). */
#include <stdlib.h>
#include <string.h>

#include "cpc_outcalls.h"
#include "cpc_wire.h"

#define PATH "/controlplane.v1.WorkerControlPlane/ReportOutcomes"

struct cpc_outcall {
  ilist_node node; /* in owner->calls */
  cpc_outcalls *owner;
  int64_t id;
  uint64_t gen;
  cp_grpc_ccall *call;
  uint8_t *buf; /* every message, one after the other */
  size_t off[CP_SESSION_OUTCOME_MSGS_MAX], len[CP_SESSION_OUTCOME_MSGS_MAX];
  uint32_t n, sent;
  int got;
  uint64_t acked;
  cp_session_outcomes_fn done; /* NULL once cancelled by its user */
  void *arg;
};

static void unlink_call(cpc_outcall *c) { ilist_remove(&c->node); }

static void free_call(cpc_outcall *c) {
  free(c->buf);
  free(c);
}

static void send_next(cpc_outcall *c) {
  int rc = c->sent < c->n
               ? cp_grpc_ccall_send(c->call, c->buf + c->off[c->sent],
                                    c->len[c->sent])
               : cp_grpc_ccall_close_send(c->call);
  if (rc != PH_OK)
    cp_grpc_ccall_cancel(c->call); /* on_done follows */
}

static void on_sent(void *arg, cp_grpc_ccall *call) {
  (void)call;
  cpc_outcall *c = arg;
  if (c->sent < c->n)
    c->sent++;
  send_next(c);
}

static void on_message(void *arg, cp_grpc_ccall *call, const uint8_t *msg,
                       size_t len) {
  (void)call;
  cpc_outcall *c = arg;
  uint64_t acked = 0;
  if (cpc_read_outcomes_ack(msg, len, &acked) != PH_OK)
    return; /* on_done: OK without an answer is INTERNAL below */
  c->got = 1;
  c->acked = acked;
}

static void on_done(void *arg, cp_grpc_ccall *call, int status,
                    const char *msg) {
  (void)call;
  (void)msg;
  cpc_outcall *c = arg;
  cpc_outcalls *oc = c->owner;
  unlink_call(c);
  if (oc->count)
    oc->count(oc->count_arg, status);
  if (status == CP_GRPC_OK && !c->got)
    status = CP_GRPC_INTERNAL; /* an unreadable answer */
  /* A call of an ended session says so, whatever arrived first: its
   * acknowledgement belongs to a session the caller has left. */
  if (c->gen != oc->live_gen)
    status = CP_GRPC_CANCELLED;
  if (c->done)
    c->done(c->arg, status, status == CP_GRPC_OK ? c->acked : 0);
  free_call(c);
}

int64_t cpc_outcalls_start(cpc_outcalls *oc, cp_grpc_channel *ch,
                           uint64_t gen, const uint8_t *const *msgs,
                           const size_t *lens, uint32_t n, int64_t timeout_ms,
                           cp_session_outcomes_fn done, void *arg) {
  if (!ch || !msgs || !lens || !done || n < 1 ||
      n > CP_SESSION_OUTCOME_MSGS_MAX)
    return PH_EINVAL;
  if (ilist_len(&oc->calls) >= CP_SESSION_OUTCOME_CALLS_MAX)
    return PH_EBUSY;
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!msgs[i] || !lens[i] || lens[i] > SIZE_MAX / 32)
      return PH_EINVAL;
    total += lens[i];
  }
  cpc_outcall *c = calloc(1, sizeof(*c));
  if (!c || !(c->buf = malloc(total))) {
    free(c);
    return PH_ENOMEM;
  }
  size_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    memcpy(c->buf + off, msgs[i], lens[i]);
    c->off[i] = off;
    c->len[i] = lens[i];
    off += lens[i];
  }
  c->n = n;
  c->owner = oc;
  c->gen = gen;
  c->done = done;
  c->arg = arg;
  /* No on_drop: cpc_outcalls_stop frees c itself. */
  cp_grpc_ccall_cbs cbs = {on_message, on_sent, on_done, NULL};
  c->call = cp_grpc_ccall_start(ch, PATH, CP_RPC_CLIENT_STREAM, timeout_ms,
                                NULL, 0, &cbs, c);
  if (!c->call) {
    free_call(c);
    return PH_ENOMEM;
  }
  c->id = ++oc->next_id;
  ilist_push_front(&oc->calls, &c->node);
  send_next(c);
  return c->id;
}

void cpc_outcalls_init(cpc_outcalls *oc) {
  memset(oc, 0, sizeof(*oc));
  ilist_init(&oc->calls);
}

void cpc_outcalls_cancel(cpc_outcalls *oc, int64_t id) {
  ILIST_FOREACH_SAFE(&oc->calls, it, nx) {
    cpc_outcall *c = ILIST_ENTRY(it, cpc_outcall, node);
    if (c->id == id) {
      c->done = NULL;
      cp_grpc_ccall_cancel(c->call);
      return;
    }
  }
}

void cpc_outcalls_end_session(cpc_outcalls *oc) {
  oc->live_gen = 0;
  ILIST_FOREACH_SAFE(&oc->calls, it, nx)
    cp_grpc_ccall_cancel(ILIST_ENTRY(it, cpc_outcall, node)->call);
}

void cpc_outcalls_stop(cpc_outcalls *oc) {
  oc->live_gen = 0;
  for (ilist_node *n; (n = ilist_pop(&oc->calls));) {
    cpc_outcall *c = ILIST_ENTRY(n, cpc_outcall, node);
    cp_grpc_ccall_cancel(c->call);
    if (c->done)
      c->done(c->arg, CP_GRPC_CANCELLED, 0);
    /* The channel's free ends the call without on_done: c is ours. */
    free_call(c);
  }
}

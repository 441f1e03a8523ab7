/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool connector's open() and cancel(): one request through the proxy
 * pool (the 000 design's gateway data path, CP-1-21..25, CP-5-2..5). An
 * attempt goes through these steps, each in its own file:
 *
 *   match   the first rule of the live view for host, port, the client's
 *           identity and the listener; pick: the rule's strategy picks a
 *           candidate that takes it now, reserved at once (pool_match.c);
 *   wait    no candidate now: the rule's on_unavailable (pool_wait.c);
 *   dial    the upstream connector dials the proxy, then CONNECT or SOCKS5
 *           with it (the upstream kit), or nothing for absolute-form
 *           forwarding; DIRECT dials the target (pool_dial.c);
 *   lease   the caller gets the socket and a lease (pool_lease.c).
 *
 * This file keeps what the steps share: the attempts by id (cancel), the
 * outcomes (every attempt through a proxy ends in exactly one, handed to
 * outcome.sink, which never blocks, CP-1-33), the reservation's release,
 * the attempt's one timer (WAIT's deadline, the handshake's), and the
 * answers. Answers reach the caller from the loop, never from inside
 * open() or cancel() or a lease call: a deliver timer runs them, except
 * that a handshake finishing in our own watcher answers at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "pool_int.h"

#define RETRY_HINT_MS 1000u

int64_t pool_mono_ms(pool *p) { return pool_api->now_ms(p->ctx); }

/* ---- the id table --------------------------------------------------------- */

static pool_attempt *tab_find(pool *p, int64_t id) {
  idtab_node *n = idtab_find(&p->ids, id);
  return n ? IDTAB_ENTRY(n, pool_attempt, hn) : NULL;
}

/* ---- outcomes and counts -------------------------------------------------- */

void pool_outcome(pool_attempt *a, int stage, int result) {
  pool *p = a->p;
  if (!a->px)
    return;
  if (stage >= 1 && stage <= 4 && result >= 1 && result <= 3)
    pool_api->inc(p->m_outcome[stage - 1][result - 1], 1);
  int64_t lat = mono_us() - a->stage_us;
  ph_outcome o = {
      .proxy_index = a->pidx,
      .proxy_id = a->px->id,
      .rule_id = a->rule_id,
      .stage = stage,
      .result = result,
      .latency_us = lat > 0 ? lat : 0,
      .observed_at_ms = wall_ms(),
  };
  if (p->sink->record(p->sink_self, &o) == PH_EFULL)
    pool_api->inc(p->m_outcome_full, 1);
}

/* Gives up a's reservation (nothing reached the target). */
void pool_unreserve(pool_attempt *a) {
  pool *p = a->p;
  if (!a->px)
    return;
  uint32_t idx = a->px->idx;
  pool_px_add(p, a->px, 0, -1);
  pool_api->gauge_add(p->m_reserved, -1);
  a->px = NULL;
  if (idx != PH_POOL_VIEW_NONE)
    pool_wake(p, idx);
}

void pool_attempt_free(pool_attempt *a) {
  OPENSSL_cleanse(a->fwd_auth, sizeof(a->fwd_auth)); /* a credential */
  if (a->timer)
    pool_api->timer_free(a->timer);
  pool_gen_release(a->gen);
  free(a);
}

/* ---- answers -------------------------------------------------------------- */

static void deliver(pool_attempt *a) {
  pool *p = a->p;
  idtab_del(&a->p->ids, &a->hn);
  p->n_open--;
  int leased = a->res.code == PH_OPEN_OK && a->leased;
  if (leased)
    a->state = AT_LEASED;
  if (a->hop_id[0])
    ph_open_upstream_give(&a->res, &a->hop_x, a->hop_id);
  a->cb(a->arg, &a->res);
  if (!leased)
    pool_attempt_free(a);
}

static void answer_later(pool_attempt *a) {
  pool *p = a->p;
  a->state = AT_DONE;
  ilist_push(&p->dq, &a->qlink);
  pool_api->defer_post(p->deliver); /* the next loop turn */
}

void pool_on_deliver(ph_defer *t, void *arg) {
  pool *p = arg;
  /* Only what is due now; answers made meanwhile wait one iteration. */
  ilist_node *end = ilist_last(&p->dq), *n;
  while ((n = ilist_pop(&p->dq))) {
    int last = n == end;
    deliver(ILIST_ENTRY(n, pool_attempt, qlink));
    if (last)
      break;
  }
  if (!ilist_empty(&p->dq))
    pool_api->defer_post(t);
}

void pool_answer(pool_attempt *a) {
  if (guard_inside(&a->p->entered)) {
    answer_later(a);
  } else {
    a->state = AT_DONE;
    deliver(a);
  }
}

void pool_fail(pool_attempt *a, int result, int stage, int code,
               int retryable) {
  pool *p = a->p;
  pool_wait_leave(a);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  pool_api->inc(p->m_result[result], 1);
  pool_status_fail(p, stage, code);
  a->res.size = sizeof(a->res);
  a->res.stage = stage;
  a->res.code = code;
  a->res.retryable = retryable;
  a->res.retry_after_ms = retryable ? RETRY_HINT_MS : 0;
  a->res.fd = -1;
  answer_later(a);
}

void pool_arm_deadline(pool_attempt *a, int64_t deadline_ms,
                       uint32_t at_most_ms) {
  int64_t left = deadline_ms - pool_mono_ms(a->p);
  if (left < 1)
    left = 1;
  uint64_t after = (uint64_t)left;
  if (at_most_ms && after > at_most_ms)
    after = at_most_ms;
  pool_api->timer_set(a->timer, after, 0);
}

/* ---- the timer: WAIT's deadline, the handshake's (and re-peek) ------------ */

static void on_timer(ph_timer *t, void *arg) {
  pool_attempt *a = arg;
  (void)t;
  if (a->state == AT_WAITING)
    pool_wait_on_timer(a);
  else if (a->state == AT_HANDSHAKE)
    pool_dial_on_timer(a);
}

int pool_attempt_timer(pool_attempt *a) {
  if (!a->timer)
    a->timer = pool_api->timer_new(a->p->ctx, on_timer, a);
  return a->timer != NULL;
}

/* ---- the connector -------------------------------------------------------- */

static int64_t pool_open(void *self, const ph_open_request *req,
                         ph_open_cb cb, void *arg) {
  pool *p = self;
  if (!req || !cb || req->size < offsetof(ph_open_request, flags) ||
      req->protocol != PH_PROTO_TCP || !req->port || !req->host)
    return PH_EINVAL;
  size_t hl = strnlen(req->host, POOL_HOST_MAX + 1);
  if (!hl || hl > POOL_HOST_MAX)
    return PH_EINVAL;
  pool_attempt *a = calloc(1, sizeof(*a));
  if (!a)
    return PH_ENOMEM;
  guard_enter(&p->entered);
  a->p = p;
  a->id = ++p->next_id;
  a->cb = cb;
  a->arg = arg;
  a->fd = -1;
  memcpy(a->host, req->host, hl);
  a->port = req->port;
  if (req->principal && strlen(req->principal) < sizeof(a->principal)) {
    snprintf(a->principal, sizeof(a->principal), "%s", req->principal);
    a->has_principal = 1;
  }
  int v13 = req->size >= offsetof(ph_open_request, addr_filter);
  if (v13 && req->listener &&
      strlen(req->listener) < sizeof(a->listener)) {
    snprintf(a->listener, sizeof(a->listener), "%s", req->listener);
    a->has_listener = 1;
  }
  a->lease_asked = ph_open_lease_asked(req);
  a->fwd_asked = ph_open_http_forward_asked(req);
  idtab_put(&a->p->ids, &a->hn, a->id);
  p->n_open++;
  if (!a->lease_asked)
    /* Without a lease the pool could not free the proxy's capacity. */
    pool_fail(a, PR_REFUSED, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY,
              0);
  else if (p->stopping || p->n_open > p->conf.max_opens)
    pool_fail(a, PR_REFUSED, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
  else
    pool_select(a, v13 ? req : NULL);
  int64_t id = a->id;
  guard_leave(&p->entered);
  return id;
}

static void drop(pool_attempt *a) {
  pool *p = a->p;
  switch (a->state) {
  case AT_WAITING:
    pool_wait_leave(a);
    break;
  case AT_DIALING:
    if (a->sub)
      p->up->cancel(p->up_self, a->sub);
    pool_unreserve(a);
    break;
  case AT_HANDSHAKE:
    pool_dial_close(a);
    pool_unreserve(a);
    break;
  case AT_DIRECT:
    if (a->sub)
      p->direct->cancel(p->direct_self, a->sub);
    break;
  case AT_DONE:
    ilist_remove(&a->qlink);
    if (a->res.fd >= 0)
      close(a->res.fd);
    if (a->res.stream)
      ph_stream_close(a->res.stream);
    if (a->leased && a->px) /* a success never delivered */
      pool_lease_release(a);
    break;
  default:
    break;
  }
  idtab_del(&a->p->ids, &a->hn);
  p->n_open--;
  pool_attempt_free(a);
}

static int pool_cancel(void *self, int64_t id) {
  pool *p = self;
  pool_attempt *a = tab_find(p, id);
  if (!a)
    return PH_ENOENT;
  guard_enter(&p->entered);
  drop(a);
  guard_leave(&p->entered);
  return PH_OK;
}

void pool_attempts_abort(pool *p) {
  idtab_node *n;
  while ((n = idtab_any(&p->ids)))
    drop(IDTAB_ENTRY(n, pool_attempt, hn));
}

const ph_connector_v1 pool_connector_service = {pool_open, pool_cancel};

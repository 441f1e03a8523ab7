/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool's lease (CP-5-4, CP-5-5): a stream that is up (a tunnel, or a
 * socket to a forward proxy) goes to the caller with a lease; the
 * proxy's reservation becomes active, and the lease's end gives the
 * outcome of the stages after it (RESPONSE_HEADERS, TUNNEL), frees the
 * capacity (waking waiters) and the attempt. The drain (pool_drain.c)
 * cuts leased streams through the caller's cut. Loop thread. */
#include "pool_int.h"

void pool_lease_release(pool_attempt *a) {
  pool *p = a->p;
  pool_drain_remove(a);
  if (a->px) {
    uint32_t idx = a->px->idx;
    pool_px_add(p, a->px, -1, 0);
    pool_api->gauge_add(p->m_active, -1);
    a->px = NULL;
    if (idx != PH_POOL_VIEW_NONE)
      pool_wake(p, idx);
  }
}

static void lease_first_byte(ph_open_lease *l) {
  pool_attempt *a = (pool_attempt *)l;
  if (a->first_byte)
    return;
  a->first_byte = 1;
  a->stage_us = mono_us(); /* the tunnel's stage from here */
}

/* The stage and result an ended stream reports (docs/user-guide/
 * gateway.md "Outcomes"): before the target's first byte it is about the
 * response (CP-5-4), after it about the tunnel (CP-5-5); a client that
 * went away says nothing against the proxy. */
static void lease_end(ph_open_lease *l, int how) {
  pool_attempt *a = (pool_attempt *)l;
  pool *p = a->p;
  guard_enter(&p->entered);
  int stage = a->first_byte || how == PH_LEASE_END_CLIENT_ERROR
                  ? PH_OUTCOME_STAGE_TUNNEL
                  : PH_OUTCOME_STAGE_RESPONSE_HEADERS;
  int result = PH_OUTCOME_SUCCESS;
  if (how == PH_LEASE_END_TIMEOUT)
    result = PH_OUTCOME_TIMEOUT;
  else if (how == PH_LEASE_END_TARGET_ERROR ||
           (how == PH_LEASE_END_CLOSED && !a->first_byte))
    result = PH_OUTCOME_FAILURE;
  pool_outcome(a, stage, result);
  pool_lease_release(a);
  pool_attempt_free(a);
  guard_leave(&p->entered);
}

/* The caller's cut: the drain (pool_drain.c) ends the stream with it. */
static void lease_on_cut(ph_open_lease *l, void (*cut)(void *), void *arg) {
  pool_drain_on_cut((pool_attempt *)l, cut, arg);
}

static const ph_open_lease_ops lease_ops = {
    .size = sizeof(ph_open_lease_ops),
    .first_byte = lease_first_byte,
    .end = lease_end,
    .on_cut = lease_on_cut,
};

/* The stream is up (a tunnel, or a socket to a forward proxy: http_proxy
 * 1): the reservation becomes active and the caller gets the socket and
 * the lease, and with http_proxy what to add to its requests, each in
 * the forms its request asked (open_lease.h, open_http_forward.h). */
void pool_lease_out(pool_attempt *a, int http_proxy) {
  pool *p = a->p;
  pool_px_add(p, a->px, +1, -1);
  pool_drain_add(a);
  pool_api->gauge_add(p->m_reserved, -1);
  pool_api->gauge_add(p->m_active, 1);
  pool_api->inc(p->m_result[PR_OK], 1);
  a->stage_us = mono_us();
  a->lease.ops = &lease_ops;
  a->res.size = sizeof(a->res);
  a->res.stage = PH_STAGE_NONE;
  a->res.code = PH_OPEN_OK;
  a->res.fd = a->fd;
  a->res.flags = 0;
  a->res.lease = NULL;
  a->res.http_forward = NULL;
  a->res.ext = NULL;
  ph_open_lease_give(&a->res, &a->lease_x, &a->lease, a->lease_asked);
  if (http_proxy)
    ph_open_http_forward_give(&a->res, &a->fwd_x, &a->fwd, a->fwd_asked,
                              a->fwd_auth_len ? a->fwd_auth : NULL,
                              a->fwd_auth_len);
  a->leased = 1;
  a->fd = -1;
  pool_answer(a);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool connector's open(): one request through the proxy pool (the
 * 000 design's gateway data path, CP-1-21..25, CP-5-2..5).
 *
 *   match   the first rule of the live view for host, port, the client's
 *           identity and the listener (no view or past its validity: no
 *           candidates, CP-3-9; no rule: forbidden);
 *   pick    the rule's strategy picks a candidate that takes it now
 *           (strategy.h); it is reserved at once;
 *   dial    the upstream connector (a `direct` instance) dials the proxy
 *           (outcome stage DIAL);
 *   shake   CONNECT or SOCKS5 with the proxy (up_hs.h; PROXY_HANDSHAKE);
 *           none for a request the caller forwards in absolute form
 *           (PH_OPEN_F_HTTP_FORWARD) through an `http` upstream, an
 *           ordinary forward proxy: the caller gets the socket at once
 *           with PH_OPEN_R_HTTP_PROXY and the Proxy-Authorization value
 *           to add (made here, in the attempt, from the view's
 *           credentials; without the flag an `http` upstream gets
 *           CONNECT like an `http_connect` one);
 *   lease   the caller gets the socket and a lease; the reservation
 *           becomes active, and the lease's end gives the outcome of the
 *           stages after it (RESPONSE_HEADERS, TUNNEL) and frees it.
 *
 * A failed dial or handshake has sent nothing to the target: the request
 * goes on with another candidate of the same view (CP-1-23), at most
 * max_attempts proxies. No candidate: the rule's on_unavailable says what
 * follows: WAIT (a bounded local wait, woken in order when capacity frees
 * or a new view comes, CP-1-24), DIRECT (the direct connector, whose
 * target policy applies, CP-1-25), or REJECT. Every attempt through a
 * proxy ends in exactly one outcome handed to outcome.sink, which never
 * blocks (CP-1-33).
 *
 * Answers reach the caller from the loop, never from inside open() or
 * cancel() or a lease call: a deliver timer runs them, except that a
 * handshake finishing in our own watcher answers at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "pool_int.h"

#define PEEK_DELAY_MIN_MS 1u
#define PEEK_DELAY_MAX_MS 64u
#define RETRY_HINT_MS 1000u

static void select_next(pool_attempt *a);
static void hs_step(pool_attempt *a);

static int64_t mono_ms(pool *p) { return pool_api->now_ms(p->ctx); }

/* ---- the id table --------------------------------------------------------- */

static uint32_t bucket(pool *p, int64_t id) {
  return (uint32_t)((uint64_t)id * 0x9E3779B97F4A7C15ULL >> 32) &
         (p->n_buckets - 1);
}

static void tab_put(pool_attempt *a) {
  pool *p = a->p;
  uint32_t b = bucket(p, a->id);
  a->hnext = p->buckets[b];
  p->buckets[b] = a;
}

static void tab_del(pool_attempt *a) {
  pool *p = a->p;
  for (pool_attempt **pp = &p->buckets[bucket(p, a->id)]; *pp;
       pp = &(*pp)->hnext)
    if (*pp == a) {
      *pp = a->hnext;
      a->hnext = NULL;
      return;
    }
}

static pool_attempt *tab_find(pool *p, int64_t id) {
  for (pool_attempt *a = p->buckets[bucket(p, id)]; a; a = a->hnext)
    if (a->id == id)
      return a;
  return NULL;
}

/* ---- queues (the wait queue and the done list share the links) ---------- */

static void q_push(pool_attempt **first, pool_attempt **last,
                   pool_attempt *a) {
  a->qnext = NULL;
  a->qprev = *last;
  if (*last)
    (*last)->qnext = a;
  else
    *first = a;
  *last = a;
}

static void q_unlink(pool_attempt **first, pool_attempt **last,
                     pool_attempt *a) {
  if (a->qprev)
    a->qprev->qnext = a->qnext;
  else
    *first = a->qnext;
  if (a->qnext)
    a->qnext->qprev = a->qprev;
  else
    *last = a->qprev;
  a->qprev = a->qnext = NULL;
}

static void wait_leave(pool_attempt *a) {
  pool *p = a->p;
  if (a->state != AT_WAITING)
    return;
  q_unlink(&p->wq_first, &p->wq_last, a);
  p->n_waiting--;
  pool_api->gauge_add(p->m_waiting, -1);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  a->state = AT_NEW;
}

/* ---- outcomes and counts -------------------------------------------------- */

static void outcome(pool_attempt *a, int stage, int result) {
  pool *p = a->p;
  if (!a->px)
    return;
  if (stage >= 1 && stage <= 4 && result >= 1 && result <= 3)
    pool_api->inc(p->m_outcome[stage - 1][result - 1], 1);
  int64_t lat = pool_mono_us() - a->stage_us;
  ph_outcome o = {
      .proxy_index = a->pidx,
      .proxy_id = a->px->id,
      .rule_id = a->rule_id,
      .stage = stage,
      .result = result,
      .latency_us = lat > 0 ? lat : 0,
      .observed_at_ms = pool_wall_ms(),
  };
  if (p->sink->record(p->sink_self, &o) == PH_EFULL)
    pool_api->inc(p->m_outcome_full, 1);
}

/* Gives up a's reservation (nothing reached the target). */
static void unreserve(pool_attempt *a) {
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

static void close_upstream(pool_attempt *a) {
  if (a->io) {
    pool_api->io_free(a->io);
    a->io = NULL;
  }
  if (a->fd >= 0) {
    close(a->fd);
    a->fd = -1;
  }
  up_hs_wipe(&a->hs);
}

static void attempt_free(pool_attempt *a) {
  OPENSSL_cleanse(a->fwd_auth, sizeof(a->fwd_auth)); /* a credential */
  if (a->timer)
    pool_api->timer_free(a->timer);
  pool_gen_release(a->gen);
  free(a);
}

/* ---- answers -------------------------------------------------------------- */

static void deliver(pool_attempt *a) {
  pool *p = a->p;
  tab_del(a);
  p->n_open--;
  int leased = a->res.code == PH_OPEN_OK && a->res.lease;
  if (leased)
    a->state = AT_LEASED;
  a->cb(a->arg, &a->res);
  if (!leased)
    attempt_free(a);
}

static void answer_later(pool_attempt *a) {
  pool *p = a->p;
  a->state = AT_DONE;
  q_push(&p->dq_first, &p->dq_last, a);
  pool_api->timer_set(p->deliver_timer, 0, 1);
}

void pool_on_deliver(ph_timer *t, void *arg) {
  pool *p = arg;
  pool_api->timer_set(t, 0, 0);
  /* Only what is due now; answers made meanwhile wait one iteration. */
  pool_attempt *end = p->dq_last;
  while (p->dq_first) {
    pool_attempt *a = p->dq_first;
    q_unlink(&p->dq_first, &p->dq_last, a);
    deliver(a);
    if (a == end)
      break;
  }
  if (p->dq_first)
    pool_api->timer_set(t, 0, 1);
}

static void fail(pool_attempt *a, int result, int stage, int code,
                 int retryable) {
  pool *p = a->p;
  wait_leave(a);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  pool_api->inc(p->m_result[result], 1);
  a->res.size = sizeof(a->res);
  a->res.stage = stage;
  a->res.code = code;
  a->res.retryable = retryable;
  a->res.retry_after_ms = retryable ? RETRY_HINT_MS : 0;
  a->res.fd = -1;
  answer_later(a);
}

/* ---- the lease ------------------------------------------------------------ */

static void lease_first_byte(ph_open_lease *l) {
  pool_attempt *a = (pool_attempt *)l;
  if (a->first_byte)
    return;
  a->first_byte = 1;
  a->stage_us = pool_mono_us(); /* the tunnel's stage from here */
}

/* The stage and result an ended stream reports (docs/user-guide/
 * gateway.md "Outcomes"): before the target's first byte it is about the
 * response (CP-5-4), after it about the tunnel (CP-5-5); a client that
 * went away says nothing against the proxy. */
static void lease_end(ph_open_lease *l, int how) {
  pool_attempt *a = (pool_attempt *)l;
  pool *p = a->p;
  p->entered++;
  int stage = a->first_byte || how == PH_LEASE_END_CLIENT_ERROR
                  ? PH_OUTCOME_STAGE_TUNNEL
                  : PH_OUTCOME_STAGE_RESPONSE_HEADERS;
  int result = PH_OUTCOME_SUCCESS;
  if (how == PH_LEASE_END_TIMEOUT)
    result = PH_OUTCOME_TIMEOUT;
  else if (how == PH_LEASE_END_TARGET_ERROR ||
           (how == PH_LEASE_END_CLOSED && !a->first_byte))
    result = PH_OUTCOME_FAILURE;
  outcome(a, stage, result);
  pool_drain_remove(a);
  if (a->px) {
    uint32_t idx = a->px->idx;
    pool_px_add(p, a->px, -1, 0);
    pool_api->gauge_add(p->m_active, -1);
    a->px = NULL;
    if (idx != PH_POOL_VIEW_NONE)
      pool_wake(p, idx);
  }
  attempt_free(a);
  p->entered--;
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

/* ---- the handshake ----------------------------------------------------- */

/* An upstream failure's code for the client, if no other proxy serves. */
static int hs_code(const up_hs *h, up_hs_state st) {
  if (st == UP_HS_REFUSED) {
    if (h->protocol == PH_POOL_UPSTREAM_SOCKS5)
      switch (h->status) {
      case 0x02:
        return PH_OPEN_FORBIDDEN;
      case 0x03:
        return PH_OPEN_NETWORK_UNREACHABLE;
      case 0x04:
        return PH_OPEN_HOST_UNREACHABLE;
      case 0x05:
        return PH_OPEN_CONNECTION_REFUSED;
      case 0x06:
        return PH_OPEN_TIMEOUT;
      default:
        return PH_OPEN_HOST_UNREACHABLE;
      }
    if (h->status == 403)
      return PH_OPEN_FORBIDDEN;
    if (h->status == 504)
      return PH_OPEN_TIMEOUT;
    return PH_OPEN_HOST_UNREACHABLE;
  }
  return PH_OPEN_INTERNAL_ERROR; /* auth or protocol: ours to fix */
}

static void try_again(pool_attempt *a) {
  pool *p = a->p;
  pool_api->inc(p->m_retries, 1);
  a->state = AT_NEW;
  select_next(a);
}

static void hs_failed(pool_attempt *a, up_hs_state st, int timed_out) {
  outcome(a, PH_OUTCOME_STAGE_PROXY_HANDSHAKE,
          timed_out ? PH_OUTCOME_TIMEOUT : PH_OUTCOME_FAILURE);
  a->fail_stage = PH_STAGE_RELAY;
  a->fail_code = timed_out ? PH_OPEN_TIMEOUT : hs_code(&a->hs, st);
  PH_LOG_RL(pool_api, a->p->ctx, PH_LOG_DEBUG, "upstream handshake failed",
            PH_STR("proxy_id", a->px ? a->px->id : ""),
            PH_STR("state", timed_out ? "timeout" : up_hs_state_name(st)),
            PH_INT("upstream_status", a->hs.status));
  close_upstream(a);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  unreserve(a);
  try_again(a);
}

/* The stream is up (a tunnel, or a socket to a forward proxy): the
 * reservation becomes active and the caller gets the socket, the lease,
 * and rflags (ph_open_result_flags). */
static void lease_out(pool_attempt *a, uintptr_t rflags) {
  pool *p = a->p;
  pool_px_add(p, a->px, +1, -1);
  pool_drain_add(a);
  pool_api->gauge_add(p->m_reserved, -1);
  pool_api->gauge_add(p->m_active, 1);
  pool_api->inc(p->m_result[PR_OK], 1);
  a->stage_us = pool_mono_us();
  a->lease.ops = &lease_ops;
  a->res.size = sizeof(a->res);
  a->res.stage = PH_STAGE_NONE;
  a->res.code = PH_OPEN_OK;
  a->res.fd = a->fd;
  a->res.lease = &a->lease;
  a->res.flags = rflags;
  a->res.http_forward = rflags & PH_OPEN_R_HTTP_PROXY ? &a->fwd : NULL;
  a->fd = -1;
  if (p->entered) {
    answer_later(a);
  } else {
    a->state = AT_DONE;
    deliver(a);
  }
}

static void hs_done(pool_attempt *a) {
  pool_api->io_free(a->io);
  a->io = NULL;
  pool_api->timer_set(a->timer, 0, 0);
  up_hs_wipe(&a->hs);
  lease_out(a, 0);
}

/* ---- absolute-form forwarding ------------------------------------------- */

/* The caller forwards HTTP requests in absolute form and the proxy is an
 * ordinary forward proxy: no tunnel is asked for. */
static int forwards(const pool_attempt *a, const ph_pool_view_proxy *x) {
  return x->protocol == PH_POOL_UPSTREAM_HTTP &&
         (a->flags & PH_OPEN_F_HTTP_FORWARD);
}

/* What the caller adds to each request (a->fwd): "Basic " and the token
 * of the view's credentials (up_hs_basic), or nothing without them.
 * PH_OK, or PH_EINVAL for credentials Basic cannot carry (a ':' in the
 * user name: the CONNECT would refuse them too). */
static int forward_prepare(pool_attempt *a, const ph_pool_view_credential *c) {
  static const char scheme[] = "Basic ";
  const size_t sl = sizeof(scheme) - 1;
  memset(&a->fwd, 0, sizeof(a->fwd));
  a->fwd.size = sizeof(a->fwd);
  if (!c || !c->username)
    return PH_OK;
  memcpy(a->fwd_auth, scheme, sl);
  size_t n = up_hs_basic(c->username, c->username_len, c->password,
                         c->password_len, a->fwd_auth + sl,
                         sizeof(a->fwd_auth) - sl - 1);
  if (!n)
    return PH_EINVAL;
  a->fwd_auth[sl + n] = '\0';
  a->fwd.proxy_authorization = a->fwd_auth;
  a->fwd.proxy_authorization_len = (uint32_t)(sl + n);
  return PH_OK;
}

/* Arms a's timer for its deadline (WAIT's or the handshake's), or sooner:
 * at_most_ms (a re-peek) when not 0. */
static void arm_deadline(pool_attempt *a, int64_t deadline_ms,
                         uint32_t at_most_ms) {
  int64_t left = deadline_ms - mono_ms(a->p);
  if (left < 1)
    left = 1;
  uint64_t after = (uint64_t)left;
  if (at_most_ms && after > at_most_ms)
    after = at_most_ms;
  pool_api->timer_set(a->timer, after, 0);
}

static void hs_step(pool_attempt *a) {
  uint8_t buf[UP_HS_HEAD_MAX];
  for (;;) {
    const uint8_t *out;
    size_t n_out = up_hs_pending_out(&a->hs, &out);
    if (n_out) {
      ssize_t w = send(a->fd, out, n_out, MSG_NOSIGNAL);
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pool_api->io_set(a->io, PH_WRITE);
        return;
      }
      if (w <= 0) {
        hs_failed(a, UP_HS_MALFORMED, 0);
        return;
      }
      up_hs_sent(&a->hs, (size_t)w);
      continue;
    }
    size_t want = up_hs_want(&a->hs);
    if (want > sizeof(buf))
      want = sizeof(buf);
    if (!want) {
      hs_failed(a, UP_HS_MALFORMED, 0);
      return;
    }
    ssize_t n = recv(a->fd, buf, want, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pool_api->io_set(a->io, PH_READ);
      return;
    }
    if (n < 0) {
      hs_failed(a, UP_HS_MALFORMED, 0);
      return;
    }
    size_t consume = 0;
    up_hs_state st = up_hs_feed(&a->hs, buf, (size_t)n, n == 0, &consume);
    if (consume > (size_t)n)
      consume = (size_t)n;
    if (consume && recv(a->fd, buf, consume, 0) != (ssize_t)consume) {
      hs_failed(a, UP_HS_MALFORMED, 0);
      return;
    }
    if (st == UP_HS_DONE) {
      hs_done(a);
      return;
    }
    if (st != UP_HS_MORE) {
      hs_failed(a, st, 0);
      return;
    }
    if (!consume && n > 0) {
      /* A partial head the codec keeps unconsumed: the socket stays
       * readable, so wait on a short, growing timer instead of spinning
       * on the watcher. */
      pool_api->io_set(a->io, 0);
      a->peek_delay_ms = a->peek_delay_ms ? a->peek_delay_ms * 2
                                          : PEEK_DELAY_MIN_MS;
      if (a->peek_delay_ms > PEEK_DELAY_MAX_MS)
        a->peek_delay_ms = PEEK_DELAY_MAX_MS;
      arm_deadline(a, a->hs_deadline_ms, a->peek_delay_ms);
      return;
    }
    a->peek_delay_ms = 0;
  }
}

static void hs_io(ph_io *io, int fd, int revents, void *arg) {
  (void)io;
  (void)fd;
  (void)revents;
  hs_step(arg);
}

/* ---- timers: WAIT's deadline, the handshake's deadline and re-peek --------- */

static void on_timer(ph_timer *t, void *arg) {
  pool_attempt *a = arg;
  (void)t;
  if (a->state == AT_WAITING) {
    if (mono_ms(a->p) >= a->wait_deadline_ms) {
      fail(a, PR_WAIT_TIMEOUT, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, 1);
      return;
    }
    arm_deadline(a, a->wait_deadline_ms, 0);
  } else if (a->state == AT_HANDSHAKE) {
    if (mono_ms(a->p) >= a->hs_deadline_ms) {
      hs_failed(a, UP_HS_MORE, 1);
      return;
    }
    pool_api->io_set(a->io, PH_READ);
    hs_step(a);
  }
}

static int ensure_timer(pool_attempt *a) {
  if (!a->timer)
    a->timer = pool_api->timer_new(a->p->ctx, on_timer, a);
  return a->timer != NULL;
}

/* ---- dialing the proxy -------------------------------------------------- */

static void dialed(void *arg, const ph_open_result *res) {
  pool_attempt *a = arg;
  pool *p = a->p;
  a->sub = 0;
  if (res->code != PH_OPEN_OK || res->fd < 0) {
    outcome(a, PH_OUTCOME_STAGE_DIAL,
            res->code == PH_OPEN_TIMEOUT ? PH_OUTCOME_TIMEOUT
                                         : PH_OUTCOME_FAILURE);
    if (res->stream)
      ph_stream_close(res->stream);
    a->fail_stage = PH_STAGE_RELAY;
    a->fail_code = res->code == PH_OPEN_OK ? PH_OPEN_INTERNAL_ERROR : res->code;
    unreserve(a);
    try_again(a);
    return;
  }
  a->stage_us = pool_mono_us();
  a->fd = res->fd;
  const ph_pool_view_proxy *x = &a->gen->view->proxies[a->pidx];
  const ph_pool_view_credential *c = x->credential;
  if (forwards(a, x)) {
    /* Nothing to say before the caller's first request: the outcome's
     * next stage is RESPONSE_HEADERS, at the lease's end. */
    if (forward_prepare(a, c) == PH_OK) {
      lease_out(a, PH_OPEN_R_HTTP_PROXY);
      return;
    }
    a->hs.status = -1; /* no answer: none was asked for */
    hs_failed(a, UP_HS_MALFORMED, 0);
    return;
  }
  int rc = up_hs_init(&a->hs, x->protocol, a->host, a->port,
                      c ? c->username : NULL, c ? c->username_len : 0,
                      c ? c->password : NULL, c ? c->password_len : 0);
  a->io = rc == PH_OK ? pool_api->io_new(p->ctx, a->fd, 0, hs_io, a) : NULL;
  if (!a->io || !ensure_timer(a)) {
    hs_failed(a, UP_HS_MALFORMED, 0);
    return;
  }
  a->state = AT_HANDSHAKE;
  a->peek_delay_ms = 0;
  a->hs_deadline_ms = mono_ms(p) + p->conf.handshake_timeout_ms;
  arm_deadline(a, a->hs_deadline_ms, 0);
  hs_step(a);
}

static void direct_done(void *arg, const ph_open_result *res) {
  pool_attempt *a = arg;
  pool *p = a->p;
  a->sub = 0;
  a->res = *res;
  a->res.size = sizeof(a->res);
  a->res.lease = NULL;
  a->res.flags = 0;
  pool_api->inc(p->m_result[res->code == PH_OPEN_OK ? PR_DIRECT
                                                    : PR_DIRECT_FAILED],
                1);
  a->state = AT_DONE;
  if (p->entered)
    answer_later(a);
  else
    deliver(a);
}

static void go_direct(pool_attempt *a) {
  pool *p = a->p;
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = a->port,
                        .host = a->host,
                        .principal = a->has_principal ? a->principal : NULL,
                        .listener = a->has_listener ? a->listener : NULL};
  a->state = AT_DIRECT;
  a->sub = p->direct->open(p->direct_self, &rq, direct_done, a);
  if (a->sub < 0) {
    a->sub = 0;
    fail(a, PR_DIRECT_FAILED, PH_STAGE_QUEUE, PH_OPEN_INTERNAL_ERROR, 1);
  }
}

/* ---- selection ------------------------------------------------------------ */

/* 1 when proxy idx is a candidate of rule r (candidates are ascending). */
static int rule_has(const ph_pool_view_rule *r, uint32_t idx) {
  uint32_t lo = 0, hi = r->n_candidates;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r->candidates[mid] == idx)
      return 1;
    if (r->candidates[mid] < idx)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* The session key the rule names ("username", "header:<Name>"), from
 * the request; called while open() runs (headers are borrowed). */
static void take_key(pool_attempt *a, const ph_pool_view_rule *r,
                     const ph_open_request *req) {
  const char *sk = r->sticky_key;
  const char *v = NULL;
  size_t n = 0;
  if (!sk || !*sk)
    return;
  if (strcmp(sk, "username") == 0 && a->has_principal) {
    v = a->principal;
    n = strlen(v);
  } else if (strncasecmp(sk, "header:", 7) == 0 && req && req->headers &&
             req->headers->get) {
    v = req->headers->get(req->headers->arg, sk + 7, &n);
  }
  if (v && n && n <= sizeof(a->key)) {
    memcpy(a->key, v, n);
    a->key_len = (uint32_t)n;
    a->has_key = 1;
  }
}

/* Matches a against the current generation when it has none or an older
 * one. 0: a was answered. */
static int match(pool_attempt *a, const ph_open_request *req) {
  pool *p = a->p;
  pool_gen *g = pool_gen_current(p);
  if (!g || !p->view->live(g->view, pool_wall_ms())) {
    fail(a, PR_NO_VIEW, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1);
    return 0;
  }
  if (a->gen == g)
    return 1;
  /* The proxies already tried stay tried in the new view (by id): a
   * snapshot swap must not give a request a second go at one. */
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->n_tried; i++) {
    uint32_t j = p->view->find(
        g->view, a->gen->view->proxies[a->tried[i]].proxy_id);
    if (j != PH_POOL_VIEW_NONE)
      a->tried[k++] = j;
  }
  a->n_tried = k;
  pool_gen_release(a->gen);
  pool_gen_hold(g);
  a->gen = g;
  uint32_t r = p->view->match(g->view, a->host, a->port,
                              a->has_principal ? a->principal : NULL,
                              a->has_listener ? a->listener : NULL);
  if (r == PH_POOL_VIEW_NONE) {
    fail(a, PR_NO_RULE, PH_STAGE_SELECTION, PH_OPEN_FORBIDDEN, 0);
    return 0;
  }
  a->rule = r;
  const ph_pool_view_rule *rule = &g->view->rules[r];
  snprintf(a->rule_id, sizeof(a->rule_id), "%s", rule->rule_id);
  if (req)
    take_key(a, rule, req);
  return 1;
}

static void enqueue(pool_attempt *a, const ph_pool_view_rule *rule) {
  pool *p = a->p;
  if (a->state == AT_WAITING)
    return; /* woken, and nothing for it yet: keeps its place */
  if (a->wait_deadline_ms == 0) {
    if (p->n_waiting >= p->conf.max_waiters) {
      fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
      return;
    }
    a->wait_deadline_ms = mono_ms(p) + rule->wait_timeout_ms;
  } else if (mono_ms(p) >= a->wait_deadline_ms) {
    fail(a, PR_WAIT_TIMEOUT, PH_STAGE_QUEUE, PH_OPEN_TIMEOUT, 1);
    return;
  } else if (p->n_waiting >= p->conf.max_waiters) {
    fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
    return;
  }
  if (!ensure_timer(a)) {
    fail(a, PR_WAIT_FULL, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
    return;
  }
  a->state = AT_WAITING;
  q_push(&p->wq_first, &p->wq_last, a);
  p->n_waiting++;
  pool_api->gauge_add(p->m_waiting, 1);
  arm_deadline(a, a->wait_deadline_ms, 0);
}

static void unavailable(pool_attempt *a, const ph_pool_view_rule *rule) {
  switch (rule->on_unavailable) {
  case PH_POOL_ON_UNAVAILABLE_WAIT:
    enqueue(a, rule);
    return;
  case PH_POOL_ON_UNAVAILABLE_DIRECT:
    wait_leave(a);
    go_direct(a);
    return;
  default:
    if (a->n_tried)
      fail(a, PR_UPSTREAM, a->fail_stage, a->fail_code, 1);
    else
      fail(a, PR_NO_CAPACITY, PH_STAGE_SELECTION, PH_OPEN_QUEUE_FULL, 1);
  }
}

/* Picks the next candidate and dials it, or applies on_unavailable. The
 * caller made sure a holds no reservation. */
static void pick_and_dial(pool_attempt *a, const ph_open_request *req) {
  pool *p = a->p;
  if (!match(a, req))
    return;
  pool_gen *g = a->gen;
  const ph_pool_view_rule *rule = &g->view->rules[a->rule];
  int s = g->rule_strat[a->rule];
  if (s < 0) {
    fail(a, PR_NO_STRATEGY, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1);
    return;
  }
  if (a->attempts >= p->conf.max_attempts ||
      a->n_tried >= PH_STRATEGY_TRIED_MAX) {
    wait_leave(a);
    fail(a, PR_UPSTREAM, a->fail_stage, a->fail_code, 1);
    return;
  }
  ph_strategy_pick in = {
      .size = sizeof(in),
      .view = g->view,
      .rule = rule,
      .load = &g->load,
      .now_ms = pool_wall_ms(),
      .key = a->has_key ? a->key : NULL,
      .key_len = a->key_len,
      .tried = a->tried,
      .n_tried = a->n_tried,
      .random = pool_random(p),
  };
  const pool_strat *st = &p->strats[s];
  uint32_t idx = st->vt->pick(st->self, g->sstate[s], &in);
  /* The contract, checked: a strategy's bug must not overbook a proxy. */
  if (idx != PH_POOL_VIEW_NONE &&
      (!rule_has(rule, idx) || !ph_strategy_takes(&in, idx)))
    idx = PH_POOL_VIEW_NONE;
  if (idx == PH_POOL_VIEW_NONE) {
    unavailable(a, rule);
    return;
  }
  wait_leave(a);
  a->pidx = idx;
  a->px = g->px[idx];
  pool_px_add(p, a->px, 0, +1);
  pool_api->gauge_add(p->m_reserved, 1);
  a->tried[a->n_tried++] = idx;
  a->attempts++;
  const ph_pool_view_proxy *x = &g->view->proxies[idx];
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = x->port,
                        .host = x->host};
  a->state = AT_DIALING;
  a->stage_us = pool_mono_us();
  a->sub = p->up->open(p->up_self, &rq, dialed, a);
  if (a->sub < 0) {
    a->sub = 0;
    unreserve(a);
    fail(a, PR_UPSTREAM, PH_STAGE_RELAY, PH_OPEN_INTERNAL_ERROR, 1);
  }
}

static void select_next(pool_attempt *a) { pick_and_dial(a, NULL); }

void pool_wake(pool *p, uint32_t idx) {
  if (p->waking) { /* a view installed while waking: one more round */
    p->wake_again = 1;
    return;
  }
  p->waking = 1;
  p->entered++; /* answers from here wait for the deliver timer */
  for (;;) {
    pool_attempt *w = p->wq_first;
    while (w) {
      pool_attempt *next = w->qnext;
      int eligible = idx == PH_POOL_VIEW_NONE || w->gen != p->cur ||
                     rule_has(&w->gen->view->rules[w->rule], idx);
      if (eligible) {
        pick_and_dial(w, NULL);
        if (idx != PH_POOL_VIEW_NONE && w->state != AT_WAITING)
          break; /* one freed unit, to the first waiter it serves */
      }
      /* pick_and_dial(w) changes only w's place in the queue: next is
       * still in it (a recursive wake only sets wake_again). */
      w = next;
    }
    if (!p->wake_again)
      break;
    p->wake_again = 0;
    idx = PH_POOL_VIEW_NONE;
  }
  p->entered--;
  p->waking = 0;
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
  p->entered++;
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
  a->flags = req->flags;
  tab_put(a);
  p->n_open++;
  if (!(a->flags & PH_OPEN_F_LEASE))
    /* Without a lease the pool could not free the proxy's capacity. */
    fail(a, PR_REFUSED, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY, 0);
  else if (p->stopping || p->n_open > p->conf.max_opens)
    fail(a, PR_REFUSED, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1);
  else
    pick_and_dial(a, v13 ? req : NULL);
  int64_t id = a->id;
  p->entered--;
  return id;
}

static void drop(pool_attempt *a) {
  pool *p = a->p;
  switch (a->state) {
  case AT_WAITING:
    wait_leave(a);
    break;
  case AT_DIALING:
    if (a->sub)
      p->up->cancel(p->up_self, a->sub);
    unreserve(a);
    break;
  case AT_HANDSHAKE:
    close_upstream(a);
    unreserve(a);
    break;
  case AT_DIRECT:
    if (a->sub)
      p->direct->cancel(p->direct_self, a->sub);
    break;
  case AT_DONE:
    q_unlink(&p->dq_first, &p->dq_last, a);
    if (a->res.fd >= 0)
      close(a->res.fd);
    if (a->res.stream)
      ph_stream_close(a->res.stream);
    if (a->res.lease && a->px) { /* a success never delivered */
      uint32_t idx = a->px->idx;
      pool_drain_remove(a);
      pool_px_add(p, a->px, -1, 0);
      pool_api->gauge_add(p->m_active, -1);
      a->px = NULL;
      if (idx != PH_POOL_VIEW_NONE)
        pool_wake(p, idx);
    }
    break;
  default:
    break;
  }
  tab_del(a);
  p->n_open--;
  attempt_free(a);
}

static int pool_cancel(void *self, int64_t id) {
  pool *p = self;
  pool_attempt *a = tab_find(p, id);
  if (!a)
    return PH_ENOENT;
  p->entered++;
  drop(a);
  p->entered--;
  return PH_OK;
}

void pool_attempts_abort(pool *p) {
  for (uint32_t b = 0; b < p->n_buckets; b++)
    while (p->buckets[b])
      drop(p->buckets[b]);
}

const ph_connector_v1 pool_connector_service = {pool_open, pool_cancel};

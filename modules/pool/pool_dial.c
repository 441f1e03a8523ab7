/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool's connection for one attempt (CP-1-23, CP-5-2, CP-5-3): the
 * upstream connector (a `direct` instance) dials the reserved proxy
 * (outcome stage DIAL), then the upstream kit's handshake (modules/
 * upstream/up_hs.h: CONNECT or SOCKS5, stage PROXY_HANDSHAKE) runs on the
 * socket under handshake_timeout; a request the caller forwards in
 * absolute form (open_http_forward.h, asked by the extension or by the
 * old flag) through an `http` upstream, an ordinary forward proxy, gets
 * no handshake: the caller gets the socket at once, told it goes to an
 * HTTP proxy, with the Proxy-Authorization value to add (made here, in
 * the attempt, from the view's credentials; unasked, an `http` upstream
 * gets CONNECT like an `http_connect` one).
 * Success leases the socket out (pool_lease.c). A failed dial or
 * handshake has sent nothing to the target: the request goes on with
 * another candidate of the same view (pool_match.c). And DIRECT: the
 * direct connector dials the target itself (CP-1-25). Loop thread. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pool_int.h"

#define PEEK_DELAY_MIN_MS 1u
#define PEEK_DELAY_MAX_MS 64u

void pool_dial_close(pool_attempt *a) {
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
  pool_select(a, NULL);
}

static void hs_failed(pool_attempt *a, up_hs_state st, int timed_out) {
  pool_outcome(a, PH_OUTCOME_STAGE_PROXY_HANDSHAKE,
               timed_out ? PH_OUTCOME_TIMEOUT : PH_OUTCOME_FAILURE);
  a->fail_stage = PH_STAGE_RELAY;
  a->fail_code = timed_out ? PH_OPEN_TIMEOUT : hs_code(&a->hs, st);
  PH_LOG_RL(pool_api, a->p->ctx, PH_LOG_DEBUG, "upstream handshake failed",
            PH_STR("proxy_id", a->px ? a->px->id : ""),
            PH_STR("state", timed_out ? "timeout" : up_hs_state_name(st)),
            PH_INT("upstream_status", a->hs.status));
  pool_dial_close(a);
  if (a->timer)
    pool_api->timer_set(a->timer, 0, 0);
  pool_unreserve(a);
  try_again(a);
}

static void hs_done(pool_attempt *a) {
  pool_api->io_free(a->io);
  a->io = NULL;
  pool_api->timer_set(a->timer, 0, 0);
  up_hs_wipe(&a->hs);
  pool_lease_out(a, 0);
}

/* ---- absolute-form forwarding ------------------------------------------- */

/* The caller forwards HTTP requests in absolute form and the proxy is an
 * ordinary forward proxy: no tunnel is asked for. */
static int forwards(const pool_attempt *a, const ph_pool_view_proxy *x) {
  return x->protocol == PH_POOL_UPSTREAM_HTTP &&
         a->fwd_asked;
}

/* What the caller adds to each request (a->fwd_auth): "Basic " and the token
 * of the view's credentials (up_hs_proxy_auth), or nothing without them.
 * PH_OK, or PH_EINVAL for credentials Basic cannot carry (a ':' in the
 * user name: the CONNECT would refuse them too). */
static int forward_prepare(pool_attempt *a, const ph_pool_view_credential *c) {
  a->fwd_auth_len = 0;
  if (!c || !c->username)
    return PH_OK;
  size_t n = up_hs_proxy_auth(c->username, c->username_len, c->password,
                              c->password_len, a->fwd_auth,
                              sizeof(a->fwd_auth));
  if (!n)
    return PH_EINVAL;
  a->fwd_auth_len = (uint32_t)n;
  return PH_OK;
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
      pool_arm_deadline(a, a->hs_deadline_ms, a->peek_delay_ms);
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

void pool_dial_on_timer(pool_attempt *a) {
  if (pool_mono_ms(a->p) >= a->hs_deadline_ms) {
    hs_failed(a, UP_HS_MORE, 1);
    return;
  }
  pool_api->io_set(a->io, PH_READ);
  hs_step(a);
}

/* ---- dialing the proxy -------------------------------------------------- */

static void dialed(void *arg, const ph_open_result *res) {
  pool_attempt *a = arg;
  pool *p = a->p;
  a->sub = 0;
  if (res->code != PH_OPEN_OK || res->fd < 0) {
    pool_outcome(a, PH_OUTCOME_STAGE_DIAL,
                 res->code == PH_OPEN_TIMEOUT ? PH_OUTCOME_TIMEOUT
                                              : PH_OUTCOME_FAILURE);
    if (res->stream)
      ph_stream_close(res->stream);
    a->fail_stage = PH_STAGE_RELAY;
    a->fail_code = res->code == PH_OPEN_OK ? PH_OPEN_INTERNAL_ERROR : res->code;
    pool_unreserve(a);
    try_again(a);
    return;
  }
  a->stage_us = mono_us();
  a->fd = res->fd;
  const ph_pool_view_proxy *x = &a->gen->view->proxies[a->pidx];
  const ph_pool_view_credential *c = x->credential;
  if (forwards(a, x)) {
    /* Nothing to say before the caller's first request: the outcome's
     * next stage is RESPONSE_HEADERS, at the lease's end. */
    if (forward_prepare(a, c) == PH_OK) {
      pool_lease_out(a, 1);
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
  if (!a->io || !pool_attempt_timer(a)) {
    hs_failed(a, UP_HS_MALFORMED, 0);
    return;
  }
  a->state = AT_HANDSHAKE;
  a->peek_delay_ms = 0;
  a->hs_deadline_ms = pool_mono_ms(p) + p->conf.handshake_timeout_ms;
  pool_arm_deadline(a, a->hs_deadline_ms, 0);
  hs_step(a);
}

void pool_dial(pool_attempt *a) {
  pool *p = a->p;
  const ph_pool_view_proxy *x = &a->gen->view->proxies[a->pidx];
  ph_open_request rq = {.size = sizeof(rq),
                        .protocol = PH_PROTO_TCP,
                        .port = x->port,
                        .host = x->host};
  a->state = AT_DIALING;
  a->stage_us = mono_us();
  a->sub = p->up->open(p->up_self, &rq, dialed, a);
  if (a->sub < 0) {
    a->sub = 0;
    pool_unreserve(a);
    pool_fail(a, PR_UPSTREAM, PH_STAGE_RELAY, PH_OPEN_INTERNAL_ERROR, 1);
  }
}

/* ---- DIRECT: the direct connector dials the target ----------------------- */

static void direct_done(void *arg, const ph_open_result *res) {
  pool_attempt *a = arg;
  pool *p = a->p;
  a->sub = 0;
  a->res = *res;
  a->res.size = sizeof(a->res);
  a->res.lease = NULL;
  a->res.http_forward = NULL;
  a->res.ext = NULL; /* the direct connector's, dead after its callback */
  a->hop_id[0] = '\0'; /* no proxy: the target was dialed directly */
  a->res.flags = 0;
  pool_api->inc(p->m_result[res->code == PH_OPEN_OK ? PR_DIRECT
                                                    : PR_DIRECT_FAILED],
                1);
  pool_answer(a);
}

void pool_go_direct(pool_attempt *a) {
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
    pool_fail(a, PR_DIRECT_FAILED, PH_STAGE_QUEUE, PH_OPEN_INTERNAL_ERROR, 1);
  }
}

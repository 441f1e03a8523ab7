/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's WebSocket connections (agent_int.h): connecting with
 * the token (re-read every attempt), the metadata exchange, reconnecting
 * with jittered bounded backoff, GOAWAY and the pool controller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "lib/backoff.h"
/* The token file reader is tunnel_common's (the same rules as the
 * client's). */
#include "tunnel_common/session/tm_token.h"

/* How often the pool controller looks at the load (it judges durations
 * of seconds: evaluation_interval, cooldown). */
#define POOL_TICK_MS 1000

static uint32_t next_rand(agent *a) {
  /* xorshift32: jitter only, no secrecy needed. */
  uint32_t x = a->rng ? a->rng : 0x9e3779b9u;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  a->rng = x;
  return x;
}

static agent_conn *conn_of(ilist_node *n) {
  return n ? ILIST_ENTRY(n, agent_conn, link) : NULL;
}

/* Leaves its state's count. */
static void leave_state(agent_conn *c) {
  agent *a = c->a;
  switch (c->state) {
  case CONN_CONNECTING:
    a->n_connecting--;
    break;
  case CONN_UP:
    a->n_up--;
    break;
  case CONN_DRAINING:
    a->n_draining--;
    break;
  default:
    break;
  }
}

static void set_state(agent_conn *c, int st) {
  agent *a = c->a;
  leave_state(c);
  c->state = st;
  if (st == CONN_CONNECTING)
    a->n_connecting++;
  else if (st == CONN_UP)
    a->n_up++;
  else if (st == CONN_DRAINING)
    a->n_draining++;
  if (a->m_conns)
    a->api->gauge_set(a->m_conns, (double)a->n_up);
  agent_update_ready(a);
}

uint64_t agent_conn_load(const agent_conn *c) {
  /* ARCHITECTURE §7: pending dials plus active streams. */
  uint64_t l = c->n_relaying;
  if (c->dx)
    l += (uint64_t)dial_exec_pending(c->dx) + dial_exec_running(c->dx);
  return l;
}

int agent_pool_idle(const agent *a) { return ilist_empty(&a->conns); }

static void ensure_conns(agent *a);

void agent_conn_maybe_free(agent_conn *c) {
  if (c->ws || c->s || !ilist_empty(&c->streams))
    return;
  agent *a = c->a;
  set_state(c, CONN_GONE);
  ilist_remove(&c->link);
  dial_exec_free(c->dx);
  free(c);
  agent_check_stop_done(a);
}

/* ---- reconnecting ------------------------------------------------------ */

static void schedule(agent *a, uint32_t delay_ms) {
  if (a->retry_armed || a->stopping)
    return;
  a->retry_armed = 1;
  a->api->timer_set(a->retry_timer, delay_ms ? delay_ms : 1, 0);
}

static uint32_t backoff(agent *a) {
  uint32_t at = a->attempt ? a->attempt - 1 : 0;
  return ph_backoff_ms(at, a->cfg.reconnect_min_ms, a->cfg.reconnect_max_ms,
                       next_rand(a));
}

static void failed_attempt(agent *a) {
  if (a->attempt < 64)
    a->attempt++;
  schedule(a, backoff(a));
}

/* The token for one attempt: from the file (re-read now) or the key. One
 * warning per change of state, never the content. */
static int get_token(agent *a, char *buf, size_t cap) {
  int st;
  if (a->cfg.token_file[0]) {
    st = tm_token_read(a->cfg.token_file, buf, cap);
  } else {
    const char *t = a->api->conf_str(a->ctx, "token");
    st = tm_token_take(t ? t : "", t ? strlen(t) : 0, buf, cap);
  }
  if (st != a->token_warned) {
    if (st != TM_TOKEN_OK)
      PH_LOG(a->api, a->ctx, PH_LOG_WARN,
             "no usable token: not connecting; retrying with backoff",
             PH_STR("token", tm_token_state_name(st)),
             PH_STR("token_file", a->cfg.token_file));
    else if (a->token_warned > 0)
      PH_LOG(a->api, a->ctx, PH_LOG_INFO, "token usable again",
             PH_STR("token_file", a->cfg.token_file));
    a->token_warned = st;
  }
  return st;
}

/* The node a new connection goes to (cloudflared spreads its connections
 * so that one node's failure does not take them all): among the URLs not
 * backing off after a failure, the one with the fewest live connections,
 * ties taken in turn; when every one backs off, the one free soonest. */
static uint32_t pick_url(agent *a) {
  uint32_t n = a->cfg.n_urls, live[AGENT_URLS_MAX] = {0};
  if (n <= 1)
    return 0;
  ILIST_FOREACH_SAFE(&a->conns, nd, nx) {
    agent_conn *c = conn_of(nd);
    if ((c->state == CONN_CONNECTING || c->state == CONN_UP) &&
        c->url_ix < n)
      live[c->url_ix]++;
  }
  int64_t now = a->api->now_ms(a->ctx);
  uint32_t best = UINT32_MAX, soonest = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = (a->url_next + k) % n;
    if (a->url_retry_at[i] < a->url_retry_at[soonest])
      soonest = i;
    if (a->url_retry_at[i] > now)
      continue;
    if (best == UINT32_MAX || live[i] < live[best])
      best = i;
  }
  if (best == UINT32_MAX)
    best = soonest;
  a->url_next = (best + 1) % n;
  return best;
}

/* A connection to url_ix failed before or at its handshake: that node
 * waits out the current backoff before it is picked again. */
static void url_failed(agent *a, uint32_t ix, uint32_t delay_ms) {
  if (ix < AGENT_URLS_MAX)
    a->url_retry_at[ix] = a->api->now_ms(a->ctx) + delay_ms;
}

static void connect_one(agent *a) {
  char tok[TM_TOKEN_MAX + 1];
  if (get_token(a, tok, sizeof(tok)) != TM_TOKEN_OK) {
    failed_attempt(a);
    return;
  }
  agent_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    tm_token_wipe(tok, sizeof(tok));
    failed_attempt(a);
    return;
  }
  ilist_init(&c->streams);
  c->a = a;
  const char *err = NULL;
  c->url_ix = pick_url(a);
  c->ws = tm_ws_connect(a->ws, a->cfg.urls[c->url_ix], tok, &err);
  tm_token_wipe(tok, sizeof(tok));
  if (!c->ws) {
    PH_LOG(a->api, a->ctx, PH_LOG_ERROR, "cannot connect to the server",
           PH_STR("reason", err ? err : "unknown"),
           PH_STR("server_url", a->cfg.urls[c->url_ix]));
    url_failed(a, c->url_ix, backoff(a));
    free(c);
    failed_attempt(a);
    return;
  }
  tm_ws_conn_set_user(c->ws, c);
  ilist_push_front(&a->conns, &c->link);
  c->state = 0;
  set_state(c, CONN_CONNECTING);
}

static void ensure_conns(agent *a) {
  if (a->stopping || a->retry_armed)
    return;
  if (a->n_up + a->n_connecting < a->target)
    schedule(a, a->attempt ? backoff(a) : 0);
}

static void on_retry(ph_timer *t, void *arg) {
  (void)t;
  agent *a = arg;
  a->retry_armed = 0;
  if (a->stopping)
    return;
  /* One attempt per tick: a failure re-arms with backoff. */
  if (a->n_up + a->n_connecting < a->target)
    connect_one(a);
  ensure_conns(a);
}

/* ---- the WebSocket's events --------------------------------------------- */

static void send_metadata(agent_conn *c) {
  agent *a = c->a;
  tm_metadata md;
  memset(&md, 0, sizeof(md));
  snprintf(md.agent_id, sizeof(md.agent_id), "%s", a->cfg.agent_id);
  snprintf(md.version, sizeof(md.version), "%s", TUNNEL_AGENT_VERSION);
  /* All switches off: a legacy agent, no capabilities declared. */
  md.caps = a->cfg.caps;
  /* TM-P2-27: this connection's capacity (streams.max_streams), the
   * server's weight for it when it picks a connection for a stream. */
  md.max_streams = a->cfg.session.max_streams;
  if (tm_session_send_metadata(c->s, &md, 0) != PH_OK)
    PH_LOG(a->api, a->ctx, PH_LOG_WARN, "agent metadata not sent: control "
                                        "queue full");
}

static void ws_connected(void *arg, tm_ws_conn *w, const char *subproto) {
  agent *a = arg;
  agent_conn *c = tm_ws_conn_user(w);
  if (!c)
    return;
  int caps = tm_subproto_caps(subproto);
  if (caps < 0) {
    /* A name never offered: refuse, never guess (TM-PROTO-17). */
    PH_LOG(a->api, a->ctx, PH_LOG_ERROR,
           "the server chose a subprotocol that was not offered; closing");
    if (a->attempt < 64)
      a->attempt++; /* ws_closed reconnects with backoff */
    tm_ws_conn_close(w, 1002, "protocol");
    return;
  }
  c->caps = (unsigned)caps & a->cfg.caps;
  tm_session_cfg sc = a->cfg.session;
  sc.caps = c->caps & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL);
  sc.metrics = a->m;
  c->dx = dial_exec_new(a->api, a->ctx, a->conn, a->cself, &a->cfg.dial);
  if (c->dx)
    c->s = tm_session_new(a->api, a->ctx, &sc, tm_ws_transport(), w,
                          &agent_session_ops, c);
  if (!c->s) {
    PH_LOG(a->api, a->ctx, PH_LOG_ERROR, "no memory for a session; closing");
    dial_exec_free(c->dx);
    c->dx = NULL;
    if (a->attempt < 64)
      a->attempt++;
    tm_ws_conn_close(w, 1011, "no memory");
    return;
  }
  tm_ws_conn_bind(w, c->s);
  /* attempt goes back to 0 on the ACK, or after a long enough life. */
  c->up_at_ms = a->api->now_ms(a->ctx);
  if (a->url_ups[c->url_ix] < UINT32_MAX)
    a->url_ups[c->url_ix]++;
  set_state(c, CONN_UP);
  send_metadata(c);
  a->url_retry_at[c->url_ix] = 0;
  PH_LOG(a->api, a->ctx, PH_LOG_INFO, "connected to the server",
         PH_STR("subprotocol", subproto ? subproto : "none"),
         PH_STR("server_url", a->cfg.urls[c->url_ix]),
         PH_UINT("connections", a->n_up));
}

static void ws_connect_error(void *arg, tm_ws_conn *w) {
  agent *a = arg;
  agent_conn *c = tm_ws_conn_user(w);
  PH_LOG(a->api, a->ctx, PH_LOG_WARN,
         "connection to the server failed; retrying with backoff",
         PH_UINT("attempt", a->attempt + 1),
         PH_STR("server_url", c ? a->cfg.urls[c->url_ix] : ""));
  if (c) {
    url_failed(a, c->url_ix, backoff(a));
    c->ws = NULL;
    agent_conn_maybe_free(c);
  }
  failed_attempt(a);
}

static void ws_closed(void *arg, tm_ws_conn *w) {
  agent *a = arg;
  agent_conn *c = tm_ws_conn_user(w);
  if (!c)
    return;
  c->ws = NULL;
  /* The session may still be bound: it resets its streams and ends. */
  if (c->s)
    tm_session_on_transport_closed(c->s);
  if (c->state == CONN_UP || c->state == CONN_DRAINING) {
    set_state(c, CONN_GONE);
  }
  agent_conn_maybe_free(c);
  ensure_conns(a);
}

static const tm_ws_handlers ws_handlers = {
    .on_accept = NULL,
    .on_connected = ws_connected,
    .on_connect_error = ws_connect_error,
    .on_closed = ws_closed,
};

/* ---- the session's events ---------------------------------------------- */

static void sess_goaway(void *arg, uint32_t last) {
  (void)last;
  agent_conn *c = arg;
  agent *a = c->a;
  if (c->state != CONN_UP)
    return;
  /* The server drains this connection: finish its streams here and open
   * a replacement now. */
  PH_LOG(a->api, a->ctx, PH_LOG_INFO,
         "the server sent GOAWAY: draining this connection, reconnecting");
  set_state(c, CONN_DRAINING);
  tm_session_goaway(c->s);
  ensure_conns(a);
}

/* An established connection was lost (not drained): reconnect with
 * backoff, from the start of the sequence when it had lived long. */
static void note_loss(agent_conn *c) {
  agent *a = c->a;
  if (a->api->now_ms(a->ctx) - c->up_at_ms >= (int64_t)a->cfg.reconnect_max_ms)
    a->attempt = 0;
  if (a->attempt < 64)
    a->attempt++;
}

static void sess_close(void *arg, int reason) {
  agent_conn *c = arg;
  agent *a = c->a;
  if (c->state == CONN_UP && reason != TM_CLOSE_GOAWAY_DONE &&
      reason != TM_CLOSE_LOCAL)
    note_loss(c);
  PH_LOG(a->api, a->ctx,
         reason == TM_CLOSE_GOAWAY_DONE || reason == TM_CLOSE_LOCAL
             ? PH_LOG_INFO
             : PH_LOG_WARN,
         "session to the server ended",
         PH_STR("reason", tm_close_reason_name(reason)));
  c->s = NULL;
  agent_streams_session_gone(c);
  dial_exec_free(c->dx);
  c->dx = NULL;
  if (c->state == CONN_UP || c->state == CONN_DRAINING)
    set_state(c, CONN_GONE);
  /* The transport closes after this returns; ws_closed (or the context's
   * end) frees c then. */
  ensure_conns(a);
}

const tm_session_ops agent_session_ops = {
    .on_open = agent_on_open,
    .on_abandon = agent_on_abandon,
    .on_metadata = agent_conn_metadata,
    .on_goaway = sess_goaway,
    .on_close = sess_close,
};

/* ---- the pool controller ------------------------------------------------ */

/* The tick's signals over the connections that take new streams; the
 * windows start again. */
static void take_signals(agent *a, pool_signals *g, agent_conn **least) {
  lat_window ww;
  lat_window_reset(&ww);
  memset(g, 0, sizeof(*g));
  *least = NULL;
  ILIST_FOREACH_SAFE(&a->conns, n, nx) {
    agent_conn *c = conn_of(n);
    if (c->s)
      tm_session_take_writer_waits(c->s, &ww);
    if (c->state != CONN_UP)
      continue;
    uint64_t l = agent_conn_load(c);
    g->load += l;
    if (!*least || l < agent_conn_load(*least))
      *least = c;
    uint64_t rtt = c->s ? tm_session_rtt_us(c->s) : 0;
    if (rtt > g->rtt_us)
      g->rtt_us = rtt;
  }
  g->conns = a->n_up;
  g->dial_wait_us = lat_window_pct(&a->w_dial, 95);
  g->open_us = lat_window_pct(&a->w_open, 95);
  g->ttfb_us = lat_window_pct(&a->w_ttfb, 95);
  g->writer_wait_us = lat_window_pct(&ww, 95);
  g->opens = a->w_opens;
  g->failed = a->w_failed;
  lat_window_reset(&a->w_dial);
  lat_window_reset(&a->w_open);
  lat_window_reset(&a->w_ttfb);
  a->w_opens = a->w_failed = 0;
}

/* A decision's line: every input it judged (TM-P2-26), in ms. */
static void log_decision(agent *a, const char *msg, const pool_signals *g) {
  PH_LOG(a->api, a->ctx, PH_LOG_INFO, msg, PH_UINT("connections", a->target),
         PH_UINT("load", g->load),
         PH_UINT("dial_wait_p95_ms", g->dial_wait_us / 1000),
         PH_UINT("open_p95_ms", g->open_us / 1000),
         PH_UINT("ttfb_p95_ms", g->ttfb_us / 1000),
         PH_UINT("writer_wait_p95_ms", g->writer_wait_us / 1000),
         PH_UINT("rtt_ms", g->rtt_us / 1000), PH_UINT("opens", g->opens),
         PH_UINT("failed", g->failed));
}

static void count_decision(agent *a, int why) {
  /* decision values: grow_load, grow_latency, shrink_idle, hold_errors */
  int i = why == POOL_WHY_LOAD      ? 0
          : why == POOL_WHY_LATENCY ? 1
          : why == POOL_WHY_IDLE    ? 2
                                    : 3;
  if (a->m_pool[i])
    a->api->inc(a->m_pool[i], 1);
}

static void on_pool_tick(ph_timer *t, void *arg) {
  (void)t;
  agent *a = arg;
  if (a->stopping)
    return;
  pool_signals g;
  agent_conn *least;
  take_signals(a, &g, &least);
  int why;
  int d = pool_decide(&a->cfg.pool, &a->ps, a->api->now_ms(a->ctx), &g, &why);
  if (d > 0 && a->target < a->cfg.pool.max) {
    a->target++;
    count_decision(a, why);
    log_decision(a,
                 why == POOL_WHY_LOAD
                     ? "load above the high watermark: one more connection"
                     : "latency above connections.latency_high: one more "
                       "connection",
                 &g);
    ensure_conns(a);
  } else if (d < 0 && a->target > a->cfg.pool.min && least) {
    a->target--;
    count_decision(a, why);
    log_decision(a, "load below the low watermark: draining one connection",
                 &g);
    /* Its streams finish where they are (TM-P2-27). */
    set_state(least, CONN_DRAINING);
    tm_session_goaway(least->s);
  } else if (why == POOL_WHY_ERRORS) {
    count_decision(a, why);
    PH_LOG_RL(a->api, a->ctx, PH_LOG_INFO,
              "not growing the pool: most opens fail (failures are not "
              "load; connections.error_rate_max)",
              PH_UINT("opens", g.opens), PH_UINT("failed", g.failed));
  }
}

/* ---- lifecycle ----------------------------------------------------------- */

int agent_pool_start(agent *a) {
  tm_ws_cfg wc;
  memset(&wc, 0, sizeof(wc));
  wc.listen = NULL;
  wc.ca_file = a->cfg.ca_file[0] ? a->cfg.ca_file : NULL;
  wc.allow_plain = a->cfg.allow_plain;
  wc.caps = a->cfg.caps;
  wc.max_message = TM_MAX_FRAME;
  const char *err = NULL;
  a->ws = tm_ws_new(a->api, a->ctx, &wc, &ws_handlers, a, &err);
  if (!a->ws) {
    PH_LOG(a->api, a->ctx, PH_LOG_ERROR, "cannot start the WebSocket client",
           PH_STR("reason", err ? err : "unknown"));
    return PH_EINVAL;
  }
  a->retry_timer = a->api->timer_new(a->ctx, on_retry, a);
  a->pool_timer = a->api->timer_new(a->ctx, on_pool_tick, a);
  if (!a->retry_timer || !a->pool_timer)
    return PH_ENOMEM;
  a->target = a->cfg.pool.min;
  a->token_warned = -1;
  a->rng = (uint32_t)a->api->now_ms(a->ctx) ^ (uint32_t)(uintptr_t)a;
  pool_state_init(&a->ps, a->api->now_ms(a->ctx));
  if (a->cfg.pool.max > a->cfg.pool.min)
    a->api->timer_set(a->pool_timer, POOL_TICK_MS, POOL_TICK_MS);
  ensure_conns(a);
  return PH_OK;
}

void agent_pool_stop(agent *a) {
  a->stopping = 1;
  if (a->retry_timer)
    a->api->timer_set(a->retry_timer, 0, 0);
  a->retry_armed = 0;
  if (a->pool_timer)
    a->api->timer_set(a->pool_timer, 0, 0);
  ILIST_FOREACH_SAFE(&a->conns, n, nx) {
    agent_conn *c = conn_of(n);
    if (c->s && c->state == CONN_UP) {
      set_state(c, CONN_DRAINING);
      tm_session_goaway(c->s); /* ends by itself once its streams did */
    } else if (c->ws && !c->s) {
      tm_ws_conn_close(c->ws, 1001, "going away");
    }
  }
}

void agent_pool_free(agent *a) {
  a->stopping = 1;
  for (ilist_node *n = ilist_first(&a->conns); n; n = ilist_next(n))
    agent_streams_abort(conn_of(n));
  if (a->ws) {
    /* Closes every connection: their on_closed run, freeing them. */
    tm_ws_free(a->ws);
    a->ws = NULL;
  }
  agent_conn *c;
  while ((c = conn_of(ilist_first(&a->conns)))) { /* what was not reported */
    if (c->s) {
      tm_session *s = c->s;
      tm_session_on_transport_closed(s);
    }
    c->ws = NULL;
    c->s = NULL;
    agent_streams_abort(c);
    agent_conn_maybe_free(c);
  }
  if (a->retry_timer)
    a->api->timer_free(a->retry_timer);
  if (a->pool_timer)
    a->api->timer_free(a->pool_timer);
  a->retry_timer = a->pool_timer = NULL;
}

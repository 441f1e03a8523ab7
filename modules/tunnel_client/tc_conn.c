/* SPDX-License-Identifier: BSD-2-Clause */
/* The client's connections to the server: `connections` slots, each
 * with at most one attempt or session and at most one session draining
 * after a GOAWAY. A slot connects with the token read now (token_file is
 * read at every attempt: a rotated token is used on the next reconnect),
 * retries with jittered bounded backoff (ph_backoff_ms), and takes the
 * server's subprotocol choice as the connection's capabilities
 * (TM-PROTO-16: none is legacy; never a guess from a timeout,
 * TM-PROTO-17). The module is ready while a connection is up. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/backoff.h"
#include "lib/clocks.h"
#include "tunnel_common/session/tm_ws.h"
#include "tunnel_client_int.h"

static uint32_t rnd32(tc_client *tc) {
  /* xorshift64*: jitter only, not a secret. */
  uint64_t x = tc->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  tc->rng = x;
  return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

static void update_ready(tc_client *tc) {
  int up = tc_conns_up(tc);
  if (up != tc->ready) {
    tc->ready = up;
    tc->api->set_ready(tc->ctx, up);
  }
}

int tc_conns_up(const tc_client *tc) {
  for (uint32_t i = 0; i < tc->cfg.connections; i++) {
    const tc_sess *ts = tc->conns[i].cur;
    if (ts && ts->state == TC_S_UP && ts->s)
      return 1;
  }
  return 0;
}

tm_session *tc_conns_pick(tc_client *tc) {
  tm_session *best = NULL;
  uint32_t best_n = 0;
  for (uint32_t i = 0; i < tc->cfg.connections; i++) {
    tc_sess *ts = tc->conns[i].cur;
    if (!ts || ts->state != TC_S_UP || !ts->s || !tm_session_can_open(ts->s))
      continue;
    uint32_t n = tm_session_streams(ts->s);
    if (!best || n < best_n) {
      best = ts->s;
      best_n = n;
    }
  }
  return best;
}

/* ---- the attempts ----------------------------------------------------- */

static void sess_unlink(tc_sess *ts) {
  tc_client *tc = ts->c->tc;
  for (tc_sess **p = &tc->all; *p; p = &(*p)->next)
    if (*p == ts) {
      *p = ts->next;
      break;
    }
}

static void check_stopped(tc_client *tc) {
  if (tc->stop_pending && !tc->all) {
    tc->stop_pending = 0;
    tc->api->stop_done(tc->ctx);
  }
}

/* The slot no longer holds ts (ended, or draining elsewhere). */
static void slot_drop(tc_sess *ts) {
  tc_conn *c = ts->c;
  if (c->cur == ts)
    c->cur = NULL;
  if (c->old == ts)
    c->old = NULL;
}

static void schedule(tc_conn *c, int at_once) {
  tc_client *tc = c->tc;
  if (tc->stopping || c->cur)
    return;
  uint32_t ms = at_once ? 1
                        : ph_backoff_ms(c->failures ? c->failures - 1 : 0,
                                        tc->cfg.reconnect_min_ms,
                                        tc->cfg.reconnect_max_ms, rnd32(tc));
  tc->api->timer_set(c->retry, ms ? ms : 1, 0);
}

/* Reads the token for one attempt: token_file now, else the token key.
 * One warning per change of state, never the content. */
static int read_token(tc_client *tc, char *out, size_t cap) {
  int st;
  if (tc->cfg.token_file)
    st = tm_token_read(tc->cfg.token_file, out, cap);
  else
    st = tm_token_take(tc->cfg.token, strlen(tc->cfg.token), out, cap);
  if (st != tc->token_state) {
    if (st == TM_TOKEN_OK)
      PH_LOG(tc->api, tc->ctx, PH_LOG_INFO, "token available",
             PH_STR("source", tc->cfg.token_file ? "token_file" : "token"));
    else
      PH_LOG(tc->api, tc->ctx, PH_LOG_WARN,
             "no usable token: not connecting, retrying with backoff",
             PH_STR("source", tc->cfg.token_file ? "token_file" : "token"),
             PH_STR("state", tm_token_state_name(st)));
    tc->token_state = st;
  }
  return st;
}

static void attempt(tc_conn *c) {
  tc_client *tc = c->tc;
  if (tc->stopping || c->cur)
    return;
  char token[TM_TOKEN_MAX + 1];
  if (read_token(tc, token, sizeof(token)) != TM_TOKEN_OK) {
    c->failures++;
    schedule(c, 0);
    return;
  }
  tc_sess *ts = calloc(1, sizeof(*ts));
  const char *err = "out of memory";
  if (ts) {
    ts->c = c;
    ts->state = TC_S_CONNECTING;
    ts->link = tc->lops->connect(tc->lenv, ts, tc->cfg.url, token, &err);
  }
  tm_token_wipe(token, sizeof(token));
  if (!ts || !ts->link) {
    free(ts);
    PH_LOG_RL(tc->api, tc->ctx, PH_LOG_WARN, "connection attempt refused",
              PH_UINT("connection", c->idx), PH_STR("reason", err));
    c->failures++;
    schedule(c, 0);
    return;
  }
  ts->next = tc->all;
  tc->all = ts;
  c->cur = ts;
}

static void on_retry(ph_timer *t, void *arg) {
  (void)t;
  attempt(arg);
}

/* ---- the session's callbacks ------------------------------------------ */

static void sess_goaway(void *arg, uint32_t last_stream_id) {
  tc_sess *ts = arg;
  tc_conn *c = ts->c;
  tc_client *tc = c->tc;
  (void)last_stream_id;
  if (ts->state != TC_S_UP)
    return;
  PH_LOG(tc->api, tc->ctx, PH_LOG_INFO,
         "server sent GOAWAY: finishing its streams, reconnecting",
         PH_UINT("connection", c->idx),
         PH_UINT("streams", tm_session_streams(ts->s)));
  ts->state = TC_S_DRAINING;
  /* At most one draining session per slot: a second GOAWAY before the
   * first one drained closes the older one now (bounded). */
  if (c->old && c->old->s)
    tm_session_close(c->old->s);
  if (c->cur == ts)
    c->cur = NULL;
  c->old = ts;
  tm_session_goaway(ts->s); /* ends by itself when its last stream ends */
  c->failures = 0;
  update_ready(tc);
  schedule(c, 1);
}

static void sess_close(void *arg, int reason) {
  tc_sess *ts = arg;
  tc_conn *c = ts->c;
  tc_client *tc = c->tc;
  int was = ts->state;
  ts->s = NULL;
  ts->state = TC_S_CLOSED;
  slot_drop(ts);
  if (reason != TM_CLOSE_GOAWAY_DONE && reason != TM_CLOSE_LOCAL)
    PH_LOG(tc->api, tc->ctx, PH_LOG_WARN, "connection to the server lost",
           PH_UINT("connection", c->idx),
           PH_STR("reason", tm_close_reason_name(reason)));
  update_ready(tc);
  /* A drained session's slot has its successor already. */
  if (was == TC_S_UP)
    schedule(c, 0);
}

static const tm_session_ops sess_ops = {
    .on_goaway = sess_goaway,
    .on_close = sess_close,
};

/* ---- the link events -------------------------------------------------- */

void tc_link_up(tc_sess *ts, const char *subproto) {
  tc_conn *c = ts->c;
  tc_client *tc = c->tc;
  int caps = tm_subproto_caps(subproto);
  if (tc->stopping || caps < 0 ||
      (caps & ~(int)(tc->cfg.caps & (TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL |
                                      TM_CAP_TRACE)))) {
    /* A name never offered: refuse the connection (tm_proto.h). */
    if (!tc->stopping)
      PH_LOG_RL(tc->api, tc->ctx, PH_LOG_WARN,
                "server chose a subprotocol never offered; closing",
                PH_UINT("connection", c->idx));
    ts->state = TC_S_CLOSED;
    slot_drop(ts);
    c->failures++;
    tc->lops->close(ts->link, 1002, "subprotocol");
    schedule(c, 0);
    return;
  }
  tm_session_cfg cfg = tc->cfg.scfg;
  cfg.component = TM_COMPONENT_CLIENT;
  cfg.opener = 1;
  cfg.caps = (unsigned)caps;
  cfg.local_caps = tc->cfg.caps & TM_CAP_FAIR_WRITER;
  cfg.metrics = tc->metrics;
  ts->caps = (unsigned)caps;
  ts->s = tm_session_new(tc->api, tc->ctx, &cfg, tc->lops->transport(),
                         ts->link, &sess_ops, ts);
  if (!ts->s) {
    ts->state = TC_S_CLOSED;
    slot_drop(ts);
    c->failures++;
    tc->lops->close(ts->link, 1011, "no memory");
    schedule(c, 0);
    return;
  }
  tc->lops->bind(ts->link, ts->s);
  ts->state = TC_S_UP;
  ts->up_ms = tc->api->now_ms(tc->ctx);
  if (c->ups < UINT32_MAX)
    c->ups++;
  c->failures = 0;
  PH_LOG(tc->api, tc->ctx, PH_LOG_INFO, "connected to the server",
         PH_UINT("connection", c->idx),
         PH_STR("subprotocol", subproto ? subproto : "none"),
         PH_STR("open_mode",
                (caps & TM_CAP_OPEN_RESULT) ? "strict" : "legacy"));
  update_ready(tc);
}

static void sess_free(tc_sess *ts) {
  tc_client *tc = ts->c->tc;
  slot_drop(ts);
  sess_unlink(ts);
  free(ts);
  check_stopped(tc);
}

void tc_link_failed(tc_sess *ts) {
  tc_conn *c = ts->c;
  tc_client *tc = c->tc;
  int mine = c->cur == ts;
  if (mine)
    PH_LOG_RL(tc->api, tc->ctx, PH_LOG_WARN, "cannot connect to the server",
              PH_UINT("connection", c->idx), PH_UINT("failures",
                                                     c->failures + 1));
  sess_free(ts);
  if (mine) {
    c->failures++;
    schedule(c, 0);
  }
}

void tc_link_closed(tc_sess *ts) {
  if (ts->s) /* the session's on_close runs: it reschedules */
    tm_session_on_transport_closed(ts->s);
  sess_free(ts);
}

/* ---- lifecycle -------------------------------------------------------- */

int tc_conns_start(tc_client *tc) {
  tc->rng = (uint64_t)mono_us() ^ ((uint64_t)getpid() << 32) ^
            (uint64_t)(uintptr_t)tc;
  if (!tc->rng)
    tc->rng = 1;
  tc->token_state = TM_TOKEN_OK; /* the first failure warns */
  for (uint32_t i = 0; i < tc->cfg.connections; i++) {
    tc_conn *c = &tc->conns[i];
    c->tc = tc;
    c->idx = i;
    c->retry = tc->api->timer_new(tc->ctx, on_retry, c);
    if (!c->retry)
      return PH_ENOMEM;
  }
  for (uint32_t i = 0; i < tc->cfg.connections; i++)
    attempt(&tc->conns[i]);
  return PH_OK;
}

int tc_conns_stop(tc_client *tc) {
  tc->stopping = 1;
  for (uint32_t i = 0; i < tc->cfg.connections; i++)
    if (tc->conns[i].retry)
      tc->api->timer_set(tc->conns[i].retry, 0, 0);
  /* Walk a copy: closing an attempt never frees it here (its event comes
   * from the loop), but keep the walk independent of that. */
  for (tc_sess *ts = tc->all; ts; ts = ts->next) {
    if (ts->s)
      tm_session_goaway(ts->s);
    else if (ts->state == TC_S_CONNECTING)
      tc->lops->close(ts->link, 1001, "stopping");
    if (ts->state == TC_S_UP)
      ts->state = TC_S_DRAINING;
  }
  update_ready(tc);
  tc->stop_pending = tc->all != NULL;
  return tc->stop_pending;
}

void tc_conns_destroy(tc_client *tc) {
  tc->stopping = 1;
  tc->stop_pending = 0;
  /* env_free closes every link; their closed events free the tc_sess. */
  if (tc->lenv)
    tc->lops->env_free(tc->lenv);
  tc->lenv = NULL;
  while (tc->all) { /* a link that never reported: free what is left */
    tc_sess *ts = tc->all;
    tc->all = ts->next;
    free(ts);
  }
  for (uint32_t i = 0; i < TC_MAX_CONNECTIONS; i++)
    if (tc->conns[i].retry) {
      tc->api->timer_free(tc->conns[i].retry);
      tc->conns[i].retry = NULL;
    }
}

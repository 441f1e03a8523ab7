/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One client stream through the server (seed 001 "P0 Server"): the
 * client session's on_open does no I/O (TM-P0-14, TM-P2-1); it only
 * checks the request and hands the open to the bounded open executor
 * (open_exec.h), which refuses at once when full (TM-FAIL-2). An open
 * given a slot, there or when another ends, starts on the loop's next
 * turn (api->defer_post, issue 24 item 4), in the order the slots were
 * given: the authorization call (a PostgreSQL query behind a cache miss)
 * never runs on the reader's stack. A running open then goes:
 *
 *   authorization  the access provider (the auth_cache in front of the
 *                  store), principal = the client's token id, agent =
 *                  the one the client named, host in normal form
 *   selection      that agent's connections that can open, by weighted
 *                  least connections, each weighed by its capacity
 *                  (agent_select.h, TM-P2-27)
 *   open           tm_stream_open on the agent session, stream.
 *                  open_timeout; strict when the agent session negotiated
 *                  open results (TM-PROTO-20), legacy otherwise
 *   relay          tm_stream_accept on the client stream (the stream is
 *                  installed as open before OPEN_RESULT(ok) goes out,
 *                  TM-P0-18), then a relay joins the two streams
 *
 * and a failure anywhere is tm_stream_reject with the stage and stable
 * code where it happened, the agent's own when the agent refused
 * (TM-P0-19): an OPEN_RESULT to a strict client, a RESET to a legacy one
 * (TM-P0-21). Either way only that stream ends (TM-TEST-16).
 *
 * A strict client whose agent connection is legacy gets OPEN_RESULT(ok)
 * when the stream was opened towards the agent, which is all the server
 * knows then; that result says so (stage "relay", "open_mode":"legacy":
 * tm_stream_accept_legacy, issue 24 item 3), so the client counts and
 * logs it legacy too, and it is counted as open_mode="legacy" here
 * (TM-PROTO-21): never reported as the agent's success (TM-PROTO-22);
 * the agent's later failure reaches the client as a RESET. A client RESET, or its session
 * ending, while the open runs cancels the step in progress (the access
 * check, the agent's open) and frees the executor slot.
 *
 * Memory (issue 22 item 4): a relayed stream holds at most, at the
 * server, its two inbound queues and its two outbound queues (the windows
 * bound what a peer may send, the queue bounds what the relay may
 * write), so each open reserves 2 × (inbound_buffer_bytes +
 * outbound_buffer_bytes) from its client session's and its user's budget
 * (stream.memory_per_session, stream.memory_per_principal) until the
 * stream ends. An open that does not fit is refused with queue/queue_full
 * before it reaches the agent: a client that never reads holds at most
 * its budget, however many streams it opens.
 *
 * Every stream ends with one info log line (TM-OBS-19): the redacted
 * agent id, node, trace id, stage, stable code, open_mode and µs
 * timings; the target only at debug (TM-SEC-9). The trace id is the one
 * the client's OPEN_STREAM carried, or a new one when it carried none or
 * a malformed one (replaced, with a rate-limited warning); the agent's
 * OPEN_STREAM carries it on (issue 24 item 10).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/connector.h>

#include "agent_select.h"
#include "lib/host_norm.h"
#include "tunnel_common/session/tm_trace.h"
#include "ts_int.h"

enum { OP_NEW = 0, OP_QUEUED, OP_AUTH, OP_OPENING, OP_RELAY };

struct ts_open {
  oexec_job job;
  ph_defer *start; /* given a slot, waiting for the next turn */
  ts_mod *m;
  ts_conn *cc;    /* the client connection; NULL once it is gone */
  tm_stream *cst; /* the client stream until answered */
  tm_stream *ast; /* the agent stream while its open runs */
  ts_tally *token, *user; /* their streams count it */
  uint64_t mem;            /* reserved from the session's and the user's */
  ph_relay *relay;
  tm_stream *relayed[2]; /* the relay's two streams: only in relay_ending */
  int end_code;          /* a relay's end as the streams' resets say it */
  int phase;
  int64_t check; /* the access check while it runs */
  int strict_client, strict_agent, agent_known;
  int from_peer; /* opened by a peer node's relay link: authorized there,
                    opened only towards an agent connected here */
  int remote;    /* going through a relay link to the agent's node */
  int remote_tries; /* routes tried after a link failed (at most 2) */
  ts_relay_wait rw; /* waiting for that link */
  uint8_t protocol;
  uint16_t port;
  char host[HOST_NORM_MAX + 1];
  char agent[TM_AGENT_MAX + 1];
  /* the client's token id; on a holding node the ingress node's word for
   * it (stream_principal.v1), or "relay" */
  char token_id[TM_PRINCIPAL_MAX + 1];
  char trace[TM_TRACE_LEN + 1]; /* the client's, or ours (issue 24 item 10) */
  uint64_t seq;
  uint64_t t0, t_step;
  uint64_t queue_us, auth_us, select_us, open_us, ttfb_us;
  ilist_node link; /* on m->opens */
};

static ts_open *job_open(oexec_job *j) {
  return (ts_open *)((char *)j - offsetof(ts_open, job));
}

static uint64_t since(uint64_t t) {
  uint64_t n = mono_us();
  return n > t ? n - t : 0;
}

static int open_mode_strict(const ts_open *op) {
  return op->strict_client && (!op->agent_known || op->strict_agent);
}

static const char *phase_stage(int phase) {
  switch (phase) {
  case OP_QUEUED:
    return "queue";
  case OP_AUTH:
    return "authorization";
  case OP_OPENING:
    return "open";
  case OP_RELAY:
    return "relay";
  }
  return "none";
}

/* The line every stream ends with. */
static void log_end(ts_open *op, const char *stage, const char *code,
                    const char *end, const relay_stats *rs) {
  ts_mod *m = op->m;
  char red[TS_REDACTED_LEN];
  ts_redact_agent(op->agent, red);
  ts_opens_count(&m->opens_win, stage, code, mono_ms() / 1000);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "tunnel stream end",
         PH_UINT("stream", op->seq), PH_STR("node", m->c.node_id),
         PH_STR("agent", red), TS_AGENT_NAME(m, op->agent),
         PH_STR("principal", op->token_id),
         PH_STR("trace_id", op->trace),
         PH_STR("open_mode", open_mode_strict(op) ? "strict" : "legacy"),
         PH_STR("stage", stage), PH_STR("code", code), PH_STR("end", end),
         PH_UINT("queue_us", op->queue_us), PH_UINT("auth_us", op->auth_us),
         PH_UINT("select_us", op->select_us),
         PH_UINT("open_us", op->open_us), PH_UINT("ttfb_us", op->ttfb_us),
         PH_UINT("duration_us", since(op->t0)),
         PH_UINT("bytes_up", rs ? rs->up : 0),
         PH_UINT("bytes_down", rs ? rs->down : 0));
  if (ts_api->log_enabled(m->ctx, PH_LOG_DEBUG))
    PH_LOG(ts_api, m->ctx, PH_LOG_DEBUG, "tunnel stream target",
           PH_UINT("stream", op->seq), PH_STR("host", op->host),
           PH_UINT("port", op->port));
}

/* Frees op: out of the executor, the lists and the token's count. */
static void finish(ts_open *op) {
  ts_mod *m = op->m;
  ts_api->defer_free(op->start); /* a pending start never runs */
  ts_relay_unwait(&op->rw);
  oexec_remove(&m->exec, &op->job);
  ilist_remove(&op->link);
  if (op->token) {
    op->token->streams--;
    ts_tally_release(&m->tokens, op->token);
  }
  if (op->cc)
    op->cc->mem -= op->mem;
  if (op->user) {
    op->user->mem -= op->mem;
    op->user->streams--;
    ts_tally_release(&m->users, op->user);
  }
  m->mem_reserved -= op->mem;
  if (op->mem && m->m_mem_reserved)
    ts_api->gauge_set(m->m_mem_reserved, (double)m->mem_reserved);
  free(op);
  ts_open_pump(m);
}

static void fail(ts_open *op, int stage, int code, int retryable,
                 uint32_t retry_after_ms) {
  tm_obs_open(op->m->metrics, open_mode_strict(op), code);
  if (op->cst) {
    tm_stream_reject(op->cst, stage, code, retryable,
                     retryable ? retry_after_ms : 0);
    op->cst = NULL;
  }
  log_end(op, ph_open_stage_name(stage), ph_open_code_name(code), "refused",
          NULL);
  finish(op);
}

/* ---- relay ------------------------------------------------------------- */

static void relay_first_down(void *arg) {
  ts_open *op = arg;
  /* TM-OBS-20: from accepting OPEN_STREAM to the first byte the agent
   * sent reaching the client's stream. */
  op->ttfb_us = since(op->t0);
  if (op->remote)
    tm_obs_stage_scope(op->m->metrics, TM_OS_TTFB, TM_R_SUCCESS, 1,
                       op->ttfb_us);
  else
    tm_obs_ttfb(op->m->metrics, TM_TTFB_SERVER, op->ttfb_us);
}

static void relay_done(void *arg, const relay_stats *st, int end) {
  ts_open *op = arg;
  static const char *const ends[] = {"closed", "idle", "error", "aborted"};
  op->relay = NULL;
  log_end(op, "none", ph_open_code_name(op->end_code),
          end >= 0 && end <= 3 ? ends[end] : "error", st);
  finish(op);
}

/* Issue 22 item 8: the two streams are linked (tm_stream_link), so a
 * RESET from one side goes on to the other with its code; the relay's own
 * ends (idle: timeout, no memory: internal_error) are told to both. */
static void relay_ending(void *arg, int end, int error_side, int err) {
  ts_open *op = arg;
  (void)err;
  if (end == RELAY_END_ERROR && error_side != RELAY_SIDE_NONE) {
    int code = tm_stream_reset_code(
        op->relayed[error_side == RELAY_SIDE_CLIENT ? 0 : 1]);
    op->end_code = code >= 0 ? code : PH_OPEN_INTERNAL_ERROR;
    return;
  }
  op->end_code = relay_reset_code(end, 0);
  tm_stream_set_close_code(op->relayed[0], op->end_code);
  tm_stream_set_close_code(op->relayed[1], op->end_code);
}

/* ---- the agent's answer ------------------------------------------------- */

static void on_agent_open(void *arg, tm_stream *ast, const tm_open_result *res,
                          int strict) {
  ts_open *op = arg;
  ts_mod *m = op->m;
  op->ast = NULL;
  op->open_us = since(op->t_step);
  /* The slot frees now: what follows is no more an open. */
  oexec_remove(&m->exec, &op->job);
  /* TM-OBS-15, -27: the relay stage is the agent's leg, from the
   * OPEN_STREAM sent on the selected session to its answer; the session
   * is this server's own (scope="local", stream_metrics.h). */
  uint64_t relay_us =
      op->open_us > op->select_us ? op->open_us - op->select_us : 0;
  if (!res->accepted) {
    int r = res->code == PH_OPEN_TIMEOUT ? TM_R_TIMEOUT : TM_R_FAILURE;
    tm_obs_stage_scope(m->metrics, TM_OS_RELAY, r, op->remote, relay_us);
    tm_obs_stage_scope(m->metrics, TM_OS_OPEN, r, op->remote, op->open_us);
    fail(op, res->stage, res->code, res->retryable, res->retry_after_ms);
    return;
  }
  /* TM-PROTO-20: through a relay, strict only if every hop was: the
   * holding node says "open_mode":"legacy" when its agent hop was. */
  op->strict_agent = strict && !res->legacy;
  tm_obs_stage_scope(m->metrics, TM_OS_RELAY, TM_R_SUCCESS, op->remote,
                     relay_us);
  tm_obs_stage_scope(m->metrics, TM_OS_OPEN, TM_R_SUCCESS, op->remote,
                     op->open_us);
  tm_obs_open(m->metrics, open_mode_strict(op), PH_OPEN_OK);
  tm_stream *cst = op->cst;
  op->cst = NULL;
  /* TM-P0-18: accept installs the client stream as open, then queues
   * OPEN_RESULT(ok); the relay is joined before the loop runs again, so
   * the client's first DATA finds it. */
  if (op->strict_client && !op->strict_agent)
    tm_stream_accept_legacy(cst); /* issue 24 item 3: never "connected" */
  else
    tm_stream_accept(cst);
  relay_opts o = {
      .idle_timeout_ms = m->c.idle_timeout_ms,
      .buffer_size = 16384,
      .use_splice = 0,
      .first_down = relay_first_down,
      .done = relay_done,
      .ending = relay_ending,
      .arg = op,
  };
  stream_end ce = {-1, tm_stream_ph(cst)}, ae = {-1, tm_stream_ph(ast)};
  tm_stream_link(cst, ast);
  op->relayed[0] = cst;
  op->relayed[1] = ast;
  op->phase = OP_RELAY;
  op->relay = relay_start(ts_api, m->ctx, ce, ae, NULL, 0, &o);
  if (!op->relay) {
    /* relay_start closed both streams: the client sees a RESET. */
    log_end(op, "relay", "internal_error", "error", NULL);
    finish(op);
    return;
  }
  ts_open_pump(m);
}

/* ---- selection ----------------------------------------------------------- */

/* The open goes out on s: an agent connection's session, or a relay
 * link's (the OPEN_STREAM then names the agent for the holding node). */
static void open_on(ts_open *op, tm_session *s) {
  ts_mod *m = op->m;
  tm_open_stream areq;
  memset(&areq, 0, sizeof(areq));
  areq.protocol = op->protocol;
  areq.port = op->port;
  memcpy(areq.host, op->host, sizeof(areq.host));
  memcpy(areq.trace, op->trace, sizeof(areq.trace)); /* passed on */
  if (op->remote) {
    memcpy(areq.agent, op->agent, sizeof(areq.agent));
    /* The holding node logs whose stream it is (sent where the link
     * negotiated stream_principal.v1: tm_stream_open). */
    snprintf(areq.principal, sizeof(areq.principal), "%s", op->token_id);
  }
  op->t_step = mono_us();
  op->phase = OP_OPENING;
  op->ast = tm_stream_open(s, &areq, m->c.open_timeout_ms, on_agent_open, op);
  if (!op->ast) {
    /* Full or draining since the pick: nothing was sent. */
    fail(op, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1, 1000);
    return;
  }
}

/* A relay link came up for the open waiting on it (NULL: it failed). */
static void remote_ready(ts_relay_wait *w, tm_session *s) {
  ts_open *op = (ts_open *)((char *)w - offsetof(ts_open, rw));
  op->select_us = since(op->t_step);
  if (!s && op->remote_tries < 2) {
    /* The link failed: route again from the loop (the node is marked
     * down, so another holding the agent goes first; TM-FAIL-9). */
    op->remote_tries++;
    ts_api->defer_post(op->start);
    return;
  }
  if (!s) {
    tm_obs_stage_scope(op->m->metrics, TM_OS_SELECTION, TM_R_FAILURE, 1,
                       op->select_us);
    fail(op, PH_STAGE_RELAY, PH_OPEN_AGENT_OFFLINE, 1, 1000);
    return;
  }
  tm_obs_stage_scope(op->m->metrics, TM_OS_SELECTION, TM_R_SUCCESS, 1,
                     op->select_us);
  op->agent_known = 1;
  op->strict_agent = !!(tm_session_caps(s) & TM_CAP_OPEN_RESULT);
  open_on(op, s);
}

/* No connection of the agent here: a node of presence holding it,
 * through a relay link (ts_relay.c); none: agent_offline as before. */
static void select_remote(ts_open *op) {
  ts_mod *m = op->m;
  tm_session *s = NULL;
  op->remote = 1;
  op->rw.ready = remote_ready;
  op->phase = OP_OPENING;
  int rc = ts_relay_route(m, op->agent, &op->rw, &s);
  if (rc == 0)
    return; /* remote_ready follows */
  op->select_us = since(op->t_step);
  if (rc == -2) {
    /* The agent's node is there, its links full: as an agent's limit. */
    tm_obs_stage_scope(m->metrics, TM_OS_SELECTION, TM_R_REJECTED, 1,
                       op->select_us);
    fail(op, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 1000);
    return;
  }
  if (rc < 0) {
    op->remote = 0; /* counted as this node's selection, as before */
    tm_obs_stage(m->metrics, TM_OS_SELECTION, TM_R_FAILURE, op->select_us);
    fail(op, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1, 1000);
    return;
  }
  remote_ready(&op->rw, s);
}

static void select_and_open(ts_open *op) {
  ts_mod *m = op->m;
  op->t_step = mono_us();
  ts_agent *a = ts_agent_find(m, op->agent);
  sel_cand cand[TS_AGENT_CONNS_MAX];
  ts_conn *conn[TS_AGENT_CONNS_MAX];
  size_t n = 0;
  uint64_t agent_streams = 0;
  for (ts_conn *c = a ? a->conns : NULL; c && n < TS_AGENT_CONNS_MAX;
       c = c->agent_next) {
    uint32_t s = c->s ? tm_session_streams(c->s) : 0;
    agent_streams += s;
    cand[n].streams = s;
    /* TM-P2-27: weighted by capacity; one at its capacity is full. */
    cand[n].weight = c->capacity;
    cand[n].can_open = c->ready && c->s && s < c->capacity &&
                       tm_session_can_open(c->s);
    conn[n++] = c;
  }
  if (a && agent_streams >= m->c.max_per_agent) {
    op->select_us = since(op->t_step);
    tm_obs_stage(m->metrics, TM_OS_SELECTION, TM_R_REJECTED, op->select_us);
    fail(op, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 1000);
    return;
  }
  int i = sel_pick(cand, n, a ? a->rr++ : 0);
  op->select_us = since(op->t_step);
  if (i < 0) {
    /* No local candidate is remote, not an error (TM-P2-31); a stream a
     * peer relayed here is never relayed on. */
    if (!op->from_peer && m->relay) {
      select_remote(op);
      return;
    }
    tm_obs_stage(m->metrics, TM_OS_SELECTION, TM_R_FAILURE, op->select_us);
    fail(op, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1, 1000);
    return;
  }
  tm_obs_stage(m->metrics, TM_OS_SELECTION, TM_R_SUCCESS, op->select_us);
  ts_conn *ac = conn[i];
  op->agent_known = 1;
  op->strict_agent = !!(tm_session_caps(ac->s) & TM_CAP_OPEN_RESULT);
  open_on(op, ac->s);
}

/* ---- authorization ------------------------------------------------------- */

static void on_access(void *arg, const ph_access_result *res) {
  ts_open *op = arg;
  ts_mod *m = op->m;
  op->check = 0;
  op->auth_us = since(op->t_step);
  int verdict = res && PH_ACCESS_HAS(ph_access_result, res->size, code)
                    ? res->verdict
                    : 0;
  if (verdict == PH_ACCESS_ALLOW) {
    tm_obs_stage(m->metrics, TM_OS_AUTHORIZATION, TM_R_SUCCESS, op->auth_us);
    select_and_open(op);
    return;
  }
  if (verdict == PH_ACCESS_UNAVAILABLE) {
    int code = res->code;
    if (code != PH_OPEN_QUEUE_FULL && code != PH_OPEN_TIMEOUT)
      code = PH_OPEN_INTERNAL_ERROR;
    uint32_t ra =
        PH_ACCESS_HAS(ph_access_result, res->size, retry_after_ms)
            ? res->retry_after_ms
            : 0;
    tm_obs_stage(m->metrics, TM_OS_AUTHORIZATION,
                 code == PH_OPEN_TIMEOUT ? TM_R_TIMEOUT : TM_R_FAILURE,
                 op->auth_us);
    fail(op, PH_STAGE_AUTHORIZATION, code, 1, ra ? ra : 1000);
    return;
  }
  /* DENY, and anything this header does not know: fail closed. */
  tm_obs_stage(m->metrics, TM_OS_AUTHORIZATION, TM_R_REJECTED, op->auth_us);
  fail(op, PH_STAGE_AUTHORIZATION, PH_OPEN_FORBIDDEN, 0, 0);
}

/* A slot is the open's: it starts. */
static void run(ts_open *op) {
  ts_mod *m = op->m;
  op->queue_us = since(op->t0);
  tm_obs_queue_wait(m->metrics, TM_Q_OPEN, op->queue_us);
  if (op->from_peer) {
    /* Authorized by the ingress node, which presence vouches for
     * (ts_relay.c); here only an agent connected to this node. */
    select_and_open(op);
    return;
  }
  op->phase = OP_AUTH;
  op->t_step = mono_us();
  ph_access_request rq = {
      .size = sizeof(rq),
      .protocol = op->protocol,
      .port = op->port,
      .host = op->host,
      .principal = op->token_id,
      .agent = op->agent,
  };
  int64_t id = m->access->check_open(m->access_self, &rq, on_access, op);
  if (id <= 0) {
    tm_obs_stage(m->metrics, TM_OS_AUTHORIZATION, TM_R_FAILURE, 0);
    fail(op, PH_STAGE_AUTHORIZATION, PH_OPEN_INTERNAL_ERROR, 1, 1000);
    return;
  }
  op->check = id;
}

static void on_start(ph_defer *d, void *arg) {
  (void)d;
  ts_open *op = arg;
  /* may finish the open: frees d (allowed from its call) */
  if (op->phase == OP_OPENING && op->remote)
    select_remote(op); /* a relay link failed: route again */
  else
    run(op);
}

/* op holds a slot: it starts on the loop's next turn, never on the
 * caller's stack (the reader's, or an ending open's). */
static void start_later(ts_open *op) {
  op->phase = OP_QUEUED;
  ts_api->defer_post(op->start);
}

void ts_open_pump(ts_mod *m) {
  if (m->pumping)
    return;
  m->pumping = 1;
  oexec_job *j;
  while ((j = oexec_next(&m->exec)))
    start_later(job_open(j));
  m->pumping = 0;
}

/* ---- the memory budget --------------------------------------------------- */

/* What one relayed stream may hold at the server: both directions'
 * inbound and outbound queues. */
static uint64_t stream_cost(const ts_conf *c) {
  return 2 * ((uint64_t)c->session.inbound_buffer_bytes +
              c->session.outbound_buffer_bytes);
}

/* Reserves op's worst case from its session's and its user's budget; 0
 * (logged, counted) when it does not fit. */
static int reserve(ts_open *op) {
  ts_mod *m = op->m;
  ts_conn *cc = op->cc;
  uint64_t cost = stream_cost(&m->c);
  int bound = cc->mem + cost > m->c.mem_per_session ? 0
              : op->user && op->user->mem + cost > m->c.mem_per_principal
                  ? 1
                  : -1;
  if (bound >= 0) {
    /* One call site per bound: each has its own rate limit. */
    if (bound)
      PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
                "tunnel open refused: stream memory budget spent",
                PH_STR("principal", op->token_id),
                PH_STR("limit", "stream.memory_per_principal"));
    else
      PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
                "tunnel open refused: stream memory budget spent",
                PH_STR("principal", op->token_id),
                PH_STR("limit", "stream.memory_per_session"));
    if (m->m_mem_refused[bound])
      ts_api->inc(m->m_mem_refused[bound], 1);
    return 0;
  }
  op->mem = cost;
  cc->mem += cost;
  if (op->user)
    op->user->mem += cost;
  m->mem_reserved += cost;
  if (m->m_mem_reserved)
    ts_api->gauge_set(m->m_mem_reserved, (double)m->mem_reserved);
  return 1;
}

/* ---- the client session's side ------------------------------------------ */

void ts_open_on_open(ts_conn *cc, tm_stream *st, const tm_open_stream *req) {
  ts_mod *m = cc->m;
  ts_open *op = calloc(1, sizeof(*op));
  if (op && !(op->start = ts_api->defer_new(m->ctx, on_start, op))) {
    free(op);
    op = NULL;
  }
  if (!op) {
    tm_stream_reject(st, PH_STAGE_QUEUE, PH_OPEN_INTERNAL_ERROR, 1, 1000);
    return;
  }
  op->m = m;
  op->cc = cc;
  op->cst = st;
  op->t0 = mono_us();
  op->seq = ++m->stream_seq;
  op->protocol = req->protocol;
  op->port = req->port;
  op->strict_client = tm_stream_strict(st);
  op->from_peer = cc->kind == TS_CONN_RELAY;
  memcpy(op->agent, req->agent, sizeof(op->agent));
  snprintf(op->token_id, sizeof(op->token_id), "%s", cc->token_id);
  if (op->from_peer) {
    /* Authorized at the ingress node, which named the principal: logged
     * and counted here, never checked (the session read it only from a
     * relay link that negotiated it). */
    if (req->principal[0])
      snprintf(op->token_id, sizeof(op->token_id), "%s", req->principal);
    ts_relay_count_open(m, req->principal[0] != '\0');
  }
  int replaced;
  tm_trace_take(req, op->trace, &replaced);
  if (replaced) /* the peer's bytes are never logged */
    PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
              "tunnel open: malformed trace id replaced",
              PH_STR("principal", op->token_id),
              PH_STR("trace_id", op->trace));
  op->token = cc->token;
  if (op->token)
    op->token->streams++;
  op->user = cc->user;
  if (op->user)
    op->user->streams++;
  ilist_push_front(&m->opens, &op->link);
  tm_stream_set_user(st, op);

  if (req->protocol != PH_PROTO_TCP) {
    fail(op, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY, 0, 0);
    return;
  }
  if (host_norm(req->host, op->host) != 0) {
    fail(op, PH_STAGE_POLICY, PH_OPEN_FORBIDDEN, 0, 0);
    return;
  }
  if (!op->agent[0]) {
    fail(op, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 0, 0);
    return;
  }
  /* TM-SEC-5: the connection's and the token's bounds (this stream
   * counts already). */
  if (tm_session_streams(cc->s) > m->c.max_per_connection ||
      (op->token && op->token->streams > m->c.max_per_token)) {
    fail(op, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 1000);
    return;
  }
  /* A peer's streams were reserved at its ingress node (issue 22 item 4);
   * here the link's max_streams bounds them. */
  if (!op->from_peer && !reserve(op)) {
    fail(op, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 1000);
    return;
  }
  int v = oexec_submit(&m->exec, &cc->group, &op->job);
  switch (v) {
  case OEXEC_RUN:
    start_later(op);
    break;
  case OEXEC_QUEUED:
    op->phase = OP_QUEUED;
    break;
  default: {
    /* TM-FAIL-2: full now is queue_full now; nothing waits unbounded. */
    static const char *const bound[] = {
        "stream.max_pending_opens", "stream.max_pending_per_principal",
        "stream.max_pending_per_session"};
    PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
              "tunnel open refused: the open queue is full",
              PH_STR("principal", op->token_id),
              PH_STR("limit", bound[v >= OEXEC_FULL && v <= OEXEC_FULL_GROUP
                                        ? v - OEXEC_FULL
                                        : 0]));
    fail(op, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1, 1000);
  }
  }
}

/* Drops the step in progress of an open whose client stream is gone;
 * code: the client's RESET code, passed on to the agent's open. */
static void abandon(ts_open *op, int code) {
  ts_mod *m = op->m;
  op->cst = NULL;
  if (op->phase == OP_AUTH && op->check > 0) {
    m->access->cancel(m->access_self, op->check);
    op->check = 0;
  } else if (op->phase == OP_OPENING && op->ast) {
    tm_stream_abort(op->ast, code >= 0 ? code : PH_OPEN_OK);
    op->ast = NULL;
  } else if (op->phase == OP_OPENING) {
    ts_relay_unwait(&op->rw); /* waiting for a relay link */
  }
  log_end(op, phase_stage(op->phase), "canceled", "client_reset", NULL);
  finish(op);
}

void ts_open_on_abandon(ts_conn *cc, tm_stream *st) {
  (void)cc;
  ts_open *op = tm_stream_user(st);
  if (op && op->cst == st && op->phase != OP_RELAY)
    abandon(op, tm_stream_reset_code(st));
}

void ts_open_conn_gone(ts_conn *cc) {
  ts_mod *m = cc->m;
  ILIST_FOREACH_SAFE(&m->opens, n, nx) {
    ts_open *op = ILIST_ENTRY(n, ts_open, link);
    if (op->cc == cc) {
      op->cc = NULL;
      /* The session resets its unanswered streams (on_abandon) before
       * it closes; one still unanswered here would point into a freed
       * session and its executor group. */
      if (op->phase != OP_RELAY && op->cst)
        abandon(op, PH_OPEN_OK);
    }
  }
}

void ts_open_abort_all(ts_mod *m) {
  ilist_node *n = ilist_first(&m->opens);
  while (n) {
    ilist_node *next = ilist_next(n);
    ts_open *op = ILIST_ENTRY(n, ts_open, link);
    if (op->phase == OP_RELAY && op->relay) {
      relay_stats rs = relay_get_stats(op->relay);
      relay_abort(op->relay);
      op->relay = NULL;
      log_end(op, "none", "ok", "aborted", &rs);
      finish(op);
      /* finish may have freed others through the pump: restart. */
      next = ilist_first(&m->opens);
    }
    n = next;
  }
}

uint32_t ts_open_relays(const ts_mod *m) {
  return (uint32_t)ilist_len(&m->opens);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* One stream at the agent (agent_int.h): the reader's one enqueue into
 * the dial executor, the answer, the relay between the target's socket
 * and the stream, and the stream's one log line. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_int.h"
#include "lib/clocks.h"
#include "tunnel_common/session/tm_trace.h"

#define RETRY_QUEUE_FULL_MS 100

/* tm_metrics' result label for an open code. */
static int result_of(int code) {
  switch (code) {
  case PH_OPEN_OK:
    return TM_R_SUCCESS;
  case PH_OPEN_TIMEOUT:
    return TM_R_TIMEOUT;
  case PH_OPEN_FORBIDDEN:
  case PH_OPEN_QUEUE_FULL:
    return TM_R_REJECTED;
  default:
    return TM_R_FAILURE;
  }
}

static void link_stream(agent_conn *c, agent_stream *as) {
  ilist_push_front(&c->streams, &as->link);
}

static void unlink_stream(agent_stream *as) { ilist_remove(&as->link); }

/* The one line per stream (TM-OBS: stage, stable code, µs, the trace id
 * the server's OPEN_STREAM carried (or ours); code < 0:
 * none, the stream was abandoned before an answer); the target
 * only at debug level and only with log_target (TM-SEC-9). */
static void log_end(agent_stream *as, int stage, int code, const char *end,
                    const relay_stats *rs) {
  agent *a = as->conn->a;
  const ph_api *api = a->api;
  uint64_t total = mono_us() - as->t_open_us;
  uint64_t up = rs ? rs->up : 0, down = rs ? rs->down : 0;
  int level = PH_LOG_INFO; /* one line per stream, every stream */
  PH_LOG(api, a->ctx, level, "stream ended",
         PH_STR("stage", ph_open_stage_name(stage)),
         PH_STR("code", code < 0 ? "none" : ph_open_code_name(code)),
         PH_STR("end", end),
         PH_STR("open_mode", as->strict ? "strict" : "legacy"),
         PH_STR("trace_id", as->trace),
         PH_UINT("open_us", as->open_us), PH_UINT("us", total),
         PH_UINT("bytes_up", up), PH_UINT("bytes_down", down));
  if (a->cfg.log_target)
    PH_LOG(api, a->ctx, PH_LOG_DEBUG, "stream target",
           PH_STR("host", as->host), PH_UINT("port", as->port),
           PH_STR("code", code < 0 ? "none" : ph_open_code_name(code)));
}

/* An open answered, for the pool controller's window (TM-P2-26). */
static void note_open(agent *a, uint64_t open_us, int ok) {
  lat_window_add(&a->w_open, open_us);
  if (a->w_opens < UINT32_MAX)
    a->w_opens++;
  if (!ok && a->w_failed < UINT32_MAX)
    a->w_failed++;
}

static void stream_free(agent_stream *as) {
  agent_conn *c = as->conn;
  unlink_stream(as);
  free(as);
  agent_conn_maybe_free(c);
}

/* The target's first byte: the agent's time to first byte, from
 * OPEN_STREAM (TM-P2-26's TTFB). */
static void relay_first_down(void *arg) {
  agent_stream *as = arg;
  agent *a = as->conn->a;
  lat_window_add(&a->w_ttfb, mono_us() - as->t_open_us);
}

static void relay_done(void *arg, const relay_stats *st, int end) {
  agent_stream *as = arg;
  as->relay = NULL;
  as->conn->n_relaying--;
  const char *e = end == RELAY_END_CLOSED ? "closed"
                  : end == RELAY_END_IDLE ? "idle_timeout"
                  : end == RELAY_END_ERROR ? "error"
                                           : "aborted";
  /* A target read/write failure is the stream's error only (TM-P0-10):
   * the relay reset the stream, nothing else happens. */
  log_end(as, PH_STAGE_RELAY, as->end_code, e, st);
  stream_free(as);
}

/* Before the relay closes the stream: a failure of the target (a reset,
 * an unreachable host) or the idle timeout reaches the server as the
 * RESET code it is, not as code 0, "cancelled" (issue 22 item 8); a
 * reset that came from the server is logged with its own code. */
static void relay_ending(void *arg, int end, int error_side, int err) {
  agent_stream *as = arg;
  if (error_side == RELAY_SIDE_CLIENT) {
    int code = tm_stream_reset_code(as->relayed);
    as->end_code = code >= 0 ? code : PH_OPEN_INTERNAL_ERROR;
    return;
  }
  as->end_code = relay_reset_code(end, err);
  tm_stream_set_close_code(as->relayed, as->end_code);
}

static void answer_failure(agent_stream *as, int stage, int code,
                           int retryable, uint32_t retry_after_ms) {
  agent *a = as->conn->a;
  tm_stream *st = as->st;
  as->st = NULL;
  /* The stream only: OPEN_RESULT(failure) to a strict peer, RESET to a
   * legacy one; the session goes on (TM-P0-8, TM-P0-12). */
  tm_stream_reject(st, stage, code, retryable, retry_after_ms);
  tm_obs_stage(a->m, TM_OS_OPEN, result_of(code), as->open_us);
  note_open(a, as->open_us, 0);
  tm_obs_open(a->m, as->strict, code);
  log_end(as, stage, code, "refused", NULL);
  stream_free(as);
}

static void on_dial_done(void *arg, const ph_open_result *res,
                         const dial_times *t) {
  agent_stream *as = arg;
  agent_conn *c = as->conn;
  agent *a = c->a;
  as->task = NULL;
  as->open_us = mono_us() - as->t_open_us;
  tm_obs_queue_wait(a->m, TM_Q_DIAL, t->queue_us);
  lat_window_add(&a->w_dial, t->queue_us);
  tm_obs_stage(a->m, TM_OS_QUEUE,
               t->dial_us || res->code == PH_OPEN_OK ? TM_R_SUCCESS
                                                      : result_of(res->code),
               t->queue_us);
  if (t->addr_refused && res->code == PH_OPEN_FORBIDDEN) {
    /* The guard's refusal (issue 22 item 5): counted and said once in a
     * while, the target only in the stream's debug line (log_target). */
    a->api->inc(a->c_host_local, 1);
    PH_LOG_RL(a->api, a->ctx, PH_LOG_WARN,
              "open refused: the target is this host (host-local; "
              "targets.allow_host_local opens it)",
              PH_UINT("stream", tm_stream_id(as->st)),
              PH_UINT("addresses", t->addr_refused));
  }
  stream_end target;
  int code = relay_take_open(res, &target);
  if (code != PH_OPEN_OK) {
    int stage = res->code == PH_OPEN_OK ? PH_STAGE_CONNECT : res->stage;
    answer_failure(as, stage, code, res->code == PH_OPEN_OK ? 0 : res->retryable,
                   res->code == PH_OPEN_OK ? 0 : res->retry_after_ms);
    return;
  }
  /* Installed first, then OPEN_RESULT(ok) queued (TM-P0-7): DATA right
   * after the ACK finds the stream open. */
  tm_stream *st = as->st;
  as->st = NULL;
  tm_stream_accept(st);
  tm_obs_stage(a->m, TM_OS_OPEN, TM_R_SUCCESS, as->open_us);
  note_open(a, as->open_us, 1);
  tm_obs_open(a->m, as->strict, PH_OPEN_OK);
  relay_opts ro = {.idle_timeout_ms = a->cfg.idle_timeout_ms,
                   .buffer_size = a->cfg.buffer_size,
                   .use_splice = 0,
                   .done = relay_done,
                   .first_down = relay_first_down,
                   .ending = relay_ending,
                   .arg = as};
  stream_end client = {-1, tm_stream_ph(st)};
  as->relayed = st;
  c->n_relaying++;
  as->relay = relay_start(a->api, a->ctx, client, target, NULL, 0, &ro);
  if (!as->relay) {
    /* Both ends are closed already (the stream is reset towards the
     * server). */
    c->n_relaying--;
    log_end(as, PH_STAGE_RELAY, PH_OPEN_INTERNAL_ERROR, "no_memory", NULL);
    stream_free(as);
  }
}

void agent_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  agent_conn *c = arg;
  agent *a = c->a;
  int strict = tm_stream_strict(st);
  if (a->stopping || c->state != CONN_UP || !c->dx) {
    /* Draining: fail fast, the server may place it elsewhere. */
    tm_stream_reject(st, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL, 1,
                     RETRY_QUEUE_FULL_MS);
    tm_obs_open(a->m, strict, PH_OPEN_QUEUE_FULL);
    return;
  }
  if (req->protocol != PH_PROTO_TCP) {
    tm_stream_reject(st, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY, 0,
                     0);
    tm_obs_open(a->m, strict, PH_OPEN_UNSUPPORTED_CAPABILITY);
    return;
  }
  agent_stream *as = calloc(1, sizeof(*as));
  if (!as) {
    tm_stream_reject(st, PH_STAGE_QUEUE, PH_OPEN_INTERNAL_ERROR, 1,
                     RETRY_QUEUE_FULL_MS);
    tm_obs_open(a->m, strict, PH_OPEN_INTERNAL_ERROR);
    return;
  }
  as->conn = c;
  as->st = st;
  as->strict = strict;
  as->t_open_us = mono_us();
  as->port = req->port;
  memcpy(as->host, req->host, sizeof(as->host));
  as->host[sizeof(as->host) - 1] = '\0';
  int replaced;
  tm_trace_take(req, as->trace, &replaced); /* issue 24 item 10 */
  if (replaced) /* the peer's bytes are never logged */
    PH_LOG_RL(a->api, a->ctx, PH_LOG_WARN,
              "open: malformed trace id replaced",
              PH_STR("trace_id", as->trace));
  link_stream(c, as);
  /* The reader's one non-blocking enqueue (TM-P0-2); full → this stream
   * is refused at once and nothing else changes (TM-P0-3, TM-FAIL-1). */
  int code = PH_OPEN_INTERNAL_ERROR;
  as->task = dial_exec_submit(c->dx, as->host, as->port, on_dial_done, as,
                              &code);
  if (!as->task) {
    tm_obs_stage(a->m, TM_OS_QUEUE, TM_R_REJECTED, 0);
    answer_failure(as, PH_STAGE_QUEUE, code, 1, RETRY_QUEUE_FULL_MS);
    return;
  }
  tm_stream_set_user(st, as);
}

void agent_on_abandon(void *arg, tm_stream *st) {
  (void)arg;
  agent_stream *as = tm_stream_user(st);
  if (!as || as->st != st)
    return;
  /* The server reset it, or the session closed, before the dial
   * answered: stop its DNS and connect (TM-P0-5). */
  dial_task_cancel(as->task);
  as->task = NULL;
  as->st = NULL;
  as->open_us = mono_us() - as->t_open_us;
  log_end(as, PH_STAGE_NONE, -1, "reset_by_peer", NULL);
  stream_free(as);
}

void agent_streams_session_gone(agent_conn *c) {
  ILIST_FOREACH_SAFE(&c->streams, n, nx) {
    agent_stream *as = ILIST_ENTRY(n, agent_stream, link);
    if (as->task) { /* never answered and not abandoned: drop it */
      dial_task_cancel(as->task);
      as->task = NULL;
      as->st = NULL;
      log_end(as, PH_STAGE_RELAY, PH_OPEN_AGENT_OFFLINE, "session_closed",
              NULL);
      unlink_stream(as);
      free(as);
    }
  }
}

void agent_streams_abort(agent_conn *c) {
  ilist_node *n;
  while ((n = ilist_first(&c->streams))) {
    agent_stream *as = ILIST_ENTRY(n, agent_stream, link);
    if (as->task)
      dial_task_cancel(as->task);
    if (as->relay) {
      relay_abort(as->relay);
      c->n_relaying--;
    }
    unlink_stream(as);
    free(as);
  }
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The connector service of tunnel_client: open(req) becomes one
 * OPEN_STREAM on a connection that is up, to the configured agent, with
 * the target as the frontend gave it (names go to the agent unresolved,
 * TM-PROTO-3).
 *
 * Strict (the connection negotiated open-result): the answer comes only
 * from the server's OPEN_RESULT or from stream.open_timeout, which resets
 * that stream alone (TM-PROTO-37/38); stage and code pass through
 * unchanged (an unknown code was decoded as internal_error, TM-PROTO-29)
 * and the frontend maps them (socks5: TM-PROTO-30..36). A success whose
 * OPEN_RESULT says "open_mode":"legacy" (the server reached a legacy
 * agent, issue 24 item 3) is a legacy stream here too. Legacy: success
 * at once, the session says so from the loop (TM-PROTO-39), counted and
 * logged with open_mode=legacy. Success hands the stream over as the
 * result's ph_stream (PH_OPEN_F_STREAM); a caller that takes no stream
 * gets protocol/unsupported_capability.
 *
 * Answers that need no server (no connection up: relay/agent_offline;
 * every connection full: queue/queue_full; a bad target; the capability)
 * are delivered on the loop's next turn (api->defer_post), so a callback
 * never runs inside open(). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tunnel_common/session/tm_trace.h"
#include "tunnel_client_int.h"

struct tc_req {
  idtab_node hn; /* in tc->ids */
  ph_defer *done; /* answered locally: made then, for the next turn */
  tc_client *tc;
  int64_t id;
  ph_open_cb cb;
  void *arg;
  tm_stream *st; /* opening on a session; NULL when answered locally */
  int strict;    /* the connection's mode (or the local one, no session) */
  ph_timer *timer; /* strict: stream.open_timeout */
  int64_t t0_us;
  uint16_t port;
  char host[TM_HOST_MAX + 1];
  char trace[TM_TRACE_LEN + 1]; /* sent in OPEN_STREAM, in every line */
  ph_open_result res;
};

/* ---- the id table ------------------------------------------------------ */

static tc_req *table_find(const tc_client *tc, int64_t id) {
  idtab_node *n = idtab_find(&tc->ids, id);
  return n ? IDTAB_ENTRY(n, tc_req, hn) : NULL;
}

/* ---- metrics and the log line ------------------------------------------ */

/* A failed open is a stream that ended: one line with its stage, code,
 * duration and mode; the target only at debug with log_target. */
static void log_failed(tc_client *tc, const tc_req *r, int64_t us) {
  const ph_api *api = tc->api;
  const char *mode = r->strict ? "strict" : "legacy";
  if (tc->cfg.log_target && api->log_enabled(tc->ctx, PH_LOG_DEBUG))
    PH_LOG(api, tc->ctx, PH_LOG_DEBUG, "stream end",
           PH_STR("stage", ph_open_stage_name(r->res.stage)),
           PH_STR("code", ph_open_code_name(r->res.code)),
           PH_INT("us", us), PH_STR("open_mode", mode),
           PH_STR("trace_id", r->trace), PH_STR("host", r->host),
           PH_UINT("port", r->port));
  else
    PH_LOG_RL(api, tc->ctx, PH_LOG_INFO, "stream end",
              PH_STR("stage", ph_open_stage_name(r->res.stage)),
              PH_STR("code", ph_open_code_name(r->res.code)),
              PH_INT("us", us), PH_STR("open_mode", mode),
              PH_STR("trace_id", r->trace));
}

static void req_free(tc_req *r) {
  if (r->timer)
    r->tc->api->timer_free(r->timer);
  r->tc->api->defer_free(r->done); /* a pending answer is dropped */
  free(r);
}

/* Marks the answer's open mode, then hands it over and frees r. The
 * frontend that asked (component "client") counts the open by its code
 * and open mode (PH_OPEN_R_LEGACY: TM-PROTO-21/39) and times the open
 * stage and the TTFB (TM-OBS-21: from its SOCKS5 success to the first
 * byte it relays), so the client counts nothing itself. */
static void answer(tc_req *r) {
  tc_client *tc = r->tc;
  int64_t us = mono_us() - r->t0_us;
  if (!r->strict)
    r->res.flags |= PH_OPEN_R_LEGACY;
  if (r->res.code != PH_OPEN_OK)
    log_failed(tc, r, us);
  if (r->timer) /* before the callback: it may cancel nothing now */
    tc->api->timer_set(r->timer, 0, 0);
  r->cb(r->arg, &r->res);
  req_free(r);
}

/* ---- local answers -------------------------------------------------------- */

static void on_deliver(ph_defer *d, void *arg) {
  (void)d;
  tc_req *r = arg;
  idtab_del(&r->tc->ids, &r->hn);
  answer(r); /* frees r and d */
}

/* Answers r on the loop's next turn: r->id, or PH_ENOMEM (no handle for
 * the deferred call; r is gone and nobody is called). */
static int64_t finish_local(tc_req *r, int stage, int code,
                            uint32_t retry_ms) {
  tc_client *tc = r->tc;
  r->res.stage = stage;
  r->res.code = code;
  r->res.retryable = retry_ms > 0;
  r->res.retry_after_ms = retry_ms;
  if (!r->done && !(r->done = tc->api->defer_new(tc->ctx, on_deliver, r))) {
    idtab_del(&tc->ids, &r->hn);
    req_free(r);
    return PH_ENOMEM;
  }
  tc->api->defer_post(r->done);
  return r->id;
}

/* ---- the session's answer ---------------------------------------------- */

/* Strict: no OPEN_RESULT within stream.open_timeout. The stream alone is
 * reset towards the server (TM-PROTO-38); the answer is connect/timeout
 * (the client cannot tell which stage the server was in). The client
 * keeps this timer itself so that the stage is its own, not the
 * session's. */
static void on_open_timeout(ph_timer *t, void *arg) {
  (void)t;
  tc_req *r = arg;
  tc_client *tc = r->tc;
  tm_stream *st = r->st;
  r->st = NULL;
  idtab_del(&tc->ids, &r->hn);
  if (st) /* RESET timeout (issue 22 item 8); its callback never runs */
    tm_stream_abort(st, PH_OPEN_TIMEOUT);
  r->res.stage = PH_STAGE_CONNECT;
  r->res.code = PH_OPEN_TIMEOUT;
  r->res.retryable = 1;
  r->res.retry_after_ms = TC_RETRY_OFFLINE_MS;
  answer(r);
}

static void on_opened(void *arg, tm_stream *st, const tm_open_result *res,
                      int strict) {
  tc_req *r = arg;
  tc_client *tc = r->tc;
  r->st = NULL;
  /* A strict connection's stream the server opened towards a legacy
   * agent says so in its OPEN_RESULT (issue 24 item 3): counted and
   * logged legacy, like a legacy connection's. */
  r->strict = strict && !(res->accepted && res->legacy);
  idtab_del(&tc->ids, &r->hn);
  if (res->accepted) {
    ph_stream *ps =
        tc_stream_wrap(tc, st, r->strict, r->t0_us, r->host, r->port,
                       r->trace);
    if (!ps) {
      ph_stream_close(tm_stream_ph(st)); /* resets it towards the peer */
      r->res.stage = PH_STAGE_PROTOCOL;
      r->res.code = PH_OPEN_INTERNAL_ERROR;
      r->res.retryable = 1;
      r->res.retry_after_ms = TC_RETRY_FULL_MS;
    } else {
      r->res.stage = PH_STAGE_NONE;
      r->res.code = PH_OPEN_OK;
      r->res.stream = ps;
    }
  } else {
    /* Unchanged: the frontend maps them (the decoder made an unknown
     * code internal_error, TM-PROTO-29). */
    r->res.stage = res->stage > PH_STAGE_NONE && res->stage < PH_STAGE_COUNT_
                       ? res->stage
                       : PH_STAGE_PROTOCOL;
    r->res.code = res->code > PH_OPEN_OK && res->code < PH_OPEN_CODE_COUNT_
                      ? res->code
                      : PH_OPEN_INTERNAL_ERROR;
    r->res.retryable = res->retryable ? 1 : 0;
    r->res.retry_after_ms = res->retryable ? res->retry_after_ms : 0;
  }
  answer(r);
}

/* ---- the service -------------------------------------------------------- */

static int printable_host(const char *h, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f)
      return 0;
  return 1;
}

static int64_t tc_open(void *self, const ph_open_request *req, ph_open_cb cb,
                       void *arg) {
  tc_client *tc = self;
  if (!req || !cb ||
      req->size < offsetof(ph_open_request, principal) +
                      sizeof(req->principal) ||
      req->protocol != PH_PROTO_TCP || req->port == 0 || !req->host)
    return PH_EINVAL;
  size_t hl = strnlen(req->host, TM_HOST_MAX + 1);
  if (hl < 1 || hl > TM_HOST_MAX)
    return PH_EINVAL;
  uintptr_t flags =
      req->size >= offsetof(ph_open_request, flags) + sizeof(req->flags)
          ? req->flags
          : 0;
  tc_req *r = calloc(1, sizeof(*r));
  if (!r)
    return PH_ENOMEM;
  r->tc = tc;
  r->id = ++tc->next_id;
  r->cb = cb;
  r->arg = arg;
  r->t0_us = mono_us();
  r->port = req->port;
  memcpy(r->host, req->host, hl);
  tm_trace_new(r->trace); /* issue 24 item 10: joins the three roles' lines */
  r->strict = (tc->cfg.caps & TM_CAP_OPEN_RESULT) != 0;
  r->res.size = sizeof(r->res);
  r->res.fd = -1;
  idtab_put(&tc->ids, &r->hn, r->id);
  if (!(flags & PH_OPEN_F_STREAM)) {
    /* This connector has streams only, no socket to give. */
    return finish_local(r, PH_STAGE_PROTOCOL, PH_OPEN_UNSUPPORTED_CAPABILITY,
                        0);
  }
  if (!printable_host(r->host, hl)) {
    /* OPEN_STREAM carries printable ASCII only: no agent could resolve
     * it either. */
    return finish_local(r, PH_STAGE_DNS, PH_OPEN_HOST_UNREACHABLE, 0);
  }
  if (tc->stopping) {
    return finish_local(r, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL,
                        TC_RETRY_OFFLINE_MS);
  }
  tm_session *s = tc_conns_pick(tc);
  if (!s) {
    /* No connection up, or none accepts a stream now. */
    if (tc_conns_up(tc))
      return finish_local(r, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL,
                          TC_RETRY_FULL_MS);
    return finish_local(r, PH_STAGE_RELAY, PH_OPEN_AGENT_OFFLINE,
                        TC_RETRY_OFFLINE_MS);
  }
  tm_open_stream os;
  memset(&os, 0, sizeof(os));
  os.protocol = 1;
  os.port = req->port;
  memcpy(os.host, r->host, hl);
  memcpy(os.agent, tc->cfg.agent, strlen(tc->cfg.agent));
  memcpy(os.trace, r->trace, sizeof(os.trace));
  r->strict = (tm_session_caps(s) & TM_CAP_OPEN_RESULT) != 0;
  if (r->strict &&
      !(r->timer = tc->api->timer_new(tc->ctx, on_open_timeout, r))) {
    idtab_del(&tc->ids, &r->hn);
    free(r);
    return PH_ENOMEM;
  }
  r->st = tm_stream_open(s, &os, 0, on_opened, r);
  if (!r->st) /* at max_streams, draining, or its control queue full */
    return finish_local(r, PH_STAGE_QUEUE, PH_OPEN_QUEUE_FULL,
                        TC_RETRY_FULL_MS);
  if (r->timer)
    tc->api->timer_set(r->timer, tc->cfg.open_timeout_ms, 0);
  return r->id;
}

static int tc_cancel(void *self, int64_t id) {
  tc_client *tc = self;
  tc_req *r = id > 0 ? table_find(tc, id) : NULL;
  if (!r)
    return PH_ENOENT;
  idtab_del(&tc->ids, &r->hn);
  if (r->st) /* resets it towards the server; on_opened never runs */
    tm_stream_cancel(r->st);
  req_free(r);
  return PH_OK;
}

const ph_connector_v1 tc_connector = {tc_open, tc_cancel};

/* ---- lifecycle ---------------------------------------------------------- */

int tc_opens_init(tc_client *tc) {
  /* Live requests are bounded by the sessions' max_streams (opening
   * ones) and by what the frontends ask in one loop turn (local answers);
   * the table only keeps chains short. */
  size_t want = (size_t)tc->cfg.connections * tc->cfg.scfg.max_streams;
  return idtab_init(&tc->ids, want) == 0 ? PH_OK : PH_ENOMEM;
}

void tc_opens_destroy(tc_client *tc) {
  /* Before the sessions go (tc_conns_destroy): their callers (the
   * frontends, destroyed before their provider) must hear nothing more,
   * so every open still in flight is cancelled, not failed. */
  idtab_node *n;
  while ((n = idtab_any(&tc->ids))) {
    tc_req *r = IDTAB_ENTRY(n, tc_req, hn);
    idtab_del(&tc->ids, n);
    if (r->st)
      tm_stream_cancel(r->st);
    req_free(r);
  }
  idtab_free(&tc->ids);
}

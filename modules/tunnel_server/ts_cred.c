/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sessions bound to the credentials that opened them (issue 22 item 1;
 * seed 001 counts "认证失效" among the session-level errors).
 *
 * A connection is authenticated once, at the upgrade, but its token may
 * be revoked, rotated, deleted, expire, or its user or agent be disabled
 * while the WebSocket stays open. Every such change moves the
 * authorization revision, so a timer (credential_check_interval) reads
 * the access provider's revision (no I/O) and re-authenticates, with the
 * bearer the session was opened with, every session whose last check ran
 * under an older revision; the expiry needs no revision and is compared
 * on every tick. A session the store no longer vouches for (DENY, or a
 * token that now names another agent or scope) is ended: one audit line
 * at warning level, counted, WebSocket close 4403, its streams reset and
 * its slots (agent.max_connections, the token's and the user's
 * connections) freed at once.
 *
 * On one node the revision moves with the write, so the end comes within
 * one tick; across nodes, within the store's revision poll plus a tick.
 * An UNAVAILABLE answer, or an unhealthy revision, ends nothing: the
 * session stays and is checked again at the next tick, while every new
 * stream is refused by the access provider (it fails closed), so an
 * outage of the store cannot be used to keep a revoked session alive
 * for longer than the outage, and does not cut every tenant off either.
 *
 * At most TS_RECHECKS_MAX re-checks run at once; the others wait for a
 * later tick (their revision is still older), so a revision step with
 * 1,024 sessions costs the store a bounded burst.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/metric_table.h"
#include "ts_int.h"

#define TS_RECHECKS_MAX 64
#define WS_CREDENTIALS 4403

enum { END_DENIED = 0, END_EXPIRED, END_CHANGED };
static const char *const roles[] = {"client", "agent", NULL};
static const char *const end_reasons[] = {"denied", "expired", "changed",
                                          NULL};
static const char *const refusals[] = {"token_limit", "user_limit",
                                       "agent_limit", NULL};

static const ph_label_def refused_labels[] = {{"reason", refusals}};
static const ph_label_def ended_labels[] = {{"role", roles},
                                            {"reason", end_reasons}};
static const char *const mem_bounds[] = {"session", "principal", NULL};
static const ph_label_def mem_labels[] = {{"bound", mem_bounds}};

/* The module's own metrics (tm_metrics.c has the sessions'): the
 * credential ones counted here, the memory budget's in ts_open.c. */
static const ph_metric_table ts_metrics[] = {
    PH_METRIC("proxyhost_tunnel_server_connections_refused_total",
              PH_METRIC_COUNTER,
              "Authenticated connections refused by a per-token, per-user "
              "or per-agent connection limit",
              PH_METRIC_LABELS(refused_labels), PH_METRIC_NO_BUCKETS, ts_mod,
              m_refused),
    PH_METRIC("proxyhost_tunnel_server_credential_ends_total",
              PH_METRIC_COUNTER,
              "Sessions ended because their credentials stopped being valid",
              PH_METRIC_LABELS(ended_labels), PH_METRIC_NO_BUCKETS, ts_mod,
              m_cred_ended),
    PH_METRIC("proxyhost_tunnel_server_stream_memory_refused_total",
              PH_METRIC_COUNTER,
              "Opens refused because the session's or the user's stream "
              "memory budget was spent",
              PH_METRIC_LABELS(mem_labels), PH_METRIC_NO_BUCKETS, ts_mod,
              m_mem_refused),
    PH_METRIC("proxyhost_tunnel_server_stream_memory_reserved_bytes",
              PH_METRIC_GAUGE,
              "Bytes reserved by the streams alive (their worst case at the "
              "server)",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, ts_mod,
              m_mem_reserved),
    PH_METRIC_END};

void ts_count_refusal(ts_mod *m, int refusal) {
  if (refusal >= 0 && refusal <= TS_REF_AGENT && m->m_refused[refusal])
    ts_api->inc(m->m_refused[refusal], 1);
}

static int end_index(const char *why) {
  for (int i = 0; end_reasons[i]; i++)
    if (strcmp(end_reasons[i], why) == 0)
      return i;
  return END_DENIED;
}

void ts_cred_end(ts_conn *c, const char *why) {
  ts_mod *m = c->m;
  int agent = c->kind == TS_CONN_AGENT;
  char red[TS_REDACTED_LEN] = "-";
  if (agent && c->agent)
    ts_redact_agent(c->agent->name, red);
  PH_LOG(ts_api, m->ctx, PH_LOG_WARN,
         "tunnel session ended: its credentials are no longer valid",
         PH_STR("principal", c->token_id),
         PH_STR("role", agent ? "agent" : "client"), PH_STR("agent", red),
         TS_AGENT_NAME(m, agent && c->agent ? c->agent->name : NULL),
         PH_STR("reason", why),
         PH_UINT("streams", c->s ? tm_session_streams(c->s) : 0),
         PH_STR("peer", c->peer));
  ph_series *ser = m->m_cred_ended[agent][end_index(why)];
  if (ser)
    ts_api->inc(ser, 1);
  /* The session first: its streams are reset and its on_close frees the
   * slots from the loop's next turn, not when the peer answers the close.
   * Then the close code, which the link keeps over the session's own
   * close; an in-memory link may free c inside it. */
  if (c->s)
    tm_session_close(c->s);
  c->lo->close(c->link, WS_CREDENTIALS, "credentials revoked");
}

/* What a good answer must still say for the session it re-checks. */
static int same_identity(const ts_conn *c, const ph_az_token *tk) {
  if (!tk->id || strcmp(tk->id, c->token_id) != 0)
    return 0;
  if (c->kind == TS_CONN_AGENT)
    return (tk->scopes & PH_AZ_SCOPE_AGENT) && tk->agent && c->agent &&
           strcmp(tk->agent, c->agent->name) == 0;
  return (tk->scopes & PH_AZ_SCOPE_STREAM) && !(tk->agent && *tk->agent) &&
         c->user && strcmp(tk->user ? tk->user : "", c->user->key) == 0;
}

void ts_cred_on_recheck(ts_conn *c, const ph_az_auth_result *res) {
  ts_mod *m = c->m;
  m->rechecks--;
  c->auth_call = 0;
  uint64_t started = c->check_rev;
  c->check_rev = 0;
  int verdict = res && res->size >= offsetof(ph_az_auth_result, ttl_ms)
                    ? res->verdict
                    : 0;
  if (!c->s)
    return;
  if (verdict == PH_AZ_AUTH_OK) {
    if (!same_identity(c, &res->token)) {
      ts_cred_end(c, "changed");
      return;
    }
    c->expires_at = res->token.expires_at;
    uint64_t rev = res->size >= offsetof(ph_az_auth_result, reserved)
                       ? res->revision
                       : 0;
    c->auth_rev = rev > started ? rev : started;
    return;
  }
  if (verdict == PH_AZ_AUTH_DENY) {
    ts_cred_end(c, "denied");
    return;
  }
  /* Unavailable (or no verdict): unknown, so checked again next tick;
   * the access provider refuses new streams meanwhile. */
  PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
            "tunnel session credentials could not be re-checked; "
            "trying again",
            PH_STR("principal", c->token_id));
}

static void recheck(ts_conn *c, uint64_t rev) {
  ts_mod *m = c->m;
  /* Counted before the call: a store may answer inside it. */
  c->check_rev = rev;
  m->rechecks++;
  int64_t id = m->store->authenticate(m->store_self, c->bearer,
                                      c->bearer_len, ts_conn_on_auth, c);
  if (id <= 0) {
    c->check_rev = 0;
    m->rechecks--;
    return; /* the next tick tries again */
  }
  if (c->check_rev)
    c->auth_call = id; /* not answered yet */
}

static void tick(ph_timer *t, void *arg) {
  ts_mod *m = arg;
  (void)t;
  int64_t now_s = (int64_t)time(NULL);
  uint64_t rev = 0;
  int have_rev = m->access->revision(m->access_self, &rev) == PH_OK && rev;
  /* ts_cred_end may free c from inside */
  ILIST_FOREACH_SAFE(&m->conns, n, nx) {
    ts_conn *c = ILIST_ENTRY(n, ts_conn, mlink);
    if (c->kind == TS_CONN_AUTH || !c->s)
      continue;
    if (c->expires_at && now_s >= c->expires_at) {
      ts_cred_end(c, "expired");
      continue;
    }
    if (have_rev && rev > c->auth_rev && !c->check_rev && c->bearer &&
        m->rechecks < TS_RECHECKS_MAX)
      recheck(c, rev);
  }
}

int ts_cred_init(ts_mod *m) {
  if (ph_metric_table_register(ts_api, m->ctx, ts_metrics, m) != PH_OK)
    return PH_EINVAL;
  m->cred_timer = ts_api->timer_new(m->ctx, tick, m);
  if (!m->cred_timer)
    return PH_ENOMEM;
  return PH_OK;
}

void ts_cred_start(ts_mod *m) {
  ts_api->timer_set(m->cred_timer, m->c.cred_check_ms, m->c.cred_check_ms);
}

void ts_cred_free(ts_mod *m) {
  if (m->cred_timer)
    ts_api->timer_free(m->cred_timer);
  m->cred_timer = NULL;
}

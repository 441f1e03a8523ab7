/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One WebSocket connection of the tunnel server: authentication by the
 * bearer token, then a session as a client (the peer opens streams) or
 * as an agent (the server opens streams to it), and the registries that
 * limits and selection read (tokens, agents).
 *
 * Authentication is asynchronous and reads nothing meanwhile: tm_ws keeps
 * the connection paused from on_accept until tm_ws_conn_resume, and
 * nothing is bound to it, so no frame is looked at before the store
 * answered. Deny and unavailable both close with 4401 and one fixed
 * reason, so a peer cannot tell them apart; the log line names the token
 * by its id only (the part before the '.'), never its secret.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_select.h"
#include "tunnel_common/session/tm_token.h"
#include "ts_bearer.h"
#include "ts_int.h"

#define WS_UNAUTHORIZED 4401
#define WS_POLICY 1008
#define WS_INTERNAL 1011

/* ---- names for logs --------------------------------------------------- */

void ts_redact_agent(const char *name, char out[TS_REDACTED_LEN]) {
  /* FNV-1a: stable across restarts and nodes, so lines about one agent
   * can be joined, without the name itself (TM-OBS-19, TM-SEC-9). */
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
    h ^= *p;
    h *= 16777619u;
  }
  snprintf(out, TS_REDACTED_LEN, "agent-%08x", h);
}

/* ---- registries -------------------------------------------------------- */

ts_agent *ts_agent_find(ts_mod *m, const char *name) {
  for (ts_agent *a = m->agents; a; a = a->next)
    if (strcmp(a->name, name) == 0)
      return a;
  return NULL;
}

static ts_agent *agent_get(ts_mod *m, const char *name) {
  ts_agent *a = ts_agent_find(m, name);
  if (a)
    return a;
  a = calloc(1, sizeof(*a));
  if (!a)
    return NULL;
  snprintf(a->name, sizeof(a->name), "%s", name);
  a->mesh_session = ts_mesh_session(m);
  a->next = m->agents;
  m->agents = a;
  ts_gone_drop(&m->gone, name); /* online again: not listed as gone */
  return a;
}

static void agent_del_conn(ts_mod *m, ts_conn *c) {
  ts_agent *a = c->agent;
  if (!a)
    return;
  for (ts_conn **pp = &a->conns; *pp; pp = &(*pp)->agent_next)
    if (*pp == c) {
      *pp = c->agent_next;
      a->nconns--;
      break;
    }
  c->agent = NULL;
  ts_mesh_agent(m, a);
  if (a->conns)
    return;
  for (ts_agent **pp = &m->agents; *pp; pp = &(*pp)->next)
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  /* Its last connection here closed: the status page's offline rows. */
  ts_gone_add(&m->gone, a->name, wall_ms() / 1000);
  free(a);
}

static ts_tally *tally_get(ilist *list, const char *key) {
  ILIST_FOREACH_SAFE(list, it, nx) {
    ts_tally *t = ILIST_ENTRY(it, ts_tally, node);
    if (strcmp(t->key, key) == 0)
      return t;
  }
  ts_tally *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  snprintf(t->key, sizeof(t->key), "%s", key);
  oexec_principal_init(&t->opens);
  ilist_push_front(list, &t->node);
  return t;
}

void ts_tally_release(ilist *list, ts_tally *t) {
  if (!t || t->conns || t->streams)
    return;
  if (ilist_of(&t->node) == list)
    ilist_remove(&t->node);
  free(t);
}

/* What a client session holds in the registries, given back (its close,
 * or a session that could not be made). */
static void client_release(ts_mod *m, ts_conn *c) {
  if (c->token) {
    c->token->conns--;
    ts_tally_release(&m->tokens, c->token);
    c->token = NULL;
  }
  if (c->user) {
    c->user->conns--;
    ts_tally_release(&m->users, c->user);
    c->user = NULL;
  }
}

/* ---- sessions ----------------------------------------------------------- */

static void sess_on_open(void *arg, tm_stream *st, const tm_open_stream *req) {
  ts_open_on_open(arg, st, req);
}

static void sess_on_abandon(void *arg, tm_stream *st) {
  ts_open_on_abandon(arg, st);
}

static void sess_on_metadata(void *arg, const tm_metadata *md, int ack) {
  ts_conn *c = arg;
  ts_mod *m = c->m;
  /* Only an agent declares; an ACK from a peer means nothing here, and a
   * second declaration changes nothing (no downgrade mid-connection,
   * TM-UPG-13). */
  if (c->kind != TS_CONN_AGENT || ack || c->ready)
    return;
  char red[TS_REDACTED_LEN];
  ts_redact_agent(c->agent ? c->agent->name : "", red);
  if (md->agent_id[0] && c->agent && strcmp(md->agent_id, c->agent->name)) {
    PH_LOG(ts_api, m->ctx, PH_LOG_WARN,
           "agent metadata names another agent than its token; closing",
           PH_STR("principal", c->token_id), PH_STR("agent", red),
           TS_AGENT_NAME(m, c->agent->name));
    tm_session_close(c->s);
    return;
  }
  /* The subprotocol fixed what this session does; metadata that declares
   * less than that is a peer that would never send what the session
   * waits for (an OPEN_RESULT), so it is refused rather than guessed
   * around (TM-PROTO-17). */
  unsigned wire = TM_CAP_OPEN_RESULT | TM_CAP_FLOW_CONTROL;
  if (c->caps & wire & ~md->caps) {
    PH_LOG(ts_api, m->ctx, PH_LOG_WARN,
           "agent metadata lacks a capability its subprotocol chose; closing",
           PH_STR("principal", c->token_id), PH_STR("agent", red),
           TS_AGENT_NAME(m, c->agent ? c->agent->name : NULL));
    tm_session_close(c->s);
    return;
  }
  tm_metadata ackm;
  memset(&ackm, 0, sizeof(ackm));
  /* TM-PROTO-18: the intersection of the agent's and the server's. */
  ackm.caps = md->caps & (m->c.caps | m->c.session.local_caps);
  if (tm_session_send_metadata(c->s, &ackm, 1) != PH_OK) {
    tm_session_close(c->s);
    return;
  }
  c->meta_caps = md->caps;
  c->capacity = sel_weight(md->max_streams, m->c.max_per_connection);
  c->ready = 1;
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "agent ready",
         PH_STR("principal", c->token_id), PH_STR("agent", red),
         TS_AGENT_NAME(m, c->agent ? c->agent->name : NULL),
         PH_UINT("capabilities", ackm.caps),
         PH_UINT("capacity", c->capacity),
         PH_INT("strict", !!(c->caps & TM_CAP_OPEN_RESULT)));
}

static void sess_on_close(void *arg, int reason) {
  ts_conn *c = arg;
  ts_mod *m = c->m;
  PH_LOG(ts_api, m->ctx, reason == TM_CLOSE_ABUSE ? PH_LOG_WARN : PH_LOG_INFO,
         "tunnel session closed", PH_STR("principal", c->token_id),
         PH_STR("role", c->kind == TS_CONN_AGENT   ? "agent"
                        : c->kind == TS_CONN_RELAY ? "relay"
                                                   : "client"),
         PH_STR("reason", tm_close_reason_name(reason)));
  c->s = NULL;
  c->ready = 0;
  if (c->kind == TS_CONN_AGENT) {
    agent_del_conn(m, c);
  } else if (c->kind == TS_CONN_CLIENT || c->kind == TS_CONN_RELAY) {
    ts_open_conn_gone(c);
    client_release(m, c);
  }
}

const tm_session_ops ts_client_ops = {
    .on_open = sess_on_open,
    .on_abandon = sess_on_abandon,
    .on_metadata = sess_on_metadata,
    .on_close = sess_on_close,
};

static const tm_session_ops agent_ops = {
    .on_metadata = sess_on_metadata,
    .on_close = sess_on_close,
};

/* ---- authentication ----------------------------------------------------- */

static void forget_bearer(ts_conn *c) {
  if (c->bearer) {
    tm_token_wipe(c->bearer, c->bearer_len);
    free(c->bearer);
  }
  c->bearer = NULL;
  c->bearer_len = 0;
}

static void refuse(ts_conn *c, const char *why) {
  PH_LOG(ts_api, c->m->ctx, PH_LOG_INFO, "tunnel connection refused",
         PH_STR("principal", c->token_id), PH_STR("reason", why),
         PH_STR("peer", c->peer));
  c->lo->close(c->link, WS_UNAUTHORIZED, "unauthorized");
}

/* A limit reached after authentication: logged (rate-limited), counted,
 * closed with 1008 and a fixed reason. */
static void refuse_limit(ts_conn *c, int refusal, const char *what) {
  PH_LOG_RL(ts_api, c->m->ctx, PH_LOG_WARN,
            "tunnel connection refused: connection limit",
            PH_STR("principal", c->token_id), PH_STR("limit", what),
            PH_STR("peer", c->peer));
  ts_count_refusal(c->m, refusal);
  c->lo->close(c->link, WS_POLICY, "too many connections");
}

void ts_conn_on_auth(void *arg, const ph_az_auth_result *res) {
  ts_conn *c = arg;
  ts_mod *m = c->m;
  if (c->check_rev) {
    ts_cred_on_recheck(c, res);
    return;
  }
  c->auth_call = 0;
  m->auth_in_flight--;
  int verdict = res && res->size >= offsetof(ph_az_auth_result, ttl_ms)
                    ? res->verdict
                    : 0;
  if (verdict != PH_AZ_AUTH_OK) {
    refuse(c, verdict == PH_AZ_AUTH_UNAVAILABLE ? "unavailable" : "denied");
    return;
  }
  if (m->stopping) {
    c->lo->close(c->link, 1001, "going away");
    return;
  }
  const ph_az_token *tk = &res->token;
  if (tk->id)
    snprintf(c->token_id, sizeof(c->token_id), "%s", tk->id);
  int agent = (tk->scopes & PH_AZ_SCOPE_AGENT) && tk->agent && *tk->agent;
  if (!agent && !(tk->scopes & PH_AZ_SCOPE_STREAM)) {
    refuse(c, "scope");
    return;
  }
  c->expires_at = tk->expires_at;
  c->auth_rev = res->size >= offsetof(ph_az_auth_result, reserved)
                    ? res->revision
                    : 0;
  tm_session_cfg cfg;
  ts_session_cfg(&m->c, agent, c->caps, m->metrics, &cfg);
  if (agent) {
    ts_agent *a = ts_agent_find(m, tk->agent);
    if (a && a->nconns >= m->c.agent_max_connections) {
      refuse_limit(c, TS_REF_AGENT, "agent.max_connections");
      return;
    }
    if (!a && !(a = agent_get(m, tk->agent))) {
      c->lo->close(c->link, WS_INTERNAL, "internal error");
      return;
    }
    c->kind = TS_CONN_AGENT;
    c->agent = a;
    c->agent_next = a->conns;
    a->conns = c;
    a->nconns++;
    ts_mesh_agent(m, a);
    c->s = tm_session_new(ts_api, m->ctx, &cfg, c->lo->transport(), c->link,
                          &agent_ops, c);
  } else {
    ts_tally *t = tally_get(&m->tokens, c->token_id);
    ts_tally *u = t ? tally_get(&m->users, tk->user ? tk->user : "") : NULL;
    int limit = -1;
    if (t && u) {
      if (t->conns >= m->c.max_conns_per_token)
        limit = TS_REF_TOKEN;
      else if (u->conns >= m->c.max_conns_per_user)
        limit = TS_REF_USER;
    }
    if (!t || !u || limit >= 0) {
      ts_tally_release(&m->users, u);
      ts_tally_release(&m->tokens, t);
      if (limit >= 0)
        refuse_limit(c, limit, limit == TS_REF_TOKEN
                                   ? "client.max_connections_per_token"
                                   : "client.max_connections_per_user");
      else
        c->lo->close(c->link, WS_INTERNAL, "internal error");
      return;
    }
    c->kind = TS_CONN_CLIENT;
    c->token = t;
    c->user = u;
    t->conns++;
    u->conns++;
    oexec_group_init(&c->group, &u->opens);
    c->s = tm_session_new(ts_api, m->ctx, &cfg, c->lo->transport(), c->link,
                          &ts_client_ops, c);
  }
  if (!c->s) {
    /* What on_close would have undone. */
    if (c->kind == TS_CONN_AGENT)
      agent_del_conn(m, c);
    else
      client_release(m, c);
    c->kind = TS_CONN_AUTH;
    c->lo->close(c->link, WS_INTERNAL, "internal error");
    return;
  }
  c->lo->bind(c->link, c->s);
  c->lo->resume(c->link);
  char red[TS_REDACTED_LEN] = "-";
  if (agent)
    ts_redact_agent(tk->agent, red);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "tunnel connection authenticated",
         PH_STR("principal", c->token_id),
         PH_STR("role", agent ? "agent" : "client"), PH_STR("agent", red),
         TS_AGENT_NAME(m, agent ? tk->agent : NULL),
         PH_INT("strict", !!(c->caps & TM_CAP_OPEN_RESULT)),
         PH_INT("flow_control", !!(c->caps & TM_CAP_FLOW_CONTROL)),
         PH_STR("peer", c->peer));
}

ts_conn *ts_conn_accept(ts_mod *m, const ts_link_ops *lo, void *link,
                        const char *bearer, size_t len, const char *subproto,
                        const char *peer) {
  if (m->stopping || m->nconns >= m->c.max_connections) {
    PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
              m->stopping ? "tunnel connection refused: stopping"
                          : "tunnel connection refused: max_connections",
              PH_STR("peer", peer ? peer : "-"));
    return NULL;
  }
  ts_conn *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->m = m;
  c->lo = lo;
  c->link = link;
  int caps = tm_subproto_caps(subproto);
  c->caps = caps > 0 ? ((unsigned)caps & m->c.caps) : 0;
  snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "-");
  c->since_ms = mono_ms();
  c->seq = ++m->conn_seq;
  ts_bearer_id(bearer, len, c->token_id);
  /* A bearer over the store's bound is no token: the store answers DENY
   * for the empty one, so it is refused like any other wrong token. */
  if (!bearer || len > PH_AZ_BEARER_MAX) {
    bearer = "";
    len = 0;
  }
  /* Kept for the re-checks of ts_cred.c (an empty one is never
   * re-checked: it is refused now). */
  if (len) {
    c->bearer = malloc(len);
    if (!c->bearer) {
      free(c);
      return NULL;
    }
    memcpy(c->bearer, bearer, len);
    c->bearer_len = len;
  }
  int64_t id =
      m->store->authenticate(m->store_self, bearer, len, ts_conn_on_auth, c);
  if (id <= 0) {
    forget_bearer(c);
    free(c);
    return NULL;
  }
  c->auth_call = id;
  m->auth_in_flight++;
  ilist_push_front(&m->conns, &c->mlink);
  m->nconns++;
  return c;
}

void ts_conn_closed(ts_conn *c) {
  ts_mod *m = c->m;
  if (c->auth_call > 0) {
    m->store->cancel(m->store_self, c->auth_call);
    c->auth_call = 0;
    if (c->check_rev)
      m->rechecks--;
    else
      m->auth_in_flight--;
    c->check_rev = 0;
  }
  /* The session learns it here (its on_close runs inside and undoes the
   * registries); after a session close it is already gone. */
  if (c->s)
    tm_session_on_transport_closed(c->s);
  ilist_remove(&c->mlink);
  m->nconns--;
  forget_bearer(c);
  free(c);
  ts_stop_check(m);
}

/* ---- over tm_ws ----------------------------------------------------------- */

static void ws_bind(void *link, tm_session *s) { tm_ws_conn_bind(link, s); }
static void ws_resume(void *link) { tm_ws_conn_resume(link); }
static void ws_close(void *link, int status, const char *reason) {
  tm_ws_conn_close(link, status, reason);
}
const ts_link_ops ts_ws_link = {
    .transport = tm_ws_transport,
    .bind = ws_bind,
    .resume = ws_resume,
    .close = ws_close,
};

static int ws_on_accept(void *arg, tm_ws_conn *w, const char *bearer,
                        size_t len, const char *subproto, const char *peer) {
  ts_conn *c = ts_conn_accept(arg, &ts_ws_link, w, bearer, len, subproto, peer);
  if (!c)
    return -1;
  tm_ws_conn_set_user(w, c);
  return 0;
}

void ts_ws_on_closed(void *arg, tm_ws_conn *w) {
  (void)arg;
  ts_conn *c = tm_ws_conn_user(w);
  if (!c)
    return;
  tm_ws_conn_set_user(w, NULL);
  ts_conn_closed(c);
}

const tm_ws_handlers ts_ws_handlers = {
    .on_accept = ws_on_accept,
    .on_closed = ts_ws_on_closed,
};

void ts_conn_goaway_all(ts_mod *m) {
  ILIST_FOREACH_SAFE(&m->conns, n, nx) {
    ts_conn *c = ILIST_ENTRY(n, ts_conn, mlink);
    if (c->s)
      tm_session_goaway(c->s);
  }
}

void ts_conn_close_all(ts_mod *m) {
  /* A link may end (ts_conn_closed) inside close: the next one first. */
  ILIST_FOREACH_SAFE(&m->conns, n, nx) {
    ts_conn *c = ILIST_ENTRY(n, ts_conn, mlink);
    if (c->s)
      tm_session_close(c->s);
    else
      c->lo->close(c->link, 1001, "going away");
  }
}

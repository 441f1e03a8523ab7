/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_server internals, shared by its files:
 *   tunnel_server.c  the module: lifecycle, services, the listener, stop
 *   ts_conf.c        the keys, their check and the values read from them
 *   ts_conn.c        one WebSocket: authentication by bearer token, its
 *                    session, agent metadata, the registries (agents,
 *                    tokens, users) and the connection limits
 *   ts_cred.c        sessions bound to their credentials: re-checked when
 *                    the authorization revision moves, ended at expiry
 *   ts_open.c        one client stream: the open executor, authorization,
 *                    selection, the agent's open, the relay, its log line
 *   ts_relay.c       the relay between servers (issue 27): its listener,
 *                    the links to peers, the choice of a remote node
 * (TM-P0-23: the WebSocket side knows frame boundaries and connection
 * lifecycle only; the streams' orchestration is ts_open.c.)
 */
#ifndef TS_INT_H
#define TS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>
#include <proxyhost/module.h>

#include "lib/clocks.h"
#include "lib/ilist.h"
#include "open_exec.h"
#include "ts_gone.h"
#include "ts_opens.h"
#include "frontend/relay.h"
#include "lib/tls_reload.h"
#include "tunnel_common/session/tm_metrics.h"
#include "tunnel_common/session/tm_session.h"
#include "tunnel_common/session/tm_ws.h"

/* Bounds of keys that size arrays here. */
#define TS_AGENT_CONNS_MAX 64   /* agent.max_connections */
#define TS_NODE_ID_MAX 64
#define TS_REDACTED_LEN 16      /* "agent-" + 8 hex digits + NUL */

typedef struct ts_mod ts_mod;
typedef struct ts_conn ts_conn;
typedef struct ts_agent ts_agent;
typedef struct ts_tally ts_tally;
typedef struct ts_open ts_open;
typedef struct ts_mesh ts_mesh;
typedef struct ts_relay ts_relay;

/* The values read from the section (ts_conf.c). */
typedef struct ts_conf {
  char listen[130], path[130];
  char cert[1025], key[1025];
  int allow_plain, legacy_no_subprotocol;
  uint32_t max_connections;
  uint32_t max_auth_in_flight;
  unsigned caps;       /* open_result | flow_control from the switches */
  oexec_limits opens; /* the open executor's: stream.max_concurrent_opens,
                         max_pending_opens, and per principal and session */
  uint32_t max_per_connection, max_per_token, max_per_agent;
  uint32_t agent_max_connections;
  uint32_t max_conns_per_token, max_conns_per_user; /* client.* */
  uint32_t cred_check_ms; /* credential_check_interval */
  uint64_t mem_per_session, mem_per_principal; /* stream.memory_per_* */
  uint32_t open_timeout_ms;
  /* the session's limits, heartbeat and local_caps (fair_writer), read by
   * tm_conf_session; ts_session_cfg adds the rest per connection */
  tm_session_cfg session;
  uint32_t drain_ms;
  int64_t idle_timeout_ms;
  char node_id[TS_NODE_ID_MAX + 1];
  int log_names; /* log lines naming an agent by its hash add agent_name */
  /* presence (ts_mesh.c, issue 27): restart-only */
  int presence;
  char presence_zone[65], presence_relay[256];
  uint32_t presence_lease_ms;
  /* the relay between servers (ts_relay.c, issue 27): restart-only */
  int relay, relay_allow_plain;
  char relay_listen[130];
  /* mutual TLS between nodes: all three, or none (plain, loopback) */
  char relay_cert[1025], relay_key[1025], relay_ca[1025];
  char relay_td[256]; /* relay.trust_domain */
  uint32_t relay_links_per_peer;
} ts_conf;

/* The key table, generated from tunnel_server.ini.sample (ts_keys.c). */
extern const ph_conf_key ts_keys[];
/* The bounds the code relies on (fixed arrays, 32-bit fields, the
 * protocol's frame and window limits), held again whatever the sample
 * says: PH_OK, or PH_EINVAL with *key and why (ts_conf_held.c). */
int ts_conf_held(ph_ctx *ctx, const ph_api *api, const char **key, char *why,
                 size_t whylen);
/* The module's check: the keys' relations (ts_conf.c). */
int ts_check(ph_ctx *ctx, const ph_api *api, const char **key, char *why,
             size_t whylen);
/* Reads the section into c (after check passed). */
void ts_conf_read(ph_ctx *ctx, const ph_api *api, ts_conf *c);
/* The session configuration for a connection with negotiated caps. */
void ts_session_cfg(const ts_conf *c, int opener, unsigned caps,
                    tm_metrics *metrics, tm_session_cfg *out);

/* RELAY: a peer server's relay link into this node (ts_relay.c): it opens
 * streams like a client, authorized already by the node it came from. */
enum ts_conn_kind { TS_CONN_AUTH = 0, TS_CONN_CLIENT, TS_CONN_AGENT,
                    TS_CONN_RELAY };

/* What the server counts per stream token (keyed by its id) and per user
 * (by name, the tenant): connections and client streams, and for a user
 * the open executor's principal, so caps and turns are per tenant. */
struct ts_tally {
  char key[PH_AZ_NAME_MAX + 1];
  uint32_t streams; /* client streams alive under it */
  uint32_t conns;   /* connections holding it */
  uint64_t mem;     /* bytes its streams reserved (ts_open.c) */
  oexec_principal opens;
  ilist_node node; /* in ts_mod's tokens or users */
};

struct ts_agent {
  char name[PH_AZ_NAME_MAX + 1];
  ts_conn *conns; /* its connections (linked by agent_next) */
  uint32_t nconns;
  uint32_t rr;    /* rotates selection ties */
  int64_t mesh_session; /* its presence session nonce (ts_mesh.c) */
  ts_agent *next;
};

/* What a connection is carried by: tm_ws in the module, an in-memory
 * link in the unit test. */
typedef struct ts_link_ops {
  const tm_transport *(*transport)(void);
  /* Messages and writable events go to s from now on. */
  void (*bind)(void *link, tm_session *s);
  /* Start reading (paused since the accept). */
  void (*resume)(void *link);
  /* Close with a WebSocket status and a fixed reason; the link calls
   * ts_conn_closed once it is gone. */
  void (*close)(void *link, int status, const char *reason);
} ts_link_ops;

struct ts_conn {
  ts_mod *m;
  const ts_link_ops *lo;
  void *link;
  tm_session *s;
  int kind;          /* ts_conn_kind */
  unsigned caps;     /* negotiated by subprotocol */
  int64_t auth_call; /* > 0 while the store authenticates (at the
                        accept, or a re-check of a session) */
  char token_id[PH_AZ_ID_LEN + 1]; /* for logs: never the secret */
  /* The bearer the session was opened with, kept to re-check it (wiped
   * at free; never logged), and what its last check said. */
  char *bearer;
  size_t bearer_len;
  uint64_t auth_rev;  /* the revision its last check ran under */
  uint64_t check_rev; /* a re-check in flight: the revision it started at */
  int64_t expires_at; /* the token's, unix seconds; 0: never */
  char peer[64];
  int64_t since_ms;  /* accepted (mono_ms), for the status page */
  uint64_t seq;      /* the connection's number (status page's session) */
  ts_tally *token;   /* client: its token's */
  ts_tally *user;    /* client: its user's */
  ts_agent *agent;   /* agent */
  int ready;         /* agent: metadata arrived and is consistent */
  unsigned meta_caps;
  uint32_t capacity; /* agent: its weight in selection (agent_select.h:
                        the metadata's max_streams within the server's
                        stream.max_per_connection) */
  oexec_group group; /* client: its opens in the executor */
  uint64_t mem;      /* client: bytes its streams reserved (ts_open.c) */
  oexec_principal relay_opens; /* relay: its opens' principal */
  ilist_node mlink;      /* on m->conns */
  ts_conn *agent_next;   /* the agent's connections */
};

struct ts_mod {
  ph_ctx *ctx;
  ts_conf c;
  tm_metrics *metrics;
  tm_ws *ws;
  ph_tls_reload tls; /* tls.cert and tls.key re-read (issue 23 item 14) */
  const ph_az_store_v1 *store;
  void *store_self;
  const ph_access_v1 *access;
  void *access_self;
  oexec exec;
  int pumping;    /* inside ts_open_pump: no recursion */
  uint32_t nconns, auth_in_flight;
  ilist conns;
  ts_agent *agents;
  ilist tokens, users; /* ts_tally */
  ph_timer *cred_timer; /* ts_cred.c */
  uint32_t rechecks;    /* re-checks in flight */
  /* proxyhost_tunnel_server_connections_refused_total{reason} and
   * proxyhost_tunnel_server_credential_ends_total{role,reason} (ts_cred.c) */
  ph_series *m_refused[3];
  ph_series *m_cred_ended[2][3];
  /* proxyhost_tunnel_server_stream_memory_refused_total{bound} and
   * proxyhost_tunnel_server_stream_memory_reserved_bytes (ts_open.c;
   * registered with the others by ts_cred.c's table) */
  ph_series *m_mem_refused[2];
  ph_series *m_mem_reserved;
  uint64_t mem_reserved;
  ilist opens; /* every client stream, opening or relaying */
  int stopping;     /* 1: draining, 2: stopped */
  int stop_pending; /* stop returned PH_STOP_PENDING */
  ph_timer *drain_timer;
  uint64_t stream_seq; /* for log lines: a number, not the wire id */
  uint64_t conn_seq;   /* numbers the connections (ts_conn.seq) */
  ts_mesh *mesh;       /* presence (ts_mesh.c); NULL: off or stopped */
  ts_relay *relay;     /* the relay (ts_relay.c); NULL: off */
  ts_opens opens_win;  /* open results by minute (ts_status.c's opens) */
  ts_gone gone;        /* agents that left lately (ts_status.c's agents) */
};

/* ts_mesh.c: this node's presence in the store's tm.presence. start:
 * PH_OK (also when presence is off) or an error (no provider). stop:
 * the heartbeats end (the lease lapses). session: a new agent session
 * nonce. agent: a's connection count changed (0: its last closed). */
int ts_mesh_start(ts_mod *m);
void ts_mesh_stop(ts_mod *m);
int64_t ts_mesh_session(ts_mod *m);
void ts_mesh_agent(ts_mod *m, const ts_agent *a);
/* The presence view in memory (no I/O), for the status page: PH_OK with
 * *v filled; PH_ENOENT with presence off (or stopped); PH_ESTATE when the
 * store has not read it yet or its last good read is stale (*v is then
 * not vouched for: not shown). */
struct tm_presence_view;
int ts_mesh_view(ts_mod *m, struct tm_presence_view *v);

/* ts_relay.c: the relay between servers (issue 27). start: PH_OK (also
 * when relay is off) or an error (no presence, the listener failed).
 * stop: no new link, GOAWAY on the links out. free: every link closed
 * (destroy). */
int ts_relay_init(ts_mod *m); /* init: its metrics */
int ts_relay_start(ts_mod *m);
/* SIGHUP: relay.tls.* re-read (links up keep theirs); PH_OK or
 * PH_ENOMEM (the file poll). */
int ts_relay_reload(ts_mod *m);
void ts_relay_stop(ts_mod *m);
void ts_relay_free(ts_mod *m);
/* An open waiting for a relay link to a peer: ready runs once, from the
 * loop, with the link's session, or NULL when the link failed. */
typedef struct ts_relay_wait {
  ilist_node link;
  void (*ready)(struct ts_relay_wait *w, tm_session *s);
} ts_relay_wait;
/* The remote candidate for agent (TM-P2-29..32), from the presence view
 * in memory (never a query, TM-P2-33): a live node other than this one
 * holding the agent, this node's zone first. 1: *s is a link's session
 * that can open now; 0: w waits for a link being opened; -1: no node
 * holds the agent (or the relay is off, the view stale, the dial
 * refused); -2: every link to that node is at its stream limit. */
int ts_relay_route(ts_mod *m, const char *agent, ts_relay_wait *w,
                   tm_session **s);
/* w no longer waits (its open went away). */
void ts_relay_unwait(ts_relay_wait *w);
/* A peer relayed a stream here; carried: its open named the client's
 * principal (proxyhost_tunnel_server_relayed_opens_total{principal}). */
void ts_relay_count_open(ts_mod *m, int carried);

extern const ph_api *ts_api;
/* The state of the instance initialised last (for the unit test, which
 * links the module's sources; the .so exports only proxyhost_module). */
extern ts_mod *ts_last_mod;

/* tunnel_server.c: a connection ended; the stop finishes once none is
 * left. */
void ts_stop_check(ts_mod *m);

/* ts_conn.c */
/* The agent's name as logs show it: a stable hash, never the name. */
void ts_redact_agent(const char *name, char out[TS_REDACTED_LEN]);
/* The field that follows an agent's hash in a log line: agent_name=<name>
 * with log_names on, else nothing (the host skips a NULL key). */
#define TS_AGENT_NAME(m, name)                                              \
  PH_STR((m)->c.log_names && (name) && *(name) ? "agent_name" : NULL,       \
         (name))
/* Takes t out of list and frees it once no connection and no stream
 * holds it (NULL: nothing). */
void ts_tally_release(ilist *list, ts_tally *t);
extern const tm_ws_handlers ts_ws_handlers;
/* The link ops over tm_ws, and the session ops of a connection that opens
 * streams (a client, a peer's relay link). */
extern const ts_link_ops ts_ws_link;
/* tm_ws's on_closed of a connection whose user is its ts_conn. */
void ts_ws_on_closed(void *arg, tm_ws_conn *w);
extern const tm_session_ops ts_client_ops;
/* The agent of that name, if any connection of it is registered. */
ts_agent *ts_agent_find(ts_mod *m, const char *name);
/* A connection was accepted with this bearer (len bytes) and chosen
 * subprotocol (NULL: none): authentication starts, reading stays paused.
 * NULL: refused (stopping, max_connections, no memory): close it. */
ts_conn *ts_conn_accept(ts_mod *m, const ts_link_ops *lo, void *link,
                        const char *bearer, size_t len, const char *subproto,
                        const char *peer);
/* The link is gone: c is freed. */
void ts_conn_closed(ts_conn *c);
/* GOAWAY to every session (stop). */
void ts_conn_goaway_all(ts_mod *m);
/* Close every connection now (the end of the drain, destroy). */
void ts_conn_close_all(ts_mod *m);

/* Why a connection was refused after authentication (the
 * tunnelmesh_server_connections_refused_total label). */
enum ts_refusal { TS_REF_TOKEN = 0, TS_REF_USER, TS_REF_AGENT };
void ts_count_refusal(ts_mod *m, int refusal);
/* The store's answer to authenticate: the accept's, or a re-check's. */
void ts_conn_on_auth(void *arg, const ph_az_auth_result *res);

/* ts_cred.c */
/* Init: the module's metric table (the credential watch's and the
 * memory budget's metrics) and the credential watch's timer. PH_OK,
 * PH_EINVAL or PH_ENOMEM. */
int ts_cred_init(ts_mod *m);
/* Start and reload: (re)arms the tick at credential_check_interval. */
void ts_cred_start(ts_mod *m);
void ts_cred_free(ts_mod *m);
/* The store's answer to a running session's re-check. */
void ts_cred_on_recheck(ts_conn *c, const ph_az_auth_result *res);
/* Ends a running session whose credentials are no longer valid: audited,
 * counted, closed with 4403 (its streams reset, its slots freed). */
void ts_cred_end(ts_conn *c, const char *why);

/* ts_open.c */
/* The client session's on_open / on_abandon. */
void ts_open_on_open(ts_conn *cc, tm_stream *st, const tm_open_stream *req);
void ts_open_on_abandon(ts_conn *cc, tm_stream *st);
/* The client session closed: drop what its streams still hold. */
void ts_open_conn_gone(ts_conn *cc);
/* Start what the executor allows now. */
void ts_open_pump(ts_mod *m);
/* Stop: abort the relays that are left. */
void ts_open_abort_all(ts_mod *m);
uint32_t ts_open_relays(const ts_mod *m);

/* ts_status.c: the status page's panels (issue 28): agents, sessions,
 * opens. Init: registered when the host has ABI 1.7 (PH_OK otherwise). */
int ts_status_init(ts_mod *m);

#endif

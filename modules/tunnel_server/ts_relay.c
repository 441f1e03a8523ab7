/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The relay between tunnel servers (issue 27, seed 001 "跨节点 Relay";
 * TM-P2-29..33, TM-PROTO-2, -20): a WebSocket from node to node speaking
 * the tunnel protocol, so OPEN_RESULT, per-stream windows and the fair
 * writer hold on every hop.
 *
 * Ingress (this node has the client, another the agent): a link to the
 * peer plays the agent connection's part. ts_open.c finds no local
 * connection of the agent and asks ts_relay_route, which reads the
 * presence view in memory (never the database on a stream's path,
 * TM-P2-33): a live node other than this one holding the agent, this
 * node's zone first (TM-P2-30..32). The stream is opened on a link to
 * that node (the one with the fewest streams; a new one, up to
 * relay.links_per_peer, when none can take it), and the OPEN_STREAM
 * names the agent. Links are opened on demand and kept warm; the
 * session's heartbeat finds a dead peer, and its end fails only the
 * streams that went through it. A node whose link failed or ended is
 * marked down for presence.lease: another node holding the agent goes
 * first meanwhile, and ts_open.c routes a failed open again (TM-FAIL-9).
 *
 * Holding node: the relay listener (relay.listen, path /relay) accepts a
 * link from a node that presence says is alive (the link names its node
 * in the Authorization header); the link is a session whose streams are
 * opened like a client's, authorized already by the ingress node, and
 * only towards an agent connected HERE (ts_open.c never relays a relayed
 * stream on: no loops). The agent's open, install before OPEN_RESULT(ok)
 * (TM-P0-18) and the splice are the client path's. A link negotiates
 * stream_principal.v1 besides the server's capabilities: the OPEN_STREAM
 * then carries the client's token id from the ingress node, which the
 * holding node logs as the stream's principal (authorizing nothing by
 * it) and counts (relayed_opens_total{principal}); from an older node it
 * logs principal=relay.
 *
 * Identity: mutual TLS (relay.tls.*). Each node's certificate, signed by
 * relay.tls.ca, carries the URI SAN spiffe://<relay.trust_domain>/
 * tunnelmesh/node/<node_id> (tm_ws_conn_peer_uri: exactly one such URI).
 * The dialing node checks that the node answering is the one presence
 * named; the accepting one that the dialer's certificate verifies (lws
 * asks for it; tm_ws_server.c keeps OpenSSL's verdict), names the node
 * the link claims, and that node is alive in presence. Without
 * relay.tls.*, plain ws on loopback only with relay.allow_plain (tests):
 * the node a link names is then not proven.
 *
 * Two tm_ws contexts: the listener's (links in) and a client one (links
 * out), so each connection's user pointer has one type.
 *
 * Renewal: relay.tls.* are re-read on SIGHUP (ts_relay_reload) and, with
 * tls.reload_check_interval, when one of the files changed; both
 * contexts take the new pair (tm_ws_reload_tls), links already up keep
 * running, a pair that does not load or match is refused, logged
 * ("relay TLS certificate not reloaded") and counted in
 * proxyhost_tls_reloads_total{module="tunnel_server",result="error"}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contracts/tm_presence.h"
#include "lib/metric_table.h"
#include "ts_int.h"

#define RL_PATH "/relay"
#define RL_PEERS_MAX 256 /* peers with a link or a waiter at once */
#define RL_RTT_EVERY_MS 5000

typedef struct rl_peer rl_peer;

/* A link out, to a peer: connecting (its opens wait), open (a session),
 * or done (refused, or its session ended: waiting for tm_ws to forget
 * it; never waited on). */
enum { RL_CONNECTING = 0, RL_OPEN, RL_DONE };
typedef struct rl_link {
  rl_peer *p;
  tm_ws_conn *c;
  int state;
  tm_session *s;   /* while open, until its session ends */
  ilist_node link; /* on p->links */
} rl_link;

struct rl_peer {
  char node[TM_PRESENCE_ID_MAX + 1];
  ilist links;
  uint32_t nlinks;
  ilist waiters;   /* ts_relay_wait */
  ilist_node link; /* on r->peers */
  /* A link to it failed or ended: chosen after any other node holding
   * the agent until then (mono ms; presence.lease after the failure,
   * within which presence drops a dead node) */
  uint64_t down_until;
};

struct ts_relay {
  ts_mod *m;
  tm_ws *srv, *cli;
  const tm_presence_v1 *tp;
  void *tp_self;
  ilist peers;
  uint32_t npeers;
  int stopping;
  int tls;          /* mutual TLS between nodes (relay.tls.*) */
  char prefix[300]; /* spiffe://<trust domain>/tunnelmesh/node/ */
  ph_timer *rtt_timer;
  /* proxyhost_tunnel_server_relay_links{state} and
   * proxyhost_tunnel_server_relay_rtt_seconds */
  ph_series *m_links[2];
  ph_series *m_rtt;
  /* proxyhost_tunnel_server_relayed_opens_total{principal} */
  ph_series *m_relayed[2];
  int64_t n_links[2]; /* connecting, open */
  /* relay.tls.* re-read on SIGHUP or tls.reload_check_interval */
  ph_tls_reload tls_reload;
};

static const char *const link_states[] = {"connecting", "open", NULL};
static const ph_label_def link_labels[] = {{"state", link_states}};
static const char *const principal_states[] = {"carried", "absent", NULL};
static const ph_label_def relayed_labels[] = {{"principal", principal_states}};
/* Seconds: 100 µs (loopback) to 10 s (a peer far away or stalled). */
static const double rtt_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                     0.005,  0.01,    0.025,  0.05,  0.1,
                                     0.25,   0.5,     1,      2.5,   10};
static const ph_metric_table rl_metrics[] = {
    PH_METRIC("proxyhost_tunnel_server_relay_links", PH_METRIC_GAUGE,
              "Relay links to other nodes, by state (connecting, open)",
              PH_METRIC_LABELS(link_labels), PH_METRIC_NO_BUCKETS, ts_relay,
              m_links),
    PH_METRIC("proxyhost_tunnel_server_relay_rtt_seconds", PH_METRIC_HISTOGRAM,
              "Heartbeat round trip of the open relay links, sampled every "
              "5 s",
              PH_METRIC_NO_LABELS, PH_METRIC_BUCKETS(rtt_buckets), ts_relay,
              m_rtt),
    PH_METRIC("proxyhost_tunnel_server_relayed_opens_total",
              PH_METRIC_COUNTER,
              "Streams a peer node relayed here, by whether the open carried "
              "the client's principal (stream_principal.v1)",
              PH_METRIC_LABELS(relayed_labels), PH_METRIC_NO_BUCKETS, ts_relay,
              m_relayed),
    PH_METRIC_END};

/* What a relay link negotiates: the server's capabilities, and the
 * principal field with the trace it follows (tm_proto.h). */
static unsigned link_caps(const ts_mod *m) {
  return m->c.caps | (m->c.caps & TM_CAP_TRACE ? TM_CAP_PRINCIPAL : 0u);
}

void ts_relay_count_open(ts_mod *m, int carried) {
  ts_relay *r = m->relay;
  if (r && r->m_relayed[carried ? 0 : 1])
    ts_api->inc(r->m_relayed[carried ? 0 : 1], 1);
}

static void count_link(ts_relay *r, int state, int delta) {
  r->n_links[state] += delta;
  if (r->m_links[state])
    ts_api->gauge_set(r->m_links[state], (double)r->n_links[state]);
}

/* ---- peers --------------------------------------------------------------- */

static rl_peer *peer_find(ts_relay *r, const char *node) {
  ILIST_FOREACH_SAFE(&r->peers, n, nx) {
    rl_peer *p = ILIST_ENTRY(n, rl_peer, link);
    if (strcmp(p->node, node) == 0)
      return p;
  }
  return NULL;
}

static rl_peer *peer_get(ts_relay *r, const char *node) {
  rl_peer *p = peer_find(r, node);
  if (p || r->npeers >= RL_PEERS_MAX)
    return p;
  p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  snprintf(p->node, sizeof(p->node), "%s", node);
  ilist_init(&p->links);
  ilist_init(&p->waiters);
  ilist_push_front(&r->peers, &p->link);
  r->npeers++;
  return p;
}

static uint64_t now_ms(void) { return mono_us() / 1000; }

static void peer_maybe_free(ts_relay *r, rl_peer *p) {
  if (p->nlinks || !ilist_empty(&p->waiters) || p->down_until > now_ms())
    return;
  ilist_remove(&p->link);
  r->npeers--;
  free(p);
}

/* The waiters of p get s (NULL: failed), each once (those there now:
 * a ready callback never routes again from here, ts_open.c retries from
 * the loop). */
static void wake(rl_peer *p, tm_session *s) {
  ilist now;
  ilist_init(&now);
  ilist_node *n;
  while ((n = ilist_first(&p->waiters)))
    ilist_push(&now, n);
  while ((n = ilist_first(&now))) {
    ts_relay_wait *w = ILIST_ENTRY(n, ts_relay_wait, link);
    ilist_remove(&w->link);
    w->ready(w, s && tm_session_can_open(s) ? s : NULL);
  }
}

static void mark_down(ts_relay *r, rl_peer *p) {
  p->down_until = now_ms() + r->m->c.presence_lease_ms;
}

static int connecting(rl_peer *p) {
  ILIST_FOREACH_SAFE(&p->links, n, nx) {
    if (ILIST_ENTRY(n, rl_link, link)->state == RL_CONNECTING)
      return 1;
  }
  return 0;
}

/* ---- links out ----------------------------------------------------------- */

/* l is gone: the opens waiting on p fail unless another link of p is
 * still connecting. */
static void link_free(ts_relay *r, rl_link *l) {
  rl_peer *p = l->p;
  if (!r->stopping)
    mark_down(r, p);
  ilist_remove(&l->link);
  p->nlinks--;
  free(l);
  if (!connecting(p))
    wake(p, NULL);
  peer_maybe_free(r, p);
}

static void out_sess_close(void *arg, int reason) {
  rl_link *l = arg;
  (void)reason;
  l->s = NULL; /* its streams were reset: their opens answered */
  l->state = RL_DONE;
}

static const tm_session_ops out_ops = {
    .on_close = out_sess_close,
};

static void out_connected(void *arg, tm_ws_conn *c, const char *subproto) {
  ts_relay *r = arg;
  rl_link *l = tm_ws_conn_user(c);
  if (!l)
    return;
  ts_mod *m = r->m;
  count_link(r, 0, -1);
  count_link(r, 1, 1); /* out_closed counts it down */
  l->state = RL_DONE;  /* until its session is up */
  char id[TM_PRESENCE_ID_MAX + 1];
  if (r->tls && (tm_ws_conn_peer_uri(c, r->prefix, id, sizeof(id)) != 0 ||
                 strcmp(id, l->p->node) != 0)) {
    /* The certificate verified (the CA) but is not the node presence
     * named: never used. */
    PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN,
              "relay link refused: the peer's certificate is not the node's",
              PH_STR("node", m->c.node_id), PH_STR("peer_node", l->p->node));
    tm_ws_conn_close(c, 1008, "wrong node");
    mark_down(r, l->p);
    if (!connecting(l->p))
      wake(l->p, NULL);
    return;
  }
  int caps = tm_subproto_caps(subproto);
  tm_session_cfg cfg;
  ts_session_cfg(&m->c, 1, caps > 0 ? ((unsigned)caps & link_caps(m)) : 0,
                 m->metrics, &cfg);
  l->s =
      tm_session_new(ts_api, m->ctx, &cfg, tm_ws_transport(), c, &out_ops, l);
  if (!l->s) {
    tm_ws_conn_close(c, 1011, "internal error");
    if (!connecting(l->p))
      wake(l->p, NULL);
    return;
  }
  l->state = RL_OPEN;
  tm_ws_conn_bind(c, l->s);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "relay link up",
         PH_STR("node", m->c.node_id), PH_STR("peer_node", l->p->node),
         PH_INT("strict", caps > 0 && ((unsigned)caps & TM_CAP_OPEN_RESULT)),
         PH_INT("with_principal",
                caps > 0 && ((unsigned)caps & link_caps(m) & TM_CAP_PRINCIPAL)));
  wake(l->p, l->s);
}

static void out_connect_error(void *arg, tm_ws_conn *c) {
  ts_relay *r = arg;
  rl_link *l = tm_ws_conn_user(c);
  tm_ws_conn_set_user(c, NULL);
  if (!l)
    return;
  count_link(r, 0, -1);
  PH_LOG_RL(ts_api, r->m->ctx, PH_LOG_WARN, "relay link failed to connect",
            PH_STR("node", r->m->c.node_id), PH_STR("peer_node", l->p->node));
  l->c = NULL;
  link_free(r, l);
}

static void out_closed(void *arg, tm_ws_conn *c) {
  ts_relay *r = arg;
  rl_link *l = tm_ws_conn_user(c);
  tm_ws_conn_set_user(c, NULL);
  if (!l)
    return;
  count_link(r, 1, -1);
  PH_LOG(ts_api, r->m->ctx, PH_LOG_INFO, "relay link closed",
         PH_STR("node", r->m->c.node_id), PH_STR("peer_node", l->p->node));
  l->c = NULL;
  l->s = NULL;
  link_free(r, l);
}

static const tm_ws_handlers out_handlers = {
    .on_connected = out_connected,
    .on_connect_error = out_connect_error,
    .on_closed = out_closed,
};

/* Opens one more link to p at addr (host:port). 0, or -1. */
static int dial(ts_relay *r, rl_peer *p, const char *addr) {
  char url[TM_PRESENCE_RELAY_MAX + 32];
  int n = snprintf(url, sizeof(url), "%s://%s%s", r->tls ? "wss" : "ws", addr,
                   RL_PATH);
  if (n < 0 || (size_t)n >= sizeof(url))
    return -1;
  rl_link *l = calloc(1, sizeof(*l));
  if (!l)
    return -1;
  const char *err = NULL;
  /* The link names this node (the peer checks it against presence). */
  l->c = tm_ws_connect(r->cli, url, r->m->c.node_id, &err);
  if (!l->c) {
    PH_LOG_RL(ts_api, r->m->ctx, PH_LOG_WARN, "relay link not dialed",
              PH_STR("peer_node", p->node),
              PH_STR("reason", err ? err : "unknown"));
    free(l);
    return -1;
  }
  l->p = p;
  tm_ws_conn_set_user(l->c, l);
  ilist_push(&p->links, &l->link);
  p->nlinks++;
  count_link(r, 0, 1);
  return 0;
}

/* ---- the choice ---------------------------------------------------------- */

/* The node of the view holding agent, in order: this node's zone before
 * the others, and within each a node not marked down (a link to it
 * failed) before one that is, the one marked longest ago first; then the
 * view's order (by node id). NULL: none. */
static const tm_presence_node *holder(ts_relay *r, const tm_presence_view *v,
                                      const char *agent) {
  const ts_mod *m = r->m;
  const tm_presence_node *best = NULL;
  int best_rank = 4;
  uint64_t now = now_ms(), best_down = 0;
  for (size_t i = 0; i < v->n_nodes; i++) {
    const tm_presence_node *nd = &v->nodes[i];
    if (strcmp(nd->node_id, m->c.node_id) == 0 || !nd->relay_addr[0])
      continue;
    int has = 0;
    for (size_t k = 0; k < nd->n_agents && nd->first + k < v->n_agents; k++) {
      const tm_presence_agent *a = &v->agents[nd->first + k];
      if (a->connections && strcmp(a->agent_id, agent) == 0) {
        has = 1;
        break;
      }
    }
    if (!has)
      continue;
    const rl_peer *p = peer_find(r, nd->node_id);
    uint64_t down = p && p->down_until > now ? p->down_until : 0;
    int rank = (strcmp(nd->zone, m->c.presence_zone) != 0) * 2 + !!down;
    /* Among nodes marked down, the one that failed longest ago. */
    if (rank < best_rank || (rank == best_rank && down < best_down)) {
      best = nd;
      best_rank = rank;
      best_down = down;
    }
  }
  return best;
}

int ts_relay_route(ts_mod *m, const char *agent, ts_relay_wait *w,
                   tm_session **s) {
  ts_relay *r = m->relay;
  if (!r || r->stopping)
    return -1;
  tm_presence_view v;
  if (r->tp->view(r->tp_self, &v) != PH_OK)
    return -1; /* not vouched for: fail closed (agent_offline) */
  const tm_presence_node *nd = holder(r, &v, agent);
  if (!nd)
    return -1;
  rl_peer *p = peer_get(r, nd->node_id);
  if (!p)
    return -1;
  tm_session *best = NULL;
  uint32_t bs = 0;
  ILIST_FOREACH_SAFE(&p->links, n, nx) {
    rl_link *l = ILIST_ENTRY(n, rl_link, link);
    if (!l->s || !tm_session_can_open(l->s))
      continue;
    uint32_t st = tm_session_streams(l->s);
    if (!best || st < bs) {
      best = l->s;
      bs = st;
    }
  }
  if (best) {
    *s = best;
    return 1;
  }
  if (!connecting(p)) {
    int full = p->nlinks >= m->c.relay_links_per_peer;
    if (full || dial(r, p, nd->relay_addr)) {
      peer_maybe_free(r, p);
      return full ? -2 : -1;
    }
  }
  ilist_push(&p->waiters, &w->link);
  return 0;
}

void ts_relay_unwait(ts_relay_wait *w) {
  if (ilist_of(&w->link))
    ilist_remove(&w->link);
}

/* ---- links in ------------------------------------------------------------ */

/* Whether node is alive in presence and not this one. */
static int known_peer(ts_relay *r, const char *node) {
  tm_presence_view v;
  if (r->tp->view(r->tp_self, &v) != PH_OK)
    return 0;
  if (strcmp(node, r->m->c.node_id) == 0)
    return 0;
  for (size_t i = 0; i < v.n_nodes; i++)
    if (strcmp(v.nodes[i].node_id, node) == 0)
      return 1;
  return 0;
}

static int in_accept(void *arg, tm_ws_conn *w, const char *bearer, size_t len,
                     const char *subproto, const char *peer) {
  ts_relay *r = arg;
  ts_mod *m = r->m;
  char node[TM_PRESENCE_ID_MAX + 1] = "";
  if (bearer && len && len <= TM_PRESENCE_ID_MAX) {
    memcpy(node, bearer, len);
    node[len] = '\0';
  }
  char id[TM_PRESENCE_ID_MAX + 1] = "";
  /* With TLS the node is its certificate's (verified against
   * relay.tls.ca), and must be the one the link names. */
  int id_ok =
      !r->tls || (tm_ws_conn_peer_uri(w, r->prefix, id, sizeof(id)) == 0 &&
                  strcmp(id, node) == 0);
  const char *why = r->stopping || m->stopping          ? "stopping"
                    : m->nconns >= m->c.max_connections ? "max_connections"
                    : !node[0] || strlen(node) != len   ? "no_node"
                    : !id_ok                            ? "identity"
                    : !known_peer(r, node)              ? "unknown_node"
                                                        : NULL;
  if (why) {
    /* identity: no certificate of a node, or one naming another node
     * than the link; unknown_node: not a live node of presence. */
    PH_LOG_RL(ts_api, m->ctx, PH_LOG_WARN, "relay link refused",
              PH_STR("node", m->c.node_id), PH_STR("reason", why),
              PH_STR("peer", peer ? peer : "-"));
    return -1;
  }
  ts_conn *c = calloc(1, sizeof(*c));
  if (!c)
    return -1;
  c->m = m;
  c->lo = &ts_ws_link;
  c->link = w;
  c->kind = TS_CONN_RELAY;
  int caps = tm_subproto_caps(subproto);
  c->caps = caps > 0 ? ((unsigned)caps & link_caps(m)) : 0;
  snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "-");
  snprintf(c->token_id, sizeof(c->token_id), "relay");
  oexec_principal_init(&c->relay_opens);
  oexec_group_init(&c->group, &c->relay_opens);
  tm_session_cfg cfg;
  ts_session_cfg(&m->c, 0, c->caps, m->metrics, &cfg);
  c->s = tm_session_new(ts_api, m->ctx, &cfg, tm_ws_transport(), w,
                        &ts_client_ops, c);
  if (!c->s) {
    free(c);
    return -1;
  }
  ilist_push_front(&m->conns, &c->mlink);
  m->nconns++;
  tm_ws_conn_set_user(w, c);
  tm_ws_conn_bind(w, c->s);
  tm_ws_conn_resume(w);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "relay link accepted",
         PH_STR("node", m->c.node_id), PH_STR("peer_node", node),
         PH_INT("strict", !!(c->caps & TM_CAP_OPEN_RESULT)),
         PH_INT("with_principal", !!(c->caps & TM_CAP_PRINCIPAL)),
         PH_STR("peer", c->peer));
  return 0;
}

static const tm_ws_handlers in_handlers = {
    .on_accept = in_accept,
    .on_closed = ts_ws_on_closed,
};

/* ---- lifecycle ----------------------------------------------------------- */

static void rtt_tick(ph_timer *t, void *arg) {
  (void)t;
  ts_relay *r = arg;
  ILIST_FOREACH_SAFE(&r->peers, n, nx) {
    rl_peer *p = ILIST_ENTRY(n, rl_peer, link);
    ILIST_FOREACH_SAFE(&p->links, ln, lnx) {
      rl_link *l = ILIST_ENTRY(ln, rl_link, link);
      uint64_t us = l->s ? tm_session_rtt_us(l->s) : 0;
      if (us && r->m_rtt)
        ts_api->observe(r->m_rtt, (double)us / 1e6);
    }
  }
}

int ts_relay_init(ts_mod *m) {
  if (!m->c.relay)
    return PH_OK;
  ts_relay *r = calloc(1, sizeof(*r));
  if (!r)
    return PH_ENOMEM;
  r->m = m;
  ilist_init(&r->peers);
  m->relay = r;
  if (ph_metric_table_register(ts_api, m->ctx, rl_metrics, r) != PH_OK)
    return PH_EINVAL;
  /* proxyhost_tls_reloads_total{module="tunnel_server"}: the listener's
   * series, shared */
  return ph_tls_reload_init(&r->tls_reload, ts_api, m->ctx, "tunnel_server",
                            "relay TLS certificate");
}

/* ---- relay.tls.* re-read ------------------------------------------------- */

/* The node's certificate and key (and the CA) anew: new links in get the
 * new certificate, new links out present it; established links keep
 * what they negotiated. Every file is checked before either context
 * changes; the listener's first (a pair refused there leaves both as they
 * were). */
static void tls_reload(void *arg, const char *trigger) {
  ts_relay *r = arg;
  const char *err = NULL;
  if (!r->tls || !r->srv || !r->cli)
    return;
  int rc = tm_ws_reload_tls(r->srv, &err);
  if (rc == 0)
    rc = tm_ws_reload_tls(r->cli, &err);
  if (rc != 0)
    /* tm_ws names the listener's keys; these are the relay's */
    err = "relay.tls.cert, relay.tls.key or relay.tls.ca does not load, "
          "or the key does not match the certificate";
  ph_tls_reload_done(&r->tls_reload, rc, trigger, err);
}

static int tls_watch(ts_relay *r) {
  const ts_mod *m = r->m;
  const char *files[PH_TLS_WATCH_FILES] = {r->tls ? m->c.relay_cert : NULL,
                                           r->tls ? m->c.relay_key : NULL,
                                           r->tls ? m->c.relay_ca : NULL};
  return ph_tls_watch_key(&r->tls_reload, files, tls_reload, r);
}

int ts_relay_reload(ts_mod *m) {
  ts_relay *r = m->relay;
  if (!r || !r->srv)
    return PH_OK;
  tls_reload(r, "sighup");
  return tls_watch(r);
}

int ts_relay_start(ts_mod *m) {
  ts_relay *r = m->relay;
  if (!r)
    return PH_OK;
  const char *store = ts_api->conf_str(m->ctx, "store");
  r->tp = ts_api->service_get_named(m->ctx, TM_PRESENCE_SERVICE, store,
                                    TM_PRESENCE_MAJOR, 0, &r->tp_self);
  if (!r->tp) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR,
           "relay = true needs a store providing tm.presence (store_pg)",
           PH_STR("store", store));
    return PH_ENOENT;
  }
  r->tls = m->c.relay_cert[0] != '\0';
  snprintf(r->prefix, sizeof(r->prefix), "spiffe://%s/tunnelmesh/node/",
           m->c.relay_td);
  const char *cert = r->tls ? m->c.relay_cert : NULL;
  const char *key = r->tls ? m->c.relay_key : NULL;
  const char *ca = r->tls ? m->c.relay_ca : NULL;
  tm_ws_cfg in = {
      .listen = m->c.relay_listen,
      .cert_file = cert,
      .key_file = key,
      .ca_file = ca,
      .require_client_cert = r->tls,
      .allow_plain = m->c.relay_allow_plain,
      .caps = link_caps(m),
      .max_message = TM_HEADER_LEN + TM_MAX_PAYLOAD,
      .path = RL_PATH,
      .max_connections = m->c.max_connections,
  };
  tm_ws_cfg out = {
      .listen = NULL,
      .ca_file = ca,
      .client_cert_file = cert,
      .client_key_file = key,
      .allow_plain = m->c.relay_allow_plain,
      .caps = link_caps(m),
      .max_message = TM_HEADER_LEN + TM_MAX_PAYLOAD,
      /* a link that does not come up within the open timeout fails the
       * opens waiting for it (whole seconds, at least 1 s) */
      .handshake_timeout_ms =
          m->c.open_timeout_ms < 1000 ? 1000 : m->c.open_timeout_ms,
  };
  const char *err = NULL;
  r->srv = tm_ws_new(ts_api, m->ctx, &in, &in_handlers, r, &err);
  if (r->srv)
    r->cli = tm_ws_new(ts_api, m->ctx, &out, &out_handlers, r, &err);
  if (!r->srv || !r->cli) {
    PH_LOG(ts_api, m->ctx, PH_LOG_ERROR, "relay listener failed",
           PH_STR("listen", m->c.relay_listen),
           PH_STR("reason", err ? err : "unknown"));
    return PH_EINVAL;
  }
  r->rtt_timer = ts_api->timer_new(m->ctx, rtt_tick, r);
  if (!r->rtt_timer || tls_watch(r) != PH_OK)
    return PH_ENOMEM;
  ts_api->timer_set(r->rtt_timer, RL_RTT_EVERY_MS, RL_RTT_EVERY_MS);
  PH_LOG(ts_api, m->ctx, PH_LOG_INFO, "relay listening",
         PH_STR("node", m->c.node_id), PH_STR("listen", m->c.relay_listen),
         PH_INT("port", tm_ws_port(r->srv)),
         PH_STR("scheme", r->tls ? "wss" : "ws"));
  return PH_OK;
}

void ts_relay_stop(ts_mod *m) {
  ts_relay *r = m->relay;
  if (!r)
    return;
  r->stopping = 1;
  ILIST_FOREACH_SAFE(&r->peers, n, nx) {
    rl_peer *p = ILIST_ENTRY(n, rl_peer, link);
    ILIST_FOREACH_SAFE(&p->links, ln, lnx) {
      rl_link *l = ILIST_ENTRY(ln, rl_link, link);
      if (l->s)
        tm_session_goaway(l->s);
    }
  }
}

void ts_relay_free(ts_mod *m) {
  ts_relay *r = m->relay;
  if (!r)
    return;
  r->stopping = 1;
  ph_tls_reload_free(&r->tls_reload);
  if (r->rtt_timer)
    ts_api->timer_free(r->rtt_timer);
  /* Every link's on_closed / on_connect_error runs: the waiters fail. */
  if (r->cli)
    tm_ws_free(r->cli);
  if (r->srv)
    tm_ws_free(r->srv);
  ILIST_FOREACH_SAFE(&r->peers, n, nx) {
    rl_peer *p = ILIST_ENTRY(n, rl_peer, link);
    wake(p, NULL);
    ilist_remove(&p->link);
    free(p);
  }
  m->relay = NULL;
  free(r);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* "tm.presence" (issue 27, TM-P2-29, TM-P2-33): TunnelMesh presence on the
 * database the tunnel servers share: which server nodes are alive (their
 * zone, relay address and lease) and which agent is connected to which
 * node. The first brick of a mesh of several servers: the relay and the
 * selection read the view this service keeps, never the database on a
 * stream's path (TM-P2-33).
 *
 * Provided by store_pg (pg_presence.c) on the tables of schema v11
 * (migrations/README.md). store_sqlite does NOT provide it: SQLite is the
 * one-node embedded store, with relay off, and a one-node server needs no
 * shared presence (its own agents are in its memory). A caller tells the
 * two apart by the service lookup: no "tm.presence" provider means
 * "single node", not an error.
 *
 * Writes are bounded (issue 27): a node's heartbeat is ONE statement per
 * interval whatever its number of agents (agent rows have no expiry of
 * their own: they live as long as their node's lease), an agent
 * connecting, changing its connection count or leaving is one statement,
 * never one per stream. Leases are in the database's clock, so servers
 * with skewed clocks agree on a lapsed lease.
 *
 * Nonces: a node's instance_nonce is new at every start of its process
 * and increasing across starts (e.g. the start's wall-clock
 * microseconds): a heartbeat with a newer nonce takes the node over (the
 * previous instance's agent rows are dropped in the same statement), one
 * with an older nonce changes nothing (TM_PRESENCE_SUPERSEDED). An agent
 * session's session_nonce is increasing across the sessions of one agent
 * on one node: a "connected" update with an older nonce than the row's,
 * or a "left" with another nonce than the row's, changes nothing
 * (TM_PRESENCE_STALE), so a late update from an old session cannot
 * overwrite a new one.
 *
 * Reconciling (1.1): a write that failed (a "left" above all: its row
 * would stay as long as the node renews its lease) is made good by
 * agents_sync, one statement naming the agents still connected: the
 * node's other rows of sessions older than a bound are deleted.
 *
 * Thread: the loop thread only, as every store call. Calls never block:
 * the writes answer through cb on a later loop turn (never inside the
 * call), exactly once unless cancelled; view() answers from memory.
 * Ownership: strings passed in are copied before the call returns; the
 * strings of a view belong to the store, valid until the caller returns
 * to the loop. */
#ifndef PH_TM_PRESENCE_H
#define PH_TM_PRESENCE_H

#include <stddef.h>
#include <stdint.h>

#define TM_PRESENCE_SERVICE "tm.presence"
#define TM_PRESENCE_MAJOR 1
#define TM_PRESENCE_MINOR 1

/* Bounds (the schema's CHECKs say the same). */
#define TM_PRESENCE_ID_MAX 128   /* node_id, agent_id: 1..128 bytes */
#define TM_PRESENCE_ZONE_MAX 64  /* zone: 0..64 bytes */
#define TM_PRESENCE_RELAY_MAX 255 /* relay_addr: 0..255 bytes */
#define TM_PRESENCE_CONNS_MAX 65535
#define TM_PRESENCE_LEASE_MIN_MS 100
#define TM_PRESENCE_LEASE_MAX_MS 3600000
#define TM_PRESENCE_SYNC_MAX 65536 /* agents_sync's list */

/* A write's outcome (cb's status): PH_OK (0) done; or one of these; or
 * PH_EFULL (the store's queue was full: nothing was sent), or: */
#define TM_PRESENCE_EUNAVAIL (-200) /* the database did not answer in time
                                       or refused the statement: nothing
                                       may have changed, or the write
                                       landed; a heartbeat is simply sent
                                       again at its next interval */
#define TM_PRESENCE_SUPERSEDED 1 /* the node's row has a newer instance */
#define TM_PRESENCE_STALE 2      /* the row belongs to a newer session, or
                                    (left) to another one, or the node is
                                    not this instance's: nothing changed */

typedef void (*tm_presence_cb)(void *arg, int status);

/* A node as a heartbeat announces it. */
typedef struct tm_presence_node_reg {
  const char *node_id;
  const char *zone;       /* "" none */
  const char *relay_addr; /* "" none (relay off) */
  int64_t instance_nonce;
  int64_t lease_ms; /* TM_PRESENCE_LEASE_MIN_MS..MAX: from the database's
                       now; renew well before it lapses (a third of it) */
} tm_presence_node_reg;

/* An agent's connection to a node, as "connected" announces it. */
typedef struct tm_presence_agent_reg {
  const char *node_id;
  int64_t instance_nonce; /* the node's: an old instance writes nothing */
  const char *agent_id;
  int64_t session_nonce;
  uint32_t connections;  /* 0..TM_PRESENCE_CONNS_MAX */
  uint64_t capabilities; /* bit set, < 2^63 */
} tm_presence_agent_reg;

/* The live presence: nodes whose lease has not lapsed, by node_id, each
 * with its agents (agents[first .. first + n_agents), by agent_id). */
typedef struct tm_presence_agent {
  const char *agent_id;
  int64_t session_nonce;
  uint32_t connections;
  uint64_t capabilities;
} tm_presence_agent;

typedef struct tm_presence_node {
  const char *node_id;
  const char *zone;
  const char *relay_addr;
  int64_t lease_left_ms; /* what was left of the lease when read */
  size_t first, n_agents;
} tm_presence_node;

typedef struct tm_presence_view {
  uint64_t revision; /* raised by one whenever the view's content changes
                        (0: never read yet) */
  size_t n_nodes, n_agents;
  const tm_presence_node *nodes;
  const tm_presence_agent *agents;
} tm_presence_view;

/* Called on the loop thread after the view changed (a notification from
 * any node, or the safety-net poll found a difference, such as a lapsed
 * lease). */
typedef void (*tm_presence_watch_cb)(void *arg, uint64_t revision);

typedef struct tm_presence_v1 {
  /* Registers the node (first call of an instance) or renews its lease:
   * one statement. Returns a call id > 0 (for cancel), or PH_EINVAL
   * (nothing queued, no cb), PH_ENOMEM. cb: PH_OK,
   * TM_PRESENCE_SUPERSEDED, or a failure above. */
  int64_t (*node_heartbeat)(void *self, const tm_presence_node_reg *n,
                            tm_presence_cb cb, void *arg);
  /* Inserts or updates the agent's row on the node (one statement). cb:
   * PH_OK, TM_PRESENCE_STALE or a failure. */
  int64_t (*agent_connected)(void *self, const tm_presence_agent_reg *a,
                             tm_presence_cb cb, void *arg);
  /* Deletes the agent's row of that session (one statement). cb: PH_OK,
   * TM_PRESENCE_STALE (no such row: already gone, or a newer session's). */
  int64_t (*agent_left)(void *self, const char *node_id,
                        const char *agent_id, int64_t session_nonce,
                        tm_presence_cb cb, void *arg);
  /* Deletes the node and (cascade) its agents, if this instance still
   * holds it (a clean shutdown). cb: PH_OK or TM_PRESENCE_SUPERSEDED. */
  int64_t (*node_leave)(void *self, const char *node_id,
                        int64_t instance_nonce, tm_presence_cb cb,
                        void *arg);
  /* PH_OK: cb will not run (a write already sent may still land);
   * PH_ENOENT: no such call, or its cb ran. */
  int (*cancel)(void *self, int64_t id);
  /* The in-memory view, no I/O (TM-P2-33). PH_OK; PH_ESTATE before the
   * first read or when the last good read is older than the store's
   * stale bound (store_pg: three presence_poll intervals); *out is filled
   * either way (possibly empty, or old: not vouched for). The first call
   * starts the store's following of presence. */
  int (*view)(void *self, tm_presence_view *out);
  /* One watcher (a second replaces the first; NULL removes it). */
  void (*watch)(void *self, tm_presence_watch_cb cb, void *arg);
  /* Since 1.1. Deletes the node's agent rows whose agent_id is none of
   * agent_ids[0..n) and whose session_nonce is below below_session (a
   * nonce taken before the list was made: a session that began since is
   * never touched), if the node is this instance's: one statement,
   * notifying when a row went. n is at most TM_PRESENCE_SYNC_MAX; the
   * ids are copied. cb: PH_OK (whether or not a row went),
   * TM_PRESENCE_STALE (the node is not this instance's), or a failure. */
  int64_t (*agents_sync)(void *self, const char *node_id,
                         int64_t instance_nonce,
                         const char *const *agent_ids, size_t n,
                         int64_t below_session, tm_presence_cb cb,
                         void *arg);
} tm_presence_v1;

#endif

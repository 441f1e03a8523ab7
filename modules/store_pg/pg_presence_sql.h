/* SPDX-License-Identifier: BSD-2-Clause */
/* tm.presence's statements for store_pg (pg_presence.c, pg_presence_view.c):
 * entries of the one statement table (pg_sql.c includes PG_TM_STMTS), so
 * every connection prepares them. Times are the database's clock in
 * milliseconds (PG_TM_NOW). Each write is ONE statement, its row guard
 * and its pg_notify('tm_presence', node) in it: the notification goes out
 * at the commit, only when a row changed; a heartbeat that only renews a
 * live lease of the same instance notifies nobody (the views need no
 * re-read for it). Every write returns one row: the number of rows it
 * changed (the heartbeat: the lease left, or no row when superseded). */
#ifndef PH_STORE_PG_PRESENCE_SQL_H
#define PH_STORE_PG_PRESENCE_SQL_H

#define PG_TM_NOW \
  "t AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)"
#define PG_TM_NOTIFY(node) \
  ", LATERAL (SELECT pg_notify('tm_presence', " node ")) n"

#define PG_TM_STMTS                                                           \
  /* $1 node, $2 zone, $3 relay, $4 instance nonce, $5 lease ms -> lease   \
   * left; no row: a newer instance holds the node. A newer instance takes \
   * the node over and drops the older one's agents. */                    \
  [Q_TM_HEARTBEAT] = {"tm_heartbeat",                                       \
      "WITH " PG_TM_NOW ", old AS (SELECT instance_nonce, lease_expires_ms " \
      "FROM tm_nodes WHERE node_id = $1::text), gone AS (DELETE FROM "      \
      "tm_agent_presence WHERE node_id = $1::text AND EXISTS (SELECT 1 FROM " \
      "old WHERE old.instance_nonce < $4::bigint)), up AS (INSERT INTO "    \
      "tm_nodes (node_id, zone, relay_addr, instance_nonce, "              \
      "lease_expires_ms, updated_at_ms) SELECT $1::text, $2::text, "        \
      "$3::text, $4::bigint, t.ms + $5::bigint, t.ms FROM t ON CONFLICT "   \
      "(node_id) DO UPDATE SET zone = EXCLUDED.zone, relay_addr = "         \
      "EXCLUDED.relay_addr, instance_nonce = EXCLUDED.instance_nonce, "     \
      "lease_expires_ms = EXCLUDED.lease_expires_ms, updated_at_ms = "      \
      "EXCLUDED.updated_at_ms WHERE tm_nodes.instance_nonce <= "            \
      "EXCLUDED.instance_nonce RETURNING lease_expires_ms, updated_at_ms) " \
      "SELECT up.lease_expires_ms - up.updated_at_ms, (SELECT "             \
      "pg_notify('tm_presence', $1::text) WHERE NOT EXISTS (SELECT 1 FROM " \
      "old WHERE old.instance_nonce = $4::bigint AND old.lease_expires_ms " \
      "> up.updated_at_ms)) IS NOT NULL FROM up", 5},                       \
  /* $1 agent, $2 node, $3 node instance, $4 session, $5 connections, $6  \
   * capabilities -> rows changed (0: stale) */                            \
  [Q_TM_AGENT_UP] = {"tm_agent_up",                                         \
      "WITH " PG_TM_NOW ", up AS (INSERT INTO tm_agent_presence (agent_id, " \
      "node_id, session_nonce, connections, capabilities, updated_at_ms) "  \
      "SELECT $1::text, $2::text, $4::bigint, $5::integer, $6::bigint, "    \
      "t.ms FROM t WHERE EXISTS (SELECT 1 FROM tm_nodes WHERE node_id = "   \
      "$2::text AND instance_nonce = $3::bigint) ON CONFLICT (agent_id, "   \
      "node_id) DO UPDATE SET session_nonce = EXCLUDED.session_nonce, "     \
      "connections = EXCLUDED.connections, capabilities = "                 \
      "EXCLUDED.capabilities, updated_at_ms = EXCLUDED.updated_at_ms "      \
      "WHERE tm_agent_presence.session_nonce <= EXCLUDED.session_nonce "    \
      "RETURNING 1) SELECT count(*) FROM up" PG_TM_NOTIFY("$2::text"), 6},  \
  /* $1 agent, $2 node, $3 session -> rows deleted */                       \
  [Q_TM_AGENT_LEFT] = {"tm_agent_left",                                     \
      "WITH d AS (DELETE FROM tm_agent_presence WHERE agent_id = $1::text " \
      "AND node_id = $2::text AND session_nonce = $3::bigint RETURNING 1) " \
      "SELECT count(*) FROM d" PG_TM_NOTIFY("$2::text"), 3},                \
  /* $1 node, $2 instance, $3 session bound, $4 the agents kept (text[]) \
   * -> 1 when the instance holds the node (0: stale), the rows deleted  \
   * (notified when any) */                                                \
  [Q_TM_AGENTS_SYNC] = {"tm_agents_sync",                                   \
      "WITH mine AS (SELECT 1 FROM tm_nodes WHERE node_id = $1::text AND "  \
      "instance_nonce = $2::bigint), d AS (DELETE FROM tm_agent_presence "  \
      "WHERE node_id = $1::text AND session_nonce < $3::bigint AND NOT "    \
      "(agent_id = ANY ($4::text[])) AND EXISTS (SELECT 1 FROM mine) "      \
      "RETURNING 1) SELECT (SELECT count(*) FROM mine), (SELECT count(*) "  \
      "FROM d), (SELECT pg_notify('tm_presence', $1::text) WHERE EXISTS "   \
      "(SELECT 1 FROM d)) IS NOT NULL", 4},                                 \
  /* $1 node, $2 instance -> rows deleted (its agents cascade) */           \
  [Q_TM_NODE_LEAVE] = {"tm_node_leave",                                     \
      "WITH d AS (DELETE FROM tm_nodes WHERE node_id = $1::text AND "       \
      "instance_nonce = $2::bigint RETURNING 1) SELECT count(*) FROM d"     \
      PG_TM_NOTIFY("$1::text"), 2},                                         \
  /* the live presence: node, zone, relay, lease left, then the agent's   \
   * id, session, connections, capabilities (NULL: a node without); $1    \
   * the rows at most (the view's limits, pg_presence_view.c) */           \
  [Q_TM_READ] = {"tm_read",                                                 \
      "WITH " PG_TM_NOW " SELECT n.node_id, n.zone, n.relay_addr, "         \
      "n.lease_expires_ms - t.ms, a.agent_id, a.session_nonce, "            \
      "a.connections, a.capabilities FROM t, tm_nodes n LEFT JOIN "         \
      "tm_agent_presence a ON a.node_id = n.node_id WHERE "                 \
      "n.lease_expires_ms > t.ms ORDER BY n.node_id COLLATE \"C\", "        \
      "a.agent_id COLLATE \"C\" LIMIT $1::bigint", 1}

#endif

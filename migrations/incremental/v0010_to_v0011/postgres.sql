-- SPDX-License-Identifier: BSD-2-Clause
-- v10 -> v11 for PostgreSQL (issue 27; the cluster database): adds
-- TunnelMesh presence (tm_nodes, tm_agent_presence). One transaction: it
-- checks that the database is at version 10, creates the presence
-- tables, and only then moves schema_meta to
-- 11. An error anywhere aborts the transaction; the driver
-- (modules/store_common/migrate_pg.c) then issues ROLLBACK, and psql
-- needs -v ON_ERROR_STOP=1 -1 (or the BEGIN below) for the same.
BEGIN;

-- The version check. FOR UPDATE locks the row, so a second migrator
-- waits here and then finds version 11 and stops.
DO $$
DECLARE
    v integer;
BEGIN
    SELECT version INTO v FROM schema_meta WHERE id = 1 FOR UPDATE;
    IF v IS DISTINCT FROM 10 THEN
        RAISE EXCEPTION 'schema_meta.version is %, the v10 -> v11 step needs 10',
            coalesce(v::text, 'missing')
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
END
$$;

-- Exactly as migrations/ddl.sql has it.
-- v11 (issue 27, TM-P2-29, TM-P2-33): TunnelMesh presence, the first
-- brick of a mesh of several servers on one database. Times are
-- milliseconds of the database's own clock (PostgreSQL clock_timestamp(),
-- SQLite julianday('now')), never a server's, so nodes with skewed
-- clocks agree on which lease has lapsed. The contract that reads and
-- writes these tables is modules/contracts/tm_presence.h.
--
-- A server node: one row per configured node id, renewed by its
-- heartbeat (one UPDATE per interval, whatever its number of agents).
-- instance_nonce changes at every start of the node's process, so the
-- heartbeat of an instance that was replaced renews nothing. A node is
-- live while lease_expires_ms is ahead of the database's clock.
CREATE TABLE IF NOT EXISTS tm_nodes (
    node_id TEXT PRIMARY KEY CHECK (length(node_id) BETWEEN 1 AND 128),
    zone TEXT NOT NULL DEFAULT '' CHECK (length(zone) <= 64),
    relay_addr TEXT NOT NULL DEFAULT '' CHECK (length(relay_addr) <= 255),
    instance_nonce BIGINT NOT NULL,
    lease_expires_ms BIGINT NOT NULL CHECK (lease_expires_ms >= 0),
    updated_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS tm_nodes_lease ON tm_nodes (lease_expires_ms);

-- Which agent is connected to which node. A row has no expiry of its
-- own: it lives as long as its node's lease (and goes with its node).
-- session_nonce is the agent session's, increasing across the sessions
-- of one agent on one node: a write carrying an older nonce than the
-- row's changes nothing (a late update from an old session). connections
-- is the session's live connection count; capabilities a bit set
-- (tunnel protocol capability bits).
CREATE TABLE IF NOT EXISTS tm_agent_presence (
    agent_id TEXT NOT NULL CHECK (length(agent_id) BETWEEN 1 AND 128),
    node_id TEXT NOT NULL REFERENCES tm_nodes (node_id) ON DELETE CASCADE,
    session_nonce BIGINT NOT NULL,
    connections INTEGER NOT NULL CHECK (connections BETWEEN 0 AND 65535),
    capabilities BIGINT NOT NULL DEFAULT 0 CHECK (capabilities >= 0),
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (agent_id, node_id)
);
CREATE INDEX IF NOT EXISTS tm_agent_presence_node ON tm_agent_presence (node_id);

UPDATE schema_meta SET version = 11, updated_at = CURRENT_TIMESTAMP
    WHERE id = 1 AND version = 10;

COMMIT;

-- SPDX-License-Identifier: BSD-2-Clause
-- proxyhost schema, version 11: the full current schema (authorization,
-- since v10 the proxy pool's configuration, since v11 TunnelMesh presence).
--
-- One file for both engines (SQLite 3.35+ and PostgreSQL 13+): only types
-- and clauses both read the same way. A fresh database runs this file
-- once, as one transaction; an existing one is moved forward by the steps
-- in incremental/ (migrations/README.md). Keep the two in step: a
-- database upgraded from the v8 baseline must equal one made from this
-- file (t/integration/migrations.sh compares the catalogs).
--
-- Times: *_at columns are Unix seconds (UTC), 0 meaning never / not set;
-- updated_at of the two meta tables is ISO 8601 text (CURRENT_TIMESTAMP).
-- Booleans are 0/1 integers. Names are checked by the stores (the
-- character set differs in how each engine can say it).
BEGIN;

CREATE TABLE schema_meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE users (
    name TEXT PRIMARY KEY,
    owner TEXT REFERENCES users (name),
    enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX users_owner ON users (owner);

CREATE TABLE agents (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (name),
    enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX agents_owner ON agents (owner);

-- secret_hash: SHA-256 of the secret (lower-case hex); the secret itself
-- is never stored. scopes: bit set (1 stream, 2 agent).
CREATE TABLE service_tokens (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    agent TEXT REFERENCES agents (name) ON DELETE CASCADE,
    scopes INTEGER NOT NULL CHECK (scopes > 0),
    secret_hash TEXT NOT NULL,
    expires_at BIGINT NOT NULL DEFAULT 0,
    revoked_at BIGINT NOT NULL DEFAULT 0,
    rotated_at BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX service_tokens_user ON service_tokens (user_name);
CREATE INDEX service_tokens_agent ON service_tokens (agent);

-- subject_kind: 1 a token (subject = its id), 2 a user (subject = name).
-- protocol: 1 tcp.
CREATE TABLE agent_policies (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL REFERENCES agents (name) ON DELETE CASCADE,
    subject_kind INTEGER NOT NULL CHECK (subject_kind IN (1, 2)),
    subject TEXT NOT NULL,
    host_pattern TEXT NOT NULL,
    port_min INTEGER NOT NULL CHECK (port_min BETWEEN 1 AND 65535),
    port_max INTEGER NOT NULL CHECK (port_max BETWEEN 1 AND 65535),
    protocol INTEGER NOT NULL DEFAULT 1 CHECK (protocol = 1),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    CHECK (port_min <= port_max)
);
CREATE INDEX agent_policies_agent ON agent_policies (agent, subject_kind, subject);

-- v9 (TM-P1-14): the shared authorization revision; only id = 1 is used.
-- Every write that changes what an authorization may answer raises it by
-- one in its own transaction.
CREATE TABLE IF NOT EXISTS authorization_revision (
    id INTEGER PRIMARY KEY,
    revision INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);

INSERT INTO authorization_revision (id, revision, updated_at)
    VALUES (1, 1, CURRENT_TIMESTAMP);

-- v10 (issue 12, CP-*): the proxy pool's configuration, which the
-- control plane's controller reads (sdk/proxyhost/pool_store.h). Every
-- bound both engines can say is a CHECK; the stores validate the rest
-- (the character sets of ids and names) before they write. Times are Unix
-- milliseconds (*_ms). No table holds credential material: a credential is
-- a reference (secret_ref) and a version, the controller reads the
-- material from its own secrets_dir.
CREATE TABLE IF NOT EXISTS pool_credentials (
    secret_ref TEXT PRIMARY KEY
        CHECK (length(secret_ref) BETWEEN 1 AND 128),
    credential_version BIGINT NOT NULL CHECK (credential_version >= 1),
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

-- protocol: 1 http_connect, 2 socks5, 3 http. admin_state: 1 active,
-- 2 draining, 3 disabled. A proxy's credential_version is its
-- credential's (pool_credentials), so a rotation reaches every proxy.
CREATE TABLE IF NOT EXISTS pool_proxies (
    proxy_id TEXT PRIMARY KEY CHECK (length(proxy_id) BETWEEN 1 AND 128),
    protocol INTEGER NOT NULL CHECK (protocol IN (1, 2, 3)),
    host TEXT NOT NULL CHECK (length(host) BETWEEN 1 AND 255),
    port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    zone TEXT NOT NULL DEFAULT '' CHECK (length(zone) <= 64),
    capacity INTEGER NOT NULL CHECK (capacity BETWEEN 1 AND 1000000),
    weight INTEGER NOT NULL CHECK (weight BETWEEN 1 AND 1000),
    expires_at_ms BIGINT NOT NULL DEFAULT 0 CHECK (expires_at_ms >= 0),
    secret_ref TEXT REFERENCES pool_credentials (secret_ref),
    admin_state INTEGER NOT NULL DEFAULT 1 CHECK (admin_state IN (1, 2, 3)),
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS pool_proxies_secret_ref ON pool_proxies (secret_ref);

-- A proxy's target groups (1..8 of them, the stores count): a table, not
-- a list in a column, so that each name is checked on its own and a
-- group's members are an indexed lookup.
CREATE TABLE IF NOT EXISTS pool_proxy_groups (
    proxy_id TEXT NOT NULL REFERENCES pool_proxies (proxy_id) ON DELETE CASCADE,
    group_name TEXT NOT NULL CHECK (length(group_name) BETWEEN 1 AND 64),
    PRIMARY KEY (proxy_id, group_name)
);
CREATE INDEX IF NOT EXISTS pool_proxy_groups_group ON pool_proxy_groups (group_name);

-- The routing rules, in position order (unique; sparse, so a rule moves
-- to a free position without renumbering the others). port_min =
-- port_max = 0 is any port. on_unavailable: 1 reject, 2 wait (then
-- wait_timeout_ms 1..60000, else 0), 3 direct.
CREATE TABLE IF NOT EXISTS pool_routes (
    rule_id TEXT PRIMARY KEY CHECK (length(rule_id) BETWEEN 1 AND 128),
    position BIGINT NOT NULL UNIQUE CHECK (position BETWEEN 0 AND 4294967295),
    enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    host_pattern TEXT NOT NULL CHECK (length(host_pattern) BETWEEN 1 AND 255),
    port_min INTEGER NOT NULL DEFAULT 0 CHECK (port_min BETWEEN 0 AND 65535),
    port_max INTEGER NOT NULL DEFAULT 0 CHECK (port_max BETWEEN 0 AND 65535),
    client_identity TEXT NOT NULL DEFAULT '' CHECK (length(client_identity) <= 64),
    listener TEXT NOT NULL DEFAULT '' CHECK (length(listener) <= 64),
    target_group TEXT NOT NULL CHECK (length(target_group) BETWEEN 1 AND 64),
    strategy TEXT NOT NULL CHECK (length(strategy) BETWEEN 1 AND 64),
    on_unavailable INTEGER NOT NULL CHECK (on_unavailable IN (1, 2, 3)),
    wait_timeout_ms INTEGER NOT NULL DEFAULT 0
        CHECK (wait_timeout_ms BETWEEN 0 AND 60000),
    sticky_key TEXT NOT NULL DEFAULT '' CHECK (length(sticky_key) <= 80),
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    CHECK ((port_min = 0 AND port_max = 0) OR
           (port_min >= 1 AND port_min <= port_max)),
    CHECK ((on_unavailable = 2 AND wait_timeout_ms >= 1) OR
           (on_unavailable <> 2 AND wait_timeout_ms = 0))
);

-- The pool revision (one row, id = 1): every pool write raises it by one
-- in its own transaction, as authorization_revision for authorization.
CREATE TABLE IF NOT EXISTS pool_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL CHECK (revision >= 1),
    updated_at TEXT NOT NULL
);

INSERT INTO pool_revision (id, revision, updated_at)
    VALUES (1, 1, CURRENT_TIMESTAMP);

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

INSERT INTO schema_meta (id, version, updated_at)
    VALUES (1, 11, CURRENT_TIMESTAMP);

COMMIT;

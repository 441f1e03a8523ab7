-- SPDX-License-Identifier: BSD-2-Clause
-- v9 -> v10 for PostgreSQL (issue 12; the cluster database): adds the
-- proxy pool's tables (pool_credentials, pool_proxies, pool_proxy_groups,
-- pool_routes, pool_revision). One transaction: it checks that the
-- database is at version 9, creates the pool
-- tables and the pool revision row, and only then moves schema_meta to
-- 10. An error anywhere aborts the transaction; the driver
-- (modules/store_common/migrate_pg.c) then issues ROLLBACK, and psql
-- needs -v ON_ERROR_STOP=1 -1 (or the BEGIN below) for the same.
BEGIN;

-- The version check. FOR UPDATE locks the row, so a second migrator
-- waits here and then finds version 10 and stops.
DO $$
DECLARE
    v integer;
BEGIN
    SELECT version INTO v FROM schema_meta WHERE id = 1 FOR UPDATE;
    IF v IS DISTINCT FROM 9 THEN
        RAISE EXCEPTION 'schema_meta.version is %, the v9 -> v10 step needs 9',
            coalesce(v::text, 'missing')
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
END
$$;

-- Exactly as migrations/ddl.sql has it.
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

UPDATE schema_meta SET version = 10, updated_at = CURRENT_TIMESTAMP
    WHERE id = 1 AND version = 9;

COMMIT;

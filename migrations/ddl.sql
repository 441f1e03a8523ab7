-- SPDX-License-Identifier: BSD-2-Clause
-- proxyhost authorization schema, version 9: the full current schema.
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
INSERT INTO schema_meta (id, version, updated_at)
    VALUES (1, 9, CURRENT_TIMESTAMP);

COMMIT;

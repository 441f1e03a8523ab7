-- SPDX-License-Identifier: BSD-2-Clause
-- v8 -> v9 for SQLite (TM-P1-13): adds the shared authorization revision.
-- One transaction: it checks that the database is at version 8, creates
-- and initialises authorization_revision (TM-P1-14), and only then moves
-- schema_meta to 9 (TM-P1-23). Any failure rolls all of it back: the
-- driver (modules/store_common/migrate_sqlite.c) stops at the first error
-- and issues ROLLBACK; the sqlite3 shell needs -bail for the same.
--
-- IMMEDIATE takes the write lock first, so two migrators cannot both
-- pass the version check.
BEGIN IMMEDIATE;

-- SQLite has no IF: the version goes through a CHECK constraint, so a
-- database at any other version (or with no schema_meta row: NULL)
-- fails here, before anything changes. The constraint's name is the
-- error message the operator sees.
CREATE TEMP TABLE az_v0008_to_v0009_guard (
    version INTEGER
        CONSTRAINT schema_meta_version_must_be_8 NOT NULL
        CONSTRAINT schema_meta_version_must_be_8 CHECK (version = 8)
);
INSERT INTO az_v0008_to_v0009_guard (version)
    VALUES ((SELECT version FROM schema_meta WHERE id = 1));
DROP TABLE temp.az_v0008_to_v0009_guard;

-- Exactly as migrations/ddl.sql has it.
CREATE TABLE IF NOT EXISTS authorization_revision (
    id INTEGER PRIMARY KEY,
    revision INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);

INSERT INTO authorization_revision (id, revision, updated_at)
    VALUES (1, 1, CURRENT_TIMESTAMP);

UPDATE schema_meta SET version = 9, updated_at = CURRENT_TIMESTAMP
    WHERE id = 1 AND version = 8;

COMMIT;

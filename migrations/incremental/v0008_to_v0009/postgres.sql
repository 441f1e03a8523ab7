-- SPDX-License-Identifier: BSD-2-Clause
-- v8 -> v9 for PostgreSQL (TM-P1-13; the cluster database): adds the
-- shared authorization revision. One transaction: it checks that the
-- database is at version 8, creates and initialises
-- authorization_revision (TM-P1-14), and only then moves schema_meta to 9
-- (TM-P1-23). An error anywhere aborts the transaction; the driver
-- (modules/store_common/migrate_pg.c) then issues ROLLBACK, and psql
-- needs -v ON_ERROR_STOP=1 -1 (or the BEGIN below) for the same.
BEGIN;

-- The version check. FOR UPDATE locks the row, so a second migrator
-- waits here and then finds version 9 and stops.
DO $$
DECLARE
    v integer;
BEGIN
    SELECT version INTO v FROM schema_meta WHERE id = 1 FOR UPDATE;
    IF v IS DISTINCT FROM 8 THEN
        RAISE EXCEPTION 'schema_meta.version is %, the v8 -> v9 step needs 8',
            coalesce(v::text, 'missing')
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
END
$$;

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

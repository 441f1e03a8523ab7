#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The schema migrations on both engines, through proxyhost-migrate and by
# hand (sqlite3 -bail, psql ON_ERROR_STOP), on real SQLite files and one
# private PostgreSQL cluster for the whole run:
# - a v8 database (the baseline) upgraded equals a fresh v11 one: the
#   catalogs are compared (tables, columns and types, nullability,
#   defaults, constraints with CHECK and FK, indexes) (TM-P1-11..14, 22);
# - so does a v9 database (v8 and the v8 -> v9 step by hand) with rows,
#   upgraded by the v9 -> v10 step (the pool's tables, issue 12, CP-1-19);
#   that step refuses versions 8 and 10 and rolls back a failure;
# - so does a v10 database with rows, upgraded by the v10 -> v11 step
#   (TunnelMesh presence, issue 27, TM-P2-29): by proxyhost-migrate and
#   by hand, refusing versions 9 and 11, rolling back a failure;
# - a step failing halfway leaves version 8 and no authorization_revision
#   (TM-P1-13, 23); the v8 -> v9 script refuses versions 7 and 9 (TM-P1-23);
# - a v8 reader (and writer) still works on a v9 database, and nothing in
#   the chain drops or changes what v8 had (TM-P1-25, TM-UPG-9);
# - idempotence, a newer version refused (exit 3), fresh creation,
#   status and plan, --config and PROXYHOST_MIGRATE_DSN, no password in
#   any output.
# An engine configured out (--disable-module-store_sqlite/_pg) is
# skipped; a missing PostgreSQL or sqlite3 is a failure.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"

MIG="$top_builddir/tools/proxyhost-migrate"
M="$top_srcdir/migrations"
STEP=$M/incremental/v0008_to_v0009
STEP10=$M/incremental/v0009_to_v0010
STEP11=$M/incremental/v0010_to_v0011
if [ ! -x "$MIG" ]; then
  echo "1..0 # SKIP proxyhost-migrate not built (both stores configured out)"
  exit 0
fi
# has_engine NAME: proxyhost-migrate was built with that engine (its
# store was not configured out).
engines=$("$MIG" --help | sed -n 's/^Engines of this build://p')
has_engine() { case " $engines " in *" $1 "*) return 0 ;; esac; return 1; }
[ -x "$MIG" ]; ok $? "proxyhost-migrate is built"

# mig ARGS...: runs proxyhost-migrate; sets out (stdout and stderr) and rc.
mig() {
  out=$("$MIG" "$@" 2>&1)
  rc=$?
}

# The step scripts only add: no DROP (but of the SQLite check's own TEMP
# table), no ALTER, no RENAME, no DELETE (TM-P1-25, TM-UPG-9).
bad=$(grep -n -i -E '\b(drop|alter|rename|delete|truncate)\b' \
  "$M"/incremental/*/*.sql | grep -v -i -E 'DROP TABLE temp\.|^[^:]*:[0-9]*:--' | grep -v 'REFERENCES .* ON DELETE CASCADE,$')
is "$bad" "" "TM-UPG-9: no step drops, alters, renames or deletes anything"
is "$(grep -c 'CREATE TABLE IF NOT EXISTS authorization_revision (' "$STEP/sqlite.sql" "$STEP/postgres.sql" "$M/ddl.sql" | cut -d: -f2 | tr '\n' ' ')" \
  "1 1 1 " "TM-P1-12, TM-P1-14: ddl.sql and both steps create authorization_revision"

# ---------------------------------------------------------------- SQLite --
if has_engine sqlite; then
  SQLITE3=$(command -v sqlite3)
  [ -n "$SQLITE3" ]; ok $? "sqlite3 is installed (Debian package sqlite3)"
  sq() { "$SQLITE3" -bail -batch "$@"; }
  # sq_catalog DB: the normalized catalog, one fact a line.
  sq_catalog() {
    sq "$1" <<'SQL' | tr -s ' '
SELECT 'object', type, name, tbl_name,
  replace(replace(replace(replace(sql, char(10), ' '), char(9), ' '), '( ', '('), ' )', ')')
  FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name;
SELECT 'column', m.name, p.cid, p.name, p.type, p."notnull", p.dflt_value, p.pk
  FROM sqlite_master m, pragma_table_info(m.name) p
  WHERE m.type = 'table' ORDER BY m.name, p.cid;
SELECT 'index', m.name, il.name, il."unique", il.origin, il.partial, ii.seqno, ii.name
  FROM sqlite_master m, pragma_index_list(m.name) il, pragma_index_info(il.name) ii
  WHERE m.type = 'table' ORDER BY m.name, il.name, ii.seqno;
SELECT 'fk', m.name, f.id, f.seq, f."table", f."from", f."to", f.on_update, f.on_delete, f."match"
  FROM sqlite_master m, pragma_foreign_key_list(m.name) f
  WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq;
SQL
  }
  sq_v8() { rm -f "$1"; sq "$1" <"$M/baseline/v0008.sql"; }
  sq_version() { sq "$1" 'SELECT version FROM schema_meta'; }
  sq_has_rev() { sq "$1" "SELECT count(*) FROM sqlite_master WHERE name = 'authorization_revision'"; }
  D=$T/sqlite
  mkdir -p "$D"

  # Fresh creation.
  mig status --sqlite "$D/fresh.db"
  is "$rc" 4 "sqlite: status of a missing file: exit 4 (pending)"
  like "$out" "schema version: none (a new database)" "sqlite: status says it is new"
  [ ! -e "$D/fresh.db" ]; ok $? "sqlite: status does not create the file"
  mig plan --sqlite "$D/fresh.db"
  is "$out" "new database -> v11 (migrations/ddl.sql)" "sqlite: plan of a new database: ddl.sql"
  mig apply --sqlite "$D/fresh.db"
  is "$rc" 0 "sqlite: apply creates a new database"
  like "$out" "is at version 11 (current)" "sqlite: and says the version"
  is "$(stat -c %a "$D/fresh.db")" 600 "sqlite: the new file is mode 0600"
  is "$(sq "$D/fresh.db" 'SELECT id, revision FROM authorization_revision')" "1|1" \
    "TM-P1-14: sqlite: a fresh database has the revision row id=1, revision 1"

  # Upgrade from the baseline, with v8 data in it.
  sq_v8 "$D/up.db"; ok $? "sqlite: a v8 database from baseline/v0008.sql"
  sq "$D/up.db" <<'SQL'
INSERT INTO users VALUES ('alice', NULL, 1, 100, 100), ('bob', 'alice', 0, 101, 102);
INSERT INTO agents VALUES ('a1', 'alice', 1, 103, 103);
INSERT INTO service_tokens VALUES ('t1', 'alice', 'a1', 1, 'ab12', 0, 0, 0, 104, 104);
INSERT INTO agent_policies VALUES ('p1', 'a1', 1, 't1', '*.example', 1, 65535, 1, 105, 105);
SQL
  ok $? "sqlite: v8 rows written"
  sq_catalog "$D/up.db" >"$D/v8.cat"
  v8_rows=$(sq "$D/up.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT * FROM service_tokens; SELECT * FROM agent_policies')
  mig status --sqlite "$D/up.db"
  is "$rc" 4 "sqlite: status of v8: exit 4"
  like "$out" "schema version: 8" "sqlite: status reads version 8"
  like "$out" "state: 3 steps pending: run proxyhost-migrate apply" "sqlite: and three steps pending"
  mig plan --sqlite "$D/up.db"
  is "$out" "v8 -> v9 (migrations/incremental/v0008_to_v0009/sqlite.sql)
v9 -> v10 (migrations/incremental/v0009_to_v0010/sqlite.sql)
v10 -> v11 (migrations/incremental/v0010_to_v0011/sqlite.sql)" "sqlite: plan of v8: every step"
  is "$(sq_version "$D/up.db")" 8 "sqlite: plan changes nothing"
  mig apply --sqlite "$D/up.db"
  is "$rc" 0 "TM-P1-11: sqlite: apply on v8 succeeds"
  is "$out" "applied: v8 -> v9 (migrations/incremental/v0008_to_v0009/sqlite.sql)
applied: v9 -> v10 (migrations/incremental/v0009_to_v0010/sqlite.sql)
applied: v10 -> v11 (migrations/incremental/v0010_to_v0011/sqlite.sql)
sqlite $D/up.db is at version 11 (current)" "sqlite: apply says what it did"
  is "$(sq_version "$D/up.db")" 11 "TM-P1-11: sqlite: version 11"
  is "$(sq "$D/up.db" 'SELECT id, revision FROM authorization_revision')" "1|1" \
    "TM-P1-14, TM-P1-15: sqlite: the revision row id=1, revision 1, alone"
  sq_catalog "$D/up.db" >"$D/up.cat"
  sq_catalog "$D/fresh.db" >"$D/fresh.cat"
  [ "$(grep -c . "$D/fresh.cat")" -gt 40 ]; ok $? "sqlite: the catalog has $(grep -c . "$D/fresh.cat") facts"
  grep -q "^column|authorization_revision|2|updated_at|TEXT|1||0" "$D/fresh.cat"; ok $? \
    "sqlite: the catalog has the columns with type and nullability"
  grep -q "CHECK (port_min <= port_max)" "$D/fresh.cat"; ok $? "sqlite: and the CHECK constraints"
  grep -q "^fk|service_tokens|.*|users|user_name|name|NO ACTION|CASCADE|NONE" "$D/fresh.cat"; ok $? \
    "sqlite: and the foreign keys"
  diff "$D/fresh.cat" "$D/up.cat" >"$D/cat.diff"
  ok $? "TM-P1-11..14, TM-P1-22, TM-DOC-12: sqlite: the upgraded catalog (the incremental chain) equals the fresh v11 one (the full DDL)"
  sed 's/^/#   /' "$D/cat.diff" | head -20
  sort "$D/v8.cat" >"$D/v8.sorted"; sort "$D/up.cat" >"$D/up.sorted"
  is "$(comm -23 "$D/v8.sorted" "$D/up.sorted")" "" \
    "TM-UPG-9: sqlite: every v8 table, column, index and key is still there"
  # The v8 reader and writer on v9 (TM-P1-25).
  is "$(sq "$D/up.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT * FROM service_tokens; SELECT * FROM agent_policies')" \
    "$v8_rows" "TM-P1-25: sqlite: the v8 rows read the same on v9"
  out=$(sq "$D/up.db" 'SELECT u.name, a.name, t.id, p.host_pattern FROM users u
    JOIN agents a ON a.owner = u.name JOIN service_tokens t ON t.agent = a.name
    JOIN agent_policies p ON p.agent = a.name AND p.subject = t.id
    WHERE u.enabled = 1 AND t.revoked_at = 0' 2>&1)
  is "$out" "alice|a1|t1|*.example" "TM-P1-25: sqlite: a v8 reader's authorization query works on v9"
  sq "$D/up.db" "INSERT INTO users (name, owner, enabled, created_at, updated_at) VALUES ('carol', NULL, 1, 1, 1);
    UPDATE agents SET enabled = 0 WHERE name = 'a1'; DELETE FROM agent_policies WHERE id = 'p1'"
  ok $? "TM-P1-25: sqlite: a v8 writer's statements work on v9 (it ignores the new table)"

  # Idempotence.
  before=$(sq "$D/up.db" 'SELECT * FROM schema_meta; SELECT * FROM authorization_revision')
  mig apply --sqlite "$D/up.db"
  is "$rc" 0 "sqlite: a second apply succeeds"
  is "$out" "nothing to do: sqlite $D/up.db is at version 11 (current)" "sqlite: and says there was nothing to do"
  is "$(sq "$D/up.db" 'SELECT * FROM schema_meta; SELECT * FROM authorization_revision')" "$before" \
    "sqlite: and changes nothing"
  mig status --sqlite "$D/up.db"
  is "$rc" 0 "sqlite: status of a current database: exit 0"
  like "$out" "state: current" "sqlite: status says current"
  mig plan --sqlite "$D/up.db"
  like "$out" "nothing to do" "sqlite: plan of a current database: nothing"

  # Two migrators at once: both succeed, the step runs once.
  sq_v8 "$D/race.db"
  "$MIG" apply --sqlite "$D/race.db" >"$D/race1.log" 2>&1 & p1=$!
  "$MIG" apply --sqlite "$D/race.db" >"$D/race2.log" 2>&1 & p2=$!
  wait_exit $p1 30; r1=$EXIT
  wait_exit $p2 30; r2=$EXIT
  is "$r1:$r2" "0:0" "sqlite: two concurrent applies both succeed" ||
    cat "$D/race1.log" "$D/race2.log" | sed 's/^/#   /'
  is "$(sq_version "$D/race.db"):$(sq "$D/race.db" 'SELECT count(*) FROM authorization_revision')" "11:1" \
    "sqlite: and the database is at 11 with one revision row"

  # A step failing halfway: the version update (after the CREATE and the
  # INSERT) is refused by a trigger.
  sq_v8 "$D/half.db"
  sq "$D/half.db" "CREATE TRIGGER no_bump BEFORE UPDATE ON schema_meta BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
  mig apply --sqlite "$D/half.db"
  is "$rc" 1 "TM-P1-23: sqlite: a step failing halfway: exit 1"
  like "$out" "step v8 -> v9 (v0008_to_v0009/sqlite.sql) failed and was rolled back (the database is still at version 8): sqlite: injected failure" \
    "sqlite: the message names the step, the version and the cause"
  is "$(sq_version "$D/half.db")" 8 "TM-P1-23: sqlite: the version stays 8"
  is "$(sq_has_rev "$D/half.db")" 0 "TM-P1-23: sqlite: no authorization_revision table is left"
  # The same by hand, with a test-only copy failing right after the CREATE.
  sq_v8 "$D/hand.db"
  sed 's/^INSERT INTO authorization_revision/SELECT no_such_function(); &/' "$STEP/sqlite.sql" >"$D/broken.sql"
  grep -q no_such_function "$D/broken.sql"; ok $? "sqlite: a broken copy of the step"
  sq "$D/hand.db" <"$D/broken.sql" >/dev/null 2>&1
  [ $? -ne 0 ]; ok $? "sqlite: sqlite3 -bail with the broken copy fails"
  is "$(sq_version "$D/hand.db"):$(sq_has_rev "$D/hand.db")" "8:0" \
    "TM-P1-23: sqlite: by hand too: version 8 and no table left"
  sq "$D/hand.db" <"$STEP/sqlite.sql"
  is "$?:$(sq_version "$D/hand.db")" "0:9" "sqlite: the shipped step by hand then succeeds"
  cp "$D/hand.db" "$D/v9.db"

  # The script refuses versions 7 and 9.
  sq "$D/hand.db" <"$STEP/sqlite.sql" >"$D/again.log" 2>&1
  [ $? -ne 0 ]; ok $? "TM-P1-23: sqlite: the step refuses a database at version 9"
  like "$(cat "$D/again.log")" "schema_meta_version_must_be_8" "sqlite: naming the check"
  is "$(sq "$D/hand.db" 'SELECT count(*) FROM authorization_revision')" 1 "sqlite: and adds no row"
  sq_v8 "$D/v7.db"
  sq "$D/v7.db" 'UPDATE schema_meta SET version = 7'
  sq "$D/v7.db" <"$STEP/sqlite.sql" >/dev/null 2>&1
  [ $? -ne 0 ]; ok $? "TM-P1-23: sqlite: the step refuses a database at version 7"
  is "$(sq_version "$D/v7.db"):$(sq_has_rev "$D/v7.db")" "7:0" "sqlite: and changes nothing"
  mig apply --sqlite "$D/v7.db"
  is "$rc" 3 "sqlite: apply on version 7 (no chain): exit 3"
  like "$out" "at schema version 7 and this build has no migration from it" "sqlite: with a clear message"

  # v9 -> v10 on its own: a v9 database with rows (made by hand above).
  sq "$D/v9.db" <<'SQL'
INSERT INTO users VALUES ('alice', NULL, 1, 100, 100);
INSERT INTO agents VALUES ('a1', 'alice', 1, 103, 103);
UPDATE authorization_revision SET revision = 7;
SQL
  v9_rows=$(sq "$D/v9.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT id, revision FROM authorization_revision')
  sq_catalog "$D/v9.db" | sort >"$D/v9.sorted"
  cp "$D/v9.db" "$D/v9b.db"
  mig plan --sqlite "$D/v9.db"
  is "$out" "v9 -> v10 (migrations/incremental/v0009_to_v0010/sqlite.sql)
v10 -> v11 (migrations/incremental/v0010_to_v0011/sqlite.sql)" "sqlite: plan of v9: the pool step, then presence"
  mig apply --sqlite "$D/v9.db"
  is "$rc:$(sq_version "$D/v9.db")" "0:11" "sqlite: apply on v9: version 11"
  sq_catalog "$D/v9.db" >"$D/v9up.cat"
  diff "$D/fresh.cat" "$D/v9up.cat" >"$D/cat10.diff"
  ok $? "CP-1-19: sqlite: a v9 database upgraded to v11 equals a fresh v11 one"
  sed 's/^/#   /' "$D/cat10.diff" | head -20
  is "$(sort "$D/v9up.cat" | comm -23 "$D/v9.sorted" -)" "" \
    "sqlite: every v9 table, column, index and key is still there"
  is "$(sq "$D/v9.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT id, revision FROM authorization_revision')" \
    "$v9_rows" "sqlite: the v9 rows and the authorization revision read the same on v11"
  is "$(sq "$D/v9.db" 'SELECT id, revision FROM pool_revision')" "1|1" \
    "CP-1-19: sqlite: the pool revision row id=1, revision 1"
  for t in pool_credentials pool_proxies pool_proxy_groups pool_routes; do
    grep -q "^object|table|$t|" "$D/fresh.cat"; ok $? "sqlite: v10 has the table $t"
  done
  grep -q "CHECK (position BETWEEN 0 AND 4294967295)" "$D/fresh.cat"; ok $? \
    "sqlite: and the pool's CHECK constraints"
  grep -q "^fk|pool_proxies|.*|pool_credentials|secret_ref|secret_ref|" "$D/fresh.cat"; ok $? \
    "sqlite: and a proxy's secret_ref references pool_credentials"
  # The step fails halfway (a trigger refuses the version update): version
  # 9 stays and no pool table is left.
  sq "$D/v9b.db" "CREATE TRIGGER no_bump BEFORE UPDATE ON schema_meta BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
  mig apply --sqlite "$D/v9b.db"
  is "$rc" 1 "sqlite: the v9 -> v10 step failing halfway: exit 1"
  like "$out" "step v9 -> v10 (v0009_to_v0010/sqlite.sql) failed and was rolled back (the database is still at version 9)" \
    "sqlite: the message names the step"
  is "$(sq_version "$D/v9b.db"):$(sq "$D/v9b.db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'pool_%'")" "9:0" \
    "sqlite: version 9 and no pool table left"
  sq "$D/v9b.db" 'DROP TRIGGER no_bump'
  # By hand: the step refuses versions 8 and 10.
  sq_v8 "$D/v8h.db"
  sq "$D/v8h.db" <"$STEP10/sqlite.sql" >"$D/v8h.log" 2>&1
  [ $? -ne 0 ]; ok $? "sqlite: the v9 -> v10 step refuses a database at version 8"
  like "$(cat "$D/v8h.log")" "schema_meta_version_must_be_9" "sqlite: naming the check"
  sq "$D/v9b.db" <"$STEP10/sqlite.sql"
  is "$?:$(sq_version "$D/v9b.db")" "0:10" "sqlite: the v9 -> v10 step by hand succeeds"
  sq "$D/v9b.db" <"$STEP10/sqlite.sql" >/dev/null 2>&1
  [ $? -ne 0 ]; ok $? "sqlite: and then refuses the database at version 10"
  is "$(sq "$D/v9b.db" 'SELECT count(*) FROM pool_revision')" 1 "sqlite: adding no second pool revision row"

  # v10 -> v11 (TunnelMesh presence, issue 27). v9b.db is at 10 now, with
  # rows; first a failure halfway, then proxyhost-migrate, then by hand.
  sq "$D/v9b.db" "INSERT INTO pool_credentials VALUES ('s1', 1, 1, 1)"
  v10_rows=$(sq "$D/v9b.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT * FROM pool_credentials; SELECT id, revision FROM pool_revision')
  sq_catalog "$D/v9b.db" | sort >"$D/v10.sorted"
  cp "$D/v9b.db" "$D/v10h.db"
  sq "$D/v9b.db" "CREATE TRIGGER no_bump BEFORE UPDATE ON schema_meta BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
  mig apply --sqlite "$D/v9b.db"
  is "$rc" 1 "TM-P2-29: sqlite: the v10 -> v11 step failing halfway: exit 1"
  like "$out" "step v10 -> v11 (v0010_to_v0011/sqlite.sql) failed and was rolled back (the database is still at version 10)" \
    "sqlite: the message names the step"
  is "$(sq_version "$D/v9b.db"):$(sq "$D/v9b.db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'tm_%'")" "10:0" \
    "sqlite: version 10 and no presence table left"
  sq "$D/v9b.db" 'DROP TRIGGER no_bump'
  mig plan --sqlite "$D/v9b.db"
  is "$out" "v10 -> v11 (migrations/incremental/v0010_to_v0011/sqlite.sql)" "sqlite: plan of v10: the presence step"
  mig apply --sqlite "$D/v9b.db"
  is "$rc:$(sq_version "$D/v9b.db")" "0:11" "TM-P2-29: sqlite: apply on v10: version 11"
  sq_catalog "$D/v9b.db" >"$D/v10up.cat"
  diff "$D/fresh.cat" "$D/v10up.cat" >"$D/cat11.diff"
  ok $? "TM-P2-29: sqlite: a v10 database upgraded to v11 equals a fresh v11 one"
  sed 's/^/#   /' "$D/cat11.diff" | head -20
  is "$(sort "$D/v10up.cat" | comm -23 "$D/v10.sorted" -)" "" \
    "sqlite: every v10 table, column, index and key is still there"
  is "$(sq "$D/v9b.db" 'SELECT * FROM users; SELECT * FROM agents; SELECT * FROM pool_credentials; SELECT id, revision FROM pool_revision')" \
    "$v10_rows" "sqlite: the v10 rows and both revisions read the same on v11"
  for t in tm_nodes tm_agent_presence; do
    grep -q "^object|table|$t|" "$D/fresh.cat"; ok $? "TM-P2-29: sqlite: v11 has the table $t"
  done
  grep -q "^index|tm_agent_presence|tm_agent_presence_node|" "$D/fresh.cat"; ok $? \
    "sqlite: an agent's presence is indexed by node"
  grep -q "^fk|tm_agent_presence|.*|tm_nodes|node_id|node_id|NO ACTION|CASCADE|" "$D/fresh.cat"; ok $? \
    "sqlite: and goes with its node (ON DELETE CASCADE)"
  sq "$D/v8h.db" <"$STEP11/sqlite.sql" >"$D/v8h11.log" 2>&1
  [ $? -ne 0 ]; ok $? "sqlite: the v10 -> v11 step refuses a database at version 8"
  like "$(cat "$D/v8h11.log")" "schema_meta_version_must_be_10" "sqlite: naming the check"
  sq "$D/v10h.db" <"$STEP11/sqlite.sql"
  is "$?:$(sq_version "$D/v10h.db")" "0:11" "sqlite: the v10 -> v11 step by hand succeeds"
  sq "$D/v10h.db" <"$STEP11/sqlite.sql" >/dev/null 2>&1
  [ $? -ne 0 ]; ok $? "sqlite: and then refuses the database at version 11"

  # Newer than this build.
  sq "$D/fresh.db" 'UPDATE schema_meta SET version = 12'
  for cmd in status plan apply; do
    mig $cmd --sqlite "$D/fresh.db"
    is "$rc" 3 "sqlite: $cmd of a newer database (v12): exit 3"
  done
  like "$out" "the database is at schema version 12, newer than this build's 11: nothing was changed" \
    "sqlite: the refusal says why"
  is "$(sq_version "$D/fresh.db")" 12 "sqlite: and nothing was changed"

  # Not a database; no schema_meta but our tables.
  echo "not a database" >"$D/junk.db"
  mig apply --sqlite "$D/junk.db"
  is "$rc" 1 "sqlite: a file that is not a database: exit 1"
  sq_v8 "$D/nometa.db"
  sq "$D/nometa.db" 'DROP TABLE schema_meta'
  mig apply --sqlite "$D/nometa.db"
  is "$rc" 1 "sqlite: tables of the schema without schema_meta: exit 1"
  like "$out" "no schema_meta: its version is unknown" "sqlite: and says so"

  # --config: the store's section, as proxyhost reads it.
  mkdir -p "$D/etc/conf.d"
  printf '[proxyhost]\ninclude = conf.d/*.ini\n' >"$D/etc/proxyhost.ini"
  printf '[store_sqlite]\npath = %s\n' "$D/conf.db" >"$D/etc/conf.d/store_sqlite.ini"
  mig apply --config "$D/etc/proxyhost.ini"
  is "$rc" 0 "sqlite: --config: [store_sqlite] path from a drop-in"
  is "$(sq_version "$D/conf.db")" 11 "sqlite: --config: that database was created"
  mig status -c "$D/etc/proxyhost.ini"
  like "$out" "from: $D/etc/proxyhost.ini: [store_sqlite] path" "sqlite: status names where the path came from"
  PROXYHOST_STORE_SQLITE_PATH="$D/env.db" "$MIG" apply --config "$D/etc/proxyhost.ini" >/dev/null 2>&1
  is "$?:$(sq_version "$D/env.db")" "0:11" "sqlite: --config: the environment overrides the file, as in proxyhost"
  mig status --config "$D/etc/proxyhost.ini" --store store_pg
  is "$rc" 1 "--config --store store_pg without the key: exit 1"
  like "$out" "[store_pg] dsn is not set" "and says which key"
  mig status --config "$D/etc/proxyhost.ini" --store users
  like "$out" "not a store section" "--store of another section is refused"
  mig status --config "$D/missing.ini"
  is "$rc" 1 "--config of a missing file: exit 1"
else
  skip "store_sqlite not built (configure --disable-module-store_sqlite)"
fi

# ------------------------------------------------------------ PostgreSQL --
if has_engine postgres; then
  start_pg "$T/pg"
  ok $? "PostgreSQL starts (a private cluster, unix socket only)"
  # pg_catalog_dump DB: the catalog of the public schema, one fact a line.
  pg_catalog_dump() {
    pg_psql "$1" <<'SQL'
SELECT 'object', c.relname, c.relkind FROM pg_class c
  WHERE c.relnamespace = 'public'::regnamespace ORDER BY 2;
SELECT 'column', table_name, ordinal_position, column_name, data_type,
  is_nullable, column_default, numeric_precision
  FROM information_schema.columns WHERE table_schema = 'public'
  ORDER BY table_name, ordinal_position;
SELECT 'constraint', conrelid::regclass::text, conname, contype,
  pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace = 'public'::regnamespace
  ORDER BY 2, 3;
SELECT 'index', tablename, indexname, indexdef FROM pg_indexes
  WHERE schemaname = 'public' ORDER BY 2, 3;
SELECT 'trigger', tgrelid::regclass::text, tgname FROM pg_trigger
  WHERE NOT tgisinternal ORDER BY 2, 3;
SQL
  }
  pg_v8() { pg_new_db "$1" >/dev/null && pg_psql "$1" -f "$M/baseline/v0008.sql"; }
  pg_version() { pg_psql "$1" -c 'SELECT version FROM schema_meta'; }
  # pg_no_bump DB: a trigger refuses the version update, so a step fails
  # halfway (after its CREATEs and INSERTs).
  pg_no_bump() {
    pg_psql "$1" >/dev/null <<'SQL'
CREATE FUNCTION no_bump() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
CREATE TRIGGER no_bump BEFORE UPDATE ON schema_meta FOR EACH ROW EXECUTE FUNCTION no_bump();
SQL
  }
  pg_has_rev() { pg_psql "$1" -c "SELECT to_regclass('authorization_revision') IS NOT NULL"; }
  secret=pw-Do-Not-Print-7c41
  pgm() { # pgm CMD DB: proxyhost-migrate CMD on DB, with a password in the DSN
    PROXYHOST_MIGRATE_DSN="$(pg_dsn "$2") password=$secret" mig "$1"
  }
  all_out=

  # Fresh creation.
  pg_new_db fresh >/dev/null; ok $? "postgres: an empty database"
  pgm status fresh; all_out="$all_out$out"
  is "$rc" 4 "postgres: status of an empty database: exit 4"
  like "$out" "database: postgres database fresh on $PG_DIR port $PG_PORT as postgres" \
    "postgres: status names the database without the DSN"
  like "$out" "from: PROXYHOST_MIGRATE_DSN" "postgres: and where it came from"
  pgm plan fresh; all_out="$all_out$out"
  is "$out" "new database -> v11 (migrations/ddl.sql)" "postgres: plan of an empty database: ddl.sql"
  pgm apply fresh; all_out="$all_out$out"
  is "$rc" 0 "postgres: apply creates the schema"
  is "$(pg_psql fresh -c 'SELECT id, revision FROM authorization_revision')" "1|1" \
    "TM-P1-14: postgres: a fresh database has the revision row id=1, revision 1"

  # Upgrade from the baseline, with v8 data.
  pg_v8 up; ok $? "postgres: a v8 database from baseline/v0008.sql"
  pg_psql up <<'SQL'
INSERT INTO users VALUES ('alice', NULL, 1, 100, 100), ('bob', 'alice', 0, 101, 102);
INSERT INTO agents VALUES ('a1', 'alice', 1, 103, 103);
INSERT INTO service_tokens VALUES ('t1', 'alice', 'a1', 1, 'ab12', 0, 0, 0, 104, 104);
INSERT INTO agent_policies VALUES ('p1', 'a1', 1, 't1', '*.example', 1, 65535, 1, 105, 105);
SQL
  ok $? "postgres: v8 rows written"
  pg_catalog_dump up >"$T/pg_v8.cat"
  rows_sql='SELECT * FROM users ORDER BY 1; SELECT * FROM agents; SELECT * FROM service_tokens; SELECT * FROM agent_policies'
  v8_rows=$(pg_psql up -c "$rows_sql")
  pgm status up; all_out="$all_out$out"
  like "$out" "schema version: 8" "postgres: status reads version 8"
  pgm plan up; all_out="$all_out$out"
  is "$out" "v8 -> v9 (migrations/incremental/v0008_to_v0009/postgres.sql)
v9 -> v10 (migrations/incremental/v0009_to_v0010/postgres.sql)
v10 -> v11 (migrations/incremental/v0010_to_v0011/postgres.sql)" "postgres: plan of v8: every step"
  pgm apply up; all_out="$all_out$out"
  is "$rc" 0 "TM-P1-11: postgres: apply on v8 succeeds"
  like "$out" "applied: v8 -> v9 (migrations/incremental/v0008_to_v0009/postgres.sql)" "postgres: and says what it did"
  like "$out" "applied: v9 -> v10 (migrations/incremental/v0009_to_v0010/postgres.sql)" "postgres: and the pool step"
  like "$out" "applied: v10 -> v11 (migrations/incremental/v0010_to_v0011/postgres.sql)" "postgres: and the presence step"
  is "$(pg_version up)" 11 "TM-P1-11: postgres: version 11"
  is "$(pg_psql up -c 'SELECT id, revision FROM authorization_revision')" "1|1" \
    "TM-P1-14, TM-P1-15: postgres: the revision row id=1, revision 1, alone"
  pg_catalog_dump up >"$T/pg_up.cat"
  pg_catalog_dump fresh >"$T/pg_fresh.cat"
  [ "$(grep -c . "$T/pg_fresh.cat")" -gt 40 ]; ok $? "postgres: the catalog has $(grep -c . "$T/pg_fresh.cat") facts"
  grep -q "^column|authorization_revision|3|updated_at|text|NO||" "$T/pg_fresh.cat"; ok $? \
    "postgres: the catalog has the columns with type and nullability"
  grep -q "^constraint|agent_policies|agent_policies_check|c|CHECK ((port_min <= port_max))" "$T/pg_fresh.cat"; ok $? \
    "postgres: and the CHECK constraints"
  grep -q "^constraint|service_tokens|service_tokens_user_name_fkey|f|FOREIGN KEY (user_name) REFERENCES users(name) ON DELETE CASCADE" \
    "$T/pg_fresh.cat"; ok $? "postgres: and the foreign keys"
  grep -q "^index|agent_policies|agent_policies_agent|CREATE INDEX" "$T/pg_fresh.cat"; ok $? "postgres: and the indexes"
  diff "$T/pg_fresh.cat" "$T/pg_up.cat" >"$T/pg_cat.diff"
  ok $? "TM-P1-11..14, TM-P1-22: postgres: the upgraded catalog equals the fresh v11 one"
  sed 's/^/#   /' "$T/pg_cat.diff" | head -20
  sort "$T/pg_v8.cat" >"$T/pg_v8.sorted"; sort "$T/pg_up.cat" >"$T/pg_up.sorted"
  is "$(comm -23 "$T/pg_v8.sorted" "$T/pg_up.sorted")" "" \
    "TM-UPG-9: postgres: every v8 table, column, constraint and index is still there"
  is "$(pg_psql up -c "$rows_sql")" "$v8_rows" "TM-P1-25: postgres: the v8 rows read the same on v9"
  out=$(pg_psql up -c 'SELECT u.name, a.name, t.id, p.host_pattern FROM users u
    JOIN agents a ON a.owner = u.name JOIN service_tokens t ON t.agent = a.name
    JOIN agent_policies p ON p.agent = a.name AND p.subject = t.id
    WHERE u.enabled = 1 AND t.revoked_at = 0' 2>&1)
  is "$out" "alice|a1|t1|*.example" "TM-P1-25: postgres: a v8 reader's authorization query works on v9"
  pg_psql up -c "INSERT INTO users (name, owner, enabled, created_at, updated_at) VALUES ('carol', NULL, 1, 1, 1)" \
    -c "UPDATE agents SET enabled = 0 WHERE name = 'a1'" -c "DELETE FROM agent_policies WHERE id = 'p1'" >/dev/null
  ok $? "TM-P1-25: postgres: a v8 writer's statements work on v9 (it ignores the new table)"

  # Idempotence.
  before=$(pg_psql up -c 'SELECT * FROM schema_meta' -c 'SELECT * FROM authorization_revision')
  pgm apply up; all_out="$all_out$out"
  is "$rc" 0 "postgres: a second apply succeeds"
  like "$out" "nothing to do: postgres database up on" "postgres: and says there was nothing to do"
  is "$(pg_psql up -c 'SELECT * FROM schema_meta' -c 'SELECT * FROM authorization_revision')" "$before" \
    "postgres: and changes nothing"
  pgm status up; all_out="$all_out$out"
  is "$rc" 0 "postgres: status of a current database: exit 0"

  # Two migrators at once (the step locks the schema_meta row): both
  # succeed, the step runs once.
  pg_v8 race
  for i in 1 2 3; do
    PROXYHOST_MIGRATE_DSN="$(pg_dsn race)" "$MIG" apply >"$T/race$i.log" 2>&1 &
    eval "p$i=\$!"
  done
  wait_exit $p1 60; r1=$EXIT
  wait_exit $p2 60; r2=$EXIT
  wait_exit $p3 60; r3=$EXIT
  is "$r1:$r2:$r3" "0:0:0" "postgres: three concurrent applies all succeed"
  is "$(pg_version race):$(pg_psql race -c 'SELECT count(*) FROM authorization_revision')" "11:1" \
    "postgres: and the database is at 11 with one revision row"

  # A step failing halfway: a trigger refuses the version update, after
  # the CREATE and the INSERT.
  pg_v8 half
  pg_no_bump half
  pgm apply half; all_out="$all_out$out"
  is "$rc" 1 "TM-P1-23: postgres: a step failing halfway: exit 1"
  like "$out" "step v8 -> v9 (v0008_to_v0009/postgres.sql) failed and was rolled back (the database is still at version 8): postgres: P0001: injected failure" \
    "postgres: the message names the step, the version, the SQLSTATE and the cause"
  is "$(pg_version half)" 8 "TM-P1-23: postgres: the version stays 8"
  is "$(pg_has_rev half)" f "TM-P1-23: postgres: no authorization_revision table is left"
  # By hand, a test-only copy failing right after the CREATE.
  pg_v8 hand
  sed 's/^INSERT INTO authorization_revision/SELECT 1 \/ 0; &/' "$STEP/postgres.sql" >"$T/broken.sql"
  pg_psql hand -f "$T/broken.sql" >/dev/null 2>&1
  [ $? -ne 0 ]; ok $? "postgres: psql with a broken copy of the step fails"
  is "$(pg_version hand):$(pg_has_rev hand)" "8:f" "TM-P1-23: postgres: by hand too: version 8 and no table left"
  pg_psql hand -f "$STEP/postgres.sql" >/dev/null 2>&1
  is "$?:$(pg_version hand)" "0:9" "postgres: the shipped step by hand then succeeds"
  pg_psql hand -c "INSERT INTO users VALUES ('alice', NULL, 1, 100, 100)" -c 'UPDATE authorization_revision SET revision = 7' >/dev/null
  v9_rows=$(pg_psql hand -c 'SELECT * FROM users' -c 'SELECT id, revision FROM authorization_revision')
  pg_catalog_dump hand | sort >"$T/pg_v9.sorted"
  pg_psql hand -f "$STEP/postgres.sql" >"$T/again.log" 2>&1
  [ $? -ne 0 ]; ok $? "TM-P1-23: postgres: the step refuses a database at version 9"
  like "$(cat "$T/again.log")" "schema_meta.version is 9, the v8 -> v9 step needs 8" "postgres: saying why"
  pg_v8 v7
  pg_psql v7 -c 'UPDATE schema_meta SET version = 7'
  pg_psql v7 -f "$STEP/postgres.sql" >"$T/v7.log" 2>&1
  [ $? -ne 0 ]; ok $? "TM-P1-23: postgres: the step refuses a database at version 7"
  is "$(pg_version v7):$(pg_has_rev v7)" "7:f" "postgres: and changes nothing"
  pgm apply v7; all_out="$all_out$out"
  is "$rc" 3 "postgres: apply on version 7 (no chain): exit 3"

  # v9 -> v10 on its own ("hand" is a v9 database with rows now). First a
  # failure halfway (a trigger refuses the version update), then by hand.
  pg_no_bump hand
  pgm apply hand; all_out="$all_out$out"
  is "$rc" 1 "postgres: the v9 -> v10 step failing halfway: exit 1"
  like "$out" "step v9 -> v10 (v0009_to_v0010/postgres.sql) failed and was rolled back (the database is still at version 9)" \
    "postgres: the message names the step"
  is "$(pg_version hand):$(pg_psql hand -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'pool_%'")" "9:0" \
    "postgres: version 9 and no pool table left"
  pg_psql hand -c 'DROP TRIGGER no_bump ON schema_meta' -c 'DROP FUNCTION no_bump()' >/dev/null
  pg_psql v7 -f "$STEP10/postgres.sql" >"$T/v7b.log" 2>&1
  [ $? -ne 0 ]; ok $? "postgres: the v9 -> v10 step refuses a database at version 7"
  like "$(cat "$T/v7b.log")" "schema_meta.version is 7, the v9 -> v10 step needs 9" "postgres: saying why"
  pgm plan hand; all_out="$all_out$out"
  is "$out" "v9 -> v10 (migrations/incremental/v0009_to_v0010/postgres.sql)
v10 -> v11 (migrations/incremental/v0010_to_v0011/postgres.sql)" "postgres: plan of v9: the pool step, then presence"
  pgm apply hand; all_out="$all_out$out"
  is "$rc:$(pg_version hand)" "0:11" "postgres: apply on v9: version 11"
  pg_catalog_dump hand >"$T/pg_v9up.cat"
  diff "$T/pg_fresh.cat" "$T/pg_v9up.cat" >"$T/pg_cat10.diff"
  ok $? "CP-1-19: postgres: a v9 database upgraded to v11 equals a fresh v11 one"
  sed 's/^/#   /' "$T/pg_cat10.diff" | head -20
  is "$(sort "$T/pg_v9up.cat" | comm -23 "$T/pg_v9.sorted" -)" "" \
    "postgres: every v9 table, column, constraint and index is still there"
  is "$(pg_psql hand -c 'SELECT * FROM users' -c 'SELECT id, revision FROM authorization_revision')" "$v9_rows" \
    "postgres: the v9 rows and the authorization revision read the same on v11"
  is "$(pg_psql hand -c 'SELECT id, revision FROM pool_revision')" "1|1" \
    "CP-1-19: postgres: the pool revision row id=1, revision 1"
  grep -q "^constraint|pool_proxies|pool_proxies_secret_ref_fkey|f|FOREIGN KEY (secret_ref) REFERENCES pool_credentials(secret_ref)" \
    "$T/pg_fresh.cat"; ok $? "postgres: a proxy's secret_ref references pool_credentials"
  grep -q "^constraint|pool_routes|pool_routes_position_key|u|UNIQUE (\"position\")" "$T/pg_fresh.cat"; ok $? \
    "postgres: a route's position is unique"
  pg_psql hand -f "$STEP10/postgres.sql" >"$T/again10.log" 2>&1
  [ $? -ne 0 ]; ok $? "postgres: the v9 -> v10 step refuses a database at version 11"
  like "$(cat "$T/again10.log")" "schema_meta.version is 11, the v9 -> v10 step needs 9" "postgres: saying why"

  # v10 -> v11 (TunnelMesh presence, issue 27) on a v10 database with
  # rows, built by hand: a failure halfway, proxyhost-migrate, by hand.
  pg_v8 v10
  pg_psql v10 -f "$STEP/postgres.sql" >/dev/null && pg_psql v10 -f "$STEP10/postgres.sql" >/dev/null
  is "$?:$(pg_version v10)" "0:10" "postgres: a v10 database by hand"
  pg_psql v10 -c "INSERT INTO users VALUES ('alice', NULL, 1, 100, 100)" \
    -c "INSERT INTO pool_credentials VALUES ('s1', 1, 1, 1)" >/dev/null
  v10_rows_sql='SELECT * FROM users; SELECT * FROM pool_credentials; SELECT id, revision FROM pool_revision'
  v10_rows=$(pg_psql v10 -c "$v10_rows_sql")
  pg_catalog_dump v10 | sort >"$T/pg_v10.sorted"
  pg_v8 v10h
  pg_psql v10h -f "$STEP/postgres.sql" >/dev/null && pg_psql v10h -f "$STEP10/postgres.sql" >/dev/null
  pg_psql hand -f "$STEP11/postgres.sql" >"$T/again11.log" 2>&1
  [ $? -ne 0 ]; ok $? "postgres: the v10 -> v11 step refuses a database at version 11"
  like "$(cat "$T/again11.log")" "schema_meta.version is 11, the v10 -> v11 step needs 10" "postgres: saying why"
  pg_psql v7 -f "$STEP11/postgres.sql" >"$T/v7c.log" 2>&1
  [ $? -ne 0 ]; ok $? "postgres: the v10 -> v11 step refuses a database at version 7"
  pg_no_bump v10h
  pgm apply v10h; all_out="$all_out$out"
  is "$rc" 1 "TM-P2-29: postgres: the v10 -> v11 step failing halfway: exit 1"
  like "$out" "step v10 -> v11 (v0010_to_v0011/postgres.sql) failed and was rolled back (the database is still at version 10)" \
    "postgres: the message names the step"
  is "$(pg_version v10h):$(pg_psql v10h -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'tm_%'")" "10:0" \
    "postgres: version 10 and no presence table left"
  pg_psql v10h -c 'DROP TRIGGER no_bump ON schema_meta' -c 'DROP FUNCTION no_bump()' >/dev/null
  pg_psql v10h -f "$STEP11/postgres.sql" >/dev/null 2>&1
  is "$?:$(pg_version v10h)" "0:11" "postgres: the v10 -> v11 step by hand succeeds"
  pgm plan v10; all_out="$all_out$out"
  is "$out" "v10 -> v11 (migrations/incremental/v0010_to_v0011/postgres.sql)" "postgres: plan of v10: the presence step"
  pgm apply v10; all_out="$all_out$out"
  is "$rc:$(pg_version v10)" "0:11" "TM-P2-29: postgres: apply on v10: version 11"
  pg_catalog_dump v10 >"$T/pg_v10up.cat"
  diff "$T/pg_fresh.cat" "$T/pg_v10up.cat" >"$T/pg_cat11.diff"
  ok $? "TM-P2-29: postgres: a v10 database upgraded to v11 equals a fresh v11 one"
  sed 's/^/#   /' "$T/pg_cat11.diff" | head -20
  is "$(sort "$T/pg_v10up.cat" | comm -23 "$T/pg_v10.sorted" -)" "" \
    "postgres: every v10 table, column, constraint and index is still there"
  is "$(pg_psql v10 -c "$v10_rows_sql")" "$v10_rows" "postgres: the v10 rows and both revisions read the same on v11"
  grep -q "^constraint|tm_agent_presence|tm_agent_presence_node_id_fkey|f|FOREIGN KEY (node_id) REFERENCES tm_nodes(node_id) ON DELETE CASCADE" \
    "$T/pg_fresh.cat"; ok $? "TM-P2-29: postgres: an agent's presence goes with its node"
  grep -q "^index|tm_nodes|tm_nodes_lease|CREATE INDEX" "$T/pg_fresh.cat"; ok $? "postgres: nodes are indexed by lease"

  # Newer than this build.
  pg_psql fresh -c 'UPDATE schema_meta SET version = 12'
  pgm apply fresh; all_out="$all_out$out"
  is "$rc" 3 "postgres: apply on a newer database (v12): exit 3"
  like "$out" "newer than this build's 11: nothing was changed" "postgres: the refusal says why"
  is "$(pg_version fresh)" 12 "postgres: and nothing was changed"

  # The other ways to name the database; no password anywhere.
  mig status --postgres "$(pg_dsn up) password=$secret"; all_out="$all_out$out"
  is "$rc" 0 "postgres: --postgres DSN"
  mkdir -p "$T/pgetc"
  printf '[store_pg]\ndsn = %s password=%s\n' "$(pg_dsn up)" "$secret" >"$T/pgetc/proxyhost.ini"
  mig status --config "$T/pgetc/proxyhost.ini"; all_out="$all_out$out"
  is "$rc" 0 "postgres: --config: [store_pg] dsn"
  like "$out" "from: $T/pgetc/proxyhost.ini: [store_pg] dsn" "postgres: named by file and key, not value"
  # [store_pg] dsn_file, as the controller's production layout has it
  # (issue 24: --config read only dsn, so "migrate with the same DSN"
  # could not be followed).
  printf '%s password=%s \n# not read\n' "$(pg_dsn up)" "$secret" >"$T/pgetc/store_pg.dsn"
  chmod 600 "$T/pgetc/store_pg.dsn"
  printf '[store_pg]\ndsn_file = %s\nmigrate = check\n' "$T/pgetc/store_pg.dsn" >"$T/pgetc/dsnfile.ini"
  mig status --config "$T/pgetc/dsnfile.ini"; all_out="$all_out$out"
  is "$rc" 0 "postgres: --config: [store_pg] dsn_file (its first line)"
  like "$out" "from: $T/pgetc/dsnfile.ini: [store_pg] dsn_file" "postgres: named by file and key, not value"
  printf '[store_pg]\ndsn_file = %s/none.dsn\n' "$T/pgetc" >"$T/pgetc/nodsn.ini"
  mig status --config "$T/pgetc/nodsn.ini"; all_out="$all_out$out"
  is "$rc" 1 "postgres: --config: a dsn_file that cannot be read: exit 1"
  like "$out" "dsn_file $T/pgetc/none.dsn: No such file or directory" "postgres: naming the key and the file"
  printf '[store_pg]\ndsn = %s\ndsn_file = %s\n' "$(pg_dsn up)" "$T/pgetc/store_pg.dsn" >"$T/pgetc/both.ini"
  mig status --config "$T/pgetc/both.ini"; all_out="$all_out$out"
  is "$rc" 1 "postgres: --config: dsn and dsn_file both set: exit 1, as store_pg refuses it"
  like "$out" "set exactly one of dsn and dsn_file" "postgres: saying so"
  printf '[store_pg.main]\ndsn = %s\n' "$(pg_dsn up)" >"$T/pgetc/inst.ini"
  mig status --config "$T/pgetc/inst.ini" --store store_pg.main; all_out="$all_out$out"
  is "$rc" 0 "postgres: --config --store store_pg.main (a named instance)"
  PROXYHOST_MIGRATE_DSN="host=$PG_DIR port=1 user=postgres dbname=up password=$secret" mig status
  all_out="$all_out$out"
  is "$rc" 1 "postgres: a server that is not there: exit 1"
  like "$out" "cannot connect to PostgreSQL" "postgres: and says so"
  PROXYHOST_MIGRATE_DSN="host=$PG_DIR password='$secret" mig status
  all_out="$all_out$out"
  like "$out" "the PostgreSQL DSN cannot be parsed" "postgres: a malformed DSN is reported without its text"
  PROXYHOST_MIGRATE_DSN="postgresql://postgres:$secret@/nodb?host=$PG_DIR&port=$PG_PORT" mig status
  all_out="$all_out$out"
  is "$rc" 1 "postgres: a URI naming a database that does not exist: exit 1"
  unlike "$all_out" "$secret" "postgres: no output or message carries the DSN's password"
  unlike "$all_out" "user=postgres dbname" "postgres: nor the DSN"
  stop_pg
else
  skip "store_pg not built (configure --disable-module-store_pg)"
fi

# ----------------------------------------------------------- the command --
mig --help
is "$rc" 0 "--help: exit 0"
like "$out" "Exit: 0 done (status: current), 1 error, 2 usage, 3 refused" "--help documents the exit statuses"
mig frobnicate --sqlite x
is "$rc" 2 "an unknown command: exit 2"
env -u PROXYHOST_MIGRATE_DSN "$MIG" status >/dev/null 2>&1
is "$?" 2 "no database named: exit 2"
mig status --sqlite a --postgres b
is "$rc" 2 "two databases: exit 2"
done_testing

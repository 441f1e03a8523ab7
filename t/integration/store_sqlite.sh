#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# store_sqlite in a real proxyhost process (the unit test and the store
# contract suite drive it in the mock host):
#  - the first start creates the database, mode 0600, in WAL mode, and the
#    process is ready once the revision was read (TM-P1-26);
#  - /metrics has the two revision metrics, and the scrape passes the
#    prefix-scheme lint;
#  - a write by another process (the sqlite3 command) is seen by the
#    safety re-read (TM-P1-6); a missing or lower revision makes /readyz
#    fail, a good one again makes it pass (TM-P1-30);
#  - migrate = check refuses a v8 database (exit 4, naming
#    proxyhost-migrate), which proxyhost-migrate apply brings to v10;
#  - SIGTERM stops it cleanly.
. "$top_srcdir/t/lib/testlib.sh"

require_modules store_sqlite
SQLITE3=$(command -v sqlite3)
if [ -z "$SQLITE3" ]; then
  skip "sqlite3 is not installed (Debian package sqlite3)"
  done_testing
  exit 0
fi
sq() { "$SQLITE3" -bail -batch "$@"; }
PY=${PYTHON3:-python3}
MODS="$top_builddir/modules"

# conf FILE ADMIN DB MIGRATE
conf() {
  printf '[proxyhost]\nmodules = store_sqlite\nmodule_path = %s\n' "$MODS" >"$1"
  printf 'drain_timeout = 2s\n[admin]\nlisten = 127.0.0.1:%s\n' "$2" >>"$1"
  printf '[store_sqlite]\npath = %s\nmigrate = %s\n' "$3" "$4" >>"$1"
  printf 'revision_recheck = 100ms\n' >>"$1"
}
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
not_ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 503 ]; }
revision_is() {
  [ "$(metric "$(http_get "http://127.0.0.1:$1/metrics")" \
    tunnelmesh_authorization_revision)" = "$2" ]
}

DB="$T/authz.db"
admin=$(free_port)
conf "$T/a.ini" "$admin" "$DB" auto
[ ! -e "$DB" ]; ok $? "no database before the first start"
start_proxyhost "$T/a.ini"
pid=$PH_PID
wait_for ready "$admin"; ok $? "TM-P1-26 the first start creates the database and is ready"
is "$(stat -c %a "$DB")" 600 "the database file has mode 0600"
is "$(sq "$DB" 'PRAGMA journal_mode')" wal "the database is in WAL mode"
is "$(sq "$DB" 'SELECT version FROM schema_meta')" 11 "the schema is version 11"

http_get "http://127.0.0.1:$admin/metrics" >/dev/null
cp "$T/body" "$T/metrics.txt"
is "$(metric "$(cat "$T/metrics.txt")" tunnelmesh_authorization_revision)" 1 \
  "TM-OBS-7 tunnelmesh_authorization_revision is 1"
like "$(cat "$T/metrics.txt")" 'tunnelmesh_authorization_revision_poll_total{result="success"}' \
  "TM-OBS-8 the polls are counted"
"$PY" "$top_srcdir/t/lib/metrics_lint.py" "$T/metrics.txt" 600 store_sqlite \
  >"$T/lint.out" 2>&1
ok $? "the scrape passes the prefix-scheme lint"
[ $? = 0 ] || sed 's/^/# /' "$T/lint.out"
unlike "$(cat "$T/metrics.txt")" "$DB" "no database path in /metrics"

sq "$DB" 'UPDATE authorization_revision SET revision = revision + 1 WHERE id = 1'
wait_for revision_is "$admin" 2
ok $? "TM-P1-6 a write by another process is seen by the re-read"
sq "$DB" 'DELETE FROM authorization_revision WHERE id = 1'
wait_for not_ready "$admin"; ok $? "TM-P1-30 a missing revision row fails /readyz"
sq "$DB" "INSERT INTO authorization_revision VALUES (1, 1, 'x')"
sleep 0.3
not_ready "$admin"; ok $? "TM-P1-30 a revision lower than the last one keeps /readyz failing"
sq "$DB" 'UPDATE authorization_revision SET revision = 5 WHERE id = 1'
wait_for ready "$admin"; ok $? "a revision above the last one makes it ready again"
kill -TERM "$pid"
wait_exit "$pid" 10
is "$EXIT" 0 "SIGTERM stops it with exit 0"
is "$(stat -c %a "$DB")" 600 "the database keeps mode 0600"

# ---- migrate = check on an old database ----------------------------------
OLD="$T/old.db"
sq "$OLD" <"$top_srcdir/migrations/baseline/v0008.sql"
is "$(sq "$OLD" 'SELECT version FROM schema_meta')" 8 "a v8 database"
conf "$T/c.ini" "$(free_port)" "$OLD" check
"$PROXYHOST" -c "$T/c.ini" >"$T/check.log" 2>&1 &
cpid=$!
PIDS="$PIDS $cpid"
wait_exit "$cpid" 20
is "$EXIT" 4 "migrate = check refuses to start on a v8 database (exit 4)"
like "$(cat "$T/check.log")" "proxyhost-migrate" "and names proxyhost-migrate"
is "$(sq "$OLD" 'SELECT version FROM schema_meta')" 8 "the database stays at v8"
"$top_builddir/tools/proxyhost-migrate" apply --sqlite "$OLD" >"$T/mig.out" 2>&1
ok $? "proxyhost-migrate apply upgrades it"
cadmin=$(free_port)
conf "$T/c2.ini" "$cadmin" "$OLD" check
start_proxyhost "$T/c2.ini"
cpid=$PH_PID
wait_for ready "$cadmin"; ok $? "migrate = check accepts the upgraded database"
kill -TERM "$cpid"
wait_exit "$cpid" 10
is "$EXIT" 0 "and stops cleanly"

done_testing

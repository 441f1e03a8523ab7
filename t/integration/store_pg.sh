#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# store_pg against a real PostgreSQL (TM-TEST-25, TM-TEST-39): one private
# cluster for the whole run (t/lib/pg.sh), then
#  - test_pg_pool: the connection layer (queue, bound, deadlines,
#    reconnect after a restart, statements prepared again);
#  - test_store_pg_contract: the shared contract suite (the same cases as
#    store_sqlite), when it is built;
#  - test_store_pg: what only the cluster store does (two servers on one
#    database, the revision poll and its faults, an outage, the commit
#    outcome, secrets in the debug log);
#  - a proxyhost process: migrate = check refuses an old schema naming
#    proxyhost-migrate, and the sample section passes --check-config.
# Their TAP is merged into one plan. A missing PostgreSQL is a failure,
# never a skip.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules store_pg

if ! start_pg "$T/pg"; then
  ok 1 "TM-TEST-25: PostgreSQL starts for the cluster contract tests"
  done_testing
  exit 1
fi
ok 0 "TM-TEST-25: PostgreSQL starts for the cluster contract tests"

PH_TEST_PG_DSN="host=$PGHOST_DIR port=$PG_PORT user=postgres"
# Commands the C tests run (with sh -c) to stop and start the cluster.
pgvars="PG_DIR='$PG_DIR' PG_BIN='$PG_BIN' PG_PORT='$PG_PORT'"
PH_TEST_PG_STOP=". '$top_srcdir/t/lib/pg.sh'; $pgvars; pg_pause"
PH_TEST_PG_START=". '$top_srcdir/t/lib/pg.sh'; $pgvars; pg_resume"
PH_TEST_V8_SQL="$top_srcdir/migrations/baseline/v0008.sql"
PH_TEST_PG_LOG="$PG_DIR/server.log"
export PH_TEST_PG_DSN PH_TEST_PG_STOP PH_TEST_PG_START PH_TEST_V8_SQL PH_TEST_PG_LOG

# run_tap PROGRAM: its cases become ours, renumbered; its failure ours.
run_tap() {
  prog=$1
  name=$(basename "$prog")
  if [ ! -x "$prog" ]; then
    ok 1 "$name was built"
    return
  fi
  PH_TEST_LOG="$T/$name.log"
  export PH_TEST_LOG
  "$prog" >"$T/$name.tap" 2>"$T/$name.err"
  rc=$?
  while IFS= read -r line; do
    case $line in
    "ok "*) ok 0 "$name: ${line#ok * - }" ;;
    "not ok "*) ok 1 "$name: ${line#not ok * - }" ;;
    "#"*) echo "$line" ;;
    esac
  done <"$T/$name.tap"
  [ "$rc" = 0 ]; ok $? "$name exits 0"
  if [ "$rc" != 0 ]; then
    tail -20 "$T/$name.err" | sed 's/^/#   /'
    [ -f "$PH_TEST_LOG" ] && tail -40 "$PH_TEST_LOG" | sed 's/^/#   log: /'
  fi
}

run_tap "$top_builddir/t/unit/auth/test_pg_pool"
if [ -e "$top_builddir/t/unit/auth/test_store_pg_contract" ]; then
  run_tap "$top_builddir/t/unit/auth/test_store_pg_contract"
fi
run_tap "$top_builddir/t/unit/auth/test_store_pg"
run_tap "$top_builddir/t/unit/auth/test_tm_presence_pg"

# ---- a proxyhost process: migrate = check on a v8 database --------------
dsn=$(pg_new_db ph_v8)
pg_psql ph_v8 -f "$PH_TEST_V8_SQL" >/dev/null
cat >"$T/v8.ini" <<EOT
[proxyhost]
modules = store_pg
module_path = $top_builddir/modules
drain_timeout = 2s
[store_pg]
dsn = $dsn
EOT
out=$("$PROXYHOST" -c "$T/v8.ini" 2>&1); rc=$?
[ "$rc" -ne 0 ]; ok $? "migrate=check: proxyhost refuses to start on a v8 schema"
like "$out" "proxyhost-migrate" "migrate=check: the error names proxyhost-migrate"
is "$(pg_psql ph_v8 -c 'SELECT version FROM schema_meta')" 8 \
  "migrate=check: the database is left at version 8"

# ---- the cluster defaults (TM-P1-7) and the redacted DSN ------------------
printf '[proxyhost]\nmodules = store_pg\nmodule_path = %s\n[store_pg]\ndsn = %s password=Pw0rdInDsn\n' \
  "$top_builddir/modules" "$dsn" >"$T/defaults.ini"
out=$("$PROXYHOST" -c "$T/defaults.ini" --print-config 2>&1)
like "$out" "positive_ttl = 5m" "TM-P1-7: the allow TTL is 5 minutes by default"
like "$out" "negative_ttl = 3s" "TM-P1-7: the deny TTL is 3 seconds by default"
like "$out" "revision_poll = 2s" "TM-P1-7 / TM-P1-27: the revision poll is 2 seconds"
like "$out" "stale_allow = 5s" "TM-P1-31: the stale window is 5 seconds"
like "$out" "dsn = [redacted]" "--print-config redacts the DSN"
unlike "$out" "Pw0rdInDsn" "and never shows its password"

# ---- the sample passes --check-config as a drop-in ------------------------
mkdir -p "$T/etc/conf.d"
printf '[proxyhost]\nmodule_path = %s\ninclude = conf.d/*.ini\n' \
  "$top_builddir/modules" >"$T/etc/proxyhost.ini"
cp "$top_srcdir/modules/store_pg/store_pg.ini.sample" "$T/etc/conf.d/store_pg.ini"
out=$("$PROXYHOST" -c "$T/etc/proxyhost.ini" --check-config 2>&1); rc=$?
is "$rc" 0 "store_pg.ini.sample passes --check-config as a drop-in"
[ "$rc" = 0 ] || printf '# %s\n' "$out"
printf 'dsn = host=x password=Pw0rdInDsn\ndsn_file = /nonexistent\n' \
  >>"$T/etc/conf.d/store_pg.ini"
out=$("$PROXYHOST" -c "$T/etc/proxyhost.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "dsn and dsn_file together: a configuration error"
unlike "$out" "Pw0rdInDsn" "the error does not show the DSN"

stop_pg
done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The proxy pool's configuration end to end (issue 12): proxyhostctl
# against a real proxyhost running admin_api over store_sqlite (a real
# SQLite file) and over store_pg (a private PostgreSQL cluster), the
# worked example of docs/user-guide/controller.md ("The pool's
# configuration"): credential references, proxies, routes; list, show,
# update, drain, disable, enable, move, rotate, delete; every write one
# pool revision step; refusals with the field named and nothing changed;
# and the secrets rule (CP-8-4, CP-8-5): a password sent as a field the
# API does not take is refused, and is nowhere in the database, the
# answers or the log.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules admin_api pool_api

CTL="$top_builddir/tools/proxyhostctl"
SECRET=pw-Never-Stored-5b81
"$CTL" admin-token new "$T/admin.token" >/dev/null
ctl() { "$CTL" --admin "127.0.0.1:$port" --token-file "$T/admin.token" "$@"; }
# rev: the pool revision a list answers with.
rev() { ctl --json credential list | sed -n 's/.*"revision":\([0-9]*\).*/\1/p'; }
api() { # api METHOD PATH [BODY]: curl with the admin token; out, code
  out=$(curl -s -o "$T/body" -w '%{http_code}' -X "$1" \
    -H "Authorization: Bearer $(cat "$T/admin.token")" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} \
    "http://127.0.0.1:$port$2")
  code=$out
  out=$(cat "$T/body")
}

run_store() {
STORE=$1
echo "# ---- over $STORE"
port=$(free_port)
: >"$T/ph.log"
cat >"$T/run.ini" <<EOC
[proxyhost]
modules = $STORE, admin_api, pool_api
module_path = $top_builddir/modules
[admin]
listen = 127.0.0.1:$port
[admin_api]
store = $STORE
token_file = $T/admin.token
[pool_api]
store = $STORE
token_file = $T/admin.token
$2
EOC
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "$STORE: proxyhost with admin_api starts"

r0=$(rev)
[ -n "$r0" ]; ok $? "$STORE: the pool revision is readable ($r0)"
out=$(ctl credential add upstream-a); rc=$?
is "$rc" 0 "$STORE: credential add upstream-a"
like "$out" "credential_version 1" "$STORE: ... version 1"
is "$(rev)" $((r0 + 1)) "CP-1-19 $STORE: the write raised the pool revision by one"
out=$(ctl proxy add p1 --protocol http_connect --host proxy1.example.net --port 3128 \
  --groups residential,eu --capacity 50 --weight 5 --zone eu-west-1a --secret-ref upstream-a); rc=$?
is "$rc" 0 "$STORE: proxy add p1"
like "$out" "groups       eu,residential" "$STORE: ... with its groups, sorted"
like "$out" "admin_state  active" "$STORE: ... active"
ctl proxy add p2 --protocol socks5 --host 192.0.2.7 --port 1080 --groups residential --capacity 10 >/dev/null
ok $? "$STORE: proxy add p2 (no credentials)"
ctl route add r-web --position 100 --host '*.example.com' --ports 443 --group residential \
  --strategy round_robin --on-unavailable wait --wait-timeout-ms 2000 --sticky header:X-Session >/dev/null
ok $? "$STORE: route add r-web at 100"
ctl route add r-any --position 900 --host '*' --group residential --strategy least_used >/dev/null
ok $? "$STORE: route add r-any at 900"
r1=$(rev)
is "$r1" $((r0 + 5)) "$STORE: five writes, five revision steps"

out=$(ctl proxy list)
like "$out" "PROXY_ID" "$STORE: proxy list is a table"
like "$out" "p1 " "$STORE: ... with p1"
out=$(ctl route list)
first=$(printf '%s\n' "$out" | sed -n 2p)
like "$first" "r-web" "CP-1-19 $STORE: route list in position order"
out=$(ctl route move r-any 50); rc=$?
is "$rc" 0 "$STORE: route move r-any 50"
first=$(ctl route list | sed -n 2p)
like "$first" "r-any" "$STORE: ... now first"
ctl route move r-web 50 >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "$STORE: moving onto a taken position: exit 1"
like "$(cat "$T/err")" "409 conflict" "$STORE: ... 409 conflict"
out=$(ctl proxy drain p2); rc=$?
is "$rc:$(printf '%s' "$out" | grep -c 'admin_state  draining')" "0:1" "CP-1-19 $STORE: proxy drain"
out=$(ctl proxy disable p2)
like "$out" "admin_state  disabled" "$STORE: proxy disable"
out=$(ctl proxy enable p2)
like "$out" "admin_state  active" "$STORE: proxy enable"
out=$(ctl proxy update p1 --capacity 75)
like "$out" "capacity     75" "$STORE: proxy update changes the field given"
like "$out" "secret_ref   upstream-a" "$STORE: ... and keeps the others"
out=$(ctl route update r-web --enabled no --on-unavailable reject --wait-timeout-ms 0)
like "$out" "enabled      no" "$STORE: route update"
out=$(ctl credential rotate upstream-a)
like "$out" "credential_version 2" "CP-1-18 $STORE: credential rotate: version 2"
out=$(ctl proxy show p1)
like "$out" "credential_version 2" "CP-1-18 $STORE: ... which the proxy carries"
r2=$(rev)
is "$r2" $((r1 + 7)) "$STORE: seven more writes, seven steps"

# Refusals: the field named, nothing changed.
ctl proxy add p3 --protocol http --host Bad.Host --port 80 --groups g --capacity 1 >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "$STORE: a bad host: exit 1"
like "$(cat "$T/err")" "400 invalid: host must be" "$STORE: ... the detail names the field"
ctl proxy add p3 --protocol http --host h.example --port 80 --groups g --capacity 0 >/dev/null 2>"$T/err"
like "$(cat "$T/err")" "capacity must be 1..1000000" "$STORE: capacity 0 refused with its bounds"
ctl route add r-bad --position 5 --host '*' --group g --strategy s --on-unavailable wait >/dev/null 2>"$T/err"
like "$(cat "$T/err")" "wait_timeout" "CP-1-24 $STORE: wait without a wait_timeout refused"
ctl proxy add p4 --protocol http --host h.example --port 80 --groups g --capacity 1 --secret-ref nosuch >/dev/null 2>"$T/err"
like "$(cat "$T/err")" "404 not_found: secret_ref names no credential reference" "$STORE: an unknown secret_ref: 404"
ctl credential delete upstream-a >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "$STORE: deleting a credential in use: exit 1"
like "$(cat "$T/err")" "409 busy: proxies still use this credential" "$STORE: ... 409 busy"
is "$(rev)" "$r2" "$STORE: no refused write moved the revision"

# Secrets: material is never taken, never stored, never echoed.
api POST /v1/pool/credentials "{\"secret_ref\":\"upstream-b\",\"password\":\"$SECRET\"}"
is "$code" 400 "CP-8-5 $STORE: a credential with a password field: 400"
like "$out" "credential material is never taken here" "$STORE: ... saying why"
unlike "$out" "$SECRET" "$STORE: ... without echoing it"
api POST /v1/pool/proxies "{\"proxy_id\":\"p9\",\"protocol\":\"http\",\"host\":\"h.example\",\"port\":80,\"groups\":[\"g\"],\"capacity\":1,\"username\":\"u\",\"password\":\"$SECRET\"}"
is "$code" 400 "CP-8-5 $STORE: a proxy with username and password fields: 400"
api PATCH /v1/pool/proxies/p1 "{\"secret\":\"$SECRET\"}"
is "$code" 400 "CP-8-5 $STORE: a PATCH with a secret field: 400"
api POST /v1/pool/credentials "{\"secret_ref\":\"$SECRET:x\"}"
is "$code" 400 "CP-8-4 $STORE: a secret_ref that is not a reference: 400"
unlike "$out" "$SECRET" "$STORE: ... not echoed"
is "$(rev)" "$r2" "$STORE: none of them changed anything"
api GET /v1/pool/proxies?limit=1
like "$out" "\"more\":true" "$STORE: a page of one says more"
like "$out" "\"next_after\":\"p1\"" "$STORE: ... and where the next starts"
api GET /v1/pool/routes?after=51
like "$out" "\"rule_id\":\"r-web\"" "$STORE: routes after a position"
api GET /v1/pool/proxies/nosuch
is "$code" 404 "$STORE: a missing proxy: 404"

# Long keys stay whole: a 128-byte id next to its own 64-byte prefix.
long=$(printf 'q%.0s' $(seq 1 128)); short=$(printf 'q%.0s' $(seq 1 64))
ctl proxy add "$long" --protocol http --host h.example --port 80 --groups g --capacity 1 >/dev/null &&
  ctl proxy add "$short" --protocol http --host h.example --port 81 --groups g --capacity 1 >/dev/null
ok $? "$STORE: proxies with a 128-byte id and with its 64-byte prefix"
like "$(ctl proxy show "$long")" "port         80" "$STORE: show of the 128-byte id is that proxy, not its prefix"
ctl proxy delete "$long" >/dev/null && ctl proxy delete "$short" >/dev/null
ok $? "$STORE: ... and both delete"
api GET "/v1/pool/proxies/${long}q"
is "$code" 404 "$STORE: a 129-byte key matches no route"
r2=$((r2 + 4))

# Clean up: every delete a step.
ctl route delete r-web >/dev/null && ctl route delete r-any >/dev/null &&
  ctl proxy delete p1 >/dev/null && ctl proxy delete p2 >/dev/null &&
  ctl credential delete upstream-a >/dev/null
ok $? "$STORE: routes, proxies and the credential deleted"
is "$(rev)" $((r2 + 5)) "$STORE: five deletes, five steps"
out=$(ctl --json proxy list)
like "$out" "\"items\":[]" "$STORE: the pool is empty again"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "$STORE: proxyhost stops cleanly"
unlike "$(cat "$T/ph.log")" "$SECRET" "CP-8-5 $STORE: the password is not in the log"
}

if have_module store_sqlite; then
  run_store store_sqlite "[store_sqlite]
path = $T/pool.db"
  found=$(grep -c -a "$SECRET" "$T"/pool.db* 2>/dev/null | awk -F: '{s += $NF} END {print s + 0}')
  is "$found" 0 "CP-8-5 store_sqlite: the password is nowhere in the database files (db, wal)"
  grep -q -a "CREATE TABLE pool_proxies" "$T"/pool.db*; ok $? "store_sqlite: (the grep reads the database: its schema text is seen)"
else
  skip "store_sqlite not built"
fi
if have_module store_pg; then
  start_pg "$T/pg"; ok $? "PostgreSQL starts (a private cluster)"
  pg_new_db pool >/dev/null
  run_store store_pg "[store_pg]
dsn = $(pg_dsn pool)
migrate = auto"
  "$PG_BIN/pg_dump" -h "$PGHOST_DIR" -p "$PG_PORT" -U postgres -d pool >"$T/pool.sql" 2>/dev/null
  grep -q "pool_proxies" "$T/pool.sql"; ok $? "store_pg: the dump holds the pool's tables"
  is "$(grep -c "$SECRET" "$T/pool.sql")" 0 "CP-8-5 store_pg: the password is nowhere in the database"
  stop_pg
else
  skip "store_pg not built"
fi
done_testing

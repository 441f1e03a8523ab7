#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The control plane end to end, every part real (issue 12): a private
# redis-server (t/lib/redis.sh) and PostgreSQL cluster (t/lib/pg.sh), a
# controller proxyhost (store_pg + redis_ownership + controlplane_server +
# admin_api, mTLS with certificates made now by openssl), the pool added
# with proxyhostctl (credentials as secrets_dir files), and two gateway
# proxyhosts (controlplane_client, workers w1 in zone z1 and w2 in z2).
# Their views are read through GET /v1/cp/view by t/lib/cp_views.py,
# sampled every ~50 ms, with Redis's ownership beside them:
#  - not ready without a usable proxy (issue 23 item 4); then
#  - both ready, every proxy owned by exactly one of them, spread by zone
#    and capacity as assign.lua documents (CP-4-1, CP-1-16);
#  - w1 killed -9: its proxies reach w2 only after w1's session and lease
#    expired, never two owners (CP-4-6);
#  - w1 back: it gets its share again through the drain (issue 23 item 4);
#  - the controller restarted: new sessions, both ready throughout (CP-1-28);
#  - Redis stopped: the controller UNAVAILABLE and not ready, the gateways
#    keep their view until valid_until, then are not ready (CP-3-9);
#    Redis back (empty): everything recovers by itself;
#  - the same with store_sqlite (the embedded default);
#  - no credential password in any log, /metrics, Redis or pg_dump (CP-8-5).
# The short TTLs and leases below keep it within about a minute.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/cp_views.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg store_sqlite \
  admin_api pool_api controlplane_client

PY=/usr/bin/python3
CTL="$top_builddir/tools/proxyhostctl"
PW_A=pw-A-Never-Logged-5d21e0
PW_B=pw-B-Never-Logged-77f0aa

status_of() { http_get "http://127.0.0.1:$1/readyz" | head -1; }
ready() { [ "$(status_of "$1")" = 200 ]; }
not_ready() { [ "$(status_of "$1")" = 503 ]; }
# view_ids ADMIN: the proxy ids of a gateway's view, comma-separated.
view_ids() {
  curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" |
    "$PY" -c 'import json,sys; print(",".join(p["proxy_id"] for p in json.load(sys.stdin)["proxies"]))' 2>/dev/null
}
view_field() { # view_field ADMIN FIELD
  curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" |
    "$PY" -c "import json,sys; print(json.load(sys.stdin)['$2'])" 2>/dev/null
}
has_ids() { [ "$(view_ids "$1")" = "$2" ]; }
TAP_ON_FAIL='for f in ctl w1 w2; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'

# ---- the parts --------------------------------------------------------------
cpm_stores
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made with openssl: a CA, the controller's, w1's and w2's"
cpm_keys
( umask 077
  printf 'alice:%s\n' "$PW_A" >"$T/secrets/upstream-a"
  printf 'bob:%s\n' "$PW_B" >"$T/secrets/upstream-b" )

# The production layout of the guides: the same files with this test's
# paths pass --check-config (their timers are the production ones).
doc_block() { # FILE LINE: the first fenced block after the line LINE
  awk -v h="$2" 'index($0, h) == 1 { f = 1; next }
    f && /^```$/ { if (inb) exit; inb = 1; next }
    inb' "$top_srcdir/$1"
}
( umask 077; printf 'host=127.0.0.1 port=%s user=postgres dbname=pool\n' "$PG_PORT" >"$T/store_pg.dsn" )
doc_block docs/user-guide/controller.md '`/etc/proxyhost/controller.ini`:' | sed \
  -e "s|/etc/proxyhost/tls/controller.pem|$T/server.pem|" \
  -e "s|/etc/proxyhost/tls/controller.key|$T/server.key|" \
  -e "s|/etc/proxyhost/tls/ca.pem|$T/ca.pem|" -e "s|/etc/proxyhost/secrets|$T/secrets|" \
  -e "s|/etc/proxyhost/controller-ref.key|$T/ref.key|" \
  -e "s|/etc/proxyhost/store_pg.dsn|$T/store_pg.dsn|" \
  -e "s|/var/lib/proxyhost/admin.token|$T/admin.token|" >"$T/doc-controller.ini"
grep -q '^\[controlplane_server\]' "$T/doc-controller.ini"; ok $? "controller.md's production controller.ini found"
out=$("$PROXYHOST" -c "$T/doc-controller.ini" --set "proxyhost.module_path=$top_builddir/modules" --check-config 2>&1)
ok $? "... passes --check-config" || echo "# $out"
doc_block docs/user-guide/gateway.md '`/etc/proxyhost/gateway.ini`:' | sed \
  -e "s|/etc/proxyhost/gateway.pem|$T/worker.pem|" -e "s|/etc/proxyhost/gateway.key|$T/worker.key|" \
  -e "s|/etc/proxyhost/controller-ca.pem|$T/ca.pem|" >"$T/doc-gateway.ini"
grep -q '^\[controlplane_client\]' "$T/doc-gateway.ini"; ok $? "gateway.md's production gateway.ini found"
out=$("$PROXYHOST" -c "$T/doc-gateway.ini" --set "proxyhost.module_path=$top_builddir/modules" \
  -control-plane cp.example.org:7443 -cluster-id prod -worker-id w1 -instance-id w1-1 -zone z1 \
  --check-config 2>&1)
ok $? "... passes --check-config with the identity flags" || echo "# $out"

admin=$(free_port) cpp=$(free_port) gw1=$(free_port) gw2=$(free_port)
# The controller (the production layout of docs/user-guide/controller.md,
# with short TTLs): t/lib/cp_multi.sh's, store_pg over TCP on 127.0.0.1,
# mTLS, Redis's fresh state held (the default), no checkers' keys.
MODS=$top_builddir/modules
CPM_CHECKS=0 CPM_RO= CPM_EXTRA="tls.mode = mtls
tls.cert_file = $T/server.pem
tls.key_file = $T/server.key
tls.ca_file = $T/ca.pem
trust_domain = example.org
environment = prod" cpm_controller_ini "$admin" "$cpp" >"$T/controller.ini"
out=$("$PROXYHOST" -c "$T/controller.ini" --check-config 2>&1)
ok $? "the controller's configuration passes --check-config" || echo "# $out"
start_ctl() {
  "$PROXYHOST" -c "$1" >>"$T/ctl.log" 2>&1 &
  CTL_PID=$!
  PIDS="$PIDS $CTL_PID"
}
start_ctl "$T/controller.ini"
wait_long ready "$admin"; ok $? "CP-1-1 the controller is ready (store_pg, Redis, mTLS server)"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }
ctl credential add upstream-a; ok $? "proxyhostctl credential add upstream-a"
ctl credential add upstream-b; ok $? "proxyhostctl credential add upstream-b"
ctl route add web --position 100 --host '*' --group residential --strategy round_robin
ok $? "proxyhostctl route add web"

# The gateways: conf/gateway.ini's layout, each with its own certificate.
gateway_ini() { # gateway_ini NAME ADMIN CERT
  cat <<EOF
[proxyhost]
modules = controlplane_client
module_path = $top_builddir/modules
drain_timeout = 2s
[log]
level = debug
[admin]
listen = 127.0.0.1:$2
[controlplane_client]
tls.mode = mtls
tls.cert_file = $T/$3.pem
tls.key_file = $T/$3.key
tls.ca_file = $T/ca.pem
runtime_interval.min = 200ms
backoff.min = 200ms
backoff.max = 1s
rpc_timeout = 2s
EOF
}
gateway_ini w1 "$gw1" worker >"$T/w1.ini"
gateway_ini w2 "$gw2" w2 >"$T/w2.ini"
start_gw() { # start_gw NAME ZONE INSTANCE: sets GW_PID
  "$PROXYHOST" -c "$T/$1.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
    -worker-id "$1" -instance-id "$3" -zone "$2" >>"$T/$1.log" 2>&1 &
  GW_PID=$!
  PIDS="$PIDS $GW_PID"
}
out=$("$PROXYHOST" -c "$T/w1.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -worker-id w1 -instance-id w1-a -zone z1 --check-config 2>&1)
ok $? "a gateway's configuration passes --check-config" || echo "# $out"
start_gw w1 z1 w1-a; W1=$GW_PID
start_gw w2 z2 w2-a; W2=$GW_PID
held() { [ "$(view_field "$1" held)" = True ]; }
wait_long held "$gw1"; ok $? "CP-1-28 w1 has its first snapshot"
wait_long held "$gw2"; ok $? "... and w2"
is "$(view_ids "$gw1")" "" "w1's view: no proxies yet"
not_ready "$gw1"
ok $? "issue 23 item 4: without a usable proxy it is not ready (/readyz 503)"

# ---- the pool, the assignment (CP-4-1, CP-1-16) ----------------------------
# assign.lua: a proxy goes to a live worker in its zone first, then to any,
# the least owned capacity first, in proxy id order. p1 p2 (z1) -> w1 (20);
# p3 (z2) -> w2 (10); p4 (no zone, 30) -> w2, the smaller (40); p5 (no
# zone) -> w1 (20 < 40).
add_pool() {
  ctl proxy add p1 --protocol http_connect --host 192.0.2.1 --port 3128 \
    --groups residential --capacity 10 --zone z1 --secret-ref upstream-a &&
  ctl proxy add p2 --protocol http_connect --host 192.0.2.2 --port 3128 \
    --groups residential --capacity 10 --zone z1 --secret-ref upstream-b &&
  ctl proxy add p3 --protocol socks5 --host 192.0.2.3 --port 1080 \
    --groups residential --capacity 10 --zone z2 --secret-ref upstream-a &&
  ctl proxy add p4 --protocol http_connect --host 192.0.2.4 --port 3128 \
    --groups residential --capacity 30 --secret-ref upstream-b &&
  ctl proxy add p5 --protocol socks5 --host 192.0.2.5 --port 1080 \
    --groups residential --capacity 5
}
add_pool; ok $? "proxyhostctl proxy add p1..p5 (two credentials, zones z1, z2, none)"
wait_long has_ids "$gw1" p1,p2,p5; ok $? "CP-1-16 w1 (z1) holds p1 p2 (zone z1) and p5 (least capacity)"
wait_long has_ids "$gw2" p3,p4; ok $? "CP-1-16 w2 (z2) holds p3 (zone z2) and p4"
wait_long ready "$gw1" && wait_long ready "$gw2"
ok $? "CP-1-28 both ready (/readyz 200) with their proxies"
sampling steady w1="$gw1" w2="$gw2"
sleep 1
unsample steady
checks steady "$T/steady.jsonl" disjoint
checks steady-ready "$T/steady.jsonl" ready w1 w2
v=$(curl -s -m 5 "http://127.0.0.1:$gw1/v1/cp/view")
unlike "$v" "$PW_A" "CP-8-5 /v1/cp/view shows no credential"
unlike "$v" "192.0.2." "... and no upstream address"
like "$v" '"usable_until_ms"' "/v1/cp/view: each proxy's usable_until"
is "$(status_of "$gw1" | head -1)" 200 "(w1 still ready)"

# ---- w1 killed: its proxies move only after session and lease (CP-4-6) ------
sampling kill --redis "$REDIS_PORT" --cluster c1 w2="$gw2"
kill -9 "$W1"; wait "$W1" 2>/dev/null
P='ph:cp:{c1}:'
printf '{' >"$T/leases.json"
sep=
for p in p1 p2 p5; do
  u=$(redis_cli "$T/redis" HGET "${P}owner:$p" until)
  w=$(redis_cli "$T/redis" HGET "${P}owner:$p" worker)
  [ "$w" = w1 ] || echo "# $p owned by '$w' right after the kill"
  printf '%s"%s": %s' "$sep" "$p" "${u:-0}" >>"$T/leases.json"
  sep=', '
done
echo '}' >>"$T/leases.json"
grep -q '"p1": [1-9]' "$T/leases.json"; ok $? "w1's leases read from Redis after the kill"
wait_long has_ids "$gw2" p1,p2,p3,p4,p5
ok $? "CP-4-6 w2 holds every proxy once w1's session and lease expired"
# ... and the sampler has seen it too (its next sample).
sampled() { for p in p1 p2 p5; do grep -q "\"proxy_id\": \"$p\"" "$T/kill.jsonl" || return 1; done; }
wait_long sampled
unsample kill
checks kill "$T/kill.jsonl" moved w1 w2 "$T/leases.json"
checks kill-ready "$T/kill.jsonl" ready w2

# w1 back as a new instance: it registers and gets its share back through
# the drain (issue 23 item 4): w2's snapshots mark p1 p2 p5 draining, and
# each moves once w2 reported it idle; never usable by both.
sampling rejoin w1="$gw1" w2="$gw2"
start_gw w1 z1 w1-b; W1=$GW_PID
wait_long has_ids "$gw1" p1,p2,p5
ok $? "issue 23 item 4: w1 restarted (instance w1-b) gets p1 p2 p5 back"
wait_long has_ids "$gw2" p3,p4; ok $? "... and w2 keeps p3 p4"
wait_long ready "$gw1"; ok $? "w1 is ready"
unsample rejoin
checks rejoin "$T/rejoin.jsonl" disjoint-usable
checks rejoin-ready "$T/rejoin.jsonl" ready w2

# ---- the controller restarted (CP-1-28) ------------------------------------
metric_of() { http_get "http://127.0.0.1:$1/metrics" | grep -v '^#' | grep -F "$2 " | awk '{print $2}' | head -1; }
r1=$(metric_of "$gw1" proxyhost_cp_gateway_reconnects_total)
r2=$(metric_of "$gw2" proxyhost_cp_gateway_reconnects_total)
sampling restart w1="$gw1" w2="$gw2"
kill -TERM "$CTL_PID"; wait_exit "$CTL_PID" 10
is "$EXIT" 0 "the controller stops (SIGTERM) with both streams open"
# CP-3-19 (issue 24 item 13), while the control plane is down: the
# gateways cannot compensate by asking the databases. Neither holds a
# PostgreSQL or Redis client library in its process, and with the
# controller gone neither server has a client but this test's own query.
no_db_client_lib() { ! grep -qE 'libpq\.so|libhiredis' "/proc/$1/maps"; }
no_db_client_lib "$W1" && no_db_client_lib "$W2"
ok $? "CP-3-19 control plane down: no PostgreSQL or Redis client library in either gateway"
is "$(redis_cli "$T/redis" CLIENT LIST | grep -vc 'cmd=client')" 0 \
  "CP-3-19 control plane down: Redis has no client (no gateway asks it)"
is "$(pg_psql postgres -Atc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" 0 \
  "CP-3-19 control plane down: PostgreSQL has no client (no gateway asks it)"
start_ctl "$T/controller.ini"
wait_long ready "$admin"; ok $? "the controller is ready again"
reconnected() { [ "$(metric_of "$1" proxyhost_cp_gateway_reconnects_total)" -gt "$2" ]; }
running_on_new() { reconnected "$@" && [ "$(metric_of "$1" 'proxyhost_cp_gateway_session_state{state="running"}')" = 1 ]; }
wait_long running_on_new "$gw1" "${r1:-0}"; ok $? "w1 runs a new session"
wait_long running_on_new "$gw2" "${r2:-0}"; ok $? "w2 runs a new session"
unsample restart
checks restart "$T/restart.jsonl" ready w1 w2
checks restart-disjoint "$T/restart.jsonl" disjoint
checks restart-usable "$T/restart.jsonl" disjoint-usable
is "$(view_ids "$gw1"):$(view_ids "$gw2")" p1,p2,p5:p3,p4 "the ownership survived the restart (Redis keeps it)"

# ---- Redis stopped (CP-3-9, CP-1-28), then back ----------------------------
stop_redis "$T/redis"
mkdir -p "$T/gen"
"$PY" -m grpc_tools.protoc -I "$top_srcdir/proto" -I/usr/include \
  --python_out="$T/gen" --grpc_python_out="$T/gen" \
  controlplane/v1/controlplane.proto >"$T/protoc.log" 2>&1
code=$("$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpp" register "$T" \
  "$T/worker.pem" "$T/worker.key" "$T/ca.pem" w1 2>"$T/py.err" | sed -n 's/^VALUE code //p')
is "$code" UNAVAILABLE "Redis stopped: RegisterWorker answers UNAVAILABLE"
wait_long not_ready "$admin"; ok $? "Redis stopped: the controller is not ready"
# From here no snapshot can be built (a send in flight at the stop has
# landed): each view must stay as it is until it expires.
sampling redis w1="$gw1" w2="$gw2"
wait_long not_ready "$gw1"; ok $? "CP-3-9 w1 is not ready once its view expired (or its proxies' usable_until passed)"
wait_long not_ready "$gw2"; ok $? "CP-3-9 w2 is not ready once its view expired"
held_not_live() { [ "$(view_field "$1" held)" = True ] && [ "$(view_field "$1" live)" = False ]; }
wait_long held_not_live "$gw2"; ok $? "w2 still holds its view, without candidates once it expired (CP-3-9)"
unsample redis
checks redis "$T/redis.jsonl" expiry w1 w2
t_restart=$(date +%s%3N)
restart_redis "$T/redis"; ok $? "redis-server restarts (empty: no persistence)"
wait_long ready "$admin"; ok $? "Redis back: the controller is ready by itself"
wait_long ready "$gw1"; ok $? "Redis back: w1 ready by itself"
wait_long ready "$gw2"; ok $? "Redis back: w2 ready by itself"
all5() { [ "$(printf '%s,%s\n' "$(view_ids "$gw1")" "$(view_ids "$gw2")" | tr , '\n' | grep . | sort | tr '\n' ' ')" = "p1 p2 p3 p4 p5 " ]; }
wait_long all5; ok $? "CP-4-1 Redis back: every proxy owned again, by one of them"
# hold_fresh_state (on, the default): a Redis that lost the cluster's
# state gives no proxy for one ownership_lease (8 s), the longest a
# gateway could still use an ownership Redis forgot.
t_all=$(date +%s%3N)
[ $((t_all - t_restart)) -ge 8000 ]
ok $? "CP-4-1 Redis back without its state: nothing assigned for one ownership_lease ($((t_all - t_restart)) ms)"
sampling after w1="$gw1" w2="$gw2"
sleep 1
unsample after
checks after "$T/after.jsonl" disjoint
checks after-usable "$T/after.jsonl" disjoint-usable
checks after-ready "$T/after.jsonl" ready w1 w2

# ---- the secrets (CP-8-5) --------------------------------------------------
for n in ctl:$admin w1:$gw1 w2:$gw2; do
  http_get "http://127.0.0.1:${n#*:}/metrics" >"$T/metrics-${n%%:*}"
done
redis_dump "$T/redis" >"$T/redis.dump" 2>&1
grep -q ':owner:p1' "$T/redis.dump"; ok $? "(the Redis dump holds the ownership)"
pg_as_server "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$PG_PORT" -U postgres pool >"$T/pool.sql" 2>"$T/pg_dump.err"
grep -q 'upstream-a' "$T/pool.sql"; ok $? "(pg_dump holds the credential references)"
grep -c 'level=debug\|"debug"' "$T/ctl.log" "$T/w1.log" "$T/w2.log" | grep -q ':0$'
is $? 1 "(all three logs are at debug level)"

# ---- the same with store_sqlite (the embedded default) ----------------------
kill -TERM "$CTL_PID"; wait_exit "$CTL_PID" 10
is "$EXIT" 0 "the PostgreSQL controller stops"
sed -e 's/^modules = store_pg,/modules = store_sqlite,/' -e 's/^store = store_pg/store = store_sqlite/' \
    -e "s|^\[store_pg\]|[store_sqlite]|" -e "s|^dsn = .*|path = $T/pool.db|" \
    -e 's/^revision_poll = 100ms/revision_recheck = 100ms/' \
    "$T/controller.ini" >"$T/controller-sqlite.ini"
out=$("$PROXYHOST" -c "$T/controller-sqlite.ini" --check-config 2>&1)
ok $? "the store_sqlite controller passes --check-config" || echo "# $out"
start_ctl "$T/controller-sqlite.ini"
wait_long ready "$admin"; ok $? "the store_sqlite controller is ready"
ctl credential add upstream-a && ctl credential add upstream-b &&
  ctl route add web --position 100 --host '*' --group residential --strategy round_robin &&
  add_pool
ok $? "the same pool in SQLite with proxyhostctl"
wait_long all5; ok $? "CP-4-1 store_sqlite: every proxy owned, by one of them"
sampling sqlite w1="$gw1" w2="$gw2"
sleep 1
unsample sqlite
checks sqlite "$T/sqlite.jsonl" disjoint
checks sqlite-ready "$T/sqlite.jsonl" ready w1 w2

kill -TERM "$CTL_PID" "$W1" "$W2"
wait_exit "$CTL_PID" 10; is "$EXIT" 0 "the controller stops cleanly"
wait_exit "$W1" 10; is "$EXIT" 0 "w1 stops cleanly"
wait_exit "$W2" 10; is "$EXIT" 0 "w2 stops cleanly"
redis_dump "$T/redis" >>"$T/redis.dump" 2>&1
for f in ctl.log w1.log w2.log metrics-ctl metrics-w1 metrics-w2 redis.dump pool.sql; do
  [ -s "$T/$f" ]; ok $? "($f was written)"
done
for f in "$T"/ctl.log "$T"/w1.log "$T"/w2.log "$T"/metrics-* "$T"/redis.dump \
    "$T"/pool.sql "$T"/pool.db*; do
  grep -qaF -e "$PW_A" -e "$PW_B" "$f"; is $? 1 "CP-8-5 no credential password in ${f##*/}"
done

done_testing

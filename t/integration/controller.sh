#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The controller end to end (issue 12): a real proxyhost running
# controlplane_server over redis_ownership (a private redis-server,
# t/lib/redis.sh) and store_sqlite (a real SQLite file), the pool written
# with proxyhostctl through admin_api, and a worker played by Debian's
# python3-grpcio (t/lib/cp_client.py, stubs generated now):
# Register -> Watch -> ACK -> Runtime -> Outcomes and every fence's gRPC
# status; mTLS with certificates made by openssl now; Redis stopped and
# restarted; and the secrets rule: no proxy password and no reference key
# in the debug log, /metrics, Redis or the SQLite file (CP-8-4, CP-8-5).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api

CTL="$top_builddir/tools/proxyhostctl"
PASSWORD=pw-Upstream-Never-Logged-93c1
controller_up "$PASSWORD"
REFKEY_HEX=$(od -An -tx1 "$T/ref.key" | tr -d ' \n')
out=$("$PROXYHOST" -c "$T/ctl.ini" --check-config 2>&1)
ok $? "the test's controller configuration passes --check-config"
start_proxyhost "$T/ctl.ini"
wait_for healthy "$admin"; ok $? "the controller starts"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl credential add upstream-a >/dev/null; ok $? "proxyhostctl credential add upstream-a"
ctl proxy add p1 --protocol http_connect --host 192.0.2.1 --port 3128 \
  --groups residential --capacity 10 --zone z1 --secret-ref upstream-a >/dev/null
ok $? "proxyhostctl proxy add p1 (with credentials)"
ctl proxy add p2 --protocol socks5 --host 192.0.2.2 --port 1080 \
  --groups residential --capacity 5 --secret-ref upstream-a >/dev/null
ok $? "proxyhostctl proxy add p2 (the same credential)"
ctl route add r1 --position 100 --host '*' --group residential --strategy round_robin >/dev/null
ok $? "proxyhostctl route add r1"
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_for ready; ok $? "CP-1-1 ready: the authority, the store and the server"

run_py flow "$cpp" flow "$T" "$PASSWORD"
n=$(grep -c '^RESULT' "$T/py-flow.out")
CHECKSUM=$(sed -n 's/^VALUE checksum //p' "$T/py-flow.out")
[ ${#CHECKSUM} = 64 ]; ok $? "the flow reported the snapshot checksum"
[ "$n" -ge 30 ]; ok $? "every check of the flow ran ($n)"

# ---- deltas on the acknowledged snapshot (CP-1-2, CP-3-15) ----------------
run_py delta "$cpp" delta "$T" "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token"
grep -q '^VALUE deltas [1-9]' "$T/py-delta.out"; ok $? "the delta scenario ran to its end"

m=$(http_get "http://127.0.0.1:$admin/metrics")
like "$m" 'proxyhost_cp_controller_rpcs_total{method="RegisterWorker",code="OK"}' \
  "metrics: RPCs by method and code"
like "$m" 'proxyhost_cp_controller_snapshots_sent_total' "metrics: snapshots sent"
d=$(printf '%s\n' "$m" | sed -n 's/^proxyhost_cp_controller_deltas_sent_total //p')
[ "${d:-0}" -ge 1 ]; ok $? "metrics: deltas sent ($d)"
# issue 26 (i26-scale): the bytes each kind cost, for the snapshot traffic
# a pool's changes cause (make bench-controller-scale reads them)
bf=$(printf '%s\n' "$m" | sed -n 's/^proxyhost_cp_controller_snapshot_bytes_total{kind="full"} //p')
bd=$(printf '%s\n' "$m" | sed -n 's/^proxyhost_cp_controller_snapshot_bytes_total{kind="delta"} //p')
[ "${bf:-0}" -gt 0 ] && [ "${bd:-0}" -gt 0 ]
ok $? "metrics: snapshot bytes sent, full ($bf) and delta ($bd)"
python3 "$top_srcdir/t/lib/metrics_lint.py" "$T/body" 5000 cp_controller cp_redis \
  redis_ownership store_sqlite admin_api >"$T/lint.out" 2>&1
ok $? "metrics: in the prefix scheme"
[ -s "$T/lint.out" ] && sed 's/^/#   /' "$T/lint.out" | head -10

# ---- Redis stopped, then back ---------------------------------------------
stop_redis "$T/redis"
code=$("$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpp" once "$T" | sed -n 's/^VALUE code //p')
is "$code" UNAVAILABLE "Redis stopped: RegisterWorker UNAVAILABLE"
notready() { ! ready; }
wait_for notready; ok $? "Redis stopped: not ready"
restart_redis "$T/redis"; ok $? "redis-server restarts on its port"
wait_for ready; ok $? "Redis back: ready again"
code=$("$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpp" once "$T" | sed -n 's/^VALUE code //p')
is "$code" OK "Redis back: RegisterWorker OK"

# ---- secrets -----------------------------------------------------------
http_get "http://127.0.0.1:$admin/metrics" >"$T/metrics"
# SIGTERM with a live Watch and an outcome stream still open.
"$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpp" hold "$T" >"$T/hold.out" 2>"$T/hold.err" &
hold_pid=$!
PIDS="$PIDS $hold_pid"
wait_for grep -q 'VALUE started' "$T/hold.out"; ok $? "a worker holds a live Watch"
redis_dump "$T/redis" >"$T/redis.dump" 2>&1
HOLD_SUM=$(sed -n 's/^VALUE checksum //p' "$T/hold.out")
grep -q ':w:w3:refs' "$T/redis.dump"; ok $? "(Redis holds w3's issued reference)"
grep -qi "$HOLD_SUM" "$T/redis.dump"; is $? 1 "CP-8-5 the reference in Redis is not the snapshot checksum"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the controller stops cleanly with streams open"
wait_exit "$hold_pid" 10
grep -q 'VALUE ended' "$T/hold.out"; ok $? "the worker's stream ended with the controller"
grep -q 'level=debug\|"debug"\|DEBUG\|debug' "$T/ph.log"; ok $? "(the log is at debug level)"
for f in "$T/ph.log" "$T/metrics" "$T/redis.dump" "$T"/pool.db*; do
  [ -f "$f" ] || continue
  grep -qa "$PASSWORD" "$f"; is $? 1 "CP-8-5 the proxy password is not in ${f##*/}"
  grep -qai "$CHECKSUM" "$f"; is $? 1 "CP-8-5 no snapshot checksum (it covers passwords) in ${f##*/}"
  grep -qai "$REFKEY_HEX" "$f"; is $? 1 "CP-8-5 the reference key (hex) is not in ${f##*/}"
done

# ---- mTLS: the SPIFFE identity -------------------------------------------
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"; ok $? "certificates made with openssl"
( cd "$T" && umask 077 &&
  for x in td:spiffe://other.org/prod/worker/w1 env:spiffe://example.org/staging/worker/w1; do
    n=${x%%:*} san=${x#*:}
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$n.key" \
      -out "$n.csr" -subj "/CN=cp-test-$n" >/dev/null 2>&1 &&
    printf 'subjectAltName=URI:%s\nextendedKeyUsage=clientAuth\n' "$san" >"$n.cnf" &&
    openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
      -out "$n.pem" -days 2 -extfile "$n.cnf" >/dev/null 2>&1 || exit 1
  done ); ok $? "certificates of another trust domain and another environment"
admin2=$(free_port) cpt=$(free_port)
sed -e "s/^listen = 127.0.0.1:$admin/listen = 127.0.0.1:$admin2/" \
    -e "s/^listen = 127.0.0.1:$cpp/listen = 127.0.0.1:$cpt/" \
    -e "s|^path = $T/pool.db|path = $T/pool2.db|" \
    -e "s/^tls.mode = disabled/tls.mode = mtls\ntls.cert_file = $(echo "$T" | sed 's|/|\\/|g')\/server.pem\ntls.key_file = $(echo "$T" | sed 's|/|\\/|g')\/server.key\ntls.ca_file = $(echo "$T" | sed 's|/|\\/|g')\/ca.pem\ntrust_domain = example.org\nenvironment = prod/" \
    "$T/ctl.ini" >"$T/mtls.ini"
: >"$T/ph.log"
start_proxyhost "$T/mtls.ini"
wait_for healthy "$admin2"; ok $? "the controller starts with tls.mode = mtls"
reg() { # reg CERT KEY WORKER: the status code name of one RegisterWorker
  "$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpt" register "$T" \
    "$1" "$2" "$T/ca.pem" "$3" 2>>"$T/py-mtls.err" | sed -n 's/^VALUE code //p'
}
is "$(reg "$T/worker.pem" "$T/worker.key" w1)" OK \
  "CP-1-11 CP-8-2 mTLS: the certificate's SPIFFE id spiffe://example.org/prod/worker/w1 registers as w1"
is "$(reg "$T/worker.pem" "$T/worker.key" w2)" PERMISSION_DENIED \
  "CP-1-11 CP-8-2 mTLS: w1's certificate naming worker w2: PERMISSION_DENIED"
is "$(reg "$T/td.pem" "$T/td.key" w1)" PERMISSION_DENIED \
  "CP-1-11 CP-8-2 mTLS: another trust domain: PERMISSION_DENIED"
is "$(reg "$T/env.pem" "$T/env.key" w1)" PERMISSION_DENIED \
  "CP-1-11 CP-8-2 mTLS: another environment: PERMISSION_DENIED"
is "$(reg "$T/other.pem" "$T/other.key" w1)" UNAVAILABLE \
  "CP-8-1 mTLS: a certificate of another CA never reaches a handler"
is "$(reg "" "" w1)" UNAVAILABLE "CP-8-1 mTLS: no client certificate is refused"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the mTLS controller stops cleanly" ||
  grep -v 'level=debug' "$T/ph.log" | tail -30 | sed 's/^/#   /' # a sanitizer's report, say

# ---- a replaced session's live stream ends at once (CP-2-8) --------------
# Its rounds are 60 s apart here: the stream must end when the new
# registration is made, not at its next look at Redis.
: >"$T/ph.log"
start_proxyhost "$T/ctl.ini" --set "store_sqlite.path=$T/pool3.db" \
  --set controlplane_server.watch_poll_interval=60s \
  --set redis_ownership.ownership_lease=90s \
  --set controlplane_server.refresh_before=60s \
  --set controlplane_server.snapshot_validity=120s \
  --set controlplane_server.max_stale_age=3m
wait_for healthy "$admin"; wait_for ready; ok $? "a controller with 60 s watch rounds is ready"
"$PY" "$top_srcdir/t/lib/cp_client.py" "$T/gen" "$cpp" replace "$T" 10 >"$T/replace.out" 2>"$T/replace.err"
is "$(sed -n 's/^VALUE first //p' "$T/replace.out")" snapshot "the first snapshot came on w4's stream"
is "$(sed -n 's/^VALUE register //p' "$T/replace.out")" OK "w4 registers again (a new session)"
is "$(sed -n 's/^VALUE ended //p' "$T/replace.out")" FAILED_PRECONDITION \
  "CP-2-8 the replaced session's stream ends FAILED_PRECONDITION at once (within 10 s; its next round is 60 s away)"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "... and that controller stops cleanly"

# ---- configuration refusals ----------------------------------------------
sed "s/^listen = 127.0.0.1:$cpp/listen = 192.0.2.10:$cpp/" "$T/ctl.ini" >"$T/bad.ini"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "CP-1-12 plaintext on a non-loopback address is refused by --check-config"
sed 's/^min_snapshot_interval = 0s/runtime_interval = 20s/' "$T/ctl.ini" >"$T/bad2.ini"
out=$("$PROXYHOST" -c "$T/bad2.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "runtime_interval not below session_ttl / 2 is refused"
like "$out" runtime_interval "... naming the key"
for bad in "refresh_before = 60s:refresh_before" "trust_domain = a/b:trust_domain" \
    "assign_interval = 30s:assign_interval" "secrets_dir = relative:secrets_dir"; do
  line=${bad%:*} key=${bad##*:}
  sed "s|^secrets_dir = .*|&\n$line|" "$T/ctl.ini" >"$T/bad3.ini"
  out=$("$PROXYHOST" -c "$T/bad3.ini" --check-config 2>&1)
  [ $? != 0 ]; ok $? "--check-config refuses $line"
  like "$out" "$key" "... naming $key"
done
# A max_stale_age the refresh cannot keep up with (issue 23 item 15): a
# healthy stream sends a fresh snapshot snapshot_validity - refresh_before
# (+ one watch_poll_interval) after the last one (here 60s - 20s + 100ms),
# and a gateway stops routing max_stale_age after it obtained that one.
out=$("$PROXYHOST" -c "$T/ctl.ini" --set controlplane_server.max_stale_age=4s --check-config 2>&1)
[ $? != 0 ]; ok $? "issue 23 item 15 --check-config refuses max_stale_age 4s (below the 40.1 s refresh interval)"
like "$out" "controlplane_server.max_stale_age: " "... naming max_stale_age"
like "$out" "snapshot_validity - refresh_before + watch_poll_interval (40100ms)" "... and the keys of the rule, with its value"
out=$("$PROXYHOST" -c "$T/ctl.ini" --set controlplane_server.max_stale_age=40100ms --check-config 2>&1)
[ $? != 0 ]; ok $? "issue 23 item 15 ... also max_stale_age equal to the interval"
out=$("$PROXYHOST" -c "$T/ctl.ini" --set controlplane_server.max_stale_age=41s --check-config 2>&1)
ok $? "issue 23 item 15 max_stale_age 41s (above the interval) passes" || echo "# $out"
# Rules across the controller and redis_ownership (conf_peer_int).
for bad in "redis_ownership.session_ttl=20s:controlplane_server.session_ttl:must equal [redis_ownership] session_ttl" \
    "redis_ownership.runtime_ttl=5s:controlplane_server.runtime_interval:runtime_ttl" \
    "redis_ownership.ownership_lease=15s:controlplane_server.refresh_before:ownership_lease" \
    "redis_ownership.ownership_lease=24s:controlplane_server.refresh_before:plus allocation_safety_margin must be below [redis_ownership] ownership_lease (24000ms)"; do
  set_=${bad%%:*} rest=${bad#*:}
  key=${rest%%:*} text=${rest#*:}
  out=$("$PROXYHOST" -c "$T/ctl.ini" --set "$set_" --check-config 2>&1)
  [ $? != 0 ]; ok $? "--check-config refuses --set $set_ (the controller's keys say otherwise)"
  like "$out" "$key: " "... naming $key"
  like "$out" "$text" "... saying why ($text)"
done
out=$("$PROXYHOST" -c "$T/ctl.ini" --set redis_ownership.session_ttl=30s \
  --set controlplane_server.session_ttl=30s --check-config 2>&1)
ok $? "the same session_ttl in both sections passes" || echo "# $out"
# cluster_id across the two (issue 12, conf_peer_str): the controller
# checks RegisterWorker's cluster_id against its own and the authority
# keeps its keys under ph:cp:{cluster_id}:, so a controller whose authority
# serves another cluster would hand out that cluster's ownership.
out=$("$PROXYHOST" -c "$T/ctl.ini" --check-config 2>&1)
ok $? "the same cluster_id (c1) in both sections passes" || echo "# $out"
out=$("$PROXYHOST" -c "$T/ctl.ini" --set redis_ownership.cluster_id=c2 --check-config 2>&1)
[ $? != 0 ]; ok $? "--check-config refuses an authority serving another cluster_id"
like "$out" "controlplane_server.cluster_id: " "... naming the controller's cluster_id"
like "$out" "must equal [redis_ownership] cluster_id" "... and the authority's section and key"
like "$out" '("c1" here, "c2" there)' "... with both values"
grep -v '^cluster_id = ' "$T/ctl.ini" >"$T/nocluster.ini"
out=$("$PROXYHOST" -c "$T/nocluster.ini" --check-config 2>&1)
ok $? "cluster_id unset in both sections (default and default) passes" || echo "# $out"
out=$("$PROXYHOST" -c "$T/nocluster.ini" --set controlplane_server.cluster_id=c1 --check-config 2>&1)
[ $? != 0 ]; ok $? "an unset authority cluster_id is its default, refused against c1"
like "$out" '("c1" here, "default" there)' "... compared with the default"
out=$("$PROXYHOST" -c "$T/nocluster.ini" --set redis_ownership.cluster_id=c1 --check-config 2>&1)
[ $? != 0 ]; ok $? "an unset controller cluster_id is its default, refused against c1"
like "$out" "controlplane_server.cluster_id: " "... naming the controller's key"
: >"$T/ph.log"
start_proxyhost "$T/ctl.ini" --set redis_ownership.cluster_id=c2
wait_exit "$PH_PID" 10
[ "$EXIT" != timeout ] && [ "$EXIT" != 0 ]; ok $? "start-up refuses it too (exit $EXIT)"
like "$(cat "$T/ph.log")" "must equal [redis_ownership] cluster_id" "... with the same reason"
# authority = NAME: that instance's section is the one compared, not the
# default instance's (which says c1 here, as the controller does).
sed 's/^modules = store_sqlite, redis_ownership, /&redis_ownership.eu, /' "$T/ctl.ini" >"$T/eu.ini"
cat >>"$T/eu.ini" <<EOC
authority = redis_ownership.eu
[redis_ownership.eu]
address = 127.0.0.1:$REDIS_PORT
cluster_id = eu
EOC
out=$("$PROXYHOST" -c "$T/eu.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "authority = redis_ownership.eu serving eu is refused for cluster_id c1"
like "$out" "must equal [redis_ownership.eu] cluster_id" "... naming that instance's section"
out=$("$PROXYHOST" -c "$T/eu.ini" --set controlplane_server.cluster_id=eu --check-config 2>&1)
ok $? "... and the controller serving eu passes" || echo "# $out"
# An empty `authority` is the only provider, whatever its instance is
# called: with [redis_ownership.eu] the only one loaded, no section of the
# default name exists for --check-config to compare, so the controller asks
# the provider itself at start (cp.authority minor 1) and refuses.
sed -e 's/^modules = store_sqlite, redis_ownership, /modules = store_sqlite, redis_ownership.eu, /' \
  -e 's/^\[redis_ownership\]$/[redis_ownership.eu]/' -e 's/^cluster_id = c1$/cluster_id = eu/' \
  "$T/ctl.ini" | sed '/^\[controlplane_server\]$/,$ s/^cluster_id = eu$/cluster_id = c1/' >"$T/eu-only.ini"
grep -q '^\[redis_ownership\]' "$T/eu-only.ini"
[ $? != 0 ]; ok $? "a controller whose only authority is the named instance redis_ownership.eu (cluster eu)"
: >"$T/ph.log"
start_proxyhost "$T/eu-only.ini"
wait_exit "$PH_PID" 10
[ "$EXIT" != timeout ] && [ "$EXIT" != 0 ]; ok $? "start-up refuses it for cluster_id c1 (exit $EXIT)"
like "$(cat "$T/ph.log")" 'the authority serves another cluster: refusing to start' "... saying why"
like "$(cat "$T/ph.log")" 'cluster_id=c1 authority_cluster_id=eu' "... with both values"
: >"$T/ph.log"
sed '/^\[controlplane_server\]$/,$ s/^cluster_id = c1$/cluster_id = eu/' "$T/eu-only.ini" >"$T/eu-ok.ini"
start_proxyhost "$T/eu-ok.ini"
wait_for healthy "$admin"; ok $? "... and starts when the controller serves eu too"
kill "$PH_PID" 2>/dev/null; wait_exit "$PH_PID" 10
sed 's/^tls.mode = disabled/tls.mode = mtls/' "$T/ctl.ini" >"$T/bad4.ini"
out=$("$PROXYHOST" -c "$T/bad4.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "CP-8-1 mtls without its certificate files is refused"
grep -v '^tls.mode' "$T/ctl.ini" >"$T/bad5.ini"
out=$("$PROXYHOST" -c "$T/bad5.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "CP-1-11 without tls.mode the controller is mTLS: it asks for its files"
like "$out" "tls.cert_file: is required with tls.mode = mtls" "... naming tls.cert_file"
chmod 0644 "$T/ref.key"
out=$("$PROXYHOST" -c "$T/ctl.ini" --check-config 2>&1)
[ $? != 0 ]; ok $? "a reference_key_file readable by others is refused"
chmod 0600 "$T/ref.key"
# conf/controller.ini (mTLS, its certificates at the documented places)
# is run with conf/gateway.ini by cp_conf_pair.sh.

done_testing

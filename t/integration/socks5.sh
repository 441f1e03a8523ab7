#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The socks5 frontend in a real proxyhost process with the real direct
# connector, a DNS server on loopback (t/lib/dnsd.py) that answers,
# refuses or hangs, a local HTTP target and a local TLS target: curl
# through it (socks5h and socks5), every reply code of the mapping table
# from a real condition, 32 concurrent CONNECTs with one hanging DNS name,
# cancellation freeing the dial slot, hostile handshakes next to a good
# client, username/password through auth_local, the access log and the
# metrics. Requirement IDs are cited next to the checks.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"

require_modules socks5 direct

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }
# metric_is ADMIN NAME VALUE: the sample NAME equals VALUE now.
metric_is() { [ "$(metric "$(metrics_of "$1")" "$2")" = "$3" ]; }

# ---- targets --------------------------------------------------------------
start_dnsd ok.test=127.0.0.1 tls.test=127.0.0.1
ok $? "DNS test server on loopback"

start_file_server "$T/www" "hello through socks5"; ok $? "HTTP target on 127.0.0.1"
http_port=$FILE_SERVER_PORT

start_tls_target tls.test
ok $? "TLS target with a certificate made now"

$PY "$top_srcdir/t/lib/socks5_probe.py" blackhole --port-file "$T/bh.port" \
  --seconds 120 >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/bh.port"
bh_port=$(cat "$T/bh.port")
refused_port=$(free_port) # nothing listens there
deny_port=$(free_port)

# ---- proxyhost A: the default shape -----------------------------------------
admin=$(free_port)
sport=$(free_port)
cat >"$T/a.ini" <<EOC
[proxyhost]
modules = socks5, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[socks5]
listen = 127.0.0.1:$sport
handshake_timeout = 2s
[direct]
resolver_servers = 127.0.0.1:$dns_port
deny_ports = $deny_port
connect_timeout = 1s
EOC
start_proxyhost "$T/a.ini"
A_PID=$PH_PID
wait_for healthy "$admin"; ok $? "proxyhost with socks5 + direct is healthy"
wait_for port_open "$sport"; ok $? "socks5 listens"
P=127.0.0.1:$sport

# curl, remote DNS (socks5h, ATYP domain) and local (socks5, ATYP IPv4).
out=$("$CURL" -s -m 10 --noproxy '' --socks5-hostname "$P" \
  "http://ok.test:$http_port/hello.txt" 2>&1)
is "$out" "hello through socks5" \
  "curl socks5h: the name is resolved by the proxy (TM-PROTO-3, TM-PROTO-6)"
out=$("$CURL" -s -m 10 --noproxy '' --socks5 "$P" \
  "http://127.0.0.1:$http_port/hello.txt" 2>&1)
is "$out" "hello through socks5" "curl socks5 with an IPv4 address"
out=$("$CURL" -s -m 10 --noproxy '' --socks5-hostname "$P" \
  --cacert "$T/cert.pem" "https://tls.test:$tls_port/" 2>&1)
like "$out" "s_server" "TLS through the tunnel, certificate verified"

# Every reply code of the mapping table from a real condition.
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:$refused_port" --atyp ipv4)
is "$r" 0x05 "refused port -> 0x05 connection refused (TM-PROTO-34)"
r=$($PROBE reply --proxy "$P" --target "nx.test:80")
is "$r" 0x04 "unresolvable name -> 0x04 host unreachable (TM-PROTO-33)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:$deny_port" --atyp ipv4)
is "$r" 0x02 "policy deny (deny_ports) -> 0x02 not allowed (TM-PROTO-31)"
r=$($PROBE reply --proxy "$P" --target "$P" --atyp ipv4)
is "$r" 0x02 "the proxy's own listener -> 0x02 (announced on net.listener)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:$admin" --atyp ipv4)
is "$r" 0x02 "the host's admin listener is refused too (announced by the host)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:$bh_port" --atyp ipv4)
is "$r" 0x06 "connect timeout against a blackhole -> 0x06 (TM-PROTO-35)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:80" --atyp ipv4 --cmd 2)
is "$r" 0x07 "BIND -> 0x07 command not supported (TM-PROTO-7)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:80" --atyp ipv4 --cmd 3)
is "$r" 0x07 "UDP ASSOCIATE -> 0x07 command not supported (TM-PROTO-7)"
r=$($PROBE reply --proxy "$P" --target "127.0.0.1:80" --atyp 9)
is "$r" 0x08 "unknown ATYP -> 0x08 address type not supported"
r=$($PROBE reply --proxy "$P" --target "ok.test:80" --auth alice:x)
is "$r" method-0xff "only username/password offered, auth = none -> 0xFF"

# 32 concurrent CONNECTs, one whose DNS hangs: the other 31 complete
# while it still waits (TM-TEST-31, TM-P0-13).
r=$($PROBE concurrent --proxy "$P" --target "ok.test:$http_port" \
  --path /hello.txt --hang "stuck.hang.test:80" --n 32)
is "$r" "completed=31 hang_pending=1" \
  "32 concurrent CONNECTs: 31 complete while one DNS lookup hangs"

# Hostile handshakes next to a good client (TM-SEC-1).
r=$($PROBE malformed --proxy "$P" --target "ok.test:$http_port" \
  --path /hello.txt)
for c in garbage wrong_version zero_methods truncated_greeting \
  oversized_name empty_name bad_request_version random; do
  like "$r" "$c=ok" "malformed handshake '$c' closed without success"
done
like "$r" "good_client=ok" "and the concurrent good client was not disturbed"
running "$A_PID"; ok $? "the process survived the hostile input"

# Metrics (TM-OBS-1, TM-OBS-2, TM-OBS-10..13, TM-OBS-18).
m=$(metrics_of "$admin")
like "$m" 'tunnelmesh_stream_open_total{component="client",result="success",error_class="ok",open_mode="strict"}' \
  "tunnelmesh_stream_open_total exported"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="failure",error_class="connection_refused",open_mode="strict"}')
is "$v" 1 "the refused open counted with error_class=connection_refused"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="rejected",error_class="forbidden",open_mode="strict"}')
is "$v" 3 "policy denials (port, own listener, admin) counted as rejected/forbidden"
like "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="socks5_handshake",result="success",scope="local"}' \
  "socks5_handshake stage histogram exported"
like "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="ttfb",result="success",scope="local"}' \
  "ttfb stage histogram exported (TM-OBS-21)"
like "$m" 'proxyhost_stream_active{component="client"} 0' \
  "no active stream left"
unlike "$m" "ok.test" "no target host in any label (TM-SEC-8)"
printf '%s\n' "$m" | sed 1d >"$T/metrics.txt"
"$PROMTOOL" check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1
ok $? "promtool accepts the exposition"

# The access log: one line per stream, no target host at info level.
log=$(cat "$T/ph.log")
like_re "$log" 'msg=access stream=[0-9]+ client=127.0.0.1:[0-9]+ user=- method=CONNECT status=succeeded status_code=0 result=success bytes_up=[0-9]+ bytes_down=[0-9]+ duration_us=[0-9]+ end=closed' \
  "an access log line per stream: stream, client, user, command, reply, bytes, duration"
like "$log" "status=connection_refused status_code=5 result=failure" "failures too"
like "$log" "duration_us=" "duration in microseconds (TM-OBS-19)"
unlike "$log" "ok.test" "no target host in the info log"
unlike "$log" "nx.test" "not even for failures"

kill -TERM "$A_PID"
wait_exit "$A_PID" 10; is "$EXIT" 0 "SIGTERM: drained and exited 0"

# ---- proxyhost B: one dial slot, no queue -------------------------------------
admin=$(free_port)
sport=$(free_port)
cat >"$T/b.ini" <<EOC
[proxyhost]
modules = socks5, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[socks5]
listen = 127.0.0.1:$sport
[direct]
resolver_servers = 127.0.0.1:$dns_port
max_concurrent_dials = 1
max_pending_dials = 0
dns_timeout = 4s
open_timeout = 4s
EOC
: >"$T/ph.log"
start_proxyhost "$T/b.ini"
B_PID=$PH_PID
wait_for healthy "$admin"
wait_for port_open "$sport"
P=127.0.0.1:$sport
$PROBE hold --proxy "$P" --target "slot.hang.test:80" --seconds 30 \
  >"$T/hold.out" 2>&1 &
HOLD=$!
PIDS="$PIDS $HOLD"
wait_for metric_is "$admin" proxyhost_direct_dials_active 1
ok $? "a hanging open takes the only dial slot"
r=$($PROBE reply --proxy "$P" --target "ok.test:$http_port")
is "$r" 0x01 "queue full -> 0x01 general failure at once (TM-PROTO-35, TM-P0-3)"
kill "$HOLD"
wait_for metric_is "$admin" proxyhost_direct_dials_active 0
ok $? "the client leaving cancels the open and frees the slot (TM-P0-5)"
r=$($PROBE get --proxy "$P" --target "ok.test:$http_port" --path /hello.txt)
like "$r" " 200 " "the freed slot serves the next client"
r=$($PROBE reply --proxy "$P" --target "late.hang.test:80" --timeout 15)
is "$r" 0x06 "open timeout -> 0x06 TTL expired (TM-PROTO-35)"
kill -TERM "$B_PID"
wait_exit "$B_PID" 10; is "$EXIT" 0 "B exits 0"

# ---- proxyhost C: username/password through auth_local ---------------------
if have_auth_local; then
  hash=$(password_hash s3cret-pw)
  admin=$(free_port)
  sport=$(free_port)
  password_config socks5 "$sport" "127.0.0.1:$admin" "$hash" >"$T/c.ini"
  : >"$T/ph.log"
  start_proxyhost "$T/c.ini"
  C_PID=$PH_PID
  wait_for healthy "$admin"; ok $? "auth = password with auth_local starts"
  wait_for port_open "$sport"
  out=$("$CURL" -s -m 10 --noproxy '' \
    --proxy "socks5h://alice:s3cret-pw@127.0.0.1:$sport" \
    "http://ok.test:$http_port/hello.txt" 2>&1)
  is "$out" "hello through socks5" "RFC 1929: right password accepted"
  "$CURL" -s -m 10 --noproxy '' \
    --proxy "socks5h://alice:wrong@127.0.0.1:$sport" \
    "http://ok.test:$http_port/hello.txt" >/dev/null 2>&1
  rc=$?
  [ "$rc" -ne 0 ]; ok $? "RFC 1929: wrong password refused (curl exit $rc)"
  r=$($PROBE reply --proxy "127.0.0.1:$sport" --target "ok.test:80" --auth bob:s3cret-pw)
  is "$r" auth-refused "an unknown user is refused"
  r=$($PROBE reply --proxy "127.0.0.1:$sport" --target "ok.test:80")
  is "$r" method-0xff "no-auth is not accepted when auth = password"
  unlike "$(cat "$T/ph.log")" "s3cret-pw" "the password never reaches the log"
  unlike "$(cat "$T/ph.log")" "bob" "an unverified user name is not logged"
  like "$(cat "$T/ph.log")" "user=alice method=CONNECT status=succeeded" \
    "the authenticated user is in its access line"
  kill -TERM "$C_PID"
  wait_exit "$C_PID" 10; is "$EXIT" 0 "C exits 0"
else
  skip "auth_local or proxyhost-passwd not built (configure --disable-module-auth_local)"
fi

# auth = password without an authorizer: a configuration error (the
# module's check), before anything starts, naming the key and the service.
sport=$(free_port)
password_config socks5 "$sport" "" >"$T/d.ini"
"$PROXYHOST" -c "$T/d.ini" >"$T/d.out" 2>&1
rc=$?
is "$rc" 2 "auth = password without an authorizer: configuration error (exit 2)"
like "$(cat "$T/d.out")" 'd.ini:9: socks5.auth: password needs a module that provides the "authorizer" service' \
  "with a clear message naming file:line and key"

done_testing

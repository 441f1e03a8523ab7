#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The frontends honour a connector's leases (connector.h minor 3, issue
# 13): a real proxyhost with socks5 (and a named [socks5.public]) and
# http_proxy (and [http_proxy.slow]) over the leasecon test connector
# (t/modules/leasecon.c), which dials 127.0.0.1 itself and counts what the
# frontends tell each lease. curl and t/lib/lease_target.py play the
# clients and the target. Through SOCKS5, an HTTP CONNECT tunnel and HTTP
# forwarding with keep-alive (two requests on one client connection reuse
# one upstream: one lease, one end): first_byte once per stream that got
# a byte of the target's, end exactly once per upstream, with its how: a
# clean close (CLOSED), a target that resets or stops mid-response
# (TARGET_ERROR), the idle timeout while a stream is in progress
# (TIMEOUT; an idle kept-alive connection expiring is CLOSED), a client
# that leaves early (CLIENT_ERROR); a reload between two requests (the
# kept upstream ends CLOSED, the next one is new); the drain cutting a
# tunnel (no lease left at destroy, none ended twice: leasecon aborts on
# that). The listener is the frontend's instance name and a request
# header reaches the connector during open(). These are the pool's
# inputs for its outcomes (CP-5-4 RESPONSE_HEADERS, CP-5-5 TUNNEL) and
# its proxies' capacity.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
MODS="$top_builddir/modules"
LEASECON="$top_builddir/t/modules/.libs/leasecon.so"
LT="$PY $top_srcdir/t/lib/lease_target.py"

require_modules socks5 http_proxy

# ---- the target --------------------------------------------------------------
$LT serve --port-file "$T/target.port" --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; ok $? "lease target on 127.0.0.1"
tp=$(cat "$T/target.port")
URL="http://127.0.0.1:$tp"

# ---- proxyhost over leasecon -------------------------------------------------
admin=$(free_port)
sport=$(free_port)
pport=$(free_port)
hport=$(free_port)
slow=$(free_port)
cat >"$T/l.ini" <<EOC
[proxyhost]
modules = socks5, socks5.public, http_proxy, http_proxy.slow, $LEASECON
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[socks5]
listen = 127.0.0.1:$sport
idle_timeout = 1s
[socks5.public]
listen = 127.0.0.1:$pport
idle_timeout = 1s
[http_proxy]
listen = 127.0.0.1:$hport
idle_timeout = 1s
[http_proxy.slow]
listen = 127.0.0.1:$slow
idle_timeout = 60s
[leasecon]
header = X-Session
EOC
start_proxyhost "$T/l.ini"
PID=$PH_PID
TAP_ON_FAIL='tail -20 "$T/ph.log"'
wait_for healthy "$admin"; ok $? "socks5, http_proxy and their named instances on leasecon"

# What leasecon counted, on one line: given, first_byte, the ends by how,
# live; listener and header separately.
lease_json() { "$CURL" -s -m 5 "http://127.0.0.1:$admin/v1/leasecon"; }
counts() {
  lease_json | $PY -c 'import json, sys
d = json.load(sys.stdin); e = d["end"]
print("given=%d fb=%d closed=%d target_error=%d timeout=%d client_error=%d live=%d"
      % (d["given"], d["first_byte"], e["closed"], e["target_error"],
         e["timeout"], e["client_error"], d["leases"]))' 2>/dev/null
}
last() { # last listener|header|unsupported
  lease_json | $PY -c 'import json, sys
v = json.load(sys.stdin)[sys.argv[1]]
print("null" if v is None else v)' "$1" 2>/dev/null
}

# The expected totals, raised by each step.
G=0 FB=0 CL=0 TE=0 TO=0 CE=0
want() { echo "given=$G fb=$FB closed=$CL target_error=$TE timeout=$TO client_error=$CE live=0"; }
settled() { [ "$(counts)" = "$(want)" ]; }
# expect NAME: the counts reach the expected totals (bounded wait) and
# are exactly those: no second end, no first_byte too many. After a
# mismatch the totals follow what was counted, so that each later step
# is judged on its own.
expect() {
  wait_long settled
  got=$(counts)
  is "$got" "$(want)" "$1" || resync "$got"
}
resync() {
  for kv in $1; do
    v=${kv#*=}
    case $kv in
    given=*) G=$v ;; fb=*) FB=$v ;; closed=*) CL=$v ;;
    target_error=*) TE=$v ;; timeout=*) TO=$v ;; client_error=*) CE=$v ;;
    esac
  done
}

c5() { "$CURL" -s -m 10 --socks5 "127.0.0.1:$1" "$URL$2"; }

# ---- SOCKS5 ------------------------------------------------------------------
body=$(c5 "$sport" /hello)
is "$body" "hello through a lease" "socks5: the target's answer through a leased stream"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 1))
expect "socks5: a clean close: one lease, first_byte once, ended CLOSED"
is "$(last listener)" socks5 "socks5: the listener is the instance's name"
is "$(last header)" null "socks5: no request headers"

body=$(c5 "$pport" /hello)
is "$body" "hello through a lease" "socks5.public: through the named instance"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 1))
expect "socks5.public: one lease, ended CLOSED"
is "$(last listener)" socks5.public "socks5.public: the listener is socks5.public"

c5 "$sport" /reset >/dev/null
G=$((G + 1)) FB=$((FB + 1)) TE=$((TE + 1))
expect "socks5: a target reset mid-response ends it TARGET_ERROR"

c5 "$sport" /silent >/dev/null
G=$((G + 1)) TO=$((TO + 1))
expect "socks5: the idle timeout ends a silent stream TIMEOUT, no first_byte"

out=$($LT client --via socks5 --proxy "$sport" --port "$tp" --path /drip \
  --read 4096 --rst)
like "$out" "got " "socks5: a client reads part of a long answer and resets"
G=$((G + 1)) FB=$((FB + 1)) CE=$((CE + 1))
expect "socks5: the client leaving early ends it CLIENT_ERROR"

err=$("$CURL" -sS -m 10 --socks5-hostname "127.0.0.1:$sport" \
  "http://localhost:$tp/hello" 2>&1)
like "$err" "(2)" "socks5: a target leasecon refuses: reply 0x02 (not allowed)"
expect "socks5: a refused open gives no lease"

# ---- HTTP CONNECT ------------------------------------------------------------
body=$("$CURL" -s -m 10 -p -x "http://127.0.0.1:$hport" \
  --proxy-header "X-Session: tun" "$URL/hello")
is "$body" "hello through a lease" "CONNECT: through a leased tunnel"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 1))
expect "CONNECT: a clean close: first_byte once, ended CLOSED"
is "$(last listener)" http_proxy "CONNECT: the listener is http_proxy"
is "$(last header)" tun "CONNECT: the CONNECT head's X-Session reaches the connector"

"$CURL" -s -m 10 -p -x "http://127.0.0.1:$hport" "$URL/reset" >/dev/null
G=$((G + 1)) FB=$((FB + 1)) TE=$((TE + 1))
expect "CONNECT: a target reset ends it TARGET_ERROR"

"$CURL" -s -m 10 -p -x "http://127.0.0.1:$hport" "$URL/silent" >/dev/null
G=$((G + 1)) TO=$((TO + 1))
expect "CONNECT: the idle timeout ends it TIMEOUT"

out=$($LT client --via connect --proxy "$hport" --port "$tp" --path /drip \
  --read 4096 --rst)
like "$out" "got " "CONNECT: a client reads part of a long answer and resets"
G=$((G + 1)) FB=$((FB + 1)) CE=$((CE + 1))
expect "CONNECT: the client leaving early ends it CLIENT_ERROR"

# ---- HTTP forwarding ---------------------------------------------------------
out=$("$CURL" -s -m 10 -x "http://127.0.0.1:$hport" -H "X-Session: abc" \
  -w ' %{num_connects}\n' "$URL/hello" "$URL/hello")
is "$(printf '%s' "$out" | tr '\n' '|')" \
  "hello through a lease| 1|hello through a lease| 0" \
  "forward: two requests on one client connection"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 1))
expect "forward: one upstream reused: one lease, first_byte once, one end CLOSED"
is "$(last listener)" http_proxy "forward: the listener is http_proxy"
is "$(last header)" abc "forward: X-Session: abc reaches the connector as abc"

code=$("$CURL" -s -m 10 -o /dev/null -w '%{http_code}' \
  -x "http://127.0.0.1:$hport" "$URL/reset")
is "$code" 200 "forward: the head came before the reset"
G=$((G + 1)) FB=$((FB + 1)) TE=$((TE + 1))
expect "forward: a response cut by a reset ends it TARGET_ERROR"

"$CURL" -s -m 10 -o /dev/null -x "http://127.0.0.1:$hport" "$URL/cut"
G=$((G + 1)) FB=$((FB + 1)) TE=$((TE + 1))
expect "forward: a response cut short by a clean close ends it TARGET_ERROR"

code=$("$CURL" -s -m 10 -o /dev/null -w '%{http_code}' \
  -x "http://127.0.0.1:$hport" "$URL/silent")
is "$code" 504 "forward: a silent target: 504 after the idle timeout"
G=$((G + 1)) TO=$((TO + 1))
expect "forward: the idle timeout of a request in progress ends it TIMEOUT"

out=$($LT client --via forward --proxy "$hport" --port "$tp" --path /drip \
  --read 4096 --rst)
like "$out" "got " "forward: a client reads part of a long response and resets"
G=$((G + 1)) FB=$((FB + 1)) CE=$((CE + 1))
expect "forward: the client leaving early ends it CLIENT_ERROR"

out=$($LT client --via forward --proxy "$hport" --port "$tp" --path /hello \
  --read 1 --hold 8)
like "$out" "eof" "forward: an idle kept-alive client connection is closed by the proxy"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 1))
expect "forward: the keep-alive expiry of a reusable upstream ends it CLOSED"

# A reload between two requests on one connection: the kept upstream is
# not reused (the policy may have changed), it ends CLOSED, a new one
# serves the second request.
req="GET http://127.0.0.1:$tp/hello HTTP/1.1\\r\\nHost: 127.0.0.1:$tp\\r\\n\\r\\n"
$PY "$top_srcdir/t/lib/hostile_origin.py" client --port "$slow" --timeout 10 \
  --ready "$T/reload.ready" --go "$T/reload.go" --go-timeout 20 \
  "$req" "$req" >"$T/reload.out" 2>&1 &
rpid=$!
wait_long test -s "$T/reload.ready"
G=$((G + 1)) FB=$((FB + 1))
want_live() { echo "given=$G fb=$FB closed=$CL target_error=$TE timeout=$TO client_error=$CE live=1"; }
live_one() { [ "$(counts)" = "$(want_live)" ]; }
wait_long live_one
is "$(counts)" "$(want_live)" "reload: the first request's upstream is kept, its lease live"
kill -HUP "$PID"
wait_long grep -q "configuration reloaded" "$T/ph.log"
ok $? "reload: SIGHUP reloaded the configuration"
touch "$T/reload.go"
wait_exit "$rpid" 30
is "$(grep -c 'HTTP/1.1 200' "$T/reload.out")" 2 "reload: both requests answered"
G=$((G + 1)) FB=$((FB + 1)) CL=$((CL + 2))
expect "reload: the kept upstream ended CLOSED, the second one too when the client left"
is "$(last listener)" http_proxy.slow "reload: the listener is http_proxy.slow"

is "$(last unsupported)" 0 \
  "every open asked for a lease (leasecon refuses one that does not)"

# ---- the drain cuts a tunnel -------------------------------------------------
$LT client --via socks5 --proxy "$sport" --port "$tp" --path /drip \
  --read 100000000 >"$T/drain.out" 2>&1 &
dpid=$!
PIDS="$PIDS $dpid"
G=$((G + 1)) FB=$((FB + 1))
wait_long live_one
is "$(counts)" "$(want_live)" "drain: a long tunnel holds a lease"
kill -TERM "$PID"
wait_exit "$PID" 20
is "$EXIT" 0 "SIGTERM: the drain deadline cut the tunnel, proxyhost exited 0"
unlike "$(cat "$T/ph.log")" "leases never ended" \
  "drain: every lease was ended before the connector was destroyed"
unlike "$(cat "$T/ph.log")" "Aborted" "no lease was ended twice (leasecon aborts)"

done_testing

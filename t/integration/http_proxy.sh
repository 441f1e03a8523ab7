#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The http_proxy frontend in a real proxyhost process with the real direct
# connector, a DNS server on loopback (t/lib/dnsd.py), an HTTP/1.1 origin
# (t/lib/http_target.py: keep-alive, chunked responses, echoed bodies) and
# a TLS target made at test time: curl through it (absolute-form and
# CONNECT), keep-alive towards the client and upstream reuse, chunked
# bodies both ways, hop-by-hop removal, every failure status from a real
# condition, oversized heads next to a good client, Proxy-Authorization
# through auth_local, the access log and the metrics. Requirement IDs are
# cited next to the checks.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
TARGET="$PY $top_srcdir/t/lib/http_target.py"
MODS="$top_builddir/modules"

require_modules http_proxy direct

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }
# hcurl ARGS...: curl through the proxy $HP, quiet, bounded.
hcurl() { "$CURL" -s -m 10 -x "http://127.0.0.1:$HP" "$@"; }
# status ARGS...: the HTTP status curl saw (CONNECT's for -p).
status() { hcurl -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
connect_status() { hcurl -p -o /dev/null -w '%{http_connect}' "$@" 2>/dev/null; }

# ---- targets --------------------------------------------------------------
start_dnsd ok.test=127.0.0.1 tls.test=127.0.0.1
ok $? "DNS test server on loopback"

$TARGET serve --port-file "$T/http.port" --lifetime 300 --slow-ms 1500 \
  >"$T/http.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/http.port"; ok $? "HTTP/1.1 origin on 127.0.0.1"
tp=$(cat "$T/http.port")
O="http://127.0.0.1:$tp"

start_tls_target tls.test
ok $? "TLS target with a certificate made now"

refused_port=$(free_port) # nothing listens there
deny_port=$(free_port)

# ---- proxyhost A: http_proxy + direct ------------------------------------------
admin=$(free_port)
HP=$(free_port)
cat >"$T/a.ini" <<EOC
[proxyhost]
modules = http_proxy, direct
module_path = $MODS
drain_timeout = 3s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[http_proxy]
listen = 127.0.0.1:$HP
max_request_line = 4KiB
max_header_bytes = 8KiB
max_headers = 50
header_timeout = 1s
[direct]
resolver_servers = 127.0.0.1:$dns_port
deny_ports = $deny_port
connect_timeout = 1s
EOC
start_proxyhost "$T/a.ini"
A_PID=$PH_PID
wait_for healthy "$admin"; ok $? "proxyhost with http_proxy + direct is healthy"
wait_for port_open "$HP"; ok $? "http_proxy listens"

# Absolute-form forwarding.
out=$(hcurl "$O/hello")
is "$out" "hello through http_proxy" "curl -x: GET http://127.0.0.1:PORT/hello"
out=$(hcurl "http://ok.test:$tp/hello")
is "$out" "hello through http_proxy" "a name resolved by the proxy's connector"
hcurl -D "$T/h.head" -o /dev/null "$O/hello"
like "$(cat "$T/h.head")" "Via: 1.1 proxyhost" "the response carries our Via"

# Keep-alive: two URLs in one curl run share the client connection, and
# the upstream connection is reused (the origin counts its connections).
before=$(hcurl "$O/stats" | sed 's/connections=//')
hcurl -v "$O/hello" "$O/chunked" >"$T/ka.out" 2>"$T/ka.err"
like "$(cat "$T/ka.err")" "Re-using existing connection" \
  "keep-alive: curl reuses its connection to the proxy"
after=$(hcurl "$O/stats" | sed 's/connections=//')
is "$((after - before))" 2 \
  "the upstream connection is reused: one for the pair, one for /stats"
like "$(cat "$T/ka.out")" "hello through http_proxy" "first response"

# Chunked response, chunked request body, big Content-Length body.
hcurl -D "$T/c.head" -o "$T/c.body" "$O/chunked"
like "$(cat "$T/c.head")" "Transfer-Encoding: chunked" \
  "a chunked response keeps its framing"
is "$(cat "$T/c.body")" "chunk-one
chunk-two" "and its body arrives whole"
printf 'wikipedia in chunks' >"$T/post.txt"
hcurl -H 'Transfer-Encoding: chunked' --data-binary "@$T/post.txt" \
  -D "$T/p.head" -o "$T/p.body" "$O/echo"
like "$(cat "$T/p.head")" "X-Was-Chunked: yes" "a chunked POST body stays chunked"
is "$(cat "$T/p.body")" "wikipedia in chunks" "and arrives whole"
head -c 3000000 /dev/urandom >"$T/big"
hcurl --data-binary "@$T/big" -o "$T/big.out" "$O/echo"
cmp -s "$T/big" "$T/big.out"; ok $? "a 3 MB Content-Length body, streamed both ways"
out=$(hcurl "$O/close")
is "$out" "framed by close" "a response framed by close"

# Hop-by-hop headers (the origin echoes the head it received).
hdrs=$(hcurl -H 'Connection: X-Drop' -H 'X-Drop: 1' -H 'Keep-Alive: 5' \
  -H 'X-Kept: 2' -H 'Proxy-Authorization: Basic Zm9vOmJhcg==' "$O/headers")
like "$hdrs" "GET /headers HTTP/1.1" "origin-form request line"
like "$hdrs" "Host: 127.0.0.1:$tp" "Host from the request-target"
like "$hdrs" "X-Kept: 2" "end-to-end header kept"
unlike "$hdrs" "X-Drop" "a Connection-listed header removed"
unlike "$hdrs" "Keep-Alive" "Keep-Alive removed"
unlike "$hdrs" "Proxy-Connection" "Proxy-Connection removed"
unlike "$hdrs" "Proxy-Authorization" "Proxy-Authorization never forwarded"

# CONNECT to a TLS target (certificate checked), by name.
out=$(hcurl -p --cacert "$T/cert.pem" "https://tls.test:$tls_port/" 2>&1)
like "$out" "s_server" "CONNECT + TLS through the tunnel, certificate verified"

# Failures: a status, a short fixed body, no internal detail.
is "$(status "http://127.0.0.1:$refused_port/")" 502 "refused port -> 502"
is "$(connect_status "https://127.0.0.1:$refused_port/")" 502 \
  "CONNECT to a refused port -> 502"
body=$(hcurl "http://127.0.0.1:$refused_port/")
is "$body" "502 Bad Gateway" "the body names the status only (TM-SEC-2)"
# The cause is in RFC 9209 Proxy-Status (issue 28); direct names no hop.
ps=$(hcurl -D - -o /dev/null "http://127.0.0.1:$refused_port/" | tr -d '\r' | grep -i '^Proxy-Status:')
is "$ps" 'Proxy-Status: proxyhost; error=connection_refused; details="connect/connection_refused"' \
  "a 502 says its cause in Proxy-Status: error type, stage and code"
ps=$(hcurl -D - -o /dev/null "http://127.0.0.1:$deny_port/" | tr -d '\r' | grep -i '^Proxy-Status:')
is "$ps" 'Proxy-Status: proxyhost; error=destination_ip_prohibited; details="policy/forbidden"' \
  "a policy 403: destination_ip_prohibited"
ps=$(hcurl -D - -o /dev/null "http://nx.test/" | tr -d '\r' | grep -i '^Proxy-Status:')
like "$ps" 'details="dns/' "an unresolvable name: the dns stage"
is "$(status "http://127.0.0.1:$deny_port/")" 403 "policy deny (deny_ports) -> 403"
is "$(connect_status "https://127.0.0.1:$deny_port/")" 403 "CONNECT policy deny -> 403"
is "$(connect_status "https://127.0.0.1:$HP/")" 403 \
  "CONNECT to the proxy's own listener -> 403 (net.listener)"
is "$(status "http://nx.test/")" 502 "unresolvable name -> 502"
r=$($TARGET send --port "$HP" --raw 'GET https://ok.test/ HTTP/1.1\r\n\r\n')
is "$r" "HTTP/1.1 501 Not Implemented" "https:// in absolute form -> 501"
r=$($TARGET send --port "$HP" --raw 'GET /hello HTTP/1.1\r\nHost: x\r\n\r\n')
is "$r" "HTTP/1.1 400 Bad Request" "origin-form to a proxy -> 400"
r=$($TARGET send --port "$HP" --all --raw 'GET /hello HTTP/1.1\r\nHost: x\r\n\r\n' | tr -d '\r' | grep '^Proxy-Status')
is "$r" "Proxy-Status: proxyhost; error=http_request_error" "... with Proxy-Status http_request_error"

# Oversized heads are refused while a concurrent good client is served.
hcurl -o "$T/slow.out" -w '%{http_code}' "$O/slow" >"$T/slow.code" 2>&1 &
SLOW=$!
r=$($TARGET send --port "$HP" --line-bytes 5000)
is "$r" "HTTP/1.1 414 URI Too Long" "request line over max_request_line -> 414"
r=$($TARGET send --port "$HP" --header-bytes 9000)
is "$r" "HTTP/1.1 431 Request Header Fields Too Large" \
  "headers over max_header_bytes -> 431"
r=$($TARGET send --port "$HP" --headers 60)
is "$r" "HTTP/1.1 431 Request Header Fields Too Large" \
  "more than max_headers fields -> 431"
r=$($TARGET send --port "$HP" --raw 'GET http://ok.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n')
is "$r" "HTTP/1.1 400 Bad Request" "obs-fold -> 400"
r=$($TARGET send --port "$HP" --raw 'GET http://ok.test/ HTTP/1.1\r\nX-Slow: ')
is "$r" "HTTP/1.1 408 Request Timeout" "a head not finished in header_timeout -> 408"
wait "$SLOW"
is "$(cat "$T/slow.code")" 200 "the concurrent good client got its answer (TM-SEC-1)"
is "$(cat "$T/slow.out")" "hello through http_proxy" "whole"
running "$A_PID"; ok $? "the process survived the hostile heads"

# Metrics (TM-OBS-1, TM-OBS-2, TM-OBS-10..13, TM-OBS-18).
m=$(metrics_of "$admin")
v=$(metric "$m" 'proxyhost_http_proxy_requests_total{method_class="forward",status_class="2xx"}')
[ "${v:-0}" -ge 10 ]; ok $? "forwarded requests counted by status class ($v)"
v=$(metric "$m" 'proxyhost_http_proxy_requests_total{method_class="connect",status_class="2xx"}')
is "$v" 1 "the CONNECT counted"
v=$(metric "$m" 'proxyhost_http_proxy_requests_total{method_class="connect",status_class="4xx"}')
is "$v" 2 "refused CONNECTs counted"
v=$(metric "$m" 'proxyhost_http_proxy_requests_total{method_class="forward",status_class="4xx"}')
is "$v" 9 "refused heads and the policy denial counted as 4xx"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="failure",error_class="connection_refused",open_mode="strict"}')
is "$v" 4 "refused opens by error_class (TM-OBS-2, TM-OBS-13)"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="rejected",error_class="forbidden",open_mode="strict"}')
is "$v" 4 "policy denials counted as rejected/forbidden"
like "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="open",result="success",scope="local"}' \
  "open stage histogram"
v=$(metric "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="ttfb",result="success",scope="local"}')
is "$v" 1 "TTFB of the CONNECT tunnel"
v=$(metric "$m" 'proxyhost_stream_bytes_total{component="client",direction="up",protocol="http"}')
[ "${v:-0}" -ge 3000000 ]; ok $? "TM-OBS-14 the forwarded 3 MB body counted up, protocol=\"http\" ($v)"
v=$(metric "$m" 'proxyhost_stream_bytes_total{component="client",direction="down",protocol="tcp"}')
[ "${v:-0}" -gt 0 ]; ok $? "TM-OBS-14 the CONNECT tunnel's bytes counted, protocol=\"tcp\" ($v)"
unlike "$m" "ok.test" "no target host in any label (TM-SEC-8, TM-OBS-18)"
unlike "$m" "tls.test" "not even the tunnel's"
printf '%s\n' "$m" | sed 1d >"$T/metrics.txt"
"$PROMTOOL" check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1
ok $? "promtool accepts the exposition"

# The access log: a line per request, no target host at info level.
log=$(cat "$T/ph.log")
like_re "$log" 'msg=access stream=[0-9]+ client=127.0.0.1:[0-9]+ user=- method=GET status=2xx status_code=200 result=success bytes_up=[0-9]+ bytes_down=[0-9]+ duration_us=[0-9]+ end=-' \
  "an access log line per request"
like "$log" 'method=CONNECT status=2xx status_code=200' "and per tunnel"
like "$log" "duration_us=" "with the duration in microseconds (TM-OBS-19)"
unlike "$log" "ok.test" "no target host in the info log"
unlike "$log" "tls.test" "nor the tunnel's"
unlike "$log" "Zm9vOmJhcg" "credentials never logged"

kill -TERM "$A_PID"
wait_exit "$A_PID" 10; is "$EXIT" 0 "SIGTERM: drained and exited 0"

# ---- proxyhost B: Proxy-Authorization through auth_local --------------------------
if have_auth_local; then
  hash=$(password_hash s3cret-pw)
  admin=$(free_port)
  HP=$(free_port)
  password_config http_proxy "$HP" "127.0.0.1:$admin" "$hash" >"$T/b.ini"
  : >"$T/ph.log"
  start_proxyhost "$T/b.ini"
  B_PID=$PH_PID
  wait_for healthy "$admin"; ok $? "auth = password with auth_local starts"
  wait_for port_open "$HP"
  hcurl -D "$T/407.head" -o /dev/null "$O/hello"
  like "$(cat "$T/407.head")" "HTTP/1.1 407 Proxy Authentication Required" \
    "no credentials -> 407"
  like "$(cat "$T/407.head")" 'Proxy-Authenticate: Basic realm="proxyhost"' \
    "with the Basic challenge"
  is "$(status -U alice:wrong "$O/hello")" 407 "wrong password -> 407"
  is "$(status -U bob:s3cret-pw "$O/hello")" 407 "unknown user -> 407"
  out=$(hcurl -U alice:s3cret-pw "$O/hello")
  is "$out" "hello through http_proxy" "right credentials -> the request goes on"
  out=$(hcurl -p -U alice:s3cret-pw --cacert "$T/cert.pem" \
    "https://tls.test:$tls_port/" 2>&1)
  like "$out" "s_server" "and a CONNECT with them"
  is "$(connect_status "https://tls.test:$tls_port/")" 407 \
    "CONNECT without credentials -> 407"
  hdrs=$(hcurl -U alice:s3cret-pw "$O/headers")
  unlike "$hdrs" "Proxy-Authorization" "credentials are not forwarded"
  m=$(metrics_of "$admin")
  like "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="authorization",result="success",scope="local"}' \
    "authorization stage measured"
  unlike "$m" "alice" "no user name in metrics"
  unlike "$(cat "$T/ph.log")" "s3cret-pw" "the password never reaches the log"
  like "$(cat "$T/ph.log")" "user=alice method=GET" \
    "the authenticated user is in the access line"
  kill -TERM "$B_PID"
  wait_exit "$B_PID" 10; is "$EXIT" 0 "B exits 0"
else
  skip "auth_local or proxyhost-passwd not built (configure --disable-module-auth_local)"
fi

# auth = password without an authorizer: a configuration error (the
# module's check), before anything starts, naming the key and the service.
HP=$(free_port)
password_config http_proxy "$HP" "" >"$T/c.ini"
"$PROXYHOST" -c "$T/c.ini" >"$T/c.out" 2>&1
rc=$?
is "$rc" 2 "auth = password without an authorizer: configuration error (exit 2)"
like "$(cat "$T/c.out")" 'c.ini:9: http_proxy.auth: password needs a module that provides the "authorizer" service' \
  "with a clear message naming file:line and key"

# max_clients: a client over the limit is closed at once and counted.
HP=$(free_port)
admin=$(free_port)
cat >"$T/d.ini" <<EOC
[proxyhost]
modules = http_proxy, direct
module_path = $MODS
[admin]
listen = 127.0.0.1:$admin
[http_proxy]
listen = 127.0.0.1:$HP
max_clients = 1
EOC
start_proxyhost "$T/d.ini"
D_PID=$PH_PID
wait_for healthy "$admin"
out=$($PY - "$HP" <<'EOPY'
import socket, sys
port = int(sys.argv[1])
held = socket.create_connection(("127.0.0.1", port), 2)
extra = socket.create_connection(("127.0.0.1", port), 2)
extra.settimeout(2)
try:
    closed = extra.recv(1) == b""
except ConnectionResetError:
    closed = True
except socket.timeout:
    closed = False
print("closed" if closed else "open")
held.close()
EOPY
)
is "$out" closed "a client over max_clients is closed at once"
m=$(metrics_of "$admin")
is "$(metric "$m" proxyhost_http_proxy_clients_refused_total)" 1 "and counted"
kill -TERM "$D_PID"
wait_exit "$D_PID" 10; is "$EXIT" 0 "D exits 0"

done_testing

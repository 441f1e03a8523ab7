#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tunnel_client in a real proxyhost: socks5 with connector = tunnel_client
# against the scriptable server peer t/lib/tm_peer.py (and, for wss,
# t/lib/tls_forward.py in front of it with a CA made here). The SOCKS5
# reply comes only from the server's OPEN_RESULT (an answer that never
# comes is 0x06 at stream.open_timeout, never a success: TM-PROTO-37/38);
# each failure code becomes the seed's SOCKS5 reply (TM-PROTO-30..36, an
# unknown code 0x01: TM-PROTO-29); names reach the server unresolved
# (TM-PROTO-3); the offer's order (TM-PROTO-14); a server that selects no
# subprotocol makes the connection legacy: success at once, counted with
# open_mode="legacy" (TM-PROTO-16, TM-PROTO-39, TM-TEST-2); no connection
# is relay/agent_offline at once (0x04); the token only in the
# Authorization header, read again at each attempt (a rotated and a late
# file); plain ws off loopback refused by --check-config; wss verified
# against tls.ca_file.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

PY=${PYTHON3:-/usr/bin/python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"

require_modules socks5 tunnel_client

metrics_of() { http_get "http://127.0.0.1:$admin/metrics"; }
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
not_ready() { ! ready; }

admin=$(free_port)
sport=$(free_port)
pport=$(free_port)
TOKEN=tok_0123456789abcdef.Sx9-client-secret-AAAAAAAAAAAAAAAAAAAAAAAAAAAAA
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"

write_conf() { # write_conf FILE URL [EXTRA-LINES-FOR-tunnel_client]
  cat >"$1" <<EOC
[proxyhost]
modules = tunnel_client, socks5
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[socks5]
listen = 127.0.0.1:$sport
connector = tunnel_client
[tunnel_client]
server_url = $2
agent = lab-1
token_file = $T/token
reconnect.min = 20ms
reconnect.max = 200ms
stream.open_timeout = 1500ms
${3:-}
EOC
}

PEER_PID=
start_peer() { # start_peer NAME ARGS...: the server peer on $pport
  _name=$1
  shift
  tm_peer --as server --listen "127.0.0.1:$pport" --stay --print-bearer \
    --lifetime 120 "$@" >"$T/peer-$_name.log" 2>&1 &
  PEER_PID=$!
  PIDS="$PIDS $PEER_PID"
  wait_for grep -q '"ev": *"listening"' "$T/peer-$_name.log"
}
stop_peer() { # and wait until the client saw its connection go
  [ -n "$PEER_PID" ] && kill "$PEER_PID" 2>/dev/null
  [ -n "$PEER_PID" ] && wait "$PEER_PID" 2>/dev/null
  PEER_PID=
  wait_for not_ready
}
reply() { $PROBE reply --proxy "127.0.0.1:$sport" --target "$1" --timeout 5; }

# ---- configuration checks ------------------------------------------------
write_conf "$T/bad.ini" "ws://192.0.2.10:8080/tunnel"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "plain ws to an address that is not loopback is refused"
like "$out" "tunnel_client.server_url" "... naming the key"
like "$out" "allow_plain" "... and the way out"
write_conf "$T/bad.ini" "ws://192.0.2.10:8080/tunnel" "allow_plain = true"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 0 "... and accepted with allow_plain = true"
write_conf "$T/bad.ini" "wss://u:$TOKEN@tunnel.example/"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "credentials in server_url are refused"
unlike "$out" "$TOKEN" "... without echoing them"
write_conf "$T/bad.ini" "ws://127.0.0.1:1/t" "stream.initial_window = 64KiB
stream.max_frame_payload = 32KiB
stream.window_update_threshold = 128KiB"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "a window update threshold above the window is refused (TM-CFG-25)"
write_conf "$T/bad.ini" "ws://127.0.0.1:1/t" "stream.max_frame_payload = 128KiB"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "a frame payload above the protocol's 64 KiB is refused (TM-CFG-25)"
write_conf "$T/bad.ini" "ws://127.0.0.1:1/t" "token = inline-secret-xyz"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "token_file and token together are refused"
unlike "$out" "inline-secret-xyz" "... without echoing the token"
cp "$top_srcdir/modules/tunnel_client/tunnel_client.ini.sample" "$T/s.ini"
printf '[proxyhost]\nmodule_path = %s\n' "$MODS" >>"$T/s.ini"
"$PROXYHOST" -c "$T/s.ini" --check-config >/dev/null 2>&1
is $? 0 "the sample passes --check-config"
"$PROXYHOST" -c "$top_srcdir/conf/client.ini" --set "proxyhost.module_path=$MODS" \
  --check-config >/dev/null 2>&1
is $? 0 "conf/client.ini (a ready client) passes --check-config"

# ---- no connection: agent_offline at once --------------------------------
write_conf "$T/c.ini" "ws://127.0.0.1:$pport/tunnel"
start_proxyhost "$T/c.ini"
wait_for healthy "$admin"; ok $? "proxyhost with socks5 and tunnel_client runs"
not_ready; ok $? "not ready while no connection is up"
is "$(reply 127.0.0.1:80)" 0x04 \
  "no connection: relay/agent_offline, host unreachable (TM-PROTO-33)"

# ---- strict: the answer only from OPEN_RESULT ----------------------------
start_peer ok --answer ok --serve echo; ok $? "server peer (strict, answers ok)"
wait_for ready; ok $? "ready once the connection is up"
h=$(grep '"ev": *"handshake"' "$T/peer-ok.log" | head -1)
like "$h" '"offer": "tunnelmesh.v1.open-result.flow-control.trace,tunnelmesh.v1.open-result.flow-control,tunnelmesh.v1.open-result,tunnelmesh.v1"' \
  "the offer in the seed's order (TM-PROTO-14)"
like "$h" "\"bearer_text\": \"$TOKEN\"" "the token in the Authorization header"
like "$h" '"path": "/tunnel"' "the request line is the path alone"
unlike "$(sed -n 's/.*"path": "\([^"]*\)".*/\1/p' "$T/peer-ok.log")" "tok_" \
  "... never the token"
is "$(reply target.example:443)" 0x00 \
  "OPEN_RESULT accepted=true: succeeded (TM-PROTO-30)"
wait_for grep -q 'msg="stream end" stage=none code=ok' "$T/ph.log"
ok $? "a log line when the stream ends, with stage and code"
like "$(grep 'msg="stream end" stage=none' "$T/ph.log" | head -1)" "open_mode=strict" \
  "... and open_mode=strict"
unlike "$(grep 'msg="stream end"' "$T/ph.log")" "target.example" \
  "... without the target at info level"
o=$(grep '"ev": *"open"' "$T/peer-ok.log" | head -1)
like "$o" '"host": "target.example"' "the name reaches the server unresolved (TM-PROTO-3)"
like "$o" '"agent": "lab-1"' "... with the configured agent"
stop_peer

start_peer never --answer never; ok $? "server peer that never answers"
wait_for ready
is "$(reply target.example:443)" 0x06 \
  "no OPEN_RESULT: never a success, 0x06 at stream.open_timeout (TM-PROTO-37/38)"
wait_for grep -q '"ev": *"reset"' "$T/peer-never.log"
ok $? "... and that stream is reset towards the server"
unlike "$(grep '"ev": *"closed"\|ws_close' "$T/peer-never.log")" '"ev"' \
  "... while the connection stays up (TM-PROTO-38)"
stop_peer

# ---- each failure code → the seed's SOCKS5 reply (TM-PROTO-30..36) --------
for c in policy:forbidden:0x02 connect:network_unreachable:0x03 \
  dns:host_unreachable:0x04 selection:agent_offline:0x04 \
  connect:connection_refused:0x05 connect:timeout:0x06 \
  queue:queue_full:0x01 authorization:unsupported_capability:0x01 \
  protocol:internal_error:0x01; do
  stage=${c%%:*}; rest=${c#*:}; code=${rest%%:*}; want=${rest#*:}
  start_peer "$code" --answer "fail:$stage:$code"
  wait_for ready
  is "$(reply target.example:443)" "$want" "$stage/$code -> $want"
  stop_peer
done
start_peer unknown --answer ok \
  --result-json '{"accepted":false,"stage":"connect","code":"brand_new_code","retryable":false,"retry_after_ms":0}'
wait_for ready
is "$(reply target.example:443)" 0x01 "an unknown code is a general failure (TM-PROTO-29)"
stop_peer
# Issue 24 item 5: the seed's OPEN_RESULT has five fields; a server that
# sends no "window" on a flow-controlled stream: the stream opens with the
# protocol's initial window and carries data both ways.
start_peer fivefields --answer ok --serve echo \
  --result-json '{"accepted":true,"stage":"connect","code":"ok","retryable":false,"retry_after_ms":0}'
wait_for ready
is "$($PROBE burst --proxy "127.0.0.1:$sport" --n 2 --concurrency 1)" \
  "done=2 failed=0" \
  "issue 24 item 5: an OPEN_RESULT without window: the stream carries data"
unlike "$(grep '"ev": *"reset"' "$T/peer-fivefields.log")" '"ev"' \
  "... and no stream is reset"
stop_peer

m=$(metrics_of)
like "$m" 'tunnelmesh_stream_open_total{component="client",result="rejected",error_class="forbidden",open_mode="strict"} 1' \
  "open_total counts the forbidden open once (the frontend's count)"
like_re "$m" 'tunnelmesh_stream_open_total\{component="client",result="success",error_class="ok",open_mode="strict"\} [1-9]' \
  "the strict opens by open_mode"
like "$m" 'tunnelmesh_stream_stage_duration_seconds_count{component="client",stage="open",result="success",scope="local"}' \
  "the open stage is timed"

# ---- legacy: a server that selects no subprotocol (TM-TEST-2) -------------
start_peer legacy --subproto none --answer never; ok $? "old server peer (no subprotocol)"
wait_for ready
is "$(reply target.example:443)" 0x00 \
  "legacy: success at once, without waiting for the agent (TM-PROTO-16/39)"
m=$(metrics_of)
like "$m" 'tunnelmesh_stream_open_total{component="client",result="success",error_class="ok",open_mode="legacy"} 1' \
  "... counted with open_mode=legacy (TM-PROTO-21)"
wait_for grep -q 'open_mode=legacy' "$T/ph.log"
ok $? "... and logged with open_mode=legacy"
stop_peer
wait_for not_ready; ok $? "not ready once the server is gone"

# ---- the token file, read at every attempt --------------------------------
NEW=tok_fedcba9876543210.rotated-secret-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB
printf '%s\n' "$NEW" >"$T/token"
start_peer rotated --answer ok --expect-bearer "$NEW"
wait_for ready; ok $? "a rotated token is used on the next reconnect"
stop_peer
rm -f "$T/token"
start_peer late --answer ok --expect-bearer "$TOKEN"
wait_for grep -q 'no usable token' "$T/ph.log"
ok $? "a missing token file: a warning, not connecting"
not_ready; ok $? "... and not ready"
unlike "$(cat "$T/ph.log")" "$NEW" "the log never carries a token"
printf '%s\n' "$TOKEN" >"$T/token"
wait_for ready; rc=$?
ok $rc "a token file written after start is picked up"
[ "$rc" = 0 ] || { tail -5 "$T/ph.log"; tail -3 "$T/peer-late.log"; } | sed 's/^/#   /' 
is "$(grep -c 'no usable token' "$T/ph.log")" 1 "one warning per change of state"
stop_peer
kill "$PH_PID"; wait_exit "$PH_PID" 10; ok $? "proxyhost stops"

# ---- a legacy client offers only tunnelmesh.v1 ----------------------------
write_conf "$T/l.ini" "ws://127.0.0.1:$pport/tunnel" \
  "capabilities.open_result = false
capabilities.flow_control = false"
start_proxyhost "$T/l.ini"
start_peer oldclient --answer ok
wait_for ready; ok $? "a client with open_result off connects"
like "$(grep '"ev": *"handshake"' "$T/peer-oldclient.log")" '"offer": "tunnelmesh.v1"' \
  "... offering only tunnelmesh.v1"
stop_peer
kill "$PH_PID"; wait_exit "$PH_PID" 10

# ---- connections = 2 -------------------------------------------------------
write_conf "$T/two.ini" "ws://127.0.0.1:$pport/tunnel" "connections = 2"
start_proxyhost "$T/two.ini"
start_peer two --answer ok
hs() { [ "$(grep -c '"ev": *"handshake"' "$T/peer-two.log")" -ge 2 ]; }
wait_for hs; ok $? "connections = 2 keeps two WebSockets to the server"
is "$(reply target.example:443)" 0x00 "... and streams open over them"
stop_peer
kill "$PH_PID"; wait_exit "$PH_PID" 10

# ---- wss with a test CA ---------------------------------------------------
if command -v openssl >/dev/null 2>&1; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" \
    -days 1 -subj "/CN=tm test CA" >"$T/openssl.log" 2>&1 &&
    openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" \
      -subj "/CN=localhost" >>"$T/openssl.log" 2>&1 &&
    printf 'subjectAltName=DNS:localhost\n' >"$T/ext" &&
    openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
      -CAcreateserial -days 1 -extfile "$T/ext" -out "$T/srv.pem" >>"$T/openssl.log" 2>&1
  ok $? "a test CA and a server certificate for localhost"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/other.key" -out "$T/other.pem" \
    -days 1 -subj "/CN=other CA" >>"$T/openssl.log" 2>&1
  start_peer tls --answer ok
  "$PY" "$top_srcdir/t/lib/tls_forward.py" --cert "$T/srv.pem" --key "$T/srv.key" \
    --to "$pport" --port-file "$T/tls.port" >"$T/tls.log" 2>&1 &
  PIDS="$PIDS $!"
  wait_file "$T/tls.port"; tport=$(cat "$T/tls.port")
  write_conf "$T/w.ini" "wss://localhost:$tport/tunnel" "tls.ca_file = $T/ca.pem"
  start_proxyhost "$T/w.ini"
  wait_for ready; ok $? "wss verified against tls.ca_file: connected"
  is "$(reply target.example:443)" 0x00 "... and a stream opens over it"
  kill "$PH_PID"; wait_exit "$PH_PID" 10
  write_conf "$T/w2.ini" "wss://localhost:$tport/tunnel" "tls.ca_file = $T/other.pem"
  start_proxyhost "$T/w2.ini"
  wait_file "$T/tls.port.fail"; ok $? "a server certificate from another CA: the handshake fails"
  not_ready; ok $? "... and the client is not ready"
  kill "$PH_PID"; wait_exit "$PH_PID" 10
  stop_peer
else
  skip "openssl not installed: no wss case"
fi

unlike "$(cat "$T/ph.log")" "$TOKEN" "no log line carries the token"
done_testing

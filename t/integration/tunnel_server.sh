#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tunnel_server in a real proxyhost process with store_sqlite, auth_cache
# and admin_api (credentials made with proxyhostctl), against scripted
# peers (t/lib/tm_peer.py) as agents and as clients: strict open and
# relay, forbidden by policy, agent_offline, queue_full at tiny limits,
# DATA during opening, PING while an open waits, one stream's failure
# closing no session, wrong/expired/revoked tokens, a legacy client, a
# legacy agent, hostile frames, the log line per stream, and the stop
# with GOAWAY.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
require_modules store_sqlite auth_cache admin_api tunnel_server

CTL="$top_builddir/tools/proxyhostctl"
"$CTL" admin-token new "$T/admin.token" >/dev/null 2>&1
ok $? "an admin token for proxyhostctl"
aport=$(free_port)
tport=$(free_port)
tiny=$(free_port)
tlsport=$(free_port)
mkdir "$T/certs"
sh "$top_srcdir/t/unit/tunnel/tm_ws_certs.sh" "$T/certs"
ok $? "a CA and a server certificate for 127.0.0.1, made now"
cat >"$T/server.ini" <<EOC
[proxyhost]
modules = store_sqlite, auth_cache, admin_api, tunnel_server, tunnel_server.tiny, tunnel_server.tls
module_path = $top_builddir/modules
drain_timeout = 10s
[log]
level = info
[admin]
listen = 127.0.0.1:$aport
[store_sqlite]
path = $T/authz.db
[auth_cache]
store = store_sqlite
[admin_api]
store = store_sqlite
access = auth_cache
token_file = $T/admin.token
[tunnel_server]
listen = 127.0.0.1:$tport
store = store_sqlite
access = auth_cache
node_id = ts-test
ping_interval = 0
drain_timeout = 3s
[tunnel_server.tiny]
listen = 127.0.0.1:$tiny
store = store_sqlite
access = auth_cache
ping_interval = 0
stream.max_concurrent_opens = 1
stream.max_pending_opens = 1
stream.max_opens_per_session = 1
drain_timeout = 1s
[tunnel_server.tls]
listen = 127.0.0.1:$tlsport
store = store_sqlite
access = auth_cache
tls.cert = $T/certs/server.pem
tls.key = $T/certs/server.key
drain_timeout = 1s
EOC
"$PROXYHOST" -c "$T/server.ini" --check-config >"$T/check" 2>&1
ok $? "the configuration with two tunnel_server instances passes --check-config"
sed 's/^/#   /' "$T/check" | head -5

# conf/server.ini, the shipped server role, with this run's paths.
"$PROXYHOST" -c "$top_srcdir/conf/server.ini" \
  --set "proxyhost.module_path=$top_builddir/modules" \
  --set "store_sqlite.path=$T/shipped.db" \
  --set "admin_api.token_file=$T/admin.token" --check-config >"$T/check2" 2>&1
ok $? "conf/server.ini passes --check-config"
sed 's/^/#   /' "$T/check2" | head -3

start_proxyhost "$T/server.ini"
wait_for healthy "$aport"; ok $? "proxyhost with the tunnel server starts"
ready() { [ "$(http_get "http://127.0.0.1:$aport/readyz" | head -1)" = 200 ]; }
wait_for ready; ok $? "ready: listening, store and access found (auth_cache read the revision)"

ctl() { "$CTL" --admin "127.0.0.1:$aport" --token-file "$T/admin.token" "$@"; }
bearer_of() { sed -n 's/^bearer  *//p'; }
ctl user create alice >/dev/null
CB=$(ctl token create --user alice | bearer_of)
CTOK=${CB%%.*}
like "$CTOK" "tok_" "a client token ($CTOK)"
printf '%s' "$CB" >"$T/client.tok"
for a in edge-1 edge-hang edge-fail edge-old edge-big edge-off slow; do
  ctl agent create "$a" --owner alice >/dev/null
  ctl token create --user alice --agent "$a" | bearer_of >"$T/$a.tok"
  ctl policy create --agent "$a" --token "$CTOK" --host '*.ok.test' \
    --ports 1-65535 >/dev/null
done
[ -s "$T/edge-1.tok" ] && [ -s "$T/slow.tok" ]; ok $? "agent tokens and policies"

# agent NAME PORT ARGS...: a peer agent connected to the server at PORT.
agent() {
  name=$1 p=$2
  shift 2
  tm_peer --as agent --url "ws://127.0.0.1:$p/tunnel" \
    --token-file "$T/$name.tok" --agent-id "$name" --stay --lifetime 120 \
    "$@" >"$T/$name.ev" 2>&1 &
  PIDS="$PIDS $!"
}
agent edge-1 "$tport" --answer ok --serve echo
agent edge-hang "$tport" --answer never
agent edge-fail "$tport" --answer fail:connect:connection_refused
agent edge-old "$tport" --caps none --metadata-no-caps --serve echo
agent edge-big "$tport" --oversized-result
agent slow "$tiny" --answer never
ready_agents() { [ "$(grep -c '"agent ready\|msg="agent ready' "$T/ph.log")" -ge 6 ]; }
wait_for ready_agents; ok $? "six agents connected and sent their metadata"
like "$(cat "$T/edge-1.ev")" '"ev": "metadata"' \
  "TM-PROTO-18 the agent got the metadata ACK"
like "$(cat "$T/edge-1.ev")" '"subprotocol": "tunnelmesh.v1.open-result.flow-control"' \
  "the agent's connection negotiated the full combination"

# client NAME SCRIPT [PORT] [ARGS...]: a client peer runs SCRIPT; its
# events in $T/NAME.ev, its exit status in RC.
client() {
  name=$1 script=$2 p=${3:-$tport}
  shift 2
  [ $# -gt 0 ] && shift
  tn_peer_run "$name" --as client --url "ws://127.0.0.1:$p/tunnel" \
    --token-file "$T/client.tok" --timeout 10 --lifetime 60 "$@" \
    --script "$script"
}

# ---- strict open, relay --------------------------------------------------
client ok '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true,"code":"ok"},
 {"op":"send","sid":1,"data":"hello through the server"},
 {"op":"expect_data","sid":1,"data":"hello through the server"},
 {"op":"send","sid":1,"size":600000,"fin":true},
 {"op":"expect_data","sid":1,"size":600024,"fin":true}]'
is "$RC" 0 "TM-P0-18 strict open: OPEN_RESULT(ok), then bytes both ways past the window"
like "$(cat "$T/edge-1.ev")" '"ev": "open", "host": "www.ok.test", "port": 80' \
  "the agent got the OPEN_STREAM with the target"
grep -q '"ev": "violation"' "$T/ok.ev"; is $? 1 "no violation on the client side"

# ---- failures with stable stages and codes -------------------------------
client forbid '[
 {"op":"open","sid":1,"host":"www.bad.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":false,"stage":"authorization","code":"forbidden"}]'
is "$RC" 0 "TM-P0-19 a target the policy does not allow: authorization/forbidden"
client offline '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-off"},
 {"op":"expect_result","sid":1,"accepted":false,"stage":"selection","code":"agent_offline"}]'
is "$RC" 0 "TM-P0-19 an allowed agent with no connection: selection/agent_offline"
client refused '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-fail"},
 {"op":"expect_result","sid":1,"accepted":false,"stage":"connect","code":"connection_refused"},
 {"op":"open","sid":3,"host":"www.ok.test","port":80,"agent":"edge-fail"},
 {"op":"expect_result","sid":3,"accepted":false,"stage":"connect","code":"connection_refused"},
 {"op":"open","sid":5,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":5,"accepted":true},
 {"op":"send","sid":5,"data":"still here"},
 {"op":"expect_data","sid":5,"data":"still here"}]'
is "$RC" 0 "TM-P0-19 TM-TEST-16 the agent's own stage/code reaches the client, twice: neither session closed"

# ---- queue_full at tiny limits (TM-FAIL-2) --------------------------------
client full '[
 {"op":"open","sid":1,"host":"a.ok.test","port":80,"agent":"slow"},
 {"op":"open","sid":3,"host":"b.ok.test","port":80,"agent":"slow"},
 {"op":"open","sid":5,"host":"c.ok.test","port":80,"agent":"slow"},
 {"op":"expect_result","sid":5,"accepted":false,"stage":"queue","code":"queue_full"},
 {"op":"expect_no_result","sid":3,"ms":300},
 {"op":"reset","sid":1},
 {"op":"reset","sid":3},
 {"op":"ping"},{"op":"expect_pong"}]' "$tiny"
is "$RC" 0 "TM-FAIL-2 TM-P0-16 one running, one pending, the third queue/queue_full at once"
like "$(cat "$T/slow.ev")" '"ev": "reset"' \
  "a client RESET while opening cancels the agent's open (RESET towards it)"
client full2 '[
 {"op":"open","sid":1,"host":"d.ok.test","port":80,"agent":"slow"},
 {"op":"expect_no_result","sid":1,"ms":300},
 {"op":"open","sid":3,"host":"e.ok.test","port":80,"agent":"slow"},
 {"op":"open","sid":5,"host":"f.ok.test","port":80,"agent":"slow"},
 {"op":"expect_result","sid":5,"accepted":false,"code":"queue_full"}]' "$tiny"
is "$RC" 0 "the cancelled opens freed their slots: the executor counts right"

# ---- TM-P0-17, TM-TEST-13: an open waiting on the agent ------------------
client opening '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-hang"},
 {"op":"ping"},{"op":"expect_pong"},
 {"op":"open","sid":3,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":3,"accepted":true},
 {"op":"send","sid":3,"data":"beside a waiting open"},
 {"op":"expect_data","sid":3,"data":"beside a waiting open"},
 {"op":"send","sid":1,"data":"too early","ignore_window":true},
 {"op":"expect_reset","sid":1},
 {"op":"send","sid":3,"data":"and after it"},
 {"op":"expect_data","sid":3,"contains":"and after it"},
 {"op":"ping"},{"op":"expect_pong"}]'
is "$RC" 0 "TM-TEST-13 TM-P0-14 PING and another stream go on while an open waits on a slow agent"
like "$(cat "$T/opening.ev")" '"ev": "reset"' \
  "TM-P0-17 DATA during opening resets that stream only"

# ---- a legacy agent: strict client, legacy towards the agent -------------
client old '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-old"},
 {"op":"expect_result","sid":1,"accepted":true,"stage":"relay","open_mode":"legacy"},
 {"op":"send","sid":1,"data":"old agent"},
 {"op":"expect_data","sid":1,"data":"old agent"}]'
is "$RC" 0 "TM-PROTO-20/22 a legacy agent: the stream opens legacy towards it and relays; the strict client's OPEN_RESULT says relay and open_mode legacy, never connect (issue 24 item 3)"
grep -q '"type": "OPEN_RESULT"' "$T/edge-old.ev"; is $? 1 \
  "no OPEN_RESULT is asked of the legacy agent"
m=$(http_get "http://127.0.0.1:$aport/metrics")
like_re "$m" 'tunnelmesh_stream_open_total\{component="server",[^}]*open_mode="legacy"\} [1-9]' \
  "TM-PROTO-21 one compatibility count: opens{open_mode=legacy}"

# ---- a legacy client (TM-TEST-14) -----------------------------------------
client legacy '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_no_result","sid":1,"ms":200},
 {"op":"send","sid":1,"data":"legacy bytes"},
 {"op":"expect_data","sid":1,"data":"legacy bytes"},
 {"op":"open","sid":3,"host":"www.bad.test","port":80,"agent":"edge-1"},
 {"op":"expect_reset","sid":3},
 {"op":"send","sid":1,"data":"after the reset"},
 {"op":"expect_data","sid":1,"contains":"after the reset"}]' "$tport" --caps none
is "$RC" 0 "TM-TEST-14 TM-P0-20 TM-P0-21 a legacy client: open at once, a refusal is a RESET of that stream only"
like "$(cat "$T/legacy.ev")" '"subprotocol": "tunnelmesh.v1"' \
  "the legacy client got the base subprotocol"
grep -q '"type": "OPEN_RESULT"' "$T/legacy.ev"; is $? 1 "no OPEN_RESULT to a legacy client"

# ---- hostile frames --------------------------------------------------------
client unknown '[
 {"op":"frame","type":119,"sid":1,"hex":"00"},
 {"op":"ping"},{"op":"expect_pong"},
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true}]'
is "$RC" 0 "an unknown frame type is ignored: the session goes on"
client malformed '[
 {"op":"raw","hex":"0300000001000000ff41"},
 {"op":"expect_close"}]'
is "$RC" 0 "a frame whose length lies closes the session (protocol)"
client bigres '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-big"},
 {"op":"expect_result","sid":1,"accepted":false},
 {"op":"open","sid":3,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":3,"accepted":true}]'
is "$RC" 0 "TM-PROTO-25 an oversized OPEN_RESULT from the agent fails that stream only; the client session goes on"

# ---- tokens ---------------------------------------------------------------
printf 'tok_0000000000000000.wrongwrongwrongwrongwrongwrongwrongwrongwro' >"$T/wrong.tok"
tm_peer --as client --url "ws://127.0.0.1:$tport/tunnel" --token-file "$T/wrong.tok" \
  --timeout 10 --script '[{"op":"expect_close"}]' >"$T/wrong.ev" 2>&1
like "$(cat "$T/wrong.ev")" '"code": 4401' "a wrong token: closed with 4401"
like "$(cat "$T/wrong.ev")" '"reason": "unauthorized"' "with the fixed reason"
like "$(cat "$T/ph.log")" 'tok_0000000000000000' "the log names the token by its id"
grep 'tunnel connection refused' "$T/ph.log" | head -2 | sed 's/^/#   /'
unlike "$(cat "$T/ph.log")" 'wrongwrong' "never its secret"
XB=$(ctl token create --user alice | bearer_of)
ctl token set-expiry "${XB%%.*}" 1000 >/dev/null
printf '%s' "$XB" >"$T/exp.tok"
tm_peer --as client --url "ws://127.0.0.1:$tport/tunnel" --token-file "$T/exp.tok" \
  --timeout 10 --script '[{"op":"expect_close"}]' >"$T/exp.ev" 2>&1
like "$(cat "$T/exp.ev")" '"code": 4401' "an expired token: closed with 4401"
RB=$(ctl token create --user alice | bearer_of)
ctl policy create --agent edge-1 --token "${RB%%.*}" --host '*.ok.test' --ports 80 >/dev/null
printf '%s' "$RB" >"$T/rev.tok"
tm_peer --as client --url "ws://127.0.0.1:$tport/tunnel" --token-file "$T/rev.tok" \
  --timeout 10 --script '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true}]' >"$T/rev1.ev" 2>&1
is $? 0 "a token that works opens a stream"
ctl token revoke "${RB%%.*}" >/dev/null
tm_peer --as client --url "ws://127.0.0.1:$tport/tunnel" --token-file "$T/rev.tok" \
  --timeout 10 --script '[{"op":"expect_close"}]' >"$T/rev2.ev" 2>&1
like "$(cat "$T/rev2.ev")" '"code": 4401' "the same token revoked: closed with 4401"
tm_peer --as client --url "ws://127.0.0.1:$tport/tunnel" --token-file "$T/edge-1.tok" \
  --timeout 10 --script '[
 {"op":"open","sid":1,"host":"www.ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_reset","sid":1}]' >"$T/agenttok.ev" 2>&1
is $? 0 "an agent token is an agent connection: an OPEN_STREAM from it is refused"

# ---- wss with the operator's certificate -------------------------------------
# wss_upgrade CA TOKENFILE: a TLS client that verifies the server against
# CA, then a WebSocket upgrade with the bearer; prints the status line and
# the chosen subprotocol, or "tls-failed".
wss_upgrade() {
  "$PYTHON3" - "$tlsport" "$1" "$2" <<'EOP'
import base64, os, socket, ssl, sys
port, ca, tokf = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
try:
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 5),
                        server_hostname="127.0.0.1")
except (ssl.SSLError, OSError):
    print("tls-failed"); sys.exit(0)
key = base64.b64encode(os.urandom(16)).decode()
tok = open(tokf).read().strip()
s.sendall(("GET /tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: tunnelmesh.v1.open-result.flow-control, tunnelmesh.v1\r\n"
           "Authorization: Bearer %s\r\n\r\n" % (key, tok)).encode())
head = b""
while b"\r\n\r\n" not in head and len(head) < 8192:
    d = s.recv(4096)
    if not d:
        break
    head += d
lines = head.decode("latin-1").split("\r\n")
print(lines[0])
for l in lines[1:]:
    if l.lower().startswith("sec-websocket-protocol:"):
        print(l.split(":", 1)[1].strip())
EOP
}
out=$(wss_upgrade "$T/certs/ca.pem" "$T/client.tok")
like "$out" "HTTP/1.1 101" "wss: the operator's certificate verifies and the upgrade succeeds"
like "$out" "tunnelmesh.v1.open-result.flow-control" "wss: the full subprotocol is chosen"
is "$(wss_upgrade "$T/certs/other-ca.pem" "$T/client.tok")" "tls-failed" \
  "wss: a client trusting another CA refuses the server"
printf '[proxyhost]\nmodules = store_sqlite, auth_cache, tunnel_server\nmodule_path = %s\n[store_sqlite]\npath = %s\n[auth_cache]\nstore = store_sqlite\n[tunnel_server]\nstore = store_sqlite\nlisten = 0.0.0.0:1\n' \
  "$top_builddir/modules" "$T/x.db" >"$T/plain.ini"
err=$("$PROXYHOST" -c "$T/plain.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "plain ws on a non-loopback address: a configuration error"
like "$err" "tunnel_server.listen: plain ws (no tls.cert) on a non-loopback address" \
  "and says why, with file:line"
out=$("$PROXYHOST" -c "$T/plain.ini" --set tunnel_server.allow_plain=true --check-config 2>&1)
is $? 0 "allowed with allow_plain = true"

# ---- observability ----------------------------------------------------------
log=$(cat "$T/ph.log")
like "$log" 'tunnel stream end' "TM-OBS-19 one log line per stream end"
like_re "$log" 'open_mode=strict.*stage=authorization.*code=forbidden' \
  "with open_mode, stage and stable code"
like_re "$log" 'queue_us=[0-9]+.*auth_us=[0-9]+.*open_us=[0-9]+' "and µs timings"
like_re "$log" 'agent=agent-[0-9a-f]{8}' "the agent redacted"
unlike "$log" 'agent=edge-1' "never its name"
unlike "$log" 'www.ok.test' "TM-SEC-9 no target at info level"
m=$(http_get "http://127.0.0.1:$aport/metrics")
like_re "$m" 'tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="ttfb",result="success",scope="local"\} [1-9]' \
  "TM-OBS-20 the server TTFB is measured"
like_re "$m" 'tunnelmesh_stream_queue_wait_seconds_count\{component="server"\} [1-9]' \
  "the open executor's queue wait is measured"
like_re "$m" 'tunnelmesh_stream_open_total\{component="server",result="failure",error_class="queue_full",open_mode="strict"\} [1-9]' \
  "queue_full is counted"
unlike "$m" 'ok.test' "TM-SEC-8 no target on /metrics"
unlike "$m" "$CTOK" "no token id on /metrics"

# ---- stop: GOAWAY, drain, exit 0 (TM-UPG-13) -----------------------------
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 20
is "$EXIT" 0 "SIGTERM: the server drains and exits 0"
like "$(cat "$T/edge-1.ev")" '"ev": "goaway"' "TM-UPG-13 the agents got GOAWAY"

done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tunnel_agent in a real proxyhost (direct + tunnel_agent) against the
# scriptable server peer t/lib/tm_peer.py: the agent connects out with its
# token in the Authorization header (read from the token file at each
# attempt: a file written after the start is picked up), declares its
# capabilities in AGENT_METADATA (TM-PROTO-18); an open to a live loopback
# target relays bytes after OPEN_RESULT(ok) (TM-P0-7); a refused port is
# connect/connection_refused and the connection stays up, no reconnect
# (TM-TEST-9, TM-TEST-32, TM-P0-13); a name whose DNS hangs (t/lib/dnsd.py)
# does not delay a second open (TM-TEST-6, TM-P0-2); a full dial queue
# refuses only that stream (TM-FAIL-1); a legacy server (no subprotocol,
# ACK without capabilities) gets legacy opens and RESET for a failure
# (TM-P0-3, TM-P0-21); capability switches off make a legacy agent; the
# server's GOAWAY makes the agent reconnect.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

MODS="$top_builddir/modules"
require_modules direct tunnel_agent

ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
metrics_of() { http_get "http://127.0.0.1:$admin/metrics"; }

admin=$(free_port)
pport=$(free_port)
TOKEN=tok_agent0123456789.Sx9-agent-secret-BBBBBBBBBBBBBBBBBBBBBBBBBBBB

start_dnsd ok.test=127.0.0.1; ok $? "dnsd on loopback (hang.test never answers)"
start_file_server "$T/www" "agent-served"; ok $? "a loopback HTTP target"
web=$FILE_SERVER_PORT
closed=$(free_port) # nothing listens there: connection refused

write_conf() { # write_conf FILE [EXTRA-LINES-FOR-tunnel_agent]
  agent_peer_conf "$1" "dns_timeout = 20s
open_timeout = 30s" "streams.open_timeout = 20s
streams.connect_timeout = 20s
; the targets are on loopback: opened explicitly (issue 22 item 5)
targets.allow_host_local = 127.0.0.0/8
${2:-}"
}

# ---- configuration checks ------------------------------------------------
write_conf "$T/bad.ini" "token = inline-secret-xyz"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "token_file and token together are refused"
unlike "$out" "inline-secret-xyz" "... without echoing the token"
sed '/^token_file/d' "$T/bad.ini" | sed '/^token =/d' >"$T/bad2.ini"
"$PROXYHOST" -c "$T/bad2.ini" --check-config >/dev/null 2>&1
is $? 2 "no token at all is refused"
write_conf "$T/bad.ini" "connections.min = 3
connections.max = 2"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "connections.min above connections.max is refused"
write_conf "$T/bad.ini" "streams.window_update_threshold = 512KiB"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "a window update threshold above the window is refused (TM-CFG-25)"
write_conf "$T/bad.ini" "streams.max_frame_payload = 128KiB"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "a frame payload above the protocol's 64 KiB is refused (TM-CFG-25)"
write_conf "$T/bad.ini" "extra_server_urls = ws://127.0.0.1:1/tunnel, http://127.0.0.1:2/"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "an extra server URL that is not ws:// or wss:// is refused"
like "$out" "extra_server_urls" "... naming the key"
write_conf "$T/bad.ini" "connector = direct.nowhere"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "a connector instance that is not loaded is refused"
{ printf '[proxyhost]\nmodules = direct\nmodule_path = %s\n' "$MODS"
  cat "$top_srcdir/modules/tunnel_agent/tunnel_agent.ini.sample"; } >"$T/s.ini"
"$PROXYHOST" -c "$T/s.ini" --check-config >/dev/null 2>&1
is $? 0 "the sample passes --check-config"
out=$("$PROXYHOST" -c "$T/bad.ini" --print-config 2>/dev/null | grep -c 'inline-secret' || true)
is "$out" 0 "--print-config never shows a token"

# ---- strict server: metadata, relay, refused, hanging DNS ----------------
SCRIPT='[{"op":"wait_conn","n":1},
 {"op":"expect_metadata","ack":false,"agent_id":"lab-1","has_caps":true,
  "capabilities":["stream_open_result.v1","stream_flow_control.v1","stream_fair_writer.v1","stream_trace.v1"]},
 {"op":"open","sid":1,"host":"127.0.0.1","port":'$web'},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"send","sid":1,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"agent-served"},
 {"op":"open","sid":3,"host":"127.0.0.1","port":'$closed'},
 {"op":"expect_result","sid":3,"accepted":false,"stage":"connect","code":"connection_refused"},
 {"op":"open","sid":5,"host":"a.hang.test","port":80},
 {"op":"open","sid":7,"host":"b.hang.test","port":80},
 {"op":"open","sid":9,"host":"ok.test","port":'$web'},
 {"op":"expect_result","sid":9,"accepted":true,"timeout_ms":5000},
 {"op":"send","sid":9,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":9,"contains":"agent-served"},
 {"op":"expect_no_result","sid":5,"ms":200},
 {"op":"reset","sid":5,"code":0},
 {"op":"reset","sid":7,"code":0},
 {"op":"open","sid":11,"host":"127.0.0.1","port":'$web'},
 {"op":"expect_result","sid":11,"accepted":true},
 {"op":"mark","name":"end"}]'
start_peer strict --script "$SCRIPT"; ok $? "server peer (strict) listening"
write_conf "$T/a.ini"
start_proxyhost "$T/a.ini"
wait_for healthy "$admin"; ok $? "proxyhost with direct and tunnel_agent runs"
ready; is $? 1 "TM-OBS: not ready while the token file is missing"
wait_for grep -q "no usable token" "$T/ph.log"
ok $? "a missing token file is one warning"
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"
wait_for ready; ok $? "ready once the token file exists and the connection is up"
peer_done strict; ok $? "TM-PROTO-18, TM-P0-7, TM-TEST-9, TM-TEST-6: the peer's script passed"
show_fail strict
h=$(grep '"ev": *"handshake"' "$T/peer-strict.log" | head -1)
like "$h" "$TOKEN" "the token travels in the Authorization header"
like "$h" '"subprotocol": "tunnelmesh.v1.open-result.flow-control"' \
  "the full subprotocol is chosen"
unlike "$(cat "$T/ph.log")" "$TOKEN" "the token is never logged"
is "$(handshakes strict)" 1 "TM-TEST-32, TM-P0-13: a refused target did not make the agent reconnect"
ready; ok $? "and it is still ready"
lines=$(grep -c '"stream ended"\|stream ended' "$T/ph.log")
[ "$lines" -ge 3 ]; ok $? "one log line per stream end ($lines)"
like "$(grep 'stream ended' "$T/ph.log")" "connection_refused" \
  "the refused stream's line has the stable code"
unlike "$(grep 'stream ended' "$T/ph.log")" "hang.test" \
  "targets are never logged at info (TM-SEC-9)"
m=$(metrics_of)
like "$m" 'tunnelmesh_stream_open_total{component="agent"' "open_total counted for the agent"
like "$m" 'tunnelmesh_stream_queue_wait_seconds_count{component="agent"}' \
  "the dial queue wait is recorded"
stop_agent strict
stop_peer

# ---- a full dial queue refuses only that stream ---------------------------
SCRIPT='[{"op":"wait_conn","n":1},{"op":"expect_metadata","ack":false},
 {"op":"open","sid":1,"host":"a.hang.test","port":80},
 {"op":"open","sid":3,"host":"b.hang.test","port":80},
 {"op":"open","sid":5,"host":"c.hang.test","port":80},
 {"op":"expect_result","sid":5,"accepted":false,"stage":"queue","code":"queue_full"},
 {"op":"expect_no_result","sid":1,"ms":200},
 {"op":"reset","sid":1,"code":0},
 {"op":"reset","sid":3,"code":0},
 {"op":"open","sid":7,"host":"127.0.0.1","port":'$web'},
 {"op":"expect_result","sid":7,"accepted":true},
 {"op":"send","sid":7,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":7,"contains":"agent-served"}]'
start_peer queue --script "$SCRIPT"; ok $? "server peer for the queue bound"
write_conf "$T/q.ini" "streams.max_concurrent_dials = 1
streams.max_pending_dials = 1"
start_proxyhost "$T/q.ini"
peer_done queue; ok $? "TM-FAIL-1, TM-TEST-11, TM-P0-3: queue full refuses only that stream; resets free the slots"
show_fail queue
is "$(handshakes queue)" 1 "and the connection stayed up"
stop_agent "queue"
stop_peer

# ---- a burst of opens beyond every queue (issue 22 item 7) ----------------
# 3000 OPEN_STREAMs at once: more than the dial slots and queue (32 + 128),
# streams.max_streams (1024) and the control queue (1024 frames) together.
# Each stream is answered on its own (OPEN_RESULT or RESET with its code)
# and the connection stays up: the session stops reading while its control
# queue could not take the answers, instead of closing as control_full.
SCRIPT='[{"op":"wait_conn","n":1},{"op":"expect_metadata","ack":false},
 {"op":"open_burst","first_sid":1,"n":3000,"host":"127.0.0.1","port":'$closed'},
 {"op":"expect_burst_answers","first_sid":1,"n":3000,"timeout_ms":60000},
 {"op":"open","sid":7001,"host":"127.0.0.1","port":'$web'},
 {"op":"expect_result","sid":7001,"accepted":true},
 {"op":"send","sid":7001,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":7001,"contains":"agent-served"}]'
start_peer burst --script "$SCRIPT"; ok $? "server peer for a burst of opens"
write_conf "$T/b.ini"
start_proxyhost "$T/b.ini"
peer_passed burst "issue 22 item 7: 3000 opens at once are answered one by one, the connection stays up and serves the next open"
grep '"ev": "burst_answers"' "$T/peer-burst.log" | sed 's/^/# /'
is "$(handshakes burst)" 1 "issue 22 item 7: no reconnect (no control_full)"
grep -q 'reading paused' "$T/ph.log"; ok $? "issue 22 item 7: the pause is logged"
m=$(metrics_of)
# The pause is backpressure the stream waits out: result="success"; a
# full control queue would close the session: result="failure" (TM-OBS-5).
like_re "$m" 'tunnelmesh_stream_backpressure_total\{component="agent",open_mode="[a-z]+",result="success"\} [1-9]' \
  "issue 22 item 7: the pauses are counted (backpressure result=success)"
is "$(printf '%s\n' "$m" | grep -c '^tunnelmesh_stream_backpressure_total{component="agent",open_mode="[a-z]*",result="failure"} 0$')" 2 \
  "and control_full never happened (result=failure 0 in both open modes)"
stop_agent "burst"
stop_peer

# ---- a legacy server: no subprotocol, ACK without capabilities -----------
SCRIPT='[{"op":"wait_conn","n":1},{"op":"expect_metadata","ack":false},
 {"op":"open","sid":1,"host":"127.0.0.1","port":'$web'},
 {"op":"send","sid":1,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"agent-served"},
 {"op":"open","sid":3,"host":"127.0.0.1","port":'$closed'},
 {"op":"expect_reset","sid":3},
 {"op":"expect_no_event","ev":"open_result","ms":200}]'
start_peer legacy --subproto none --caps none --script "$SCRIPT"
ok $? "legacy server peer listening"
write_conf "$T/a.ini"
start_proxyhost "$T/a.ini"
peer_done legacy; ok $? "TM-P0-21, TM-PROTO-16: legacy opens relay, a failure is a RESET of that stream only"
show_fail legacy
is "$(handshakes legacy)" 1 "no reconnect against the legacy server either"
like "$(grep '"ev": *"handshake"' "$T/peer-legacy.log" | head -1)" '"subprotocol": null' \
  "no subprotocol was chosen"
stop_agent "legacy server"
stop_peer

# ---- capability switches off: a legacy agent -----------------------------
SCRIPT='[{"op":"wait_conn","n":1},
 {"op":"expect_metadata","ack":false,"capabilities":[]},
 {"op":"open","sid":1,"host":"127.0.0.1","port":'$web'},
 {"op":"send","sid":1,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"agent-served"}]'
start_peer lagent --script "$SCRIPT"; ok $? "server peer for a legacy agent"
write_conf "$T/l.ini" "capabilities.open_result = false
capabilities.flow_control = false
capabilities.fair_writer = false"
start_proxyhost "$T/l.ini"
peer_done lagent; ok $? "capabilities off: no capabilities declared, legacy opens work"
show_fail lagent
like "$(grep '"ev": *"handshake"' "$T/peer-lagent.log" | head -1)" '"offer": "tunnelmesh.v1"' \
  "only the base subprotocol is offered"
stop_agent "legacy agent"
stop_peer

# ---- GOAWAY: drain and reconnect -------------------------------------------
SCRIPT='[{"op":"wait_conn","n":1},{"op":"expect_metadata","ack":false},
 {"op":"goaway","last":0},
 {"op":"wait_conn","n":2,"timeout_ms":10000},
 {"op":"expect_metadata","conn":1,"ack":false},
 {"op":"open","conn":1,"sid":1,"host":"127.0.0.1","port":'$web'},
 {"op":"expect_result","conn":1,"sid":1,"accepted":true}]'
start_peer goaway --script "$SCRIPT"; ok $? "server peer that sends GOAWAY"
write_conf "$T/a.ini"
start_proxyhost "$T/a.ini"
peer_done goaway; ok $? "GOAWAY from the server: the agent reconnects and serves on the new connection"
show_fail goaway
stop_agent "goaway"
stop_peer

done_testing

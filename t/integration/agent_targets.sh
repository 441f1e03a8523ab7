#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 22 item 5 (TM-SEC: the agent dials its own host). A real
# proxyhost (direct + tunnel_agent) against the server peer t/lib/tm_peer.py
# playing a hostile server: by default the agent refuses every host-local
# destination, checked on the resolved address at connect time (so a name
# that resolves to 127.0.0.1, DNS rebinding, is refused too): loopback
# 127.0.0.1 and ::1 (and ::ffff:127.0.0.1), unspecified 0.0.0.0, the
# link-local metadata address 169.254.169.254, and one of the host's own
# non-loopback addresses. Each is OPEN_RESULT policy/forbidden for that
# stream only (the connection stays up), counted, logged without the
# target. With targets.allow_host_local the operator opens them, and the
# same opens are dialled.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules direct tunnel_agent

metrics_of() { http_get "http://127.0.0.1:$admin/metrics"; }

admin=$(free_port)
pport=$(free_port)
TOKEN=tok_agent0123456789.Sx9-agent-secret-CCCCCCCCCCCCCCCCCCCCCCCCCCCC
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"

# rebind.test: a public-looking name whose DNS answer is loopback.
start_dnsd rebind.test=127.0.0.1; ok $? "dnsd on loopback"
start_file_server "$T/www" "host-local-served"; ok $? "a loopback HTTP target"
web=$FILE_SERVER_PORT
closed=$(free_port) # nothing listens there
# One of this host's own non-loopback addresses (getifaddrs at the agent).
own=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v ':' | head -1)

write_conf() { # write_conf FILE [EXTRA-LINES-FOR-tunnel_agent]
  agent_peer_conf "$1" "connect_timeout = 1s" "streams.connect_timeout = 1s
${2:-}"
}

# ---- the key is checked ----------------------------------------------------
write_conf "$T/bad.ini" "targets.allow_host_local = 127.0.0.1/33"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is $? 2 "targets.allow_host_local: a bad CIDR is refused"

# try SID HOST PORT EXPECT: the peer's steps that open HOST:PORT and
# expect EXPECT (the keys of expect_result) as its answer.
try() {
  printf '{"op":"open","sid":%s,"host":"%s","port":%s},\n' "$1" "$2" "$3"
  printf '{"op":"expect_result","sid":%s,%s},\n' "$1" "$4"
}
BEGIN='[{"op":"wait_conn","n":1},{"op":"expect_metadata","ack":false},'
END='{"op":"mark","name":"end"}]'

# ---- default: every host-local destination refused (issue 22 item 5) -------
FORBID='"accepted":false,"stage":"policy","code":"forbidden"'
DIALLED='"accepted":false,"stage_not":"policy"'
n_refused=6
[ -z "$own" ] || n_refused=7
SCRIPT="$BEGIN
$(try 1 127.0.0.1 "$web" "$FORBID")
$(try 3 ::1 "$web" "$FORBID")
$(try 5 0.0.0.0 "$web" "$FORBID")
$(try 7 169.254.169.254 80 "$FORBID")
$(try 9 rebind.test "$web" "$FORBID")
$(try 11 ::ffff:127.0.0.1 "$web" "$FORBID")
$([ -z "$own" ] || try 13 "$own" "$closed" "$FORBID")
$END"
start_peer strict --script "$SCRIPT"; ok $? "hostile server peer listening"
write_conf "$T/a.ini"
start_proxyhost "$T/a.ini"
wait_for healthy "$admin"; ok $? "proxyhost with direct and tunnel_agent runs"
peer_passed strict "issue 22 item 5: 127.0.0.1, ::1, 0.0.0.0, 169.254.169.254, a name resolving to 127.0.0.1, ::ffff:127.0.0.1 are policy/forbidden by default"
[ -n "$own" ] || skip "this host has no non-loopback IPv4 address to try"
is "$(handshakes strict)" 1 "each refusal is that stream's only: the connection stayed up"
m=$(metrics_of)
like "$m" "proxyhost_tunnel_agent_host_local_refused_total $n_refused" \
  "every refusal is counted ($n_refused)"
like "$m" "tunnelmesh_stream_open_total{component=\"agent\",result=\"rejected\",error_class=\"forbidden\",open_mode=\"strict\"} $n_refused" \
  "and reaches open_total as forbidden"
grep -q 'host-local' "$T/ph.log"; ok $? "the refusal is logged"
unlike "$(grep 'host-local' "$T/ph.log")" "rebind.test" "... without the target"
stop_agent "default"
stop_peer

# ---- opened by the operator: the same destinations are dialled ------------
SCRIPT="$BEGIN
$(try 1 127.0.0.1 "$web" '"accepted":true')
"'{"op":"send","sid":1,"data":"GET /hello.txt HTTP/1.0\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"host-local-served"},'"
$(try 3 ::1 "$closed" "$DIALLED")
$(try 5 0.0.0.0 "$web" '"accepted":true')
$(try 7 169.254.169.254 80 '"stage_not":"policy","timeout_ms":5000')
$(try 9 rebind.test "$web" '"accepted":true')
$([ -z "$own" ] || try 13 "$own" "$closed" "$DIALLED")
$END"
start_peer opened --script "$SCRIPT"; ok $? "server peer for the opened agent"
write_conf "$T/o.ini" "targets.allow_host_local = 127.0.0.0/8, ::1, 0.0.0.0, 169.254.169.254${own:+, $own}"
start_proxyhost "$T/o.ini"
peer_passed opened "issue 22 item 5: targets.allow_host_local opens exactly what it lists"
m=$(metrics_of)
like "$m" "proxyhost_tunnel_agent_host_local_refused_total 0" "nothing refused"
stop_agent "opened"
stop_peer

# ---- a partial opening: loopback only, the metadata address stays shut -----
SCRIPT="$BEGIN
$(try 1 rebind.test "$web" '"accepted":true')
$(try 3 169.254.169.254 80 "$FORBID")
$(try 5 0.0.0.0 "$web" "$FORBID")
$END"
start_peer partial --script "$SCRIPT"; ok $? "server peer for a partial opening"
write_conf "$T/p.ini" "targets.allow_host_local = 127.0.0.1"
start_proxyhost "$T/p.ini"
peer_passed partial "issue 22 item 5: allowing 127.0.0.1 leaves 169.254.169.254 and 0.0.0.0 refused"
stop_agent "partial"
stop_peer

done_testing

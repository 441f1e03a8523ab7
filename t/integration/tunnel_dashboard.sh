#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every panel of the Grafana dashboard (deploy/grafana/dashboards/
# tunnelmesh.json) against live scrapes taken after traffic, with
# t/lib/dashboard_check.py --moved: each selector of each panel, with its
# label matchers, must match a series that moved from zero, so a panel
# that can only read 0 fails, not only one whose metric is missing
# (issue 24 item 11; TM-OBS-23..27).
#
# Real processes: a server (with process_metrics), an agent whose direct
# has one dial slot and one queue place, a client with socks5 and
# http_proxy (max_clients 4 and 1), and a probe process (t/modules/probe)
# for the host's module-thread panels. The traffic: GETs through socks5
# and http_proxy (forward and CONNECT), a refused target and an unknown
# name, a garbage SOCKS5 greeting, a second client that comes and goes, a
# reload; then, held while the scrapes are taken, a slow download (window
# stalls, an active stream), two dials that hang (one running, one
# queued) and a third answered queue_full, both frontends at max_clients
# with one more connection refused each.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5 http_proxy process_metrics
PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
DASH="$top_srcdir/deploy/grafana/dashboards/tunnelmesh.json"
CHECK="$PY $top_srcdir/t/lib/dashboard_check.py"
# The loop's own mailbox overflowing (proxyhost_mailbox_full_total, and
# proxyhost_bus_dropped_total, bus messages from other threads it
# refused) takes a module posting from its threads faster than the loop
# runs: no role does, and no outside traffic can make it. The unit tests
# count them (t/unit/host/test_mailbox.c); they are the only names exempt.
ZERO_OK='^proxyhost_(mailbox_full_total|bus_dropped_total)$'
# What is held while scraping must outlast a loaded machine's waits: the
# opens' timeouts, the hanging CONNECTs and the idle connections run this
# long (the test kills them when it ends), the slow download 64 MiB at
# 512 KiB/s.
HOLD=120s
HOLD_S=150

tn_setup; ok $? "admin token and dnsd.py"
mkdir -p "$T/www"
printf 'hello dashboard\n' >"$T/www/hello.txt"
head -c 67108864 /dev/zero >"$T/www/big.bin"
start_file_server "$T/www" "hello dashboard"; ok $? "file server up"
web=$FILE_SERVER_PORT
tn_blackhole; ok $? "a port whose connects hang"

# A repeated modules key adds to the list (tunnel.sh wrote the roles').
PM='[proxyhost]
modules'
tn_server s "$PM = process_metrics
[tunnel_server]
stream.open_timeout = $HOLD"
ok $? "server up"
tn_creds s; ok $? "credentials (proxyhostctl)"
tn_agent a s "$PM = process_metrics
[direct]
max_concurrent_dials = 1
max_pending_dials = 1
connect_timeout = $HOLD
open_timeout = $HOLD
[tunnel_agent]
streams.open_timeout = $HOLD
streams.connect_timeout = $HOLD"
ok $? "agent up (direct: one dial slot, one queue place)"
hport=$(free_port)
tn_client c s "$PM = http_proxy, process_metrics
[tunnel_client]
stream.open_timeout = $HOLD
[socks5]
max_clients = 4
[http_proxy]
listen = 127.0.0.1:$hport
auth = none
connector = tunnel_client
max_clients = 1"
ok $? "client up (socks5 and http_proxy)"
tn_wait_sessions "$a_admin" agent 1; ok $? "the agent holds a session"
wait_for tn_ready "$c_admin"; ok $? "the client is ready"
probe_admin=$(free_port)
cat >"$T/probe.ini" <<EOC
[proxyhost]
modules = probe, process_metrics
module_path = $TMOD, $top_builddir/modules
[admin]
listen = 127.0.0.1:$probe_admin
[probe]
threads = 2
thread_posts = 2000
thread_queue = 1
EOC
start_proxyhost "$T/probe.ini"
probe_pid=$PH_PID
wait_for healthy "$probe_admin"; ok $? "a probe process (module threads) up"

# ---- traffic ---------------------------------------------------------------
U="http://ok.test:$web/hello.txt"
for i in 1 2 3; do
  is "$(tn_get "$c_socks" "$U")" "hello dashboard" "GET $i through socks5 -> server -> agent"
done
is "$("$CURL" -s -m 10 -x "http://127.0.0.1:$hport" "$U")" "hello dashboard" \
  "a forwarded GET through http_proxy (protocol http)"
is "$("$CURL" -s -m 10 -p -x "http://127.0.0.1:$hport" "$U")" "hello dashboard" \
  "a CONNECT through http_proxy (protocol tcp)"
closed=$(free_port)
is "$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$closed" --atyp ipv4)" 0x05 \
  "a refused target (an error class)"
is "$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "nx.test:80")" 0x04 \
  "an unknown name (another)"
$PY - "$c_socks" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"\x04\x01\x00\x50")  # a SOCKS4 greeting: not ours
try:
    s.recv(16)
except OSError:
    pass
EOF
hs_failed() { [ "$(tn_sum "$c_admin" '^proxyhost_socks5_handshake_failures_total')" -ge 1 ]; }
wait_long hs_failed; ok $? "a garbage greeting counted as a handshake failure"
tn_client c2 s; ok $? "a second client up"
wait_for tn_ready "$c2_admin"; ok $? "... ready"
kill -TERM "$c2_pid"
wait_exit "$c2_pid" 10; is "$EXIT" 0 "... and gone"
gone() { [ "$(tn_sum "$s_admin" '^proxyhost_stream_tunnel_sessions_closed_total')" -ge 1 ]; }
wait_long gone; ok $? "the server counted its session closed"
kill -HUP "$c_pid" "$probe_pid"
reloaded() { [ "$(tn_sum "$c_admin" '^proxyhost_reloads_total\{result="ok"\}')" -ge 1 ]; }
wait_long reloaded; ok $? "the client reloaded (SIGHUP)"
probe_done() {
  [ "$(tn_sum "$probe_admin" '^probe_thread_calls_total')" -ge 4000 ] &&
    [ "$(tn_sum "$probe_admin" '^probe_reload_messages_total')" -ge 1 ]
}
wait_long probe_done; ok $? "the probe's threads posted through queues of 1, and it saw the reload"
polled() { [ "$(tn_sum "$s_admin" '^tunnelmesh_authorization_revision_poll_total')" -ge 1 ]; }
wait_long polled; ok $? "the server polled the revision"

# ---- held while scraping ---------------------------------------------------
"$CURL" -s -m "$HOLD_S" --limit-rate 512K -o /dev/null \
  --proxy "socks5h://127.0.0.1:$c_socks" "http://ok.test:$web/big.bin" &
slow=$!
PIDS="$PIDS $slow"
stalled() {
  [ "$(tn_sum "$s_admin" '^tunnelmesh_stream_window_stall_seconds_count')" -ge 1 ] &&
    [ "$(tn_sum "$c_admin" '^proxyhost_stream_active')" -ge 1 ]
}
wait_long stalled; ok $? "a slow reader: the server's writer stalls on the window (TM-OBS-4)"
for h in 1 2; do
  $PROBE hold --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$bh" --seconds "$HOLD_S" >/dev/null 2>&1 &
  PIDS="$PIDS $!"
done
dials() {
  [ "$(tn_sum "$a_admin" '^proxyhost_direct_dials_active')" = 1 ] &&
    [ "$(tn_sum "$a_admin" '^proxyhost_direct_dials_pending')" = 1 ]
}
wait_long dials; ok $? "two hanging dials: one running, one queued"
is "$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$bh" --atyp ipv4)" 0x01 \
  "a third: queue_full (general failure)"
# socks5 now holds the slow download and the two hanging CONNECTs; one
# idle connection fills max_clients = 4, the next is refused. http_proxy
# takes one (max_clients = 1), the next is refused.
$PY - "$HOLD_S" "$c_socks" "$hport" >"$T/idle.out" 2>&1 <<'EOF' &
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(p)), timeout=5)
        for p in sys.argv[2:]]
print("held", flush=True)
time.sleep(int(sys.argv[1]))
EOF
PIDS="$PIDS $!"
full() {
  [ "$(tn_sum "$c_admin" '^proxyhost_socks5_clients ')" = 4 ] &&
    [ "$(tn_sum "$c_admin" '^proxyhost_http_proxy_clients ')" = 1 ]
}
wait_long full; ok $? "both frontends at max_clients"
for p in "$c_socks" "$hport"; do
  $PY -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.settimeout(5)
try:
    s.recv(1)
except OSError:
    pass' "$p"
done
refused() {
  [ "$(tn_sum "$c_admin" '^proxyhost_socks5_clients_refused_total')" -ge 1 ] &&
    [ "$(tn_sum "$c_admin" '^proxyhost_http_proxy_clients_refused_total')" -ge 1 ]
}
wait_long refused; ok $? "one more connection refused on each"

for p in s a c probe; do
  tn_metrics "$(eval echo "\$${p}_admin")" >"$T/$p.prom"
done
kill "$slow" 2>/dev/null

# ---- the dashboard ---------------------------------------------------------
# The relay's panels need two servers: tunnel_relay.sh checks them.
# --vars: every selector filters on the job and instance variables (issue
# 28: one role's or one node's series are never summed with another's).
$CHECK --moved --zero-ok "$ZERO_OK" --vars job,instance --skip-panels '^Relay:' "$DASH" "$T/s.prom" "$T/a.prom" "$T/c.prom" \
  "$T/probe.prom" >"$T/dash.out" 2>&1
ok $? "TM-OBS-23..27 every panel's every series moved after traffic, all filtered on job and instance ($(grep -c '^checked' "$T/dash.out") names)"
grep -E '^(problem|zero-ok)' "$T/dash.out" | sed 's/^/# /'
like_re "$(cat "$T/s.prom")" \
  'tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="relay",result="success",scope="local"\} [1-9]' \
  "TM-OBS-15 the server's relay stage (the agent's leg) is recorded, scope=\"local\""
$PY "$top_srcdir/t/lib/metrics_lint.py" --seed-labels "$T/s.prom" "$T/a.prom" \
  "$T/c.prom" >"$T/labels.out" 2>&1
ok $? "TM-TEST-18 TM-OBS-10..17 the three roles' tunnelmesh_* series carry only the seed's labels and values"
sed 's/^/# /' "$T/labels.out" | head -10
{ cat "$T/s.prom"; echo 'tunnelmesh_stream_backpressure_total{component="server",reason="window_stall"} 1'; } >"$T/old.prom"
$PY "$top_srcdir/t/lib/metrics_lint.py" --seed-labels "$T/old.prom" >"$T/labels.out" 2>&1
[ $? -eq 1 ] && grep -q "label 'reason' not allowed" "$T/labels.out"
ok $? "... and refuses the old backpressure series (reason is not a seed label)"
{ cat "$T/s.prom"; echo 'tunnelmesh_stream_open_total{component="server",result="success",error_class="ok",open_mode="lenient"} 1'; } >"$T/mode.prom"
$PY "$top_srcdir/t/lib/metrics_lint.py" --seed-labels "$T/mode.prom" >"$T/labels.out" 2>&1
[ $? -eq 1 ] && grep -q "open_mode='lenient' not allowed" "$T/labels.out"
ok $? "TM-OBS-17 ... and an open_mode other than strict or legacy"
unlike "$(cat "$T/s.prom" "$T/a.prom" "$T/c.prom")" 'scope="remote"' \
  "TM-OBS-15 no remote series while one server is the whole mesh"

# The check fails on a panel that can only read 0: the relay ratio's
# numerator taken from remote relays, which nothing records here.
$PY - "$DASH" "$T/bad.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    if p.get("id") == 34:
        p["targets"][0]["expr"] = (
            'sum(rate(tunnelmesh_stream_stage_duration_seconds_count'
            '{component="server",stage="relay",scope="remote"}'
            '[$__rate_interval])) / sum(rate(tunnelmesh_stream_open_total'
            '{component="server"}[$__rate_interval]))')
json.dump(d, open(sys.argv[2], "w"))
EOF
$CHECK --moved --zero-ok "$ZERO_OK" "$T/bad.json" "$T/s.prom" "$T/a.prom" "$T/c.prom" \
  "$T/probe.prom" >"$T/bad.out" 2>&1
[ $? -eq 1 ] && grep -q "Local / remote relay ratio.*never moved" "$T/bad.out"
ok $? "dashboard_check.py --moved fails on a relay ratio whose numerator cannot move"
grep '^problem' "$T/bad.out" | sed 's/^/# /'
# ... and on a panel that does not filter on the instance.
$PY - "$DASH" "$T/unfiltered.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = [p for p in d["panels"] if p.get("targets")][0]["targets"][0]
t["expr"] = t["expr"].replace(',instance=~"$instance"', "")
json.dump(d, open(sys.argv[2], "w"))
EOF
$CHECK --vars job,instance "$T/unfiltered.json" "$T/s.prom" "$T/a.prom" "$T/c.prom" \
  "$T/probe.prom" >"$T/unfiltered.out" 2>&1
[ $? -eq 1 ] && grep -q 'does not filter on instance' "$T/unfiltered.out"
ok $? "dashboard_check.py --vars fails on a panel that does not filter on the instance"

done_testing

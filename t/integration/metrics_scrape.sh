#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The metrics of a real local proxy (conf/local.ini: direct, socks5,
# http_proxy, process_metrics): an idle scrape is bounded and holds only
# series the process can produce, in the documented prefix scheme
# (t/lib/metrics_lint.py); after curl traffic through both frontends,
# every metric name in the Grafana dashboard
# (deploy/grafana/dashboards/tunnelmesh.json) is in /metrics
# (t/lib/dashboard_check.py). promtool accepts both scrapes.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
require_modules direct socks5 http_proxy process_metrics
# The bound on an idle scrape's lines (485 when written; 2,682 before the
# modules declared their series).
MAX_IDLE_LINES=600
DASH="$top_srcdir/deploy/grafana/dashboards/tunnelmesh.json"

admin=$(free_port)
sport=$(free_port)
hport=$(free_port)
# conf/local.ini with its conf.d drop-ins (direct, socks5, http_proxy),
# on free ports and with the build's modules.
mkdir -p "$T/conf/conf.d"
for f in "$top_srcdir/conf/local.ini" "$top_srcdir"/conf/conf.d/*.ini; do
  case $f in */conf.d/*) out="$T/conf/conf.d/${f##*/}" ;; *) out="$T/conf/${f##*/}" ;; esac
  sed -e "s/^include = .*/&\nmodule_path = $(printf '%s' "$top_builddir/modules" | sed 's/[\/&]/\\&/g')/" \
    -e "s/127\.0\.0\.1:9470/127.0.0.1:$admin/" \
    -e "s/127\.0\.0\.1:1080/127.0.0.1:$sport/" \
    -e "s/127\.0\.0\.1:8080/127.0.0.1:$hport/" \
    "$f" >"$out"
done
like "$(cat "$T/conf/local.ini" "$T"/conf/conf.d/*.ini)" "listen = 127.0.0.1:$sport" "conf/local.ini and its drop-ins with free ports"

start_proxyhost "$T/conf/local.ini"
wait_for healthy "$admin"; ok $? "the local proxy answers /healthz"

scrape() { # scrape FILE: /metrics without the status line
  http_get "http://127.0.0.1:$admin/metrics" | sed 1d >"$1"
}

# ---- idle ------------------------------------------------------------------
scrape "$T/idle.txt"
lines=$(wc -l <"$T/idle.txt")
echo "# idle scrape: $lines lines"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/idle.txt" "$MAX_IDLE_LINES" \
  direct socks5 http_proxy process_metrics >"$T/lint.out" 2>&1
ok $? "idle: at most $MAX_IDLE_LINES lines ($lines), only producible series, names in the scheme"
sed 's/^/# /' "$T/lint.out"
unlike "$(cat "$T/idle.txt")" 'component="agent"' "idle: no component=\"agent\" series"
unlike "$(cat "$T/idle.txt")" 'result="success",error_class="forbidden"' \
  "idle: no result=\"success\",error_class=\"forbidden\""
like "$(cat "$T/idle.txt")" \
  'tunnelmesh_stream_open_total{component="client",result="rejected",error_class="forbidden",open_mode="strict"} 0' \
  "idle: the possible pairs are there at 0"
like "$(cat "$T/idle.txt")" 'stage="socks5_handshake",result="success",scope="local",le="+Inf"} 0' \
  "idle: the stages socks5 records are there"
unlike "$(cat "$T/idle.txt")" 'stage="authorization"' \
  "idle: no authorization stage with auth = none"
"$PROMTOOL" check metrics <"$T/idle.txt" >"$T/promtool.out" 2>&1
ok $? "idle: promtool accepts the exposition"
sed 's/^/# promtool: /' "$T/promtool.out"

# The checkers catch what they are for.
printf 'tunnelmesh_stream_open_total{component="agent",result="success",error_class="forbidden",open_mode="strict"} 0\n# TYPE socks5_clients gauge\n' \
  >>"$T/idle.txt"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/idle.txt" 100000 direct >"$T/lint.out" 2>&1
[ $? -eq 1 ] && grep -q 'component' "$T/lint.out" && grep -q 'impossible pair' "$T/lint.out" &&
  grep -q 'socks5_clients is outside' "$T/lint.out"
ok $? "metrics_lint.py refuses an agent series, an impossible pair and a name outside the scheme"

# ---- traffic ---------------------------------------------------------------
start_file_server "$T/www" "hello metrics"; ok $? "HTTP target on 127.0.0.1"
tp=$FILE_SERVER_PORT
O="http://127.0.0.1:$tp/hello.txt"
is "$("$CURL" -s -m 5 --socks5 "127.0.0.1:$sport" "$O")" "hello metrics" "curl through socks5"
is "$("$CURL" -s -m 5 -x "http://127.0.0.1:$hport" "$O")" "hello metrics" "curl through http_proxy (forward)"
is "$("$CURL" -s -m 5 -p -x "http://127.0.0.1:$hport" "$O")" "hello metrics" "curl through http_proxy (CONNECT)"
refused=$(free_port)
if "$CURL" -s -m 5 --socks5 "127.0.0.1:$sport" "http://127.0.0.1:$refused/" >/dev/null 2>&1; then
  ok 1 "curl through socks5 to a closed port fails"
else
  ok 0 "curl through socks5 to a closed port fails"
fi

opened() {
  scrape "$T/busy.txt"
  [ "$(metric "$(cat "$T/busy.txt")" 'tunnelmesh_stream_open_total{component="client",result="success",error_class="ok",open_mode="strict"}')" -ge 3 ] &&
    grep -q 'result="failure",error_class="connection_refused",open_mode="strict"} 1' "$T/busy.txt"
}
wait_for opened; ok $? "the opens are counted: 3 ok, 1 connection_refused"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/busy.txt" "$MAX_IDLE_LINES" \
  direct socks5 http_proxy process_metrics >"$T/lint.out" 2>&1
ok $? "after traffic: still only producible series"
sed 's/^/# /' "$T/lint.out"
"$PROMTOOL" check metrics <"$T/busy.txt" >"$T/promtool.out" 2>&1
ok $? "after traffic: promtool accepts the exposition"

# ---- the dashboard ---------------------------------------------------------
# The tunnel roles' own series are checked by t/integration/tunnel_e2e.sh
# against the scrapes of a server, an agent and a client.
TUNNEL_ONLY='^(tunnelmesh_authorization_|proxyhost_stream_tunnel_|proxyhost_stream_writer_wait_seconds|tunnelmesh_stream_(window_stall_seconds|backpressure_total)|proxyhost_tunnel_server_relay_)'
$PY "$top_srcdir/t/lib/dashboard_check.py" --absent-ok "$TUNNEL_ONLY" "$DASH" "$T/busy.txt" >"$T/dash.out" 2>&1
ok $? "every metric in every panel of tunnelmesh.json is in /metrics ($(grep -c '^checked' "$T/dash.out") names)"
sed 's/^/# /' "$T/dash.out"
sed 's/proxyhost_socks5_clients{/socks5_clients{/' "$DASH" >"$T/bad.json"
$PY "$top_srcdir/t/lib/dashboard_check.py" --absent-ok "$TUNNEL_ONLY" "$T/bad.json" "$T/busy.txt" >"$T/dash.out" 2>&1
[ $? -eq 1 ] && grep -q 'socks5_clients is not in /metrics' "$T/dash.out"
ok $? "dashboard_check.py catches a name that is not in /metrics"
# TunnelMesh has one dashboard; the pool's (controller.json, gateway.json,
# checker.json: issue 28) are another system's and show no tunnel metric.
(cd "$top_srcdir/deploy/grafana/dashboards" && grep -l 'tunnelmesh_' ./*.json) >"$T/dash.ls"
is "$(cat "$T/dash.ls")" "./tunnelmesh.json" "TunnelMesh has only one dashboard (TM-DOC-9)"
# The Network row holds the panels the seed names, each on its metric
# (that they move with traffic is tunnel_dashboard.sh's check).
network_row() { # DASHBOARD: one "ID ok" or "ID problem: ..." line per need
  $PY - "$1" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
row, panels = None, []
for p in d["panels"]:
    if p.get("type") == "row":
        row = p.get("title")
        panels += [(row, q) for q in p.get("panels", [])]
    else:
        panels.append((row, p))
net = [(q.get("title", ""),
        " ".join(t.get("expr", "") for t in q.get("targets", [])))
       for r, q in panels if r == "Network"]
NEEDS = [
    ("TM-OBS-24", r"strict.*legacy", r"tunnelmesh_stream_open_total.*open_mode"),
    ("TM-OBS-25", r"authorization cache hit",
     r"tunnelmesh_authorization_cache_requests_total"),
    ("TM-OBS-25", r"revision poll",
     r"tunnelmesh_authorization_revision_poll_total"),
    ("TM-OBS-26", r"queue wait", r"tunnelmesh_stream_queue_wait_seconds"),
    ("TM-OBS-26", r"window stall", r"tunnelmesh_stream_window_stall_seconds"),
    ("TM-OBS-26", r"backpressure", r"tunnelmesh_stream_backpressure_total"),
    ("TM-OBS-27", r"local.*remote relay", r'stage="relay".*scope'),
    ("TM-OBS-27", r"local and remote ttfb",
     r'scope.*stage="ttfb"|stage="ttfb".*scope'),
]
for oid, title, expr in NEEDS:
    hit = any(re.search(title, t, re.I) and re.search(expr, e) for t, e in net)
    print(oid, "ok" if hit else
          "problem: no Network panel /%s/ on /%s/" % (title, expr))
EOF
}
network_row "$DASH" >"$T/net.out" 2>&1
for id in TM-OBS-24 TM-OBS-25 TM-OBS-26 TM-OBS-27; do
  grep -q "^$id ok" "$T/net.out" && ! grep -q "^$id problem" "$T/net.out"
  ok $? "$id: the dashboard's Network row has its panels"
done
grep -v ' ok$' "$T/net.out" | sed 's/^/# /'
$PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["panels"] = [p for p in d["panels"] if p.get("title") != "Window stalls"]
json.dump(d, open(sys.argv[2], "w"))' "$DASH" "$T/bad.json"
like "$(network_row "$T/bad.json")" "TM-OBS-26 problem: no Network panel /window stall/" \
  "... and the check finds a Network panel taken out"

kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10
is "$EXIT" 0 "the local proxy stops cleanly"

# ---- with passwords: auth_local's names, the authorization stage ------------
if have_auth_local; then
  admin=$(free_port)
  cat >"$T/auth.ini" <<EOC
[proxyhost]
modules = auth_local, direct, socks5, http_proxy
module_path = $top_builddir/modules
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[socks5]
listen = 127.0.0.1:$(free_port)
auth = password
[http_proxy]
listen = 127.0.0.1:$(free_port)
auth = password
[auth_local]
users = alice:$(password_hash secret)
EOC
  start_proxyhost "$T/auth.ini"
  wait_for healthy "$admin"; ok $? "a local proxy with auth_local answers /healthz"
  scrape "$T/auth.txt"
  $PY "$top_srcdir/t/lib/metrics_lint.py" "$T/auth.txt" "$MAX_IDLE_LINES" \
    auth_local direct socks5 http_proxy >"$T/lint.out" 2>&1
  ok $? "with auth_local: bounded, only producible series, names in the scheme"
  sed 's/^/# /' "$T/lint.out"
  like "$(cat "$T/auth.txt")" 'stage="authorization",result="rejected",scope="local",le="+Inf"} 0' \
    "with auth = password: the authorization stage is there"
  like "$(cat "$T/auth.txt")" '# TYPE proxyhost_auth_local_checks_total counter' \
    "auth_local's checks counter is proxyhost_auth_local_*"
  "$PROMTOOL" check metrics <"$T/auth.txt" >"$T/promtool.out" 2>&1
  ok $? "with auth_local: promtool accepts the exposition"
  kill -TERM "$PH_PID"
  wait_exit "$PH_PID" 10
  is "$EXIT" 0 "and it stops cleanly"
else
  for n in 1 2 3 4 5 6; do skip "auth_local or proxyhost-passwd not built"; done
fi
done_testing

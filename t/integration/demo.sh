#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The README's main command ends in scripts/demo.sh: run it as the README
# does (ports, directory, build tree and the agent's DNS server moved by
# its environment variables so that the test stays on free loopback
# ports and never asks the system's resolver), wait for its "ready" line,
# curl through its SOCKS5 listener to a loopback target (client -> server
# -> agent -> target), check the files it wrote, stop it with SIGTERM,
# and run it again on the same directory (the credentials are reused).
. "$top_srcdir/t/lib/testlib.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5 process_metrics

grep -q 'scripts/demo.sh' "$top_srcdir/README.md"; ok $? "the README's main command runs scripts/demo.sh"
mkdir -p "$T/check"
"$top_builddir/tools/proxyhostctl" admin-token new "$T/check/admin.token" >/dev/null
out=$("$top_builddir/host/proxyhost" -c "$top_srcdir/conf/demo.ini" \
  --set "proxyhost.module_path=$top_builddir/modules" \
  --set "admin_api.token_file=$T/check/admin.token" \
  --set "store_sqlite.path=$T/check/authz.db" --check-config 2>&1)
is "$?:$out" "0:configuration ok: 9 module(s)" "conf/demo.ini passes --check-config (the paths the script sets)"
start_dnsd "demo.test=127.0.0.1"; ok $? "dnsd.py"
start_file_server "$T/www" "through the demo"; ok $? "a loopback target"
DEMO_DIR=$T/demo
DEMO_BUILDDIR=$top_builddir
DEMO_SOCKS_PORT=$(free_port)
DEMO_ADMIN_PORT=$(free_port)
DEMO_TUNNEL_PORT=$(free_port)
DEMO_RESOLVER=127.0.0.1:$dns_port
export DEMO_DIR DEMO_BUILDDIR DEMO_SOCKS_PORT DEMO_ADMIN_PORT DEMO_TUNNEL_PORT DEMO_RESOLVER

# demo N: starts scripts/demo.sh (output $T/demoN.out); sets demo_pid.
demo() {
  sh "$top_srcdir/scripts/demo.sh" >"$T/demo$1.out" 2>&1 &
  demo_pid=$!
  PIDS="$PIDS $demo_pid"
}
said_ready() { grep -q '^demo: ready' "$T/demo$1.out"; }
wait_ready() { # bounded: 400 x 0.1 s
  i=0
  while [ $i -lt 400 ] && ! said_ready "$1"; do
    running "$demo_pid" || return 1
    sleep 0.1
    i=$((i + 1))
  done
  said_ready "$1"
}
through() { "$CURL" -s -m 10 --proxy "socks5h://127.0.0.1:$DEMO_SOCKS_PORT" "http://demo.test:$FILE_SERVER_PORT/hello.txt"; }

demo 1
wait_ready 1; ok $? "scripts/demo.sh says ready"
sed 's/^/# /' "$T/demo1.out"
is "$(through)" "through the demo" "curl --proxy socks5h://127.0.0.1:PORT reaches the target through client -> server -> agent"
like_re "$("$CURL" -s "http://127.0.0.1:$DEMO_ADMIN_PORT/metrics")" \
  'tunnelmesh_stream_open_total\{component="client",result="success",error_class="ok",open_mode="strict"\} [1-9]' \
  "the demo's stream was a strict open"
is "$(stat -c %a "$DEMO_DIR")" 700 "the demo directory is 0700"
is "$(stat -c %a "$DEMO_DIR/client.token"):$(stat -c %a "$DEMO_DIR/agent.token")" 600:600 \
  "the token files are 0600"
[ -s "$DEMO_DIR/authz.db" ]; ok $? "the SQLite store is in the demo directory"
# The status page is on (issue 28): the admin token opens /v1/status, and
# agent list finds the demo's named tunnel server (tunnel_server.hub).
like "$(cat "$T/demo1.out")" "status: http://127.0.0.1:$DEMO_ADMIN_PORT/ui/" \
  "the demo names its status page"
is "$("$CURL" -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$DEMO_DIR/admin.token")" \
  "http://127.0.0.1:$DEMO_ADMIN_PORT/v1/status")" 200 "... and /v1/status answers with the admin token"
like_re "$("$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$DEMO_ADMIN_PORT" \
  --token-file "$DEMO_DIR/admin.token" agent list 2>&1)" "demo-agent +demo +yes +[-0-9T:Z]+ +yes +[^ ]+ +now" \
  "proxyhostctl agent list: the demo agent online, on the named tunnel_server.hub"
unlike "$(cat "$DEMO_DIR/proxyhost.log" "$T/demo1.out")" "$(sed 's/^[^.]*\.//' "$DEMO_DIR/client.token")" \
  "TM-SEC-9 the client token's secret is in no output"
kill "$demo_pid"; wait_exit "$demo_pid" 15
is "$EXIT" 0 "SIGTERM stops the demo (exit 0)"
[ ! -f "$DEMO_DIR/proxyhost.pid" ]; ok $? "... and its proxyhost"

demo 2
wait_ready 2; ok $? "run again on the same directory: ready"
unlike "$(cat "$T/demo2.out")" "credentials created" "... the credentials were reused"
is "$(through)" "through the demo" "... and curl works through it"
kill "$demo_pid"; wait_exit "$demo_pid" 15
is "$EXIT" 0 "stopped again"

done_testing

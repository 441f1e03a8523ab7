#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The TunnelMesh measurements of issue 11, on demand (not in make check,
# no threshold): the same build twice, three real processes each (server
# + SQLite store + auth_cache, agent + direct, client + socks5, helpers in
# t/lib/tunnel.sh), on loopback:
#   strict    every default (open results, flow control, fair writer,
#             the cache, 32 dial slots);
#   baseline  the old behaviour emulated: capabilities off in all three
#             roles, one agent connection, [auth_cache] enabled = false,
#             streams.max_concurrent_dials = 1.
# For each, with t/lib/tunnel_load.py latency:
#   1. 31 concurrent GETs started just after one CONNECT whose dial hangs
#      (a blackhole port; the agent's connect_timeout 5 s): the SOCKS5
#      reply and the first response byte, P50/P95 (the seed's gate: P95
#      open latency at least 50 % lower than the baseline; the slow dial
#      adds < 1 s to the others);
#   2. 31 small GETs alone, then beside one bulk download: first-byte
#      P95 (gate: beside <= 2x alone).
# Run from a configured build directory:  sh ../t/bench/tunnel.sh .
# Results as Markdown on stdout, progress on stderr.
set -u
top_builddir=$(cd "${1:-${top_builddir:-.}}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
PROXYHOST=${PROXYHOST:-$top_builddir/host/proxyhost}
CURL=${CURL:-curl}
export top_srcdir top_builddir PROXYHOST CURL
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
PY=${PYTHON3:-python3}
LOAD="$PY $top_srcdir/t/lib/tunnel_load.py"
say() { echo "$*" >&2; }
die() { say "tunnel.sh: $*"; exit 1; }
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": \\([-0-9.]*\\).*/\\1/p"; }

for m in tunnel_server tunnel_agent tunnel_client store_sqlite auth_cache admin_api direct socks5; do
  have_module "$m" || die "module $m not built"
done
tn_setup || die "set-up failed"
mkdir -p "$T/www"
head -c 1024 /dev/zero >"$T/www/small.bin"
head -c 268435456 /dev/zero >"$T/www/bulk.bin" 2>/dev/null || die "no room for the bulk file"
start_file_server "$T/www" "bench" || die "no file server"
web=$FILE_SERVER_PORT
$PY "$top_srcdir/t/lib/socks5_probe.py" blackhole --port-file "$T/bh.port" --seconds 3600 >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/bh.port" || die "no blackhole"
bh=$(cat "$T/bh.port")

OFF='capabilities.open_result = false
capabilities.flow_control = false
capabilities.fair_writer = false'
# run NAME SERVER-EXTRA AGENT-EXTRA CLIENT-EXTRA: the measurements of one
# configuration; prints its table rows.
run() {
  tn_server "s$1" "$2" || die "$1: server"
  [ -s "$T/client.token" ] || tn_creds "s$1" || die "credentials"
  tn_agent "a$1" "s$1" "$3" || die "$1: agent"
  tn_client "c$1" "s$1" "$4" || die "$1: client"
  tn_wait_sessions "$(eval echo "\$a$1_admin")" agent 1 || die "$1: agent not connected"
  wait_for tn_ready "$(eval echo "\$c$1_admin")" || die "$1: client not ready"
  P=127.0.0.1:$(eval echo "\$c$1_socks")
  $LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31 >/dev/null # warm-up
  say "$1: 31 GETs beside a hanging dial"
  slow=$($LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31 --slow "127.0.0.1:$bh")
  say "$1: 31 GETs alone"
  alone=$($LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31)
  say "$1: 31 GETs beside a bulk download"
  bulk=$($LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31 --bulk "ok.test:$web" --bulk-path /bulk.bin)
  printf '| %s | %s | %s / %s | %s / %s | %s | %s |\n' "$1" \
    "$(field "$slow" ok)/31" "$(field "$slow" reply_p50_ms)" "$(field "$slow" reply_p95_ms)" \
    "$(field "$slow" first_byte_p50_ms)" "$(field "$slow" first_byte_p95_ms)" \
    "$(field "$alone" first_byte_p95_ms)" "$(field "$bulk" first_byte_p95_ms)"
  for p in s a c; do kill "$(eval echo "\$$p$1_pid")" 2>/dev/null; done
  for p in s a c; do wait_exit "$(eval echo "\$$p$1_pid")" 15; done
}

echo "## TunnelMesh: strict against the legacy baseline (issue 11)"
echo
echo "Three processes on loopback, one build; \`sh ../t/bench/tunnel.sh .\`. Milliseconds."
echo "The hanging dial is a blackhole port (agent connect_timeout 5 s)."
echo
echo "| configuration | beside the hanging dial: ok | SOCKS5 reply P50 / P95 | first byte P50 / P95 | small first byte P95 alone | beside a 256 MiB download |"
echo "|---|---|---|---|---|---|"
run strict "" "" ""
run baseline "$OFF
[auth_cache]
enabled = false" "[tunnel_agent]
$OFF
connections.min = 1
connections.max = 1
streams.max_concurrent_dials = 1" "[tunnel_client]
$OFF"
echo
echo "(the baseline's SOCKS5 reply comes before the agent dialled: legacy success)"

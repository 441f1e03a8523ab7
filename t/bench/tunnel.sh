#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The TunnelMesh measurements of issue 11, on demand (not in make check,
# no threshold): the same build twice, three real processes each (server
# + SQLite store + auth_cache, agent + direct, client + socks5, helpers in
# t/lib/tunnel.sh), on loopback: the gates are relative to the baseline
# measured in the same run, never absolute latencies (TM-PERF-1):
#   strict    every default (open results, flow control, fair writer,
#             the cache, 32 dial slots);
#   baseline  the old behaviour emulated: capabilities off in all three
#             roles, one agent connection, [auth_cache] enabled = false,
#             streams.max_concurrent_dials = 1.
# For each:
#   1. with t/lib/tunnel_load.py latency, 31 concurrent GETs started just
#      after one CONNECT whose dial hangs (a blackhole port; the agent's
#      connect_timeout 5 s): the SOCKS5 reply and the first response byte,
#      P50/P95 (the seed's gate: P95 open latency of the 32 concurrent
#      CONNECTs at least 50 % lower than the baseline, TM-PERF-2; the slow
#      dial adds < 1 s to the others, TM-PERF-3);
#   2. with t/bench/phload (C, libev) against t/bench/phtarget,
#      TUNNEL_ROUNDS bursts of 31 small streams (1 KiB each, SOCKS5 to
#      the target's IPv4 literal) alone, then the same beside one bulk
#      download by a separate process (curl through the same client,
#      phtarget's endless /bulk/0): time to first byte P50/P95 (gate:
#      beside <= 2x alone, aim 1.2x, TM-PERF-6) and the bulk's MB/s
#      meanwhile; then
#      (TUNNEL_CONTROL=1, the default) the same with the bulk through a
#      second, separate tunnel: the CPU the bulk costs without a shared
#      session, to tell the machine's part from the tunnel's;
#   3. the store's authorization calls per stream in steady state: the
#      server's proxyhost_store_sqlite_calls_total{call="authenticate"}
#      and {call="access"} across the bursts alone (after a warm-up
#      burst), divided by their streams (gate: at least 90 % fewer than
#      the baseline, aim 99 %).
# Knobs: TUNNEL_ROUNDS (default 20), TUNNEL_BULK_SECONDS (default 6: the
# download's length; the bursts must end before it does), TUNNEL_REPEATS
# (default 1: rows per configuration, strict and baseline alternating).
# Run from a configured build directory, with t/bench/phload and
# t/bench/phtarget built:  sh ../t/bench/tunnel.sh .
# Results as Markdown on stdout, progress on stderr.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=tunnel.sh BENCH_KITS="tunnel.sh"
. "$top_srcdir/t/bench/bench_lib.sh"
PY=${PYTHON3:-python3}
LOAD="$PY $top_srcdir/t/lib/tunnel_load.py"
PHLOAD=$top_builddir/t/bench/phload
PHTARGET=$top_builddir/t/bench/phtarget
ROUNDS=${TUNNEL_ROUNDS:-20}
REPEATS=${TUNNEL_REPEATS:-1}
BULK_SECS=${TUNNEL_BULK_SECONDS:-6}
CONTROL=${TUNNEL_CONTROL:-1}
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": \\([-0-9.]*\\).*/\\1/p"; }
# kv LINE KEY: the value of KEY=VALUE in phload's result line
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
ms() { awk -v u="$1" 'BEGIN { if (u == "") print "-"; else printf "%.1f", u / 1000 }'; }

for f in "$PHLOAD" "$PHTARGET"; do
  [ -x "$f" ] || die "$f is missing: make t/bench/phload t/bench/phtarget"
done
for m in tunnel_server tunnel_agent tunnel_client store_sqlite auth_cache admin_api direct socks5; do
  have_module "$m" || die "module $m not built"
done
tn_setup || die "set-up failed"
mkdir -p "$T/www"
head -c 1024 /dev/zero >"$T/www/small.bin"
start_file_server "$T/www" "bench" || die "no file server"
web=$FILE_SERVER_PORT
$PY "$top_srcdir/t/lib/socks5_probe.py" blackhole --port-file "$T/bh.port" --seconds 3600 >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/bh.port" || die "no blackhole"
bh=$(cat "$T/bh.port")
"$PHTARGET" --listen 127.0.0.1:0 >"$T/phtarget.out" 2>&1 &
PIDS="$PIDS $!"
wait_for grep -q '^port=' "$T/phtarget.out" || die "no phtarget"
TADDR=127.0.0.1:$(sed -n 's/^port=//p' "$T/phtarget.out")

OFF='capabilities.open_result = false
capabilities.flow_control = false
capabilities.fair_writer = false'
# bursts PROXY: phload's TUNNEL_ROUNDS bursts of 31 small streams
bursts() {
  "$PHLOAD" --mode socks5 --proxy "$1" --target "$TADDR" --rounds "$ROUNDS" \
    --concurrency 31 --response-size 1024 --timeout 10 | tail -1
}
# beside SMALL-PROXY BULK-PROXY TAG: the bursts through SMALL-PROXY while
# curl downloads through BULK-PROXY, endlessly for BULK_SECS (curl's
# --max-time; it prints its -w line then), the bursts from its second
# second. Sets beside (phload's line) and mbps (the bulk's MB/s, "!" when
# it ended before the bursts did).
beside() {
  "$CURL" -s -o /dev/null -m "$BULK_SECS" -w '%{size_download} %{time_total}\n' \
    --socks5 "$2" "http://$TADDR/bulk/0" >"$T/bulk.$3" 2>&1 &
  cpid=$!
  sleep 1
  beside=$(bursts "$1")
  early=""
  kill -0 "$cpid" 2>/dev/null || early="!"
  wait "$cpid"
  say "  curl rc $? (28: its --max-time, as planned): $(cat "$T/bulk.$3")"
  mbps=$(awk '{ if ($2 > 0) printf "%.0f", $1 / $2 / 1e6; else print 0 }' "$T/bulk.$3")$early
}
# p95ratio LINE-A LINE-B: B's first-byte P95 over A's
p95ratio() {
  awk -v a="$(kv "$1" ttfb_p95_us)" -v b="$(kv "$2" ttfb_p95_us)" \
    'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }'
}
# store_calls ADMIN-PORT: the server's authorization calls to the store
# so far (authenticate + access).
store_calls() {
  tn_metrics "$1" | awk '/^proxyhost_store_sqlite_calls_total\{call="(authenticate|access)"\}/ { n += $2 } END { printf "%d", n }'
}
# stop_trio ID
stop_trio() {
  for p in s a c; do kill "$(eval echo "\$$p$1_pid")" 2>/dev/null; done
  for p in s a c; do wait_exit "$(eval echo "\$$p$1_pid")" 15; done
}
# run NAME REPEAT SERVER-EXTRA AGENT-EXTRA CLIENT-EXTRA: the measurements
# of one configuration; prints its table row.
run() {
  name=$1 id=$1$2
  shift 2
  tn_trio "$id" "$1" "$2" "$3" || die "$name: the tunnel did not come up"
  P=127.0.0.1:$(eval echo "\$c${id}_socks")
  $LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31 >/dev/null # warm-up
  say "$name: 31 GETs beside a hanging dial"
  slow=$($LOAD latency --proxy "$P" --target "ok.test:$web" --path /small.bin --n 31 --slow "127.0.0.1:$bh")
  say "$name: $ROUNDS bursts of 31 streams alone (phload)"
  bursts "$P" >/dev/null # warm-up
  sc0=$(store_calls "$(eval echo "\$s${id}_admin")")
  alone=$(bursts "$P")
  sc1=$(store_calls "$(eval echo "\$s${id}_admin")")
  per_stream=$(awk -v a="$sc0" -v b="$sc1" -v n="$((ROUNDS * 31))" 'BEGIN { printf "%.3f", (b - a) / n }')
  say "$name: the same beside a bulk download (curl) in the same tunnel"
  beside "$P" "$P" "$id"
  same=$beside same_mbps=$mbps
  # The control: the bulk through a second, separate tunnel (its own
  # client, server and agent): the same CPU work on the same two cores,
  # but no shared session, queue or window. What the same-tunnel figure
  # adds to this one is the tunnel's own doing.
  other="" other_mbps=-
  if [ "$CONTROL" = 1 ]; then
    tn_trio "x$id" "$1" "$2" "$3" || die "$name: the second tunnel did not come up"
    say "$name: the same beside a bulk download in a second tunnel"
    beside "$P" "127.0.0.1:$(eval echo "\$cx${id}_socks")" "x$id"
    other=$beside other_mbps=$mbps
    stop_trio "x$id"
  fi
  printf '| %s | %s | %s | %s / %s | %s / %s | %s / %s | %s / %s | %s | %s | %s / %s | %s | %s | %s | %s |\n' "$name" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$(field "$slow" ok)/31" \
    "$(field "$slow" reply_p50_ms)" "$(field "$slow" reply_p95_ms)" \
    "$(field "$slow" first_byte_p50_ms)" "$(field "$slow" first_byte_p95_ms)" \
    "$(ms "$(kv "$alone" ttfb_p50_us)")" "$(ms "$(kv "$alone" ttfb_p95_us)")" \
    "$(ms "$(kv "$same" ttfb_p50_us)")" "$(ms "$(kv "$same" ttfb_p95_us)")" \
    "$(p95ratio "$alone" "$same")" "$same_mbps" \
    "$(ms "$(kv "$other" ttfb_p50_us)")" "$(ms "$(kv "$other" ttfb_p95_us)")" \
    "$(p95ratio "$alone" "$other")" "$other_mbps" \
    "$(kv "$alone" errors)+$(kv "$same" errors)+$(kv "$other" errors)" \
    "$per_stream"
  stop_trio "$id"
}

echo "## TunnelMesh: strict against the legacy baseline (issue 11)"
echo
echo "Three processes on loopback, one build; \`sh ../t/bench/tunnel.sh .\`. Milliseconds."
echo "The hanging dial is a blackhole port (agent connect_timeout 5 s). Small streams: $ROUNDS bursts of 31 (phload), first byte from socket()."
echo
echo "| configuration | load average | beside the hanging dial: ok | SOCKS5 reply P50 / P95 | first byte P50 / P95 | small first byte P50 / P95 alone | beside a bulk download (curl) in the same tunnel | ÷ alone, P95 | bulk MB/s | beside a bulk in a second tunnel | ÷ alone, P95 | bulk MB/s | small errors | store calls per stream |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
BASE_SERVER="$OFF
[auth_cache]
enabled = false"
BASE_AGENT="[tunnel_agent]
$OFF
connections.min = 1
connections.max = 1
streams.max_concurrent_dials = 1"
BASE_CLIENT="[tunnel_client]
$OFF"
r=1
while [ "$r" -le "$REPEATS" ]; do
  run strict "$r" "" "" ""
  run baseline "$r" "$BASE_SERVER" "$BASE_AGENT" "$BASE_CLIENT"
  r=$((r + 1))
done
echo
echo "(the baseline's SOCKS5 reply comes before the agent dialled: legacy success)"

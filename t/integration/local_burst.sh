#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A burst of 1,000 SOCKS5 connections (at most 50 at once) through a real
# proxyhost (socks5 + direct) to a local echo target; afterwards the
# process's open fds return exactly to the baseline measured before the
# burst and its resident memory stays within RSS_SLACK_KIB of it: a bound
# on what the streams leave behind, not a timing threshold. Covers
# TM-TEST-37 (after close, tasks, heap and queues return to baseline) and
# TM-SEC-7 (no dial, writer or timer left after close).
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"
RSS_SLACK_KIB=2048 # 2 MiB
BURST=1000

require_modules socks5 direct

admin=$(free_port)
sport=$(free_port)
cat >"$T/burst.ini" <<EOC
[proxyhost]
modules = socks5, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = warn
[socks5]
listen = 127.0.0.1:$sport
[direct]
; Literal addresses only: no DNS is needed (nor sent anywhere).
resolver_servers = 127.0.0.1:9
EOC
# Under AddressSanitizer freed memory waits in a quarantine on purpose,
# which would read as growth: keep the leak checks, drop the quarantine.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS
start_proxyhost "$T/burst.ini"
wait_for healthy "$admin"; ok $? "proxyhost with socks5 + direct is healthy"

fds() { ls "/proc/$PH_PID/fd" | wc -l; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$PH_PID/status"; }
clients() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" proxyhost_socks5_clients; }
idle() { [ "$(clients)" = 0 ]; }

# Warm-up at the same concurrency: the allocator's arenas, libev's fd
# tables and the relay's spare buffers reach their working size first.
r=$($PROBE burst --proxy "127.0.0.1:$sport" --n 200 --concurrency 50)
is "$r" "done=200 failed=0" "warm-up: 200 echoes through socks5"
wait_for idle; ok $? "no client left after the warm-up"
base_fds=$(fds)
base_rss=$(rss_kib)
echo "# baseline: $base_fds fds, $base_rss KiB resident"

r=$($PROBE burst --proxy "127.0.0.1:$sport" --n $BURST --concurrency 50)
is "$r" "done=$BURST failed=0" "burst: $BURST echoes through socks5, none failed"
wait_for idle; ok $? "every client gone (proxyhost_socks5_clients 0)"

# The last sockets may still be closing: wait (bounded) for the count.
fds_back() { [ "$(fds)" -eq "$base_fds" ]; }
wait_for fds_back
after_fds=$(fds)
after_rss=$(rss_kib)
echo "# after: $after_fds fds, $after_rss KiB resident"
is "$after_fds" "$base_fds" "open fds back to the baseline exactly"
[ "$after_rss" -le $((base_rss + RSS_SLACK_KIB)) ]
ok $? "resident memory within $RSS_SLACK_KIB KiB of the baseline ($base_rss -> $after_rss KiB)"
m=$(http_get "http://127.0.0.1:$admin/metrics")
is "$(metric "$m" 'proxyhost_stream_active{component="client"}')" 0 \
  "no active stream"
is "$(metric "$m" proxyhost_direct_dials_active)" 0 "no dial in flight"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="success",error_class="ok",open_mode="strict"}')
is "$v" $((BURST + 200)) "every open counted once"

kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "SIGTERM: exits 0"
done_testing

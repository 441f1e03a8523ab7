#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The controller against hostile or broken workers (issue 22, "Security
# and isolation", items 10 to 13): a real proxyhost running
# controlplane_server over redis_ownership (a private redis-server) and
# store_sqlite, the setup of controller.sh (t/lib/controller.sh), workers
# played by Debian's python3-grpcio (t/lib/cp_client.py).
#  - item 12: ids with a NUL byte inside are refused INVALID_ARGUMENT, at
#    the top level and nested (CP-8-2);
#  - item 11: a session's newer WatchSnapshots stream ends the older one
#    ABORTED, so 42 streams of one session cost Redis what one does;
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api

cp_stubs
start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
ctl() { "$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
mval() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }

start_proxyhost "$T/ctl.ini"
wait_for ready; ok $? "the controller is ready"
for p in p1 p2; do
  ctl proxy add "$p" --protocol http_connect --host 192.0.2.1 --port 3128 \
    --groups residential --capacity 10 --zone z1 >/dev/null
  ok $? "proxyhostctl proxy add $p"
done

# ---- item 12: NUL bytes inside ids ----------------------------------------
run_py nul "$cpp" nul "$T"

# ---- item 11: one WatchSnapshots stream per session -----------------------
# Redis's commands a second with one stream, then with 41 more opened:
# each stream polling (watch_poll_interval = 100ms) would multiply them,
# one left makes about as many (at most twice: the bound).
run_py watch_once "$cpp" watch_once "$T" "$REDIS_PORT" 40 2
r=$(mval proxyhost_cp_controller_streams_replaced_total)
[ "${r:-0}" -ge 41 ]; ok $? "issue 22 item 11 metrics: streams replaced ($r)"
grep -q 'a newer WatchSnapshots stream of the worker.s session replaced one' "$T/ph.log"
ok $? "issue 22 item 11 ... and logged (rate-limited)"

kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the controller stops cleanly"
done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A stopping controller leaves the checks' members at once (issue 26
# "Several controllers"), every part real: one redis-server, one
# PostgreSQL (store_pg), two controllers c1 and c2 with a long
# member_lease (30 s, so that nothing here can pass by the lease's
# expiry), a checker on each (k1 on c1, k2 on c2), twelve proxies on one live
# proxyhost http_proxy upstream. What it shows:
#  - both controllers are members, each scheduling its share (CP-6-1);
#  - c1 stopped (SIGTERM): it exits cleanly, says "controller left the
#    checks' members" with reason=stop, and its id is out of
#    ph:cp:{c1}:members in Redis as soon as it exited;
#  - c2 then schedules every proxy's checks, and it does so while c1's
#    last lease (its score in the members set before the stop, Redis
#    time) has not lapsed yet: the move did not wait for member_lease.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg admin_api \
  pool_api checker echo direct http_proxy

CTL="$top_builddir/tools/proxyhostctl"
MODS="$top_builddir/modules"
TAP_ON_FAIL='for f in c1 c2 k1 k2; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'
# Twelve: each proxy goes to c1 or c2 by rendezvous hashing over their
# random member ids, and with six c1's share was empty once in 64 runs
# (seen in CI); with twelve, once in 4096.
PROXIES="p1 p2 p3 p4 p5 p6 p7 p8 p9 p10 p11 p12"
P='ph:cp:{c1}:'

ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
mt() { metric "$(http_get "http://127.0.0.1:$1/metrics")" "$2"; }
members() { [ "$(mt "$1" proxyhost_cp_controller_members)" = "$2" ]; }
tasks() { # tasks LOG FROM PROXY: tasks of PROXY issued after line FROM
  tail -n "+$(($2 + 1))" "$T/$1.log" | grep "check task issued" | grep -c "proxy_id=$3 "
}
redis_ms() { redis_cli "$T/redis" TIME | { read -r s; read -r u; echo $((s * 1000 + u / 1000)); }; }

cpm_stores
U1=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$U1" >"$T/u1.ini"
"$PROXYHOST" -c "$T/u1.ini" >>"$T/u1.log" 2>&1 &
PIDS="$PIDS $!"
cpm_echo
wait_for port_open "$U1" && wait_for port_open "$E"
ok $? "the upstream and the echo endpoint listen"

CPM_LEASE=30s cpm_two
for p in $PROXIES; do
  "$CTL" --admin "127.0.0.1:$a1" --token-file "$T/admin.token" proxy add "$p" \
    --protocol http_connect --host 127.0.0.1 --port "$U1" --groups g --capacity 10 >/dev/null || break
done
ok $? "proxyhostctl proxy add p1..p12"

k1a=$(free_port) k2a=$(free_port)
cpm_checker_ini "$k1a" >"$T/k1.ini"
cpm_checker_ini "$k2a" >"$T/k2.ini"
"$PROXYHOST" -c "$T/k1.ini" -control-plane "127.0.0.1:$cp1" -cluster-id c1 \
  -checker-id k1 -instance-id k1-a -zone z1 >>"$T/k1.log" 2>&1 &
PIDS="$PIDS $!"
"$PROXYHOST" -c "$T/k2.ini" -control-plane "127.0.0.1:$cp2" -cluster-id c1 \
  -checker-id k2 -instance-id k2-a -zone z1 >>"$T/k2.log" 2>&1 &
PIDS="$PIDS $!"
wait_long members "$a1" 2 && wait_long members "$a2" 2
ok $? "CP-6-1 both controllers hold a checker and are members"
id1=$(grep -a "controller member id" "$T/c1.log" | head -1 | sed 's/.*member_id=\([0-9a-f]*\).*/\1/')
like_re "$(redis_cli "$T/redis" ZSCORE "${P}members" "$id1")" '^[0-9]+$' \
  "c1's lease end is in Redis ($id1)"
# Both schedule their share: some proxy's tasks come from c1.
n1=$(wc -l <"$T/c1.log")
c1_checks() { for p in $PROXIES; do [ "$(tasks c1 "$n1" $p)" -ge 1 ] && return 0; done; return 1; }
wait_long c1_checks; ok $? "c1 schedules its share of the checks"

# ---- c1 stopped: it leaves at once -------------------------------------------
n2=$(wc -l <"$T/c2.log")
till=$(redis_cli "$T/redis" ZSCORE "${P}members" "$id1") # its last renewal
kill -TERM "$C1"; wait_exit "$C1" 10
is "$EXIT" 0 "c1 stops cleanly"
like "$(grep -a "controller left the checks' members" "$T/c1.log")" "reason=stop" \
  "c1 logs that it left the checks' members, reason=stop"
is "$(redis_cli "$T/redis" ZSCORE "${P}members" "$id1")" "" \
  "c1's id is out of the members set as soon as it exited"
is "$(redis_cli "$T/redis" ZCARD "${P}members")" 1 "... c2 alone is left"
all_c2() { for p in $PROXIES; do [ "$(tasks c2 "$n2" $p)" -ge 1 ] || return 1; done; }
wait_long all_c2; ok $? "CP-6-1 c2 schedules every proxy's checks"
now=$(redis_ms)
echo "# Redis time $now, c1's lease would have ended at $till"
[ "$now" -lt "${till%.*}" ]
ok $? "... before c1's lease would have lapsed (member_lease 30s)"
wait_long members "$a2" 1; ok $? "c2 counts one member"

kill "$C2"; wait_exit "$C2" 10
is "$EXIT" 0 "c2 stops cleanly"
is "$(redis_cli "$T/redis" EXISTS "${P}members")" 0 "... and leaves too: no member in Redis"
done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# CP-2-12 (issue 24 item 13): runtime TTLs are computed from the
# controller-side Redis server's time only. The controller runs with its
# wall clock 2 hours behind the machine's, Redis's (t/modules/clockshift,
# an LD_PRELOAD library: libfaketime is not packaged here). A worker
# (t/lib/cp_client.py) registers, is given a proxy, acknowledges and
# reports its runtime. On Redis's clock (its TIME, read just after): the
# session expiry the report answers is TIME + session_ttl, and the
# proxy's ownership lease in the snapshot ends within ownership_lease of
# TIME; the runtime counts are stamped with TIME and expire in Redis;
# none is 2 hours early, as it would be on the controller's clock. The control: the snapshot's valid_until, which is the
# controller's own (snapshot validity, not a runtime TTL), is 2 hours
# behind, so the shift did reach the controller. The tolerances (10
# minutes) only tell the two clocks apart.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api

SHIFT=-7200000
TOL=600000
SHIM="$top_builddir/t/modules/.libs/clockshift.so"
[ -f "$SHIM" ]; ok $? "the clock-shifting library is built"
# In a sanitizer build the library needs ASan's runtime, which must come
# first in a process's library list: preload it ahead of the library.
ASAN_RT=$(ldd "$SHIM" 2>/dev/null | awk '$1 ~ /^libasan/ { print $3 }')
PRELOAD="${ASAN_RT:+$ASAN_RT }$SHIM"
now=$(date +%s)
shifted=$(LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0 PH_TEST_CLOCK_SHIFT_MS=$SHIFT date +%s)
d=$((now - shifted))
[ "$d" -ge 7000 ] && [ "$d" -le 7400 ]; ok $? "a process under it reads a clock 2 hours behind ($d s)"

CTL="$top_builddir/tools/proxyhostctl"
controller_up pw-Redis-Time-Never-Logged-5e2a
# Only the controller module's own clock: store_sqlite's timed waits (and
# gRPC's) keep the machine's.
export LD_PRELOAD="$PRELOAD" PH_TEST_CLOCK_SHIFT_MS="$SHIFT" \
  PH_TEST_CLOCK_SHIFT_ONLY=controlplane_server.so
start_proxyhost "$T/ctl.ini"
unset LD_PRELOAD PH_TEST_CLOCK_SHIFT_MS PH_TEST_CLOCK_SHIFT_ONLY
wait_for healthy "$admin"
ok $? "the controller starts, its clock 2 hours behind Redis's" ||
  sed 's/^/#   /' "$T/ph.log" | tail -20
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl credential add upstream-a >/dev/null &&
  ctl proxy add p1 --protocol http_connect --host 192.0.2.1 --port 3128 \
    --groups residential --capacity 10 --zone z1 --secret-ref upstream-a >/dev/null &&
  ctl route add r1 --position 100 --host '*' --group residential \
    --strategy round_robin >/dev/null
ok $? "a proxy and a route through proxyhostctl"
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_for ready; ok $? "the controller is ready"

run_py clock "$cpp" clock "$T"
redis_ms=$(redis_cli "$T/redis" TIME | { read -r s; read -r us; echo $((s * 1000 + us / 1000)); })
val() { sed -n "s/^VALUE $1 //p" "$T/py-clock.out"; }
ttl=$(val session_ttl_ms) exp=$(val session_expires_ms)
lease=$(val lease_expires_ms) valid=$(val valid_until_ms)
echo "# Redis TIME $redis_ms ms; session_ttl $ttl, session expires $exp, lease ends $lease, snapshot valid until $valid"
d=$((exp - redis_ms - ttl))
[ "${exp:-0}" -gt 0 ] && [ "$d" -gt $((-TOL)) ] && [ "$d" -lt "$TOL" ]
ok $? "CP-2-12 the session expiry ReportRuntime answers is Redis TIME + session_ttl ($d ms off), not the controller's clock (2 hours early)"
d=$((lease - redis_ms))
[ "${lease:-0}" -gt 0 ] && [ "$d" -gt $((-TOL)) ] && [ "$d" -lt "$TOL" ]
ok $? "CP-2-12 the ownership lease in the snapshot ends on Redis's clock ($d ms after its TIME), not 2 hours early"
at=$(redis_cli "$T/redis" HGET 'ph:cp:{c1}:w:w1:counts' m:at)
d=$((redis_ms - ${at:-0}))
[ "${at:-0}" -gt 0 ] && [ "$d" -gt $((-TOL)) ] && [ "$d" -lt "$TOL" ]
ok $? "CP-2-12 the runtime counts are stamped with Redis's time ($d ms before its TIME), not the controller's"
pttl=$(redis_cli "$T/redis" PTTL 'ph:cp:{c1}:w:w1:counts')
[ "${pttl:-0}" -gt 0 ]; ok $? "CP-2-12 ... and expire in Redis (PTTL $pttl ms)"
d=$((redis_ms - valid))
[ "${valid:-0}" -gt 0 ] && [ "$d" -gt $((-SHIFT - TOL)) ]
ok $? "control: the snapshot's valid_until, on the controller's own clock, is 2 hours behind ($d ms before Redis TIME)"

done_testing

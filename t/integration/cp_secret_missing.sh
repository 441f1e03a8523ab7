#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A missing secret file is said, not silent (issue 23 item 6, CP-1-18):
# the controller (controlplane_server, redis_ownership, store_sqlite,
# admin_api in a real proxyhost) owns p1 (its secret file present) and p3
# (secret_ref upstream-gone, no file) to worker w1 (t/lib/cp_client.py).
# The snapshot carries p1 only, as before; now the controller logs a line
# naming p3 and upstream-gone (never a password), counts it in
# proxyhost_cp_controller_proxies_withheld_total{reason="credential"},
# and the admin API shows p3 unusable with its reason while p1 is usable.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api

PASSWORD=pw-Upstream-Never-Logged-5e21
controller_up "$PASSWORD"
start_proxyhost "$T/ctl.ini"
wait_for healthy "$admin"; ok $? "the controller starts"
ctl() { "$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl credential add upstream-a >/dev/null; ok $? "credential upstream-a (its file present)"
ctl credential add upstream-gone >/dev/null; ok $? "credential upstream-gone (no file)"
for x in p1:upstream-a:1 p3:upstream-gone:3; do
  id=${x%%:*} ref=${x#*:} ref=${ref%:*} n=${x##*:}
  ctl proxy add "$id" --protocol http_connect --host "192.0.2.$n" --port 3128 \
    --groups residential --capacity 10 --secret-ref "$ref" >/dev/null
  ok $? "proxy $id with $ref"
done
ctl route add r1 --position 100 --host '*' --group residential --strategy round_robin >/dev/null
ok $? "route r1"

run_py withheld "$cpp" withheld "$T"

# The log line: the proxy and the secret_ref, with the reason.
logged() { grep 'proxy withheld from a snapshot' "$T/ph.log" | grep 'proxy_id=p3' |
  grep 'file=upstream-gone' | grep -q 'reason="no such secret file"'; }
wait_for logged; ok $? "issue 23 item 6 logged: p3, its secret_ref and why"
grep 'proxy withheld' "$T/ph.log" | grep -q 'proxy_id=p1'
is $? 1 "... and nothing about p1"
m=$(http_get "http://127.0.0.1:$admin/metrics")
n=$(printf '%s\n' "$m" |
  sed -n 's/^proxyhost_cp_controller_proxies_withheld_total{reason="credential"} //p')
[ "${n:-0}" -ge 1 ]; ok $? "issue 23 item 6 counted: proxies_withheld_total{reason=credential} ($n)"

# The admin API: p3 unusable, with its reason; p1 usable.
p3=$(ctl --json proxy show p3 2>&1)
like "$p3" '"usable":false' "issue 23 item 6 the admin API shows p3 unusable"
like "$p3" '"unusable_reason":"credential_missing"' "... because its secret file is missing"
p1=$(ctl --json proxy show p1 2>&1)
like "$p1" '"usable":true' "... and p1 usable"
# The file appears: p3 is usable again (the check is live) and delivered.
(umask 077 && printf 'bob:%s\n' "$PASSWORD" >"$T/secrets/upstream-gone")
p3=$(ctl --json proxy show p3 2>&1)
like "$p3" '"usable":true' "the secret file written: the admin API shows p3 usable"
for f in "$T/ph.log" "$T"/pool.db*; do
  [ -f "$f" ] || continue
  grep -qa "$PASSWORD" "$f"; is $? 1 "CP-8-5 the proxy password is not in ${f##*/}"
done
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the controller stops cleanly"
done_testing

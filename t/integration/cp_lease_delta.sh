#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A steady pool's lease renewals on the wire (issue 26): a real controller
# (t/lib/controller.sh's: store_sqlite, redis_ownership on a private
# redis-server) with short leases, so that renewals come every second or
# two, and one real gateway (controlplane_client) owning the whole pool,
# which asks for the shared lease form. With 20 and then 200 proxies
# owned and nothing else changing, the deltas the controller sends
# (proxyhost_cp_controller_snapshot_bytes_total{kind="delta"} over
# proxyhost_cp_controller_deltas_sent_total) cost the same few bytes each:
# a renewal moves the snapshot's lease_expires_at / lease_usable_until,
# not every owned proxy; the controller's "snapshot sent" debug lines say
# that a delta made by a renewal alone upserts no proxy.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api \
  pool_api controlplane_client pool http_proxy round_robin direct \
  outcome_reporter

CTL="$top_builddir/tools/proxyhostctl"
controller_up pw-Lease-Delta-Never-Logged
# Leases of 4 s: a runtime report every second renews them, the refresh
# goes out 2 s before the earliest usable_until (lease - 1 s).
sed -i -e 's/^\[redis_ownership\]$/[redis_ownership]\nownership_lease = 4s/' "$T/ctl.ini"
cat >>"$T/ctl.ini" <<EOC
runtime_interval = 1s
refresh_before = 2s
allocation_safety_margin = 1s
EOC
out=$("$PROXYHOST" -c "$T/ctl.ini" --check-config 2>&1)
ok $? "the controller's short leases pass --check-config" || echo "# $out"
start_proxyhost "$T/ctl.ini"
wait_for healthy "$admin"; ok $? "the controller starts"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
add() { # add FROM TO: proxies pFROM..pTO (nothing listens: no checker runs)
  i=$1
  while [ "$i" -le "$2" ]; do
    ctl proxy add "p$i" --protocol http_connect --host 192.0.2.1 \
      --port $((10000 + i)) --groups g --capacity 1 >/dev/null || return 1
    i=$((i + 1))
  done
}
add 1 20; ok $? "20 proxies added"
ctl route add r1 --position 100 --host '*' --group g --strategy round_robin >/dev/null
ok $? "a route"
gw=$(free_port)
gateway_up w1 "$gw" "$(free_port)"
TAP_ON_FAIL='grep "snapshot sent" "$T/ph.log" | tail -5; tail -5 "$T/w1.log"'

view_n() {
  curl -s -m 5 "http://127.0.0.1:$gw/v1/cp/view" |
    "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["proxies"]))' 2>/dev/null
}
has_n() { [ "$(view_n)" = "$1" ]; }
# "DELTAS BYTES" from one read of the controller's /metrics (two reads
# could fall on either side of a send).
counts() {
  _m=$(http_get "http://127.0.0.1:$admin/metrics")
  echo "$(metric "$_m" proxyhost_cp_controller_deltas_sent_total)" \
    "$(metric "$_m" 'proxyhost_cp_controller_snapshot_bytes_total{kind="delta"}')"
}
deltas() { counts | cut -d' ' -f1; }
deltas_ge() { [ "$(deltas)" -ge "$1" ] 2>/dev/null; }
# per_delta: the bytes of each of the next 4 deltas, on average (the
# renewals of a pool that does not change; a bounded wait of 30 s each).
per_delta() {
  set -- $(counts)
  d0=$1 b0=$2
  wait_long deltas_ge $((d0 + 4)) || wait_long deltas_ge $((d0 + 4)) || return 1
  set -- $(counts)
  echo $((($2 - b0) / ($1 - d0)))
}
# settled: the last delta sent was made by a renewal alone (the pool's
# additions and their assignment are over).
settled() {
  grep 'snapshot sent' "$T/ph.log" | tail -1 |
    grep -q 'kind=delta .*pool_moved=0 epoch_moved=0 owned_moved=0 lease_moved=1'
}

wait_long has_n 20; ok $? "the gateway's view holds the 20 proxies"
# Past the view's first full snapshot and the pool's changes: renewals only.
wait_long settled || wait_long settled; ok $? "deltas flow (renewals)"
small=$(per_delta); ok $? "4 more deltas with 20 proxies owned: $small bytes each"
add 21 200; ok $? "180 proxies more"
wait_long has_n 200 || wait_long has_n 200; ok $? "the view holds the 200 proxies"
d=$(deltas); wait_long deltas_ge $((d + 1))
wait_long settled || wait_long settled; ok $? "renewals only again"
big=$(per_delta); ok $? "4 more deltas with 200 proxies owned: $big bytes each"
[ "${small:-0}" -gt 0 ] && [ "${small:-0}" -lt 200 ]
ok $? "issue 26: a renewal's delta is a few bytes ($small < 200)"
[ "${big:-999}" -le $((small + 16)) ]
ok $? "issue 26: and it does not grow with the owned set (20: $small, 200: $big bytes)"
# The controller's debug line per snapshot: a delta made by a renewal
# alone (the leases moved, not the pool, the epoch or the owned set).
grep 'snapshot sent' "$T/ph.log" | grep 'kind=delta' |
  grep 'pool_moved=0 epoch_moved=0 owned_moved=0 lease_moved=1' >"$T/renewals"
[ -s "$T/renewals" ]; ok $? "renewal deltas are logged ($(wc -l <"$T/renewals"))"
! grep -v 'upserted=0 removed=0' "$T/renewals" | grep -q .
ok $? "CP-3-15: every renewal delta upserts and removes no proxy"
has_n 200; ok $? "CP-1-17: the gateway still routes with all 200 (their ends renewed)"
done_testing

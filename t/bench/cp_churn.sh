#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Snapshots a steady pool costs (issue 12): runs the pool demo
# (scripts/demo-pool.sh: a controller, Redis, two gateways, two upstreams,
# every control-plane timer at its default) from BUILDDIR, waits until the
# gateways have their first views, then counts the controller's
# proxyhost_cp_controller_snapshots_sent_total over WINDOW seconds (60) in
# which nothing changes. With CHANGE_EVERY=N (seconds) an operator changes
# the pool every N seconds during the window instead (issue 23: u1 drained
# and enabled again, u2's weight changed, a proxy added, in turn: each
# addition is an ownership change, a new epoch), and the line also
# counts the RegisterWorker calls the controller answered (a session lost
# and made again) and extrapolates them to an hour. On demand only; no
# threshold.
#   [CHANGE_EVERY=N] sh t/bench/cp_churn.sh BUILDDIR [PORT_BASE] [WINDOW]
set -u
B=$(cd "${1:?usage: cp_churn.sh BUILDDIR [PORT_BASE] [WINDOW]}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${2:-18100} WINDOW=${3:-60}
D=$(mktemp -d "${TMPDIR:-/tmp}/cp-churn.XXXXXX")
DEMO_DIR=$D DEMO_BUILDDIR=$B DEMO_PORT_BASE=$BASE sh "$SRC/scripts/demo-pool.sh" >"$D/out" 2>&1 &
P=$!
trap 'kill -TERM $P 2>/dev/null; wait $P 2>/dev/null; rm -rf "$D"' EXIT
sent() {
  curl -s -m 5 "http://127.0.0.1:$((BASE + 10))/metrics" |
    awk '/^proxyhost_cp_controller_snapshots_sent_total /{print $2}'
}
registers() {
  curl -s -m 5 "http://127.0.0.1:$((BASE + 10))/metrics" |
    awk '/^proxyhost_cp_controller_rpcs_total\{.*method="RegisterWorker"/{s += $2} END {print s + 0}'
}
ctl() {
  "$B/tools/proxyhostctl" --admin "127.0.0.1:$((BASE + 10))" \
    --token-file "$D/admin.token" "$@" >/dev/null 2>&1
}
# churn SECONDS: the operator's changes, one every CHANGE_EVERY seconds.
churn() {
  _end=$(($(date +%s) + $1)) _n=0
  while [ "$(date +%s)" -lt "$_end" ]; do
    case $((_n % 4)) in
    0) ctl proxy drain u1 ;;
    1) ctl proxy enable u1 ;;
    2) ctl proxy update u2 --weight $((_n % 7 + 1)) ;;
    3) # a new proxy: assigned to a gateway, a new ownership epoch
      ctl proxy add "c$_n" --protocol socks5 --host 127.0.0.1 \
        --port $((BASE + 21)) --groups demo --capacity 10 ;;
    esac
    _n=$((_n + 1))
    sleep "$CHANGE_EVERY"
  done
  echo "$_n"
}
i=0
while [ $i -lt 120 ] && [ -z "$(sent)" ]; do sleep 0.5; i=$((i + 1)); done
[ -n "$(sent)" ] || { echo "the demo did not start: $D/out" >&2; cat "$D/out" >&2; exit 1; }
sleep 15 # the first snapshots, ACKs and assignments
a=$(sent) ra=$(registers)
if [ -n "${CHANGE_EVERY:-}" ]; then
  changes=$(churn "$WINDOW")
  what="two gateways, $changes pool changes (one every $CHANGE_EVERY s)"
else
  sleep "$WINDOW"
  what="two steady gateways"
fi
b=$(sent) rb=$(registers)
echo "snapshots sent in ${WINDOW} s, $what: $((b - a)) ($(awk "BEGIN{printf \"%.1f\", ($b - $a) / 2 / $WINDOW * 60}") per gateway per minute); RegisterWorker calls: $((rb - ra)) ($(awk "BEGIN{printf \"%.0f\", ($rb - $ra) / 2 / $WINDOW * 3600}") per gateway per hour)"

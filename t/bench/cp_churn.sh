#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Snapshots a steady pool costs (issue 12): runs the pool demo
# (scripts/demo-pool.sh: a controller, Redis, two gateways, two upstreams,
# every control-plane timer at its default) from BUILDDIR, waits until the
# gateways have their first views, then counts the controller's
# proxyhost_cp_controller_snapshots_sent_total over WINDOW seconds (60) in
# which nothing changes. On demand only; no threshold.
#   sh t/bench/cp_churn.sh BUILDDIR [PORT_BASE] [WINDOW]
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
i=0
while [ $i -lt 120 ] && [ -z "$(sent)" ]; do sleep 0.5; i=$((i + 1)); done
[ -n "$(sent)" ] || { echo "the demo did not start: $D/out" >&2; cat "$D/out" >&2; exit 1; }
sleep 15 # the first snapshots, ACKs and assignments
a=$(sent); sleep "$WINDOW"; b=$(sent)
echo "snapshots sent in ${WINDOW} s, two steady gateways: $((b - a)) ($(awk "BEGIN{printf \"%.1f\", ($b - $a) / 2 / $WINDOW * 60}") per gateway per minute)"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# What a client that never reads costs the tunnel server (issue 22 item 4),
# on demand (not in make check, no threshold): a tunnel server (SQLite
# store, auth_cache, admin_api) on loopback, t/lib/tm_peer.py as an agent
# that answers every open and sends 2 MiB on it, and as a client that
# opens STREAMS streams on one connection and never grants window. After
# SETTLE seconds it prints how many opens were accepted and how much the
# server's resident memory grew, once with the server's defaults and once
# with the memory budgets off (64 GiB), the waiting bounds raised in both
# so that every open waits for its turn instead of queue_full.
#
#   sh t/bench/tunnel_budget.sh BUILDDIR [STREAMS [SETTLE]]
set -u
top_builddir=$(cd "${1:?usage: tunnel_budget.sh BUILDDIR [STREAMS [SETTLE]]}" && pwd) || exit 2
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
STREAMS=${2:-1000} SETTLE=${3:-12}
PROXYHOST=${PROXYHOST:-$top_builddir/host/proxyhost}
CURL=${CURL:-curl}
export top_srcdir top_builddir PROXYHOST CURL
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
tn_setup || exit 2

WAITING='stream.max_pending_per_session = 1048576
stream.max_pending_per_principal = 1048576
stream.max_pending_opens = 1048576'
run() { # NAME EXTRA-INI: one server, one never-reading client
  TN_DB=$T/$1.db tn_server "$1" "[tunnel_server]
$WAITING
$2" || exit 2
  b_admin=$(eval echo "\$$1_admin") b_port=$(eval echo "\$$1_port") b_pid=$(eval echo "\$$1_pid")
  tn_ctl "$b_admin" user create carol >/dev/null &&
    tn_ctl "$b_admin" agent create firehose --owner carol >/dev/null &&
    _o=$(tn_ctl "$b_admin" token create --user carol) && tn_bearer "$_o" >"$T/$1.c" &&
    _o=$(tn_ctl "$b_admin" token create --user carol --agent firehose) &&
    tn_bearer "$_o" >"$T/$1.a" &&
    tn_ctl "$b_admin" policy create --agent firehose --user carol --host '*' \
      --ports 1-65535 >/dev/null || exit 2
  tm_peer --as agent --url "ws://127.0.0.1:$b_port/tunnel" --token-file "$T/$1.a" \
    --agent-id firehose --answer ok --serve bytes:2097152 --stay \
    --lifetime $((SETTLE + 60)) >"$T/$1.agent" 2>&1 &
  PIDS="$PIDS $!"
  tn_wait_sessions "$b_admin" server 1 || exit 2
  _r0=$(awk '/^VmRSS/ { print $2 }' "/proc/$b_pid/status")
  _s=$(i=0; printf '['; while [ $i -lt "$STREAMS" ]; do
    printf '{"op":"open","host":"t.test","port":80,"agent":"firehose"},'
    i=$((i + 1)); done; printf '{"op":"sleep","ms":%d}]' $(((SETTLE + 10) * 1000)))
  tm_peer --as client --url "ws://127.0.0.1:$b_port/tunnel" --token-file "$T/$1.c" \
    --no-window-update --script "$_s" --lifetime $((SETTLE + 30)) >"$T/$1.client" 2>&1 &
  PIDS="$PIDS $!"
  sleep "$SETTLE"
  _r1=$(awk '/^VmRSS/ { print $2 }' "/proc/$b_pid/status")
  echo "$1: $(grep '"open_result"' "$T/$1.client" | grep -c '"accepted": true') of $STREAMS" \
    "streams accepted, server RSS +$(((_r1 - _r0) / 1024)) MiB"
}
run budgets ''
run unbounded 'stream.memory_per_session = 64GiB
stream.memory_per_principal = 64GiB'

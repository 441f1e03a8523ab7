#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# System calls per stream, by call, of proxyhost (SOCKS5 and HTTP CONNECT)
# and of HAProxy as a plain TCP relay, under the load of t/bench/phload.
# On demand only, like run.sh; needs perf (Debian: linux-perf) and root
# (or perf_event_paranoid <= -1) for the syscall tracepoints.
#
#   sh t/bench/syscalls.sh [BUILDDIR] [CONCURRENCY] [SECONDS]
#
# perf counts the proxy's sys_enter tracepoints in the kernel without
# stopping it, so the proxy runs at its usual rate: strace -c slows it
# some fifty times, which changes how many events each epoll_wait returns
# and so the epoll_wait and accept4 counts. The other figures (sendto,
# recvfrom, epoll_ctl, connect, ...) do not depend on the rate. Each count
# is divided by the operations phload completed while perf counted
# (ops_all). Knobs (environment):
#   SYSCALLS_SYSTEMS="socks5 http haproxy"   what to measure
#   SYSCALLS_RESPONSE=128                    bytes the target answers
set -u

B=$(cd "${1:-${top_builddir:-.}}" && pwd) || exit 2
C=${2:-32}
D=${3:-3}
SYSTEMS=${SYSCALLS_SYSTEMS:-socks5 http haproxy}
RESP=${SYSCALLS_RESPONSE:-128}
L=$B/t/bench/phload
for f in "$L" "$B/t/bench/phtarget" "$B/host/proxyhost"; do
  [ -x "$f" ] || { echo "syscalls.sh: $f is missing" >&2; exit 2; }
done
command -v perf >/dev/null || { echo "syscalls.sh: perf is not installed" >&2; exit 2; }

CALLS="accept4 recvfrom sendto sendmsg recvmsg read write epoll_ctl epoll_wait
close shutdown socket connect setsockopt getsockopt getsockname fcntl pipe2
splice clock_gettime"
EV=raw_syscalls:sys_enter
for s in $CALLS; do EV="$EV,syscalls:sys_enter_$s"; done

T=$(mktemp -d "${TMPDIR:-/tmp}/phsyscalls.XXXXXX") || exit 2
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$B/t/bench/phtarget" --listen 127.0.0.1:0 >"$T/target.out" 2>&1 &
PIDS="$PIDS $!"
i=0
while [ $i -lt 50 ] && ! grep -q '^port=' "$T/target.out"; do sleep 0.1; i=$((i + 1)); done
TADDR=127.0.0.1:$(sed -n 's/^port=//p' "$T/target.out")

m=$B/modules
PS=$("$L" --free-port)
PH=$("$L" --free-port)
PA=$("$L" --free-port)
# The proxyhost configuration of run.sh.
printf '%s\n' '[proxyhost]' "modules = $m/direct/.libs/direct.so" \
  "modules = $m/socks5/.libs/socks5.so" \
  "modules = $m/http_proxy/.libs/http_proxy.so" '[log]' 'level = warn' \
  '[admin]' 'listen =' '[direct]' 'max_concurrent_dials = 512' \
  'max_pending_dials = 4096' '[socks5]' "listen = 127.0.0.1:$PS" \
  'max_clients = 4096' '[http_proxy]' "listen = 127.0.0.1:$PH" \
  'max_clients = 4096' >"$T/ph.ini"
printf '%s\n' global '  nbthread 1' '  maxconn 8192' defaults '  mode tcp' \
  '  timeout connect 5s' '  timeout client 30s' '  timeout server 30s' \
  'listen relay' "  bind 127.0.0.1:$PA" "  server target $TADDR" >"$T/haproxy.cfg"

# measure NAME PID PHLOAD-ARGS...
measure() {
  name=$1 pid=$2
  shift 2
  # Warm up (buffers, the accept backlog) before counting.
  "$L" "$@" --concurrency "$C" --duration 0.3 --warmup 0 \
    --response-size "$RESP" >/dev/null
  perf stat -x, -e "$EV" -p "$pid" -o "$T/$name.perf" &
  sp=$!
  sleep 0.3
  "$L" "$@" --concurrency "$C" --duration "$D" --warmup 0 \
    --response-size "$RESP" >"$T/$name.load"
  sleep 0.2
  kill -INT $sp
  wait $sp
  ops=$(sed -n 's/.*ops_all=\([0-9]*\).*/\1/p' "$T/$name.load")
  errs=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$T/$name.load")
  printf '%s c%s ops=%s errors=%s' "$name" "$C" "${ops:-0}" "${errs:-?}"
  awk -F, -v ops="${ops:-0}" '
    $3 ~ /^(raw_)?syscalls:sys_enter/ && $1 + 0 > 0 && ops > 0 {
      n = $3; sub(/^syscalls:sys_enter_/, "", n)
      sub(/^raw_syscalls:sys_enter$/, "all", n)
      printf " %s=%.2f", n, $1 / ops
    }' "$T/$name.perf"
  echo
}

start_proxyhost() {
  [ -n "${PHPID:-}" ] && return
  "$B/host/proxyhost" -c "$T/ph.ini" >"$T/proxyhost.log" 2>&1 &
  PHPID=$!
  PIDS="$PIDS $PHPID"
  sleep 0.7
}

for s in $SYSTEMS; do
  case $s in
  socks5)
    start_proxyhost
    measure socks5 "$PHPID" --mode socks5 --proxy "127.0.0.1:$PS" --target "$TADDR" ;;
  http)
    start_proxyhost
    measure http "$PHPID" --mode http-connect --proxy "127.0.0.1:$PH" --target "$TADDR" ;;
  haproxy)
    if ! command -v haproxy >/dev/null; then echo "haproxy: not installed, skipped"; continue; fi
    haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
    hp=$!
    PIDS="$PIDS $hp"
    sleep 0.7
    measure haproxy "$hp" --mode direct --target "127.0.0.1:$PA" ;;
  *) echo "syscalls.sh: unknown system $s" >&2 ;;
  esac
done

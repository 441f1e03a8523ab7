# SPDX-License-Identifier: BSD-2-Clause
# t/bench/bench_lib.sh: what the benchmarks share (t/bench/authz.sh,
# checker.sh, controller_scale.sh, controlplane.sh, gateway.sh, run.sh,
# tunnel.sh, tunnel_relay.sh). Sourced right after `set -u` with
# top_srcdir (the checkout: "$(dirname "$0")/../..") and BENCH (the
# script's name, for messages) set; the script's first argument (or
# $top_builddir, or .) is the build directory. It sets top_builddir, B,
# CURL and PROXYHOST (exported), sources t/lib/testlib.sh ($T, PIDS,
# free_port, wait_for) and then each t/lib kit named in BENCH_KITS (e.g.
# "redis.sh controller.sh"), and stops PIDS at exit (BENCH_KEEP=1 keeps $T).
#   say TEXT / die TEXT          progress on stderr / fail (exit 2)
#   bg NAME CMD...               in the background, output in $T/NAME.out,
#                                its pid in LAST and in PIDS (stopped at exit)
#   descendants PID[,PID...]     each and its descendants, one a line
#   stop_pid PID                 TERM to PID and its descendants, then
#                                KILL after 5 s (a zombie counts as gone)
#   ticks PID...                 utime + stime (+ reaped children), ticks
#   rss_kb PID                   VmRSS in KiB
#   now_ms, ms_to_s MS, us_per TICKS N (µs of CPU per item)
#   conns PID NAME               phconnect's handshakes so far ($T/NAME.out)
#   msum URL PREFIX              the sum of every /metrics sample from URL
#                                starting with PREFIX
#   controller_conf FILE EXTRA / start_controller EXTRA
#                                t/lib/controller.sh's controller at every
#                                default but EXTRA (KEY = VALUE lines),
#                                admin on $CA, gRPC on $CPP; CTL_PID;
#                                BENCH_DEFAULTS=1 drops its test timeouts,
#                                BENCH_RO_KEYS adds lines to [redis_ownership]
#   ctl ARGS...                  proxyhostctl against it
#   start_echo                   the echo module on $ECHO
#   start_checker TIERS [K]      checker kK (default 1) with CONC tasks at
#                                most and echo.url on $ECHO; CHK_PID and
#                                CHK_ADMIN (also CHKK_PID, CHKAK); CHK_EXTRA
#                                adds lines (KEY = VALUE) to its [checker]
#   gateway K                    gateway gK (conf/gateway.ini's modules but
#                                socks5); GWK (admin), GWHK (http), GWK_PID
top_builddir=$(cd "${1:-${top_builddir:-.}}" && pwd) || exit 2
CURL=${CURL:-curl}
export top_srcdir top_builddir CURL
. "$top_srcdir/t/lib/testlib.sh"
export PROXYHOST
# shellcheck disable=SC1090
for _kit in ${BENCH_KITS:-}; do . "$top_srcdir/t/lib/$_kit"; done
B=$top_builddir
HZ=$(getconf CLK_TCK)
say() { echo "# $*" >&2; }
die() { echo "$BENCH: $*" >&2; exit 2; }
descendants() { # PID[,PID...] -> each and every descendant, one per line
  for _d in $(echo "$1" | tr ',' ' '); do
    echo "$_d"
    for _c in $(ps -o pid= --ppid "$_d" 2>/dev/null); do descendants "$_c"; done
  done
}
stop_pid() {
  _all=$(descendants "$1")
  # shellcheck disable=SC2086
  kill $_all 2>/dev/null
  _i=0
  while [ $_i -lt 50 ] && kill -0 "$1" 2>/dev/null &&
    ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat" 2>/dev/null; do
    sleep 0.1
    _i=$((_i + 1))
  done
  # shellcheck disable=SC2086
  kill -9 $_all 2>/dev/null
  wait "$1" 2>/dev/null
}
bench_cleanup() {
  for p in $PIDS; do stop_pid "$p"; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept $T"; else rm -rf "$T"; fi
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck disable=SC3045
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
bg() {
  _n=$1
  shift
  "$@" >>"$T/$_n.out" 2>&1 &
  LAST=$!
  PIDS="$PIDS $LAST"
}
ticks() {
  for p in "$@"; do
    awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null
  done | awk '{ s += $1 } END { print s + 0 }'
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
us_per() { awk -v t="$1" -v n="$2" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print "-" }'; }
ms_to_s() { awk -v a="$1" 'BEGIN { printf "%.2f", a / 1000 }'; }
conns() {
  _c=$(grep -c '^conns=' "$T/$2.out")
  kill -USR1 "$1"
  i=0
  while [ $i -lt 100 ] && [ "$(grep -c '^conns=' "$T/$2.out")" -le "$_c" ]; do sleep 0.02; i=$((i + 1)); done
  sed -n 's/^conns=//p' "$T/$2.out" | tail -1
}
msum() {
  "$CURL" -s -m 5 "$1" | awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { printf "%.0f\n", s }'
}
CA=$(free_port) CPP=$(free_port)
controller_conf() {
  controller_ini "$1" "$CA" "$CPP"
  # BENCH_CTL_LOG=debug keeps the controller's debug lines (its "snapshot
  # sent" line says what made each snapshot and what a delta carried).
  sed -i -e "s/^level = debug\$/level = ${BENCH_CTL_LOG:-warn}/" -e '/^assign_interval = /d' \
    -e '/^watch_poll_interval = /d' -e '/^min_snapshot_interval = /d' "$1"
  # BENCH_DEFAULTS=1: its test timeouts too (a loaded Redis at 10,000
  # proxies answers slower than command_timeout = 300ms)
  [ "${BENCH_DEFAULTS:-0}" = 1 ] && sed -i -e '/^command_timeout = /d' \
    -e '/^reconnect.max = /d' -e '/^revision_recheck = /d' "$1"
  # BENCH_RO_KEYS: KEY = VALUE lines for [redis_ownership]
  [ -n "${BENCH_RO_KEYS:-}" ] && printf '%s\n' "$BENCH_RO_KEYS" >"$T/ro.keys" &&
    sed -i "/^\[redis_ownership\]\$/r $T/ro.keys" "$1"
  printf '%s\n' "$2" >>"$1"
}
start_controller() {
  controller_conf "$T/ctl.ini" "$1"
  bg controller "$PROXYHOST" -c "$T/ctl.ini"
  CTL_PID=$LAST
  wait_long healthy "$CA" || die "the controller did not start: $(tail -3 "$T/controller.out")"
}
ctl() { "$CTL" --admin "127.0.0.1:$CA" --token-file "$T/admin.token" "$@" >/dev/null; }
start_echo() {
  ECHO=$(free_port)
  printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[log]\nlevel = warn\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
    "$B/modules" "$(free_port)" "$ECHO" >"$T/echo.ini"
  bg echo "$PROXYHOST" -c "$T/echo.ini"
  ECHO_PID=$LAST
  wait_for port_open "$ECHO" || die "the echo endpoint did not start"
}
start_checker() {
  _k=${2:-1}
  eval "_a=\${CHKA$_k:-}"
  [ -n "$_a" ] || _a=$(free_port)
  eval "CHKA$_k=$_a"
  CHK_ADMIN=$_a
  printf '[proxyhost]\nmodules = checker\nmodule_path = %s\ndrain_timeout = 1s\n[log]\nlevel = warn\n[admin]\nlisten = 127.0.0.1:%s\n[checker]\ntls.mode = disabled\nmax_concurrency = %s\ntiers = %s\necho.url = http://127.0.0.1:%s/echo\n%s\n' \
    "$B/modules" "$_a" "$CONC" "$1" "$ECHO" "${CHK_EXTRA:-}" >"$T/chk$_k.ini"
  bg "checker$_k" "$PROXYHOST" -c "$T/chk$_k.ini" -control-plane "127.0.0.1:$CPP" \
    -cluster-id c1 -checker-id "k$_k" -instance-id "k$_k-bench" -zone z1
  CHK_PID=$LAST
  eval "CHK${_k}_PID=$LAST"
}
gateway() {
  a=$(free_port) h=$(free_port)
  cat >"$T/gw$1.ini" <<EOG
; written by $BENCH: conf/gateway.ini's modules without socks5
[proxyhost]
modules = controlplane_client, outcome_reporter, direct, direct.out, round_robin, weighted, least_active, random, sticky, pool, http_proxy
module_path = $B/modules
drain_timeout = 1s
[log]
level = warn
[admin]
listen = 127.0.0.1:$a
[controlplane_client]
tls.mode = disabled
[direct.out]
deny_cidrs = 10.0.0.0/8
[pool]
upstream_connector = direct
direct_connector = direct.out
[http_proxy]
listen = 127.0.0.1:$h
connector = pool
EOG
  bg "gw$1" "$PROXYHOST" -c "$T/gw$1.ini" -control-plane "127.0.0.1:$CPP" \
    -cluster-id c1 -worker-id "g$1" -instance-id "g$1-bench" -zone z1
  eval "GW$1=$a GWH$1=$h GW$1_PID=$LAST"
}

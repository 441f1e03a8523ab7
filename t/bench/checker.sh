#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# t/bench/checker.sh BUILDDIR: the pool's health loop (issue 26
# "Benchmark"), on demand only (make bench-checker); no threshold is
# checked. t/bench/README.md describes it; results in docs/benchmarks.md.
#
# rate:   one checker process (tiers = basic, echo.url: the echo module)
#         driven by a real controller (t/lib/controller.sh's, on a
#         private redis-server, timers at their defaults) against CHB_UPSTREAMS
#         upstream proxies served by t/bench/phconnect (one libev process,
#         one port each, CONNECT -> 200), then HAProxy's own health checks
#         of the same upstreams (tcp-check sending the CONNECT, expecting
#         200), at each interval of CHB_INTERVALS, one after the other in
#         the same run. CPU per check: utime + stime (+ reaped children)
#         from /proc of each process over the window / checks answered
#         (phconnect's own count of handshakes, the same for both).
# detect: every check default (interval 2s, fall 3, rise 2), 4 proxyhost
#         `local` upstreams, 2 gateways: a killed upstream's time to
#         UNHEALTHY in Redis and to UNHEALTHY in both gateways' views;
#         the same under traffic (phload through gateway 1: outcomes);
#         a flaky upstream (phconnect --flaky: one handshake in three is a
#         502) and its verdict changes over CHB_FLAKY_SECONDS.
# Knobs (environment):
#   CHB_PARTS="rate detect"   CHB_UPSTREAMS=1000   CHB_PORT_BASE=21000
#   CHB_INTERVALS="2s 1s 500ms 200ms 100ms"   CHB_WINDOW=10 (s counted)
#   CHB_CONCURRENCY=512 (checker max_concurrency)   CHB_KILLS=3
#   CHB_FLAKY_SECONDS=120   BENCH_KEEP=1 (keep the temporary directory)
#   CHB_CHECKER_CONF (rate: lines added to the checker's [checker], e.g.
#   "task_batch.max = 16")   CHB_CONTROLLER_CONF (rate: lines added to the
#   controller's section, e.g. "check_spread = 50")   CHB_AFTER_WINDOW (rate:
#   a command run after each counted window, before the process stops, as
#   sh -c "$CHB_AFTER_WINDOW" hook checker|haproxy PID PHCONNECT_PID: a
#   profile that does not weigh on the figures)   CHB_BEFORE_WINDOW (rate:
#   the same before each window: e.g. taskset both onto one CPU)
# Markdown on stdout, progress on stderr.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=checker.sh BENCH_KITS="redis.sh controller.sh"
. "$top_srcdir/t/bench/bench_lib.sh"
PHCONNECT=$B/t/bench/phconnect
PHLOAD=$B/t/bench/phload
PHTARGET=$B/t/bench/phtarget
CTL=$B/tools/proxyhostctl
PARTS=${CHB_PARTS:-rate detect}
N=${CHB_UPSTREAMS:-1000}
BASE=${CHB_PORT_BASE:-21000}
INTERVALS=${CHB_INTERVALS:-2s 1s 500ms 200ms 100ms}
WINDOW=${CHB_WINDOW:-10}
CONC=${CHB_CONCURRENCY:-512}
KILLS=${CHB_KILLS:-3}
FLAKY_S=${CHB_FLAKY_SECONDS:-120}
WATCH="python3 $top_srcdir/t/bench/health_watch.py"
for f in "$PHCONNECT" "$PROXYHOST" "$CTL"; do
  [ -x "$f" ] || die "$f is missing: make && make t/bench/phconnect"
done
for m in store_sqlite admin_api pool_api redis_ownership controlplane_server checker; do
  have_module "$m" || die "module $m is not built"
done
start_redis "$T/redis" || die "redis-server did not start"
REDIS_PID=$(cat "$T/redis/redis.pid")
# The echo endpoint (the echo module): BASIC tunnels to its host:port,
# EGRESS fetches it.
start_echo
chk_checks() { msum "http://127.0.0.1:$CHK_ADMIN/metrics" 'proxyhost_checker_checks_total{tier="basic"'; }
chk_failed() {
  "$CURL" -s -m 5 "http://127.0.0.1:$CHK_ADMIN/metrics" |
    awk 'index($0, "proxyhost_checker_checks_total{tier=\"basic\"") == 1 && $0 !~ /status="ok"/ { s += $NF } END { print s + 0 }'
}
ctl_metric() { msum "http://127.0.0.1:$CA/metrics" "$1"; }

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)."
echo

# ---- rate -------------------------------------------------------------------------
rate_part() {
  bg phconnect "$PHCONNECT" --base "$BASE" --count "$N"
  PC_PID=$LAST
  wait_for grep -q '^ready' "$T/phconnect.out" || die "phconnect did not start: $(tail -2 "$T/phconnect.out")"
  start_controller "check_interval = 2s"
  say "adding $N proxies (proxyhostctl proxy add)"
  t0=$(now_ms)
  k=0
  while [ $k -lt "$N" ]; do
    ctl proxy add "p$k" --protocol http_connect --host 127.0.0.1 --port $((BASE + k)) \
      --groups bench --capacity 10 || die "proxyhostctl proxy add p$k failed"
    k=$((k + 1))
  done
  say "added in $(ms_to_s $(($(now_ms) - t0))) s"
  stop_pid "$CTL_PID"
  HAVE_HAPROXY=0
  HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
  [ -x "$HAPROXY" ] && HAVE_HAPROXY=1
  [ "$HAVE_HAPROXY" = 1 ] || say "haproxy is not installed (t/bench/install-peers.sh): its rows are skipped"
  ROWS=""
  for iv in $INTERVALS; do
    case $iv in *ms) ivms=${iv%ms} ;; *s) ivms=$((${iv%s} * 1000)) ;; *) die "CHB_INTERVALS: $iv" ;; esac
    fast=$iv
    [ "$ivms" -gt 500 ] && fast=500ms
    # ---- the checker through the controller
    start_controller "check_interval = $iv
fast_interval = $fast
${CHB_CONTROLLER_CONF:-}"
    CHK_EXTRA=${CHB_CHECKER_CONF:-} start_checker basic
    say "checker, interval $iv: waiting for a first round"
    first() { [ "$(chk_checks)" -ge "$N" ]; }
    wait_long first || wait_long first || say "fewer than $N checks after 60 s"
    sleep 1
    [ -z "${CHB_BEFORE_WINDOW:-}" ] || sh -c "$CHB_BEFORE_WINDOW" hook checker "$CHK_PID" "$PC_PID" >&2
    c0=$(conns "$PC_PID" phconnect) k0=$(chk_checks) f0=$(chk_failed)
    tr0=$(ctl_metric 'proxyhost_cp_controller_health_transitions_total{to="unhealthy"}')
    a0=$(ticks "$CHK_PID") b0=$(ticks "$CTL_PID") r0=$(ticks "$REDIS_PID") p0=$(ticks "$PC_PID")
    t0=$(now_ms)
    sleep "$WINDOW"
    a1=$(ticks "$CHK_PID") b1=$(ticks "$CTL_PID") r1=$(ticks "$REDIS_PID") p1=$(ticks "$PC_PID")
    t1=$(now_ms)
    c1=$(conns "$PC_PID" phconnect) k1=$(chk_checks) f1=$(chk_failed)
    tr1=$(ctl_metric 'proxyhost_cp_controller_health_transitions_total{to="unhealthy"}')
    unh=$(ctl_metric 'proxyhost_cp_controller_health_items{tier="basic",state="unhealthy"}')
    sus=$(ctl_metric 'proxyhost_cp_controller_health_items{tier="basic",state="suspect"}')
    n=$((c1 - c0)) ms=$((t1 - t0))
    rate=$(awk -v n="$n" -v ms="$ms" 'BEGIN { printf "%.0f", n * 1000 / ms }')
    want=$(awk -v n="$N" -v iv="$ivms" 'BEGIN { printf "%.0f", n * 1000 / iv }')
    ROWS="$ROWS| checker | $iv | $want | $rate | $((k1 - k0)) | $(us_per $((a1 - a0)) "$n") | $(us_per $((b1 - b0)) "$n") | $(us_per $((r1 - r0)) "$n") | $(us_per $((p1 - p0)) "$n") | $((f1 - f0)) | $((tr1 - tr0)) / $unh / $sus |
"
    [ -z "${CHB_AFTER_WINDOW:-}" ] || sh -c "$CHB_AFTER_WINDOW" hook checker "$CHK_PID" "$PC_PID" >&2
    stop_pid "$CHK_PID"
    stop_pid "$CTL_PID"
    # ---- HAProxy's own checks of the same upstreams
    [ "$HAVE_HAPROXY" = 1 ] || continue
    hs=$(free_port)
    {
      printf 'global\n  maxconn 4096\n  nbthread 1\n  spread-checks 20\n'
      printf 'defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  timeout check 5s\n'
      printf 'listen stats\n  mode http\n  bind 127.0.0.1:%s\n  stats enable\n  stats uri /stats\n' "$hs"
      printf 'backend upstreams\n  option tcp-check\n  tcp-check connect\n'
      printf '  tcp-check send "CONNECT 127.0.0.1:9 HTTP/1.1\\r\\nHost: 127.0.0.1:9\\r\\n\\r\\n"\n'
      printf '  tcp-check expect rstring ^HTTP/1\\.[01]\\ 200\n'
      printf '  default-server check inter %s fall 3 rise 2\n' "$iv"
      k=0
      while [ $k -lt "$N" ]; do printf '  server p%s 127.0.0.1:%s\n' "$k" $((BASE + k)); k=$((k + 1)); done
    } >"$T/haproxy.cfg"
    bg haproxy "$HAPROXY" -db -f "$T/haproxy.cfg"
    HA_PID=$LAST
    up_all() { [ "$("$CURL" -s -m 5 "http://127.0.0.1:$hs/stats;csv" | awk -F, '$1 == "upstreams" && $18 ~ /^UP/' | wc -l)" -ge "$N" ]; }
    wait_long up_all || say "haproxy: fewer than $N servers UP after 30 s"
    sleep 1
    [ -z "${CHB_BEFORE_WINDOW:-}" ] || sh -c "$CHB_BEFORE_WINDOW" hook haproxy "$HA_PID" "$PC_PID" >&2
    c0=$(conns "$PC_PID" phconnect)
    a0=$(ticks "$HA_PID") p0=$(ticks "$PC_PID") t0=$(now_ms)
    sleep "$WINDOW"
    a1=$(ticks "$HA_PID") p1=$(ticks "$PC_PID") t1=$(now_ms)
    c1=$(conns "$PC_PID" phconnect)
    csv=$("$CURL" -s -m 5 "http://127.0.0.1:$hs/stats;csv")
    down=$(printf '%s\n' "$csv" | awk -F, '$1 == "upstreams" && $2 != "BACKEND" && $18 !~ /^UP/' | wc -l)
    chkfail=$(printf '%s\n' "$csv" | awk -F, '$1 == "upstreams" && $2 != "BACKEND" { s += $22 } END { print s + 0 }')
    n=$((c1 - c0)) ms=$((t1 - t0))
    rate=$(awk -v n="$n" -v ms="$ms" 'BEGIN { printf "%.0f", n * 1000 / ms }')
    ROWS="$ROWS| haproxy | $iv | $want | $rate | - | $(us_per $((a1 - a0)) "$n") | - | - | $(us_per $((p1 - p0)) "$n") | $chkfail (run) | $down down |
"
    [ -z "${CHB_AFTER_WINDOW:-}" ] || sh -c "$CHB_AFTER_WINDOW" hook haproxy "$HA_PID" "$PC_PID" >&2
    stop_pid "$HA_PID"
  done
  stop_pid "$PC_PID"
  echo "### Checks per second and CPU per BASIC check ($N upstreams)"
  echo
  echo "CPU in µs per check answered (phconnect's count of CONNECT handshakes in the $WINDOW s window); 'checker' and 'haproxy' are the checking process itself; the controller and Redis are the checker's scheduler and state."
  echo
  echo "| system | interval | target checks/s | checks/s | checker's own count | CPU/check (checker or haproxy) | controller | redis | phconnect | failed checks | false UNHEALTHY: transitions / unhealthy / suspect items |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s' "$ROWS"
  echo
}
case " $PARTS " in *" rate "*) rate_part ;; esac

# ---- detect -------------------------------------------------------------------------
upstream() { # K PORT: proxyhost `local` (direct + http_proxy) as u K
  printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[log]\nlevel = warn\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
    "$B/modules" "$(free_port)" "$2" >"$T/u$1.ini"
  bg "u$1" "$PROXYHOST" -c "$T/u$1.ini"
  eval "U$1_PID=\$LAST"
  wait_for port_open "$2" || die "upstream u$1 did not start"
}
secs() { # "redis_ms=A gw_ms=B" r|gw -> seconds
  _v=${1#redis_ms=}
  _v=${_v%% *}
  [ "$2" = gw ] && _v=${1##*gw_ms=}
  case $_v in -1 | '') echo "> timeout" ;; *) ms_to_s "$_v" ;; esac
}
# trial K PORT WANT: kill -9 u K, time it to WANT, start it again and time
# it back to AVAILABLE; one table row (without its label) in ROW
trial() {
  eval "_pid=\$U$1_PID"
  t0=$(now_ms)
  kill -9 "$_pid"
  o=$($WATCH "$REDIS_PORT" "$HKEY" "u$1" "$t0" out 30 "$GW1" "$GW2")
  u=$($WATCH "$REDIS_PORT" "$HKEY" "u$1" "$t0" unhealthy 30 "$GW1" "$GW2")
  upstream "$1" "$2"
  t1=$(now_ms)
  b=$($WATCH "$REDIS_PORT" "$HKEY" "u$1" "$t1" available 60 "$GW1" "$GW2")
  ROW="$(secs "$o" r) | $(secs "$o" gw) | $(secs "$u" r) | $(secs "$u" gw) | $(secs "$b" r) | $(secs "$b" gw) |"
}
detect_part() {
  if [ -n "${CTL_PID:-}" ] && running "$CTL_PID"; then stop_pid "$CTL_PID"; fi
  rm -f "$T/pool.db"
  "$REDIS_CLI" -p "$REDIS_PORT" FLUSHALL >/dev/null
  bg target "$PHTARGET" --listen 127.0.0.1:0
  wait_for grep -q '^port=' "$T/target.out" || die "phtarget did not start"
  TADDR=127.0.0.1:$(sed -n 's/^port=//p' "$T/target.out")
  for k in 1 2 3 4; do eval "UP$k=$(free_port)"; eval "upstream $k \$UP$k"; done
  FL=$(free_port)
  bg flaky "$PHCONNECT" --base "$FL" --count 1 --flaky "$FL"
  wait_for grep -q '^ready' "$T/flaky.out" || die "the flaky upstream did not start"
  start_controller "echo_url = http://127.0.0.1:$ECHO/echo"
  for k in 1 2 3 4; do
    eval "ctl proxy add u$k --protocol http_connect --host 127.0.0.1 --port \$UP$k --groups bench --capacity 100" ||
      die "proxyhostctl proxy add u$k failed"
  done
  ctl proxy add flaky --protocol http_connect --host 127.0.0.1 --port "$FL" --groups flaky --capacity 100 ||
    die "proxyhostctl proxy add flaky failed"
  ctl route add all --position 100 --host '*' --group bench --strategy round_robin ||
    die "proxyhostctl route add failed"
  CONC=64 start_checker basic,egress,target
  gateway 1
  gateway 2
  HKEY=$("$REDIS_CLI" -p "$REDIS_PORT" --scan --pattern '*health' | head -1)
  all_available() {
    HKEY=$("$REDIS_CLI" -p "$REDIS_PORT" --scan --pattern '*health' | head -1)
    [ -n "$HKEY" ] || return 1
    _w=$($WATCH "$REDIS_PORT" "$HKEY" u4 "$(now_ms)" available 1 "$GW1" "$GW2" 2>>"$T/watch.err")
    case $_w in *-1*) return 1 ;; esac
  }
  say "detect: waiting for both gateways to hold u1..u4 AVAILABLE (assign_interval 5 s)"
  n=0
  until all_available; do
    n=$((n + 1))
    [ $n -lt 600 ] || die "the gateways never saw u4 AVAILABLE (60 s)"
    sleep 0.1
  done
  DROWS=""
  k=0
  while [ $k -lt "$KILLS" ]; do
    say "detect: kill u1 (no traffic), trial $((k + 1))"
    trial 1 "$UP1"
    DROWS="$DROWS| killed, no traffic | $ROW
"
    k=$((k + 1))
  done
  [ -x "$PHLOAD" ] || die "$PHLOAD is missing: make t/bench/phload"
  "$PHLOAD" --mode http-connect --proxy "127.0.0.1:$GWH1" --target "$TADDR" \
    --concurrency 4 --duration 600 --warmup 0 --timeout 5 --response-size 128 >"$T/load.out" 2>&1 &
  LOAD=$!
  PIDS="$PIDS $LOAD"
  sleep 2
  k=0
  while [ $k -lt "$KILLS" ]; do
    say "detect: kill u2 under traffic (phload through gateway 1), trial $((k + 1))"
    trial 2 "$UP2"
    DROWS="$DROWS| killed, traffic | $ROW
"
    k=$((k + 1))
  done
  stop_pid "$LOAD"
  say "detect: the flaky upstream, $FLAKY_S s"
  fl=$($WATCH "$REDIS_PORT" "$HKEY" flaky flaky "$FLAKY_S")
  fchk=$(msum "http://127.0.0.1:$CHK_ADMIN/metrics" 'proxyhost_checker_checks_total{tier="basic"')
  echo "### Detection (every check default: interval 2 s, fall 3, rise 2; 2 gateways)"
  echo
  echo "Seconds from the kill -9 of an upstream to its verdict in Redis (the reducer's hash) and to both gateways' views (/v1/cp/view), then from its restart back to AVAILABLE; polled every 20 ms (t/bench/health_watch.py)."
  echo
  echo "Traffic: phload, 4 CONNECTs in flight through gateway 1 (round robin over u1..u4), whose outcomes reach the controller. Out: SUSPECT or UNHEALTHY."
  echo
  echo "| case | out in Redis | out of both views | UNHEALTHY in Redis | UNHEALTHY in both views | AVAILABLE again in Redis | in both views |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s' "$DROWS"
  echo
  echo "The flaky upstream (phconnect --flaky: every third handshake a 502), $FLAKY_S s: verdict changes after the first: ${fl} (1 AVAILABLE, 2 SUSPECT, 3 UNHEALTHY); the checker's BASIC checks by then: $fchk."
  echo
}
case " $PARTS " in *" detect "*) detect_part ;; esac

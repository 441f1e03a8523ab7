#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# t/bench/controller_scale.sh BUILDDIR: the controller with many proxies,
# 4 checkers and 2 gateways (issue 26 "Benchmark", the third item), on
# demand only (make bench-controller-scale); no threshold is checked.
# t/bench/README.md describes it; results in docs/benchmarks.md.
#
# A real controller (t/lib/controller.sh's: store_sqlite, redis_ownership
# on a private redis-server, every key at its default, the test timers
# and timeouts of controller.sh removed, but the run's check_interval and
# an echo_url on the echo module), CSB_PROXIES pool
# proxies added through the admin API (proxyhostctl proxy add, CSB_JOBS
# at a time) and served by one t/bench/phconnect (one loopback port each:
# RLIMIT_NOFILE raised to its hard limit; --relay 1: an EGRESS check's
# fetch reaches the echo module through it), CSB_CHECKERS checker processes
# and 2 gateways (controlplane_client, pool, http_proxy; each owns a share
# of the pool, at most CSB_OWNED: half by default, so that they own all
# of it). For each run of CSB_RUNS (INTERVAL:TIERS), everything but
# Redis, phconnect and the echo started afresh, every item of its tiers
# given a verdict (at most 3 min) and three intervals more waited for,
# then over CSB_WINDOW seconds: the controller's CPU (utime + stime from
# /proc) per observation accepted and per check task issued, Redis's CPU,
# each checker's CPU per check, the snapshot and delta bytes the
# controller sent (proxyhost_cp_controller_snapshot_bytes_total) per
# second and per gateway, the gateways' view versions per second, the
# controller's RSS. Then, in the first run's processes, one proxy in
# CSB_FAIL_EVERY (phconnect --fail-every, SIGUSR2) failing every handshake
# for CSB_FLAKY_WINDOW seconds, then answering again for as long: the
# transitions and the snapshot traffic they cause. Each window's line of
# what moved verdicts: the reducer's moves by tier and result, the tasks
# that expired, the checkers' failures by tier, status and reason (every
# sample's /metrics kept in $T/metrics with BENCH_KEEP=1).
# Knobs (environment):
#   CSB_PROXIES=10000   CSB_PORT_BASE=22000   CSB_CHECKERS=4   CSB_JOBS=4
#   CSB_RUNS="2s:basic 2s:basic,egress 1s:basic"   CSB_WINDOW=20
#   CSB_CONCURRENCY=512 (each checker's max_concurrency)
#   CSB_FAIL_EVERY=100 (1 %)   CSB_FLAKY_WINDOW=30   BENCH_KEEP=1
#   CSB_OWNED=CSB_PROXIES/2 ([redis_ownership] max_owned_per_worker)
#   CSB_CTL_KEYS="KEY = VALUE" lines for [controlplane_server]
#   BENCH_CTL_LOG=debug: the controller's log level (default warn; its
#   "snapshot sent" debug line says what made each snapshot)
# Markdown on stdout, progress on stderr.
set -u
BENCH_DEFAULTS=1 # t/lib/controller.sh's test timeouts dropped too
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=controller_scale.sh BENCH_KITS="redis.sh controller.sh"
. "$top_srcdir/t/bench/bench_lib.sh"
PHCONNECT=$B/t/bench/phconnect
CTL=$B/tools/proxyhostctl
N=${CSB_PROXIES:-10000}
BASE=${CSB_PORT_BASE:-22000}
NCHK=${CSB_CHECKERS:-4}
JOBS=${CSB_JOBS:-4}
RUNS=${CSB_RUNS:-2s:basic 2s:basic,egress 1s:basic}
WINDOW=${CSB_WINDOW:-20}
CONC=${CSB_CONCURRENCY:-512}
FAIL_EVERY=${CSB_FAIL_EVERY:-100}
FLAKY_W=${CSB_FLAKY_WINDOW:-30}
# [redis_ownership] max_owned_per_worker (1024 by default): half the pool
# each, so that the two gateways own all of it
OWNED=${CSB_OWNED:-$(((N + 1) / 2))}
BENCH_RO_KEYS="max_owned_per_worker = $OWNED"
for f in "$PHCONNECT" "$PROXYHOST" "$CTL"; do
  [ -x "$f" ] || die "$f is missing: make && make t/bench/phconnect"
done
for m in store_sqlite admin_api pool_api redis_ownership controlplane_server \
  checker echo controlplane_client pool http_proxy; do
  have_module "$m" || die "module $m is not built"
done
# shellcheck disable=SC3045
[ "$(ulimit -n)" -gt $((N + 2000)) ] ||
  die "RLIMIT_NOFILE $(ulimit -n) is too low for $N ports in one phconnect"

start_redis "$T/redis" || die "redis-server did not start"
REDIS_PID=$(cat "$T/redis/redis.pid")
start_echo
bg phconnect "$PHCONNECT" --base "$BASE" --count "$N" --fail-every "$FAIL_EVERY" --relay 1
PC_PID=$LAST
wait_long grep -q '^ready' "$T/phconnect.out" || die "phconnect did not start: $(tail -2 "$T/phconnect.out")"

owned() { # K: proxies in gateway gK's view
  _p=
  eval "_p=\$GW$1"
  "$CURL" -s -m 10 "http://127.0.0.1:$_p/v1/cp/view" | grep -o '"proxy_id"' | wc -l
}
cm() { msum "http://127.0.0.1:$CA/metrics" "$1"; }
gm() { _p=; eval "_p=\$GW$1"; msum "http://127.0.0.1:$_p/metrics" "$2"; }
chk_checks() { _p=; eval "_p=\$CHKA$1"; msum "http://127.0.0.1:$_p/metrics" 'proxyhost_checker_checks_total{'; }
ivms() { case $1 in *ms) echo "${1%ms}" ;; *s) echo $((${1%s} * 1000)) ;; *) die "interval $1" ;; esac; }
up() { # ITV: the controller, 2 gateways and the checkers (tiers set later)
  _iv=$1 _fast=$1
  [ "$(ivms "$1")" -gt 500 ] && _fast=500ms
  start_controller "check_interval = $_iv
fast_interval = $_fast
echo_url = http://127.0.0.1:$ECHO/echo
${CSB_CTL_KEYS:-}"
}
down() {
  for _k in $(seq 1 "$NCHK"); do eval "stop_pid \$CHK${_k}_PID"; done
  stop_pid "$GW1_PID"
  stop_pid "$GW2_PID"
  stop_pid "$CTL_PID"
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)."
echo

# ---- the pool, through the admin API -----------------------------------------------
up 2s
say "adding $N proxies (proxyhostctl proxy add, $JOBS at a time)"
t0=$(now_ms)
c0=$(ticks "$CTL_PID")
awk -v n="$N" -v b="$BASE" 'BEGIN { for (k = 0; k < n; k++) printf "proxy add p%d --protocol http_connect --host 127.0.0.1 --port %d --groups bench --capacity 10\n", k, b + k }' |
  xargs -P "$JOBS" -L 1 "$CTL" --admin "127.0.0.1:$CA" --token-file "$T/admin.token" >/dev/null ||
  die "proxyhostctl proxy add failed"
ADD_MS=$(($(now_ms) - t0))
ADD_TICKS=$(($(ticks "$CTL_PID") - c0))
ctl route add all --position 100 --host '*' --group bench --strategy round_robin ||
  die "proxyhostctl route add failed"
say "added in $(ms_to_s "$ADD_MS") s"
stop_pid "$CTL_PID"

# ---- one run: INTERVAL TIERS ----------------------------------------------------------
ROWS="" FROWS="" WHYS=""
sample() { # -> the S_ variables
  S_T=$(now_ms)
  S_CTL=$(ticks "$CTL_PID") S_RED=$(ticks "$REDIS_PID") S_GW=$(ticks "$GW1_PID" "$GW2_PID")
  S_CHK=0 S_CHECKS=0
  for _k in $(seq 1 "$NCHK"); do
    eval "_p=\$CHK${_k}_PID"
    S_CHK=$((S_CHK + $(ticks "$_p")))
    S_CHECKS=$((S_CHECKS + $(chk_checks "$_k")))
  done
  _m=$("$CURL" -s -m 5 "http://127.0.0.1:$CA/metrics")
  mval() { printf '%s\n' "$_m" | awk -v p="$1" 'index($0, p) == 1 { s += $NF } END { printf "%.0f\n", s }'; }
  S_ISSUED=$(mval 'proxyhost_cp_controller_check_tasks_total{tier="basic",result="issued"}')
  S_ISSUED=$((S_ISSUED + $(mval 'proxyhost_cp_controller_check_tasks_total{tier="egress",result="issued"}')))
  S_OBS=$(mval 'proxyhost_cp_controller_observations_total{result="accepted"}')
  S_FULLB=$(mval 'proxyhost_cp_controller_snapshot_bytes_total{kind="full"}')
  S_DELTB=$(mval 'proxyhost_cp_controller_snapshot_bytes_total{kind="delta"}')
  S_SENT=$(mval 'proxyhost_cp_controller_snapshots_sent_total')
  S_DELTAS=$(mval 'proxyhost_cp_controller_deltas_sent_total')
  S_TRANS=$(mval 'proxyhost_cp_controller_health_transitions_total')
  S_V1=$(gm 1 'proxyhost_cp_gateway_view_version') S_V2=$(gm 2 'proxyhost_cp_gateway_view_version')
  # every sample's metrics kept (BENCH_KEEP=1): which observations moved
  # a verdict (t/bench/README.md)
  NSAMPLE=$((${NSAMPLE:-0} + 1))
  mkdir -p "$T/metrics"
  printf '%s\n' "$_m" >"$T/metrics/$NSAMPLE-controller.prom"
  for _k in $(seq 1 "$NCHK"); do
    eval "_p=\$CHKA$_k"
    "$CURL" -s -m 5 "http://127.0.0.1:$_p/metrics" >"$T/metrics/$NSAMPLE-checker$_k.prom"
  done
}
keep() { # copy the S_ variables to P_
  P_NSAMPLE=$NSAMPLE
  for _v in T CTL RED GW CHK CHECKS ISSUED OBS FULLB DELTB SENT DELTAS TRANS V1 V2; do
    eval "P_$_v=\$S_$_v"
  done
}
per_s() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.1f", n * 1000 / ms }'; }
kib_s() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.1f", n / 1024 * 1000 / ms }'; }
# one table row over the window P_ -> S_ (LABEL)
row() {
  _ms=$((S_T - P_T))
  _obs=$((S_OBS - P_OBS)) _iss=$((S_ISSUED - P_ISSUED)) _chk=$((S_CHECKS - P_CHECKS))
  _fb=$((S_FULLB - P_FULLB)) _db=$((S_DELTB - P_DELTB))
  _full=$((S_SENT - P_SENT - S_DELTAS + P_DELTAS)) _del=$((S_DELTAS - P_DELTAS))
  _nt=$(echo "$tiers" | tr ',' '\n' | grep -c .)
  echo "| $1 | $((N * _nt * 1000 / $(ivms "$iv"))) | $(per_s "$_obs" "$_ms") | $(us_per $((S_CTL - P_CTL)) "$_obs") | $(us_per $((S_CTL - P_CTL)) "$_iss") | $(us_per $((S_RED - P_RED)) "$_obs") | $(us_per $((S_CHK - P_CHK)) "$_chk") | $(us_per $((S_GW - P_GW)) "$_obs") | $(per_s "$_full" "$_ms") / $(kib_s "$_fb" "$_ms") | $(per_s "$_del" "$_ms") / $(kib_s "$_db" "$_ms") | $(kib_s $(((_fb + _db) / 2)) "$_ms") | $(per_s $((S_V1 - P_V1)) "$_ms") / $(per_s $((S_V2 - P_V2)) "$_ms") | $((S_TRANS - P_TRANS)) | $(items) | $(($(rss_kb "$CTL_PID") / 1024)) |"
}
# what moved over the window P_ -> S_: each series of the controller's
# health_moves_total and check_tasks_total{result!=issued,answered}, and
# of the checkers' checks_total{status!=ok} and check_reasons_total,
# that grew, with its growth
deltas() { # FILE-SUFFIX PREFIX...
  _sfx=$1
  shift
  for _pre in "$@"; do
    awk -v p="$_pre" -v n="$(echo $_sfx | wc -w)" 'FNR == 1 { f++ }
      index($0, p) == 1 { v[f > n ? 2 : 1, $1] += $NF; k[$1] = 1 }
      END { for (s in k) if (v[2, s] - v[1, s] > 0) printf "%s %d\n", s, v[2, s] - v[1, s] }' \
      $(for _k in $_sfx; do printf '%s ' "$T/metrics/$P_NSAMPLE-$_k.prom"; done) \
      $(for _k in $_sfx; do printf '%s ' "$T/metrics/$NSAMPLE-$_k.prom"; done) 2>/dev/null
  done
}
why() { # LABEL: one line of what moved verdicts over the window
  _chks=$(for _k in $(seq 1 "$NCHK"); do printf 'checker%s ' "$_k"; done)
  printf -- '- %s: moves %s; tasks %s; checkers %s\n' "$1" \
    "$(deltas controller proxyhost_cp_controller_health_moves_total | sed 's/^[^{]*//' | paste -sd, -)" \
    "$(deltas controller proxyhost_cp_controller_check_tasks_total | grep -v 'issued\|answered' | sed 's/^[^{]*//' | paste -sd, -)" \
    "$(deltas "$_chks" proxyhost_checker_check_reasons_total 'proxyhost_checker_checks_total{tier="basic",status="failed"' 'proxyhost_checker_checks_total{tier="basic",status="timeout"' 'proxyhost_checker_checks_total{tier="egress",status="failed"' 'proxyhost_checker_checks_total{tier="egress",status="timeout"' 'proxyhost_checker_checks_total{tier="basic",status="checker_error"' 'proxyhost_checker_checks_total{tier="egress",status="checker_error"' | sed 's/^proxyhost_checker_//' | paste -sd, -)"
}
items() { # the run's tiers' items by state: none / available / suspect / unhealthy
  for _t in basic egress; do
    case ",$tiers," in *",$_t,"*) ;; *) continue ;; esac
    printf '%s %s; ' "$_t" "$(for _s in none available suspect unhealthy; do
      cm "proxyhost_cp_controller_health_items{tier=\"$_t\",state=\"$_s\"}"
    done | paste -sd/ | sed 's,/, / ,g')"
  done | sed 's/; $//'
}
# settled: every item of the run's tiers has a verdict (none at 0), after
# as many observations as items
settled() {
  [ "$(cm 'proxyhost_cp_controller_observations_total{result="accepted"}')" -ge "$N" ] || return 1
  for _t in basic egress; do
    case ",$tiers," in *",$_t,"*) ;; *) continue ;; esac
    [ "$(cm "proxyhost_cp_controller_health_items{tier=\"$_t\",state=\"none\"}")" -eq 0 ] || return 1
    [ "$(cm "proxyhost_cp_controller_health_items{tier=\"$_t\",state=\"available\"}")" -gt 0 ] || return 1
  done
}
views() { [ "$(gm 1 'proxyhost_cp_gateway_view_version')" -gt 0 ] && [ "$(gm 2 'proxyhost_cp_gateway_view_version')" -gt 0 ]; }
within() { # SECONDS CMD...: CMD true within SECONDS (tries 0.5 s apart)
  _end=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    [ "$(now_ms)" -lt "$_end" ] || return 1
    sleep 0.5
  done
}
FIRST=1
for r in $RUNS; do
  iv=${r%%:*} tiers=${r#*:}
  say "run: check_interval $iv, tiers $tiers"
  up "$iv"
  gateway 1
  gateway 2
  for k in $(seq 1 "$NCHK"); do start_checker "$tiers" "$k"; done
  t0=$(now_ms)
  within 180 settled || say "not every item has a verdict after 3 min"
  within 60 views || say "a gateway has no view"
  say "settled in $(ms_to_s $(($(now_ms) - t0))) s"
  sleep "$(($(ivms "$iv") * 3 / 1000 + 1))" # a few rounds more
  sample
  keep
  sleep "$WINDOW"
  sample
  _r=$(row "$iv, $tiers")
  say "$_r"
  ROWS="$ROWS$_r
"
  _w=$(why "$iv, $tiers")
  say "$_w"
  WHYS="$WHYS$_w
"
  if [ "$FIRST" = 1 ]; then
    FIRST=0
    OWN1=$(owned 1) OWN2=$(owned 2)
    # ---- a failing share, then back
    for phase in failing answering; do
      keep
      kill -USR2 "$PC_PID"
      sleep "$FLAKY_W"
      sample
      _r=$(row "$iv, $tiers: 1 in $FAIL_EVERY $phase")
      say "$_r"
      FROWS="$FROWS$_r
"
      _w=$(why "$iv, $tiers: 1 in $FAIL_EVERY $phase")
      say "$_w"
      WHYS="$WHYS$_w
"
    done
  fi
  down
done
stop_pid "$PC_PID"

echo "### The controller with $N proxies, $NCHK checkers and 2 gateways"
echo
echo "Each gateway may own $OWNED proxies ([redis_ownership] max_owned_per_worker); they owned $OWN1 and $OWN2 at the end of the first window."
echo
echo "Adding the $N proxies (proxyhostctl proxy add, $JOBS at a time, no gateway or checker yet): $(ms_to_s "$ADD_MS") s, the controller's CPU $(us_per "$ADD_TICKS" "$N") µs per proxy."
echo
echo "Each row: a $WINDOW s window once every item of the run's tiers had a verdict and three intervals more. Scheduled: proxies × tiers ÷ interval. CPU in µs: the controller's per observation accepted and per task issued, Redis's per observation, the checkers' (all $NCHK) per check they counted, the gateways' (both) per observation. Full and delta: messages/s / KiB/s the controller sent (both gateways); per gateway: KiB/s of both kinds / 2. Versions: each gateway's view versions per second."
echo
echo "| run | scheduled checks/s | observations/s | controller µs/observation | controller µs/task issued | redis µs/observation | checkers µs/check | gateways µs/observation | full snapshots/s / KiB/s | deltas/s / KiB/s | KiB/s per gateway | view versions/s (g1 / g2) | transitions | items at the end by tier: none / available / suspect / unhealthy | controller RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s' "$ROWS"
printf '%s' "$FROWS"
echo
echo "What moved verdicts in each window (controller: proxyhost_cp_controller_health_moves_total by tier and result, check tasks neither issued nor answered; checkers: failures by tier and status, and check_reasons_total; only the series that grew):"
echo
printf '%s' "$WHYS"
echo
echo "The failing share: $((N / FAIL_EVERY)) proxies failing every handshake for $FLAKY_W s, then answering again for $FLAKY_W s (each window from its SIGUSR2 to phconnect)."
echo

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The control plane's benchmarks (issue 12), on demand only (not in make
# check, no threshold checked): two measurements, each against its
# physical floor in the same run, and one summary table.
#
#  1. Snapshot: t/bench/cpsnap builds, sends, receives, checks and compiles
#     one WorkerSnapshot of CPB_PROXIES owned proxies, each step timed
#     against protobuf-c's bare pack + unpack of the same message (goal:
#     the whole path at most 3x).
#  2. Fenced RPC: a real controller (proxyhost: controlplane_server +
#     redis_ownership + store_sqlite) on a private redis-server, both
#     started here; t/bench/cpload plays W workers (Register, Watch, ACK,
#     then ReportRuntime back to back) and then runs the same runtime
#     script with EVALSHA over hiredis against the same Redis (goal: one
#     fenced RPC at most 1.5x one EVALSHA). From /proc: the controller's
#     and redis-server's CPU per call, and so the workers one controller
#     core serves at a heartbeat interval.
#
#   sh t/bench/controlplane.sh [BUILDDIR]      (or: make bench-controlplane)
#
# BUILDDIR (or $top_builddir, or .) holds host/proxyhost, the modules
# store_sqlite, redis_ownership and controlplane_server, and
# t/bench/cpsnap and t/bench/cpload (make t/bench/cpsnap t/bench/cpload).
# Knobs (environment):
#   CPB_PROXIES=10000     proxies in the snapshot
#   CPB_CREDENTIALS=1000  distinct credentials among them
#   CPB_ITERS=20          snapshot operations per run
#   CPB_RUNS=7            runs (the median run is reported)
#   CPB_WORKERS="1 32"    simulated workers (= RPCs in flight) per RPC run
#   CPB_COUNTERS="0 100"  sparse counters per runtime report
#   CPB_DURATION=5        seconds counted per RPC run (after CPB_WARMUP=1)
#   CPB_REPEATS=3         RPC runs per shape (medians reported)
#   CPB_INTERVALS="10 1"  heartbeat intervals (s) for the workers-per-core
#                         figure: runtime_interval's default, and 1 s
#   CPB_SKIP=             "snapshot" or "rpc" to skip one part
#   CPB_PERF=0            1: one more RPC run (the last CPB_WORKERS, no
#                         counters) under perf record -p of the controller
#                         and of redis-server: where their CPU goes, by
#                         shared object and by symbol (needs perf and root)
#   CPB_RAW=0             1 appends every raw line
#   CPB_KEEP=0            1 keeps the temporary directory (logs, raw lines)
# Markdown on stdout, progress on stderr.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=controlplane.sh BENCH_KITS="redis.sh"
. "$top_srcdir/t/bench/bench_lib.sh"

PROXIES=${CPB_PROXIES:-10000}
CREDS=${CPB_CREDENTIALS:-1000}
ITERS=${CPB_ITERS:-20}
RUNS=${CPB_RUNS:-7}
WORKERS=${CPB_WORKERS:-1 32}
COUNTERS=${CPB_COUNTERS:-0 100}
DUR=${CPB_DURATION:-5}
WARMUP=${CPB_WARMUP:-1}
REPEATS=${CPB_REPEATS:-3}
INTERVALS=${CPB_INTERVALS:-10 1}
SKIP=${CPB_SKIP:-}
SESSION_TTL=30000 RUNTIME_TTL=15000 LEASE=30000 # redis_ownership's defaults
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "${CPB_KEEP:-0}" = 1 ]; then
  trap 'for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; echo "kept $T" >&2' EXIT
fi
RAW="$T/raw"
: >"$RAW"

echo "## The control plane (issue 12)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo). Load average at the start: $LOAD0."
echo

# ---- 1. the snapshot --------------------------------------------------------
SNAP_RATIO=-
if [ "$SKIP" != snapshot ]; then
  [ -x "$top_builddir/t/bench/cpsnap" ] || die "t/bench/cpsnap is not built (make t/bench/cpsnap)"
  say "snapshot: $PROXIES proxies, $ITERS iterations x $RUNS runs"
  "$top_builddir/t/bench/cpsnap" -n "$PROXIES" -c "$CREDS" -i "$ITERS" -r "$RUNS" >"$T/snap.out" ||
    die "cpsnap failed"
  cat "$T/snap.out" >>"$RAW"
  echo "### Snapshot of $PROXIES owned proxies (\`cpsnap -n $PROXIES -c $CREDS -i $ITERS -r $RUNS\`)"
  echo
  sed -n 's/^# cpsnap: //p' "$T/snap.out"
  echo
  sed -n '/^| operation/,$p' "$T/snap.out"
  echo
  SNAP_RATIO=$(sed -n 's/^op=pipeline .* cpu_ratio=\([0-9.]*\).*/\1/p' "$T/snap.out")
fi

# ---- 2. the fenced RPC -----------------------------------------------------
if [ "$SKIP" != rpc ]; then
  for m in store_sqlite redis_ownership controlplane_server; do
    have_module "$m" || die "module $m is not built"
  done
  [ -x "$top_builddir/t/bench/cpload" ] || die "t/bench/cpload is not built (make t/bench/cpload)"
  start_redis "$T/redis" || die "redis-server did not start"
  REDIS_PID=$(cat "$T/redis/redis.pid")
  mkdir -p "$T/secrets"
  (umask 077 && head -c 32 /dev/urandom >"$T/ref.key")
  admin=$(free_port) cpp=$(free_port)
  cat >"$T/ctl.ini" <<EOC
[proxyhost]
modules = store_sqlite, redis_ownership, controlplane_server
module_path = $top_builddir/modules
[log]
level = warn
[admin]
listen = 127.0.0.1:$admin
[store_sqlite]
path = $T/pool.db
[redis_ownership]
address = 127.0.0.1:$REDIS_PORT
cluster_id = c1
max_workers = 65536
[controlplane_server]
listen = 127.0.0.1:$cpp
tls.mode = disabled
cluster_id = c1
secrets_dir = $T/secrets
reference_key_file = $T/ref.key
min_snapshot_interval = 0s
EOC
  "$PROXYHOST" -c "$T/ctl.ini" --check-config >"$T/check.out" 2>&1 ||
    die "the controller's configuration is refused: $(cat "$T/check.out")"
  start_proxyhost "$T/ctl.ini"
  ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
  wait_for ready || die "the controller is not ready (log: $(tail -5 "$T/ph.log"))"
  CTL_PID=$PH_PID
  # The controller's and redis-server's own background (the assign loop,
  # timers) with no worker at all, in CPU ms per second.
  cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
  sleep 1
  i0=$(cpu_ticks "$CTL_PID") r0=$(cpu_ticks "$REDIS_PID")
  sleep 4
  IDLE_CTL=$(awk -v a="$i0" -v b="$(cpu_ticks "$CTL_PID")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) * 1000 / hz / 4 }')
  IDLE_RD=$(awk -v a="$r0" -v b="$(cpu_ticks "$REDIS_PID")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) * 1000 / hz / 4 }')
  RUN=0
  for rep in $(seq 1 "$REPEATS"); do
    for k in $COUNTERS; do
      for w in $WORKERS; do
        RUN=$((RUN + 1))
        say "rpc: repeat $rep, $w workers, $k counters"
        "$top_builddir/t/bench/cpload" --address "127.0.0.1:$cpp" \
          --redis "127.0.0.1:$REDIS_PORT" --ctl-pid "$CTL_PID" \
          --redis-pid "$REDIS_PID" --workers "$w" --counters "$k" \
          --duration "$DUR" --warmup "$WARMUP" --prefix "b$RUN" \
          --session-ttl "$SESSION_TTL" --runtime-ttl "$RUNTIME_TTL" \
          --lease "$LEASE" >"$T/load.out" 2>"$T/load.err" ||
          die "cpload failed: $(tail -5 "$T/load.err")"
        sed "s/^/rep=$rep /" "$T/load.out" >>"$RAW"
      done
    done
  done
  if [ "${CPB_PERF:-0}" = 1 ] && command -v perf >/dev/null 2>&1; then
    pw=${WORKERS##* }
    RUN=$((RUN + 1))
    say "rpc under perf: $pw workers, 0 counters"
    "$top_builddir/t/bench/cpload" --address "127.0.0.1:$cpp" \
      --redis "127.0.0.1:$REDIS_PORT" --ctl-pid "$CTL_PID" \
      --redis-pid "$REDIS_PID" --workers "$pw" --counters 0 \
      --duration "$DUR" --warmup "$WARMUP" --prefix "b$RUN" --modes grpc \
      >"$T/perf-load.out" 2>"$T/perf-load.err" &
    lp=$!
    sleep "$WARMUP"
    perf record -F 999 -g -o "$T/ctl.perf" -p "$CTL_PID" -- sleep "$DUR" >"$T/ctl.perf.log" 2>&1 &
    pp1=$!
    perf record -F 999 -g -o "$T/redis.perf" -p "$REDIS_PID" -- sleep "$DUR" >"$T/redis.perf.log" 2>&1
    wait "$pp1"
    wait "$lp"
    PERF_OUT="$T/perf.md"
    {
      echo "### Where the CPU goes: perf record of the controller and of redis-server, $pw workers, 0 counters"
      echo
      echo "$(sed -n 's/^mode=grpc .* per_sec=\([0-9.]*\) .*ctl_us_per=\([0-9.]*\) .*/RPC\/s \1, controller CPU per RPC \2 us/p' "$T/perf-load.out") (perf's own sampling included)."
      echo
      for who in ctl redis; do
        if [ ! -s "$T/$who.perf" ]; then
          echo "$who: perf record failed: $(tail -2 "$T/$who.perf.log")"
          echo
          continue
        fi
        if [ -z "$(perf report -i "$T/$who.perf" --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -1)" ]; then
          echo "$who: perf recorded no sample ($(tail -1 "$T/$who.perf.log")); run again with CPB_SKIP=snapshot CPB_REPEATS=1"
          echo
          continue
        fi
        echo "$who, by shared object:"
        echo
        echo '```'
        perf report -i "$T/$who.perf" --no-children --sort dso --stdio -g none 2>/dev/null |
          grep -v '^#' | grep -v '^$' | head -12
        echo '```'
        echo
        echo "$who, by thread and shared object:"
        echo
        echo '```'
        perf report -i "$T/$who.perf" --no-children --sort comm,dso --stdio -g none 2>/dev/null |
          grep -v '^#' | grep -v '^$' | head -14
        echo '```'
        echo
        echo "$who, top symbols:"
        echo
        echo '```'
        perf report -i "$T/$who.perf" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
          grep -v '^#' | grep -v '^$' | head -25
        echo '```'
        echo
      done
    } >"$PERF_OUT"
  fi
  kill -TERM "$CTL_PID"
  wait_exit "$CTL_PID" 10
  stop_redis "$T/redis"

  # The gRPC floor: the same load against t/lib/cp_echo_server (the same
  # cp_grpc server on the mock host's loop, answering from memory after
  # protobuf-c unpacks the request): no Redis, no fence.
  ECHO="$top_builddir/t/lib/cp_echo_server"
  if [ -x "$ECHO" ]; then
    printf '[cp_echo]\nlisten = 127.0.0.1:0\ntls.mode = disabled\n' >"$T/echo.ini"
    "$ECHO" "$T/echo.ini" "$T/echo.port" >"$T/echo.log" 2>&1 &
    ECHO_PID=$!
    PIDS="$PIDS $ECHO_PID"
    wait_file "$T/echo.port" || die "cp_echo_server did not start"
    for rep in $(seq 1 "$REPEATS"); do
      for k in $COUNTERS; do
        for w in $WORKERS; do
          RUN=$((RUN + 1))
          say "grpc floor (cp_echo_server): repeat $rep, $w workers, $k counters"
          "$top_builddir/t/bench/cpload" --address "127.0.0.1:$(cat "$T/echo.port")" \
            --ctl-pid "$ECHO_PID" --workers "$w" --counters "$k" \
            --duration "$DUR" --warmup "$WARMUP" --prefix "e$RUN" --modes grpc \
            >"$T/load.out" 2>"$T/load.err" ||
            die "cpload (echo) failed: $(tail -5 "$T/load.err")"
          sed -e "s/^/rep=$rep /" -e 's/mode=grpc/mode=echo/' "$T/load.out" >>"$RAW"
        done
      done
    done
    kill -TERM "$ECHO_PID"
    wait_exit "$ECHO_PID" 10
  else
    say "t/lib/cp_echo_server is not built (make t/lib/cp_echo_server): no gRPC floor"
  fi

  # med MODE W K KEY: the median over the repeats
  med() {
    awk -v m="$1" -v w="$2" -v k="$3" -v key="$4" '
      { v = ""; mm = ""; ww = ""; kk = ""
        for (i = 1; i <= NF; i++) { split($i, kv, "=")
          if (kv[1] == "mode") mm = kv[2]; if (kv[1] == "workers") ww = kv[2]
          if (kv[1] == "counters") kk = kv[2]; if (kv[1] == key) v = kv[2] }
        if (mm == m && ww == w && kk == k && v != "") print v }' "$RAW" | median
  }
  # ratio MODE W K KEY / MODE W K KEY per repeat, then the median
  f2() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.2f", v }'; }
  f1() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.1f", v }'; }
  f0() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.0f", v }'; }
  div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else print a / b }'; }
  add() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else print a + b }'; }

  echo "### Fenced RPC: ReportRuntime through the controller against EVALSHA of its script"
  echo
  echo "A controller (\`proxyhost\`: controlplane_server, redis_ownership, store_sqlite; \`[log] level = warn\`, plaintext on loopback) and a private redis-server, both started by the script; \`cpload\` plays W workers, each on a gRPC channel of its own with one ReportRuntime in flight, then runs the same \`runtime\` script with EVALSHA over one hiredis connection (W in flight, pipelined, as the controller's one connection). ${DUR} s counted after ${WARMUP} s warm-up, medians of $REPEATS repeats. CPU from /proc over the counted window."
  echo
  echo "| workers | counters | RPC/s | EVALSHA/s | RPC p50 | EVALSHA p50 | RPC p99 | EVALSHA p99 | p50 ratio | controller CPU / RPC | redis CPU / RPC | redis CPU / EVALSHA | CPU ratio | errors |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for k in $COUNTERS; do
    for w in $WORKERS; do
      gr=$(med grpc "$w" "$k" per_sec) rr=$(med redis "$w" "$k" per_sec)
      gp=$(med grpc "$w" "$k" p50_us) rp=$(med redis "$w" "$k" p50_us)
      g9=$(med grpc "$w" "$k" p99_us) r9=$(med redis "$w" "$k" p99_us)
      gc=$(med grpc "$w" "$k" ctl_us_per) grd=$(med grpc "$w" "$k" redis_us_per)
      rc=$(med redis "$w" "$k" redis_us_per)
      ge=$(awk -v w="$w" -v k="$k" '/mode=grpc/ && $0 ~ " workers=" w " " && $0 ~ " counters=" k " " { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "errors") s += kv[2] } } END { print s + 0 }' "$RAW")
      re=$(awk -v w="$w" -v k="$k" '/mode=redis/ && $0 ~ " workers=" w " " && $0 ~ " counters=" k " " { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "errors") s += kv[2] } } END { print s + 0 }' "$RAW")
      echo "| $w | $k | $(f0 "$gr") | $(f0 "$rr") | $gp us | $rp us | $g9 us | $r9 us | $(f2 "$(div "$gp" "$rp")") | $(f1 "$gc") us | $(f1 "$grd") us | $(f1 "$rc") us | $(f2 "$(div "$(add "$gc" "$grd")" "$rc")") | $ge / $re |"
    done
  done
  echo
  if grep -q 'mode=echo' "$RAW"; then
    echo "The same load against \`t/lib/cp_echo_server\` (the same cp_grpc server, answering from memory: no Redis, no fence), beside the controller's figures: the floor that gRPC core sets under any unary RPC here."
    echo
    echo "| workers | counters | echo RPC/s | echo p50 | echo p99 | echo server CPU / RPC | echo switches / RPC | controller p50 | EVALSHA p50 | echo p50 + EVALSHA p50 | controller CPU / RPC | controller switches / RPC |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for k in $COUNTERS; do
      for w in $WORKERS; do
        ep=$(med echo "$w" "$k" p50_us) rp=$(med redis "$w" "$k" p50_us)
        echo "| $w | $k | $(f0 "$(med echo "$w" "$k" per_sec)") | $ep us | $(med echo "$w" "$k" p99_us) us | $(f1 "$(med echo "$w" "$k" ctl_us_per)") us | $(f1 "$(med echo "$w" "$k" ctl_switches_per)") | $(med grpc "$w" "$k" p50_us) us | $rp us | $(f0 "$(add "$ep" "$rp")") us | $(f1 "$(med grpc "$w" "$k" ctl_us_per)") us | $(f1 "$(med grpc "$w" "$k" ctl_switches_per)") |"
      done
    done
    echo
  fi
  echo "Redis commands per call (INFO commandstats, the script's own redis.call()s included) and EVALSHA per call, through the controller and direct: the same numbers mean the RPC is the one fenced step and nothing else."
  echo
  echo "| workers | counters | commands / RPC | EVALSHA / RPC | commands / EVALSHA |"
  echo "|---:|---:|---:|---:|---:|"
  for k in $COUNTERS; do
    for w in $WORKERS; do
      echo "| $w | $k | $(f2 "$(med grpc "$w" "$k" redis_cmds_per)") | $(f2 "$(med grpc "$w" "$k" evalsha_per)") | $(f2 "$(med redis "$w" "$k" redis_cmds_per)") |"
    done
  done
  echo
  echo "p50 ratio: the RPC's median latency over EVALSHA's at the same concurrency. CPU ratio: (controller + redis CPU per RPC) over redis CPU per EVALSHA. errors: RPC / EVALSHA calls that failed, over every repeat."
  echo
  echo "With no worker at all the controller used ${IDLE_CTL} ms of CPU per second and redis-server ${IDLE_RD} ms (their timers and the assign loop; measured over 4 s before the load, included in the per-RPC figures above)."
  echo
  echo "Workers one controller core serves (one ReportRuntime per worker per interval, from the controller's CPU per RPC; the redis core's bound beside it):"
  echo
  hdr="| workers in flight | counters |"
  sep="|---:|---:|"
  for i in $INTERVALS; do
    hdr="$hdr controller core at ${i} s | redis core at ${i} s |"
    sep="$sep---:|---:|"
  done
  echo "$hdr"
  echo "$sep"
  for k in $COUNTERS; do
    for w in $WORKERS; do
      gc=$(med grpc "$w" "$k" ctl_us_per) grd=$(med grpc "$w" "$k" redis_us_per)
      line="| $w | $k |"
      for i in $INTERVALS; do
        line="$line $(f0 "$(div "$((i * 1000000))" "$gc")") | $(f0 "$(div "$((i * 1000000))" "$grd")") |"
      done
      echo "$line"
    done
  done
  echo
fi

[ -n "${PERF_OUT:-}" ] && [ -s "$PERF_OUT" ] && cat "$PERF_OUT"

# ---- the summary -------------------------------------------------------------
echo "### Summary against the goals of issue 12"
echo
echo "| goal | measured | met |"
echo "|---|---|---|"
if [ "$SNAP_RATIO" != - ]; then
  echo "| snapshot of $PROXIES: build + wire + receive + check + compile + swap <= 3x protobuf-c pack + unpack (CPU) | ${SNAP_RATIO}x | $(awk -v r="$SNAP_RATIO" 'BEGIN { print (r <= 3) ? "yes" : "no" }') |"
fi
if [ "$SKIP" != rpc ]; then
  for k in $COUNTERS; do
    for w in $WORKERS; do
      gp=$(med grpc "$w" "$k" p50_us) rp=$(med redis "$w" "$k" p50_us)
      r=$(f2 "$(div "$gp" "$rp")")
      echo "| fenced RPC <= 1.5x one EVALSHA (p50 latency, $w in flight, $k counters) | ${r}x | $(awk -v r="$r" 'BEGIN { print (r != "-" && r <= 1.5) ? "yes" : "no" }') |"
    done
  done
fi
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
if [ "${CPB_RAW:-0}" = 1 ]; then
  echo
  echo "Raw lines:"
  echo
  sed 's/^/    /' "$RAW"
fi
exit 0

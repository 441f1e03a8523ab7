#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The gateway benchmark (issue 13): requests per second, p50/p99 latency
# and CPU per request of the proxy-pool gateway against HAProxy (layer 4)
# and squid (parent peers), each in front of the same N upstream proxies,
# in one run on one machine, over loopback. On demand only: never in make
# check, no threshold checked.
#
#   sh t/bench/gateway.sh [BUILDDIR]       (or: make bench-gateway)
#
# What runs (t/bench/README.md, "The gateway"):
#   - phtarget, the target; phload --mode http-connect, the client;
#   - N upstream proxies: proxyhost `local` instances (direct + http_proxy,
#     CONNECT, no auth), shared by the three systems below;
#   - gateway: a controller (store_sqlite, admin_api, pool_api,
#     redis_ownership on a private redis-server, controlplane_server,
#     plaintext on loopback)
#     and one gateway proxyhost (conf/gateway.ini's modules without socks5:
#     controlplane_client, outcome_reporter, direct, direct.out, the five
#     strategies, pool, http_proxy with connector = pool), the upstreams
#     added with proxyhostctl in group `bench`, one route `*` round_robin;
#   - haproxy: `mode tcp`, `balance roundrobin` over the N upstreams
#     (phload's CONNECT is relayed to an upstream, which answers it);
#   - squid: the N upstreams as `cache_peer ... parent ... round-robin
#     no-query`, `never_direct allow all`, no cache;
#   - references: direct (phload to phtarget) and upstream (phload's
#     CONNECT to one upstream itself: the last hop alone).
# CPU: utime + stime from /proc of each system's processes (and their
# reaped children) over each run; the gateway's excludes the controller's
# and Redis's, reported beside it; the upstreams' is reported apart (the
# same proxies for the three systems). Then t/bench/stratsel when built,
# and perf record of the gateway.
#
# Knobs (environment):
#   BENCH_DURATION=3       seconds counted per run
#   BENCH_WARMUP=0.5       seconds of load before a run counts
#   BENCH_REPEATS=3        runs of each measurement (medians reported)
#   BENCH_CONCURRENCY="32 256"
#   BENCH_LOAD_PROCS=N     generator processes (default: the CPUs)
#   BENCH_RESPONSE=128     bytes the target answers per request
#   GW_UPSTREAMS=4         upstream proxies (1..64)
#   GW_SYSTEMS="direct upstream gateway haproxy squid"
#   GW_PERF="gateway"      systems profiled after the measurements (perf
#                          record -g -p PID, at the last concurrency),
#                          with their system calls per request (perf
#                          stat); empty: none
#   GW_STRATSEL=1          0: do not run t/bench/stratsel
#   BENCH_KEEP=1           keep the temporary directory
#   BENCH_RAW=1            append every raw line
# Markdown on stdout, progress on stderr.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=gateway.sh BENCH_KITS="redis.sh"
. "$top_srcdir/t/bench/bench_lib.sh"
PHLOAD=$B/t/bench/phload
PHTARGET=$B/t/bench/phtarget
CTL=$B/tools/proxyhostctl
STRATSEL=$B/t/bench/stratsel
DUR=${BENCH_DURATION:-3}
WARMUP=${BENCH_WARMUP:-0.5}
REPEATS=${BENCH_REPEATS:-3}
CONCS=${BENCH_CONCURRENCY:-32 256}
LOAD_PROCS=${BENCH_LOAD_PROCS:-$(nproc)}
RESP=${BENCH_RESPONSE:-128}
NUP=${GW_UPSTREAMS:-4}
SYSTEMS=${GW_SYSTEMS:-direct upstream gateway haproxy squid}
PERF_SYSTEMS=${GW_PERF-gateway}
FLEET_RATE=100000 # the 000 design's target rate (CP-1-34)

case $NUP in '' | *[!0-9]*) die "GW_UPSTREAMS must be 1..64" ;; esac
if [ "$NUP" -lt 1 ] || [ "$NUP" -gt 64 ]; then die "GW_UPSTREAMS must be 1..64"; fi
for f in "$PHLOAD" "$PHTARGET" "$PROXYHOST" "$CTL"; do
  [ -x "$f" ] || die "$f is missing: make && make t/bench/phload t/bench/phtarget"
done
for m in store_sqlite admin_api pool_api redis_ownership controlplane_server \
  controlplane_client outcome_reporter direct round_robin weighted \
  least_active random sticky pool http_proxy; do
  have_module "$m" || die "module $m is not built"
done

# bench_lib.sh stops $PIDS with SIGTERM first at exit (a squid or haproxy
# killed -9 may leave its pid file), and keeps $T on request (BENCH_KEEP).
chmod 755 "$T" # squid drops to its own user
bg() { # bench_lib.sh's, but NAME.out starts empty each time
  _n=$1
  shift
  "$@" >"$T/$_n.out" 2>&1 &
  LAST=$!
  PIDS="$PIDS $LAST"
}

# ---- the target -------------------------------------------------------------
bg target "$PHTARGET" --listen 127.0.0.1:0
TPID=$LAST
wait_for grep -q '^port=' "$T/target.out" || die "phtarget did not start"
TADDR=127.0.0.1:$(sed -n 's/^port=//p' "$T/target.out")

# probe ADDR MODE: one short run through ADDR with no error and at least
# one request.
probe() {
  if [ "$2" = direct ]; then set -- --mode direct --target "$1"
  else set -- --mode "$2" --proxy "$1" --target "$TADDR"; fi
  out=$("$PHLOAD" "$@" --concurrency 1 --duration 0.2 --warmup 0 \
    --timeout 2 --response-size "$RESP" 2>/dev/null) || return 1
  case $out in ops=0\ * | *\ errors=[1-9]*) return 1 ;; esac
  return 0
}
# Each measured system: "name address mode pid" (pid "-": none of its own).
ENTRIES=""
SKIPPED=""
add() { # NAME ADDR MODE PID: once it serves (bounded), it is measured
  i=0
  while [ $i -lt 100 ]; do
    if probe "$2" "$3"; then
      ENTRIES="$ENTRIES$1 $2 $3 $4
"
      return 0
    fi
    [ "$4" = - ] || kill -0 "$4" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  say "$1 does not serve: skipped; its output:"
  tail -5 "$T/$1.out" 2>/dev/null | sed 's/^/#   /' >&2
  SKIPPED="$SKIPPED $1"
  return 1
}
wants() { case " $SYSTEMS " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- the upstream proxies (the same for every system) ------------------------
UPIDS="" UPORTS=""
k=1
while [ "$k" -le "$NUP" ]; do
  p=$(free_port)
  cat >"$T/u$k.ini" <<EOF
; written by t/bench/gateway.sh: upstream proxy u$k, HTTP CONNECT, no auth
[proxyhost]
modules = direct, http_proxy
module_path = $B/modules
drain_timeout = 1s
[log]
level = warn
[admin]
listen =
[direct]
max_concurrent_dials = 512
max_pending_dials = 4096
[http_proxy]
listen = 127.0.0.1:$p
max_clients = 4096
EOF
  bg "u$k" "$PROXYHOST" -c "$T/u$k.ini"
  UPIDS="$UPIDS $LAST" UPORTS="$UPORTS $p"
  k=$((k + 1))
done
k=1
for p in $UPORTS; do
  wait_long probe "127.0.0.1:$p" http-connect || die "upstream u$k does not serve: $(tail -3 "$T/u$k.out")"
  k=$((k + 1))
done
U1PORT=${UPORTS# }
U1PORT=${U1PORT%% *}
say "target $TADDR; $NUP upstream proxies on ports$UPORTS"

wants direct && add direct "$TADDR" direct -
wants upstream && add upstream "127.0.0.1:$U1PORT" http-connect -

# ---- the gateway: controller, Redis, gateway ----------------------------------
CTL_PID=- REDIS_PID=- GW_PID=- GW_ADMIN=
start_gateway() {
  start_redis "$T/redis" || { say "redis-server did not start: gateway skipped"; SKIPPED="$SKIPPED gateway"; return; }
  REDIS_PID=$(cat "$T/redis/redis.pid")
  mkdir -p "$T/secrets"
  (umask 077 && head -c 32 /dev/urandom >"$T/ref.key")
  "$CTL" admin-token new "$T/admin.token" >/dev/null || die "proxyhostctl admin-token new failed"
  ca=$(free_port) cpp=$(free_port)
  cat >"$T/ctl.ini" <<EOF
; written by t/bench/gateway.sh: the controller (conf/controller.ini's
; modules), plaintext on loopback, every other key at its default
[proxyhost]
modules = store_sqlite, admin_api, pool_api, redis_ownership, controlplane_server
module_path = $B/modules
drain_timeout = 1s
[log]
level = warn
[admin]
listen = 127.0.0.1:$ca
[store_sqlite]
path = $T/controller.db
migrate = auto
[admin_api]
store = store_sqlite
token_file = $T/admin.token
[pool_api]
store = store_sqlite
token_file = $T/admin.token
[redis_ownership]
address = 127.0.0.1:$REDIS_PORT
cluster_id = bench
; a private Redis started empty for this run
hold_fresh_state = false
[controlplane_server]
store = store_sqlite
cluster_id = bench
listen = 127.0.0.1:$cpp
tls.mode = disabled
secrets_dir = $T/secrets
reference_key_file = $T/ref.key
EOF
  bg controller "$PROXYHOST" -c "$T/ctl.ini"
  CTL_PID=$LAST
  wait_long healthy "$ca" || { say "the controller did not start: gateway skipped"; tail -5 "$T/controller.out" | sed 's/^/#   /' >&2; SKIPPED="$SKIPPED gateway"; return; }
  ctl() { "$CTL" --admin "127.0.0.1:$ca" --token-file "$T/admin.token" "$@" >/dev/null; }
  k=1
  for p in $UPORTS; do
    ctl proxy add "u$k" --protocol http_connect --host 127.0.0.1 --port "$p" \
      --groups bench --capacity 4096 || die "proxyhostctl proxy add u$k failed"
    k=$((k + 1))
  done
  ctl route add all --position 100 --host '*' --group bench --strategy round_robin ||
    die "proxyhostctl route add failed"
  GW_ADMIN=$(free_port) gh=$(free_port)
  cat >"$T/gateway.ini" <<EOF
; written by t/bench/gateway.sh: conf/gateway.ini's modules without socks5,
; plaintext to the controller, the bounds of run.sh's proxyhost
[proxyhost]
modules = controlplane_client, outcome_reporter, direct, direct.out, round_robin, weighted, least_active, random, sticky, pool, http_proxy
module_path = $B/modules
drain_timeout = 1s
[log]
level = warn
[admin]
listen = 127.0.0.1:$GW_ADMIN
[controlplane_client]
tls.mode = disabled
[direct]
max_concurrent_dials = 512
max_pending_dials = 4096
[direct.out]
deny_cidrs = 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 127.0.0.0/8, 169.254.0.0/16
[pool]
upstream_connector = direct
direct_connector = direct.out
[http_proxy]
listen = 127.0.0.1:$gh
connector = pool
max_clients = 4096
EOF
  bg gateway "$PROXYHOST" -c "$T/gateway.ini" -control-plane "127.0.0.1:$cpp" \
    -cluster-id bench -worker-id g1 -instance-id g1-bench -zone z1
  GW_PID=$LAST
  owns_all() {
    [ "$(curl -s -m 5 "http://127.0.0.1:$GW_ADMIN/v1/cp/view" | grep -o '"proxy_id"' | wc -l)" -eq "$NUP" ] &&
      [ "$(http_get "http://127.0.0.1:$GW_ADMIN/readyz" | head -1)" = 200 ]
  }
  # The controller assigns at its assign_interval (5 s): up to a minute.
  wait_long owns_all || wait_long owns_all || {
    say "the gateway did not receive the $NUP proxies: skipped"
    tail -5 "$T/gateway.out" | sed 's/^/#   /' >&2
    SKIPPED="$SKIPPED gateway"
    return
  }
  add gateway "127.0.0.1:$gh" http-connect "$GW_PID"
}
wants gateway && start_gateway

# ---- the peers ----------------------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
start_haproxy() {
  p=$(free_port)
  {
    printf 'global\n  maxconn 8192\n  nbthread 1\n'
    printf 'defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n'
    printf 'listen upstreams\n  bind 127.0.0.1:%s\n  balance roundrobin\n' "$p"
    k=1
    for u in $UPORTS; do printf '  server u%s 127.0.0.1:%s\n' "$k" "$u"; k=$((k + 1)); done
  } >"$T/haproxy.cfg"
  bg haproxy haproxy -db -f "$T/haproxy.cfg"
  add haproxy "127.0.0.1:$p" http-connect "$LAST"
}
start_squid() {
  p=$(free_port)
  # at most this shell's hard limit (squid cannot raise it, and says so)
  # shellcheck disable=SC3045
  SQUID_FDS=$(ulimit -Hn)
  case $SQUID_FDS in '' | *[!0-9]*) SQUID_FDS=65536 ;; esac
  [ "$SQUID_FDS" -le 65536 ] || SQUID_FDS=65536
  mkdir -p "$T/squid"
  chown proxy: "$T/squid" 2>/dev/null
  # run.sh's squid (CONNECT from loopback to any port, nothing cached, no
  # access log), every request to a parent: the N upstreams in turn.
  {
    cat <<EOF
http_port 127.0.0.1:$p
acl benchclient src 127.0.0.1/32
http_access allow benchclient
http_access deny all
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log $T/squid/cache.log
pid_filename $T/squid/squid.pid
coredump_dir $T/squid
cache_effective_user proxy
max_filedescriptors $SQUID_FDS
shutdown_lifetime 1 seconds
forwarded_for delete
via off
never_direct allow all
EOF
    k=1
    for u in $UPORTS; do
      printf 'cache_peer 127.0.0.1 parent %s 0 round-robin no-query no-digest name=u%s\n' "$u" "$k"
      k=$((k + 1))
    done
  } >"$T/squid.conf"
  bg squid squid -N -f "$T/squid.conf"
  add squid "127.0.0.1:$p" http-connect "$LAST"
}
for s in haproxy squid; do
  wants "$s" || continue
  if have "$s"; then PATH=$PATH:/usr/sbin "start_$s"; else
    say "$s is not installed (sh t/bench/install-peers.sh): skipped"
    SKIPPED="$SKIPPED $s"
  fi
done
[ -n "$ENTRIES" ] || die "nothing to measure (skipped:$SKIPPED)"

# ---- measurements ---------------------------------------------------------------
# The whole machine's busy ticks (every CPU), for the other work's share.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
RES=$T/results
: >"$RES"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

measure() { # NAME ADDR MODE PID CONC REP
  if [ "$3" = direct ]; then set -- "$@" --mode direct --target "$2"
  else set -- "$@" --mode "$3" --proxy "$2" --target "$TADDR"; fi
  name=$1 pid=$4 conc=$5 rep=$6
  shift 6
  s0=$(ticks "$pid") u0=$(ticks $UPIDS) c0=$(ticks "$CTL_PID") r0=$(ticks "$REDIS_PID")
  t0=$(ticks "$TPID") m0=$(busy)
  out=$("$PHLOAD" "$@" --concurrency "$conc" --duration "$DUR" --warmup "$WARMUP" \
    --procs "$LOAD_PROCS" --response-size "$RESP" --timeout 10 2>&1 | tail -1)
  s1=$(ticks "$pid") u1=$(ticks $UPIDS) c1=$(ticks "$CTL_PID") r1=$(ticks "$REDIS_PID")
  t1=$(ticks "$TPID") m1=$(busy)
  # Per request: CPU over the whole phload run (warm-up included) over
  # every request completed in it (ops_all), as run.sh does.
  echo "$name $conc $rep $out" | awk -v hz="$HZ" -v secs="$DUR" -v w="$WARMUP" \
    -v sut="$((s1 - s0))" -v up="$((u1 - u0))" -v ctl="$((c1 - c0))" \
    -v rd="$((r1 - r0))" -v tg="$((t1 - t0))" -v mb="$((m1 - m0))" -v haspid="$pid" '
    { for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      n = f["ops_all"] + 0; wall = secs + w
      line = $0 sprintf(" sut_cpu_s=%.3f up_cpu_s=%.3f ctl_cpu_s=%.3f redis_cpu_s=%.3f target_cpu_s=%.3f",
        sut / hz, up / hz, ctl / hz, rd / hz, tg / hz)
      if (n > 0) {
        if (haspid != "-") line = line sprintf(" sut_us=%.2f", sut / hz * 1e6 / n)
        line = line sprintf(" up_us=%.2f ctl_us=%.2f redis_us=%.2f target_us=%.2f gen_us=%.2f",
          up / hz * 1e6 / n, ctl / hz * 1e6 / n, rd / hz * 1e6 / n, tg / hz * 1e6 / n,
          f["cpu_s"] * 1e6 / n)
      }
      ours = (sut + up + ctl + rd + tg) / hz + f["cpu_s"]
      line = line sprintf(" ctl_ms_per_s=%.2f redis_ms_per_s=%.2f cores_ours=%.2f cores_other=%.2f",
        ctl / hz * 1000 / wall, rd / hz * 1000 / wall, ours / wall, (mb / hz - ours) / wall)
      print line }' >>"$RES"
}

n_entries=$(printf '%s' "$ENTRIES" | wc -l)
say "$n_entries systems, repeats $REPEATS, ${DUR}s per run after ${WARMUP}s, concurrency $CONCS"
rep=1
while [ "$rep" -le "$REPEATS" ]; do
  # Round robin: a drift of the machine spreads over every system.
  for c in $CONCS; do
    printf '%s' "$ENTRIES" | while read -r name addr mode pid; do
      measure "$name" "$addr" "$mode" "$pid" "$c" "$rep"
    done
  done
  say "repeat $rep of $REPEATS done"
  rep=$((rep + 1))
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# The gateway's own counters after the runs: every request went through
# the pool, and what the outcome queue did with them.
GW_METRICS=""
if [ "$GW_PID" != - ] && kill -0 "$GW_PID" 2>/dev/null; then
  sleep 1.5 # the outcome reporter's flush_interval (1 s)
  GW_METRICS=$(http_get "http://127.0.0.1:$GW_ADMIN/metrics" |
    grep -E '^proxyhost_(pool_opens_total|pool_outcomes_dropped_total|pool_retries_total|outcome_reporter_(recorded|dropped)_total)' |
    awk '$2 + 0 > 0 { printf "%s%s = %s", sep, $1, $2; sep = "; " }')
fi

# ---- the selection microbenchmark (H1), when built -------------------------------
STRAT_OUT=""
if [ "${GW_STRATSEL:-1}" = 1 ]; then
  if [ -x "$STRATSEL" ]; then
    say "t/bench/stratsel"
    "$STRATSEL" >"$T/stratsel.out" 2>&1 && STRAT_OUT=$T/stratsel.out
  else
    say "t/bench/stratsel is not built (make t/bench/stratsel): no selection figure"
  fi
fi

# ---- perf: where each profiled system's CPU goes -----------------------------------
PERF_OUT=$T/perf.md
: >"$PERF_OUT"
PC=${CONCS##* }
CALLS="accept4 connect socket recvfrom sendto recvmsg sendmsg read write readv writev splice pipe2 epoll_wait epoll_ctl shutdown close setsockopt getsockopt getsockname getpeername fcntl ioctl clock_gettime"
if [ -n "$PERF_SYSTEMS" ] && ! command -v perf >/dev/null 2>&1; then
  say "perf is not installed: no profile"
  PERF_SYSTEMS=""
fi
for s in $PERF_SYSTEMS; do
  line=$(printf '%s' "$ENTRIES" | awk -v n="$s" '$1 == n')
  [ -n "$line" ] || continue
  set -- $line
  [ "$4" = - ] && continue
  say "perf: $s at concurrency $PC"
  # A profile: perf record -g of the process over a counted window.
  "$PHLOAD" --mode "$3" --proxy "$2" --target "$TADDR" --concurrency "$PC" \
    --duration "$DUR" --warmup "$WARMUP" --procs "$LOAD_PROCS" \
    --response-size "$RESP" --timeout 10 >"$T/perf-$s.load" 2>&1 &
  lp=$!
  sleep "$WARMUP"
  perf record -F 1999 -g -o "$T/$s.perf" -p "$4" -- sleep "$DUR" >"$T/$s.perf.log" 2>&1
  wait "$lp"
  # The system calls per request, counted by the kernel's tracepoints
  # over a whole run (syscalls.sh's method).
  ev=raw_syscalls:sys_enter
  for c in $CALLS; do ev="$ev,syscalls:sys_enter_$c"; done
  perf stat -x, -e "$ev" -p "$4" -o "$T/$s.stat" >/dev/null 2>&1 &
  sp=$!
  sleep 0.3
  "$PHLOAD" --mode "$3" --proxy "$2" --target "$TADDR" --concurrency "$PC" \
    --duration "$DUR" --warmup 0 --procs "$LOAD_PROCS" \
    --response-size "$RESP" --timeout 10 >"$T/stat-$s.load" 2>&1
  sleep 0.2
  kill -INT "$sp" 2>/dev/null
  wait "$sp"
  ops=$(sed -n 's/.*ops_all=\([0-9]*\).*/\1/p' "$T/stat-$s.load" | tail -1)
  {
    echo "### perf: $s at concurrency $PC"
    echo
    echo "During the profile: $(sed -n 's/.*ops_per_sec=\([0-9.]*\) .*/\1 requests\/s/p' "$T/perf-$s.load" | tail -1) (perf's sampling included)."
    echo
    if [ -s "$T/$s.stat" ] && [ "${ops:-0}" -gt 0 ]; then
      echo "System calls per request ($ops requests, \`perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_*\`; calls under 0.01 per request left out):"
      echo
      echo '```'
      awk -F, -v ops="$ops" '$3 ~ /^(raw_)?syscalls:sys_enter/ && $1 + 0 > 0 {
          n = $3; sub(/^syscalls:sys_enter_/, "", n); sub(/^raw_syscalls:sys_enter$/, "all", n)
          if ($1 / ops >= 0.01) printf "%s=%.2f ", n, $1 / ops }
        END { print "" }' "$T/$s.stat"
      echo '```'
      echo
    fi
    if [ -s "$T/$s.perf" ]; then
      echo "By shared object (\`perf report --no-children --sort dso\`):"
      echo
      echo '```'
      perf report -i "$T/$s.perf" --no-children --sort dso --stdio -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -12
      echo '```'
      echo
      echo "Time in each system call, its kernel work included (\`perf report --children --sort sym\`: the \`__x64_sys_*\` entries, and \`__sys_sendmsg\`/\`__sys_recvmsg\`, where the x64 entry is inlined):"
      echo
      echo '```'
      perf report -i "$T/$s.perf" --children --sort sym --stdio -g none 2>/dev/null |
        grep -E '\[k\] (__x64_sys_[a-z0-9_]+|__sys_sendmsg|__sys_recvmsg) *$' |
        awk '$1 + 0 >= 0.1' | head -20
      echo '```'
      echo
      echo "Top symbols (\`perf report --no-children --sort dso,sym\`):"
      echo
      echo '```'
      perf report -i "$T/$s.perf" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -40
      echo '```'
      echo
      echo "\`perf report --stdio | head -60\` (with children, call graphs):"
      echo
      echo '```'
      perf report -i "$T/$s.perf" --stdio 2>/dev/null | head -60
      echo '```'
      echo
    else
      echo "perf record failed: $(tail -2 "$T/$s.perf.log")"
      echo
    fi
  } >>"$PERF_OUT"
done

# ---- the tables -------------------------------------------------------------------
median() {
  sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "-"; exit }
      if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
med() { # NAME CONC KEY -> the median over the repeats
  awk -v n="$1" -v c="$2" -v k="$3" '$1 == n && $2 == c {
      for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$RES" | median
}
rmed() { # A B CONC KEY -> the median over the repeats of A's KEY / B's KEY
  # in the same repeat (B ran seconds before or after A)
  awk -v a="$1" -v b="$2" -v c="$3" -v k="$4" '
    function val(   i, kv) { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) return kv[2] }; return "" }
    $2 == c && $1 == a { x[$3] = val() }
    $2 == c && $1 == b { y[$3] = val() }
    END { for (r in x) if (x[r] != "" && (r in y) && y[r] + 0 > 0) print x[r] / y[r] }' "$RES" |
    median | awk '{ if ($1 == "-") print "-"; else printf "%.2f\n", $1 }'
}
errs() { # NAME CONC -> errors summed over the repeats, "!" when any
  awk -v n="$1" -v c="$2" '$1 == n && $2 == c {
      for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "errors") s += kv[2] } }
    END { printf "%d%s\n", s, (s > 0) ? " !" : "" }' "$RES"
}
f0() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.0f\n", v }'; }
f1() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.1f\n", v }'; }
f2() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.2f\n", v }'; }
us() { v=$(f1 "$1"); [ "$v" = - ] && echo - || echo "$v us"; }
measured() { printf '%s' "$ENTRIES" | awk -v n="$1" '$1 == n { f = 1 } END { exit !f }'; }

echo "## The gateway (issue 13)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)."
echo "Target $TADDR, response $RESP bytes; $NUP upstream proxies (proxyhost \`local\`: direct + http_proxy, CONNECT, no auth); $REPEATS repeats of ${DUR}s after ${WARMUP}s warm-up, $LOAD_PROCS generator process(es), round robin over the systems."
echo "Load average at the start: $LOAD0; at the end: $LOAD1."
echo
echo "One request: connect to the system, \`CONNECT 127.0.0.1:PORT\`, wait for the 200, send \`GET /r/$RESP\`, read the response until the target closes, close (phload --mode http-connect). gateway: controlplane_client, outcome_reporter, pool (round_robin over group \`bench\`) and http_proxy in one proxyhost; haproxy: \`mode tcp\`, \`balance roundrobin\`, \`nbthread 1\`; squid: the upstreams as \`cache_peer parent round-robin no-query\`, \`never_direct allow all\`. References: direct (phload to the target, no proxy) and upstream (phload's CONNECT to one upstream itself: the last hop alone)."
echo
for c in $CONCS; do
  echo "### Concurrency $c"
  echo
  echo "Medians over the repeats. CPU per request: user + system time of the system's own processes over a run, over every request completed in it (warm-up included). The gateway's excludes the controller and Redis (below). The upstreams' CPU is the same $NUP proxies for every system, reported apart."
  echo
  echo "| system | requests/s | p50 | p99 | CPU / request | upstreams' CPU / request | generator | target | errors |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s' "$ENTRIES" | while read -r name addr mode pid; do
    echo "| $name | $(f0 "$(med "$name" "$c" ops_per_sec)") | $(med "$name" "$c" p50_us) us | $(med "$name" "$c" p99_us) us | $(us "$(med "$name" "$c" sut_us)") | $(us "$(med "$name" "$c" up_us)") | $(us "$(med "$name" "$c" gen_us)") | $(us "$(med "$name" "$c" target_us)") | $(errs "$name" "$c") |"
  done
  echo
  echo "Cores busy over a run (median): every process of the benchmark, and the machine's other work (/proc/stat's busy time minus ours):"
  echo
  echo "| system | benchmark's processes | other work |"
  echo "|---|---:|---:|"
  printf '%s' "$ENTRIES" | while read -r name addr mode pid; do
    echo "| $name | $(f2 "$(med "$name" "$c" cores_ours)") | $(f2 "$(med "$name" "$c" cores_other)") |"
  done
  echo
done

if measured gateway; then
  echo "### The gateway against the peers"
  echo
  echo "Each figure is the median over the repeats of the gateway's over the peer's in the same repeat. Rate: higher is better; CPU per request and p99: lower is better."
  echo
  echo "| concurrency | rate / HAProxy | rate / squid | CPU per request / HAProxy | CPU per request / squid | p99 / HAProxy | p99 / squid |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for c in $CONCS; do
    echo "| $c | $(rmed gateway haproxy "$c" ops_per_sec) | $(rmed gateway squid "$c" ops_per_sec) | $(rmed gateway haproxy "$c" sut_us) | $(rmed gateway squid "$c" sut_us) | $(rmed gateway haproxy "$c" p99_us) | $(rmed gateway squid "$c" p99_us) |"
  done
  echo
  echo "The controller and Redis during the gateway's runs (not in the gateway's CPU per request; outcomes and runtime reports reach the controller through controlplane_client's session), and during the peers' runs (their background: the gateway idle):"
  echo
  echo "| concurrency | controller CPU / request | controller ms/s | Redis CPU / request | Redis ms/s | controller ms/s, peers' runs | Redis ms/s, peers' runs |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for c in $CONCS; do
    bgc=$(awk -v c="$c" '$2 == c && ($1 == "haproxy" || $1 == "squid") { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "ctl_ms_per_s") print kv[2] } }' "$RES" | median)
    bgr=$(awk -v c="$c" '$2 == c && ($1 == "haproxy" || $1 == "squid") { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "redis_ms_per_s") print kv[2] } }' "$RES" | median)
    echo "| $c | $(us "$(med gateway "$c" ctl_us)") | $(f1 "$(med gateway "$c" ctl_ms_per_s)") | $(us "$(med gateway "$c" redis_us)") | $(f1 "$(med gateway "$c" redis_ms_per_s)") | $(f1 "$bgc") | $(f1 "$bgr") |"
  done
  echo
  [ -n "$GW_METRICS" ] && echo "The gateway's counters after the runs (probes and every run included): $GW_METRICS." && echo
  echo "### A fleet for $FLEET_RATE requests per second (CP-1-34)"
  echo
  echo "From the gateway's CPU per request, assuming it stays the same per request at any rate on cores like these (one gateway process per core, or more, each as loaded as here), for this request shape ($RESP-byte responses, one TCP connection and one CONNECT per request, loopback), counting only the gateway processes: not the upstream proxies, the clients, the controller or Redis."
  echo
  echo "| concurrency | gateway CPU / request | cores for $FLEET_RATE/s | at 70% busy | controller cores at $FLEET_RATE/s (outcomes, reports) |"
  echo "|---:|---:|---:|---:|---:|"
  for c in $CONCS; do
    g=$(med gateway "$c" sut_us) cc=$(med gateway "$c" ctl_us)
    echo "| $c | $(us "$g") | $(awk -v g="$g" -v r="$FLEET_RATE" 'BEGIN { if (g == "-") print "-"; else printf "%.1f", g * r / 1e6 }') | $(awk -v g="$g" -v r="$FLEET_RATE" 'BEGIN { if (g == "-") print "-"; else printf "%.1f", g * r / 1e6 / 0.7 }') | $(awk -v g="$cc" -v r="$FLEET_RATE" 'BEGIN { if (g == "-") print "-"; else printf "%.1f", g * r / 1e6 }') |"
  done
  echo
fi

SEL=""
if [ -n "$STRAT_OUT" ]; then
  echo "### Selection: t/bench/stratsel, 10 against 10,000 proxies"
  echo
  # the first table: one pick at 10 and at 10,000 proxies
  sed -n '/^| strategy | ns\/pick, 10 |/,/^$/p' "$STRAT_OUT" >"$T/stratsel.table"
  cat "$T/stratsel.table"
  SEL=$(awk -F'|' '$2 ~ /round_robin/ { gsub(/ /, "", $8); print $8; exit }' "$T/stratsel.table")
fi

echo "### Against the goals of issue 13"
echo
echo "| goal | measured | met |"
echo "|---|---|---|"
if measured gateway; then
  for c in $CONCS; do
    for p in haproxy squid; do
      measured "$p" || continue
      r=$(rmed gateway "$p" "$c" ops_per_sec)
      echo "| a higher rate than $p, c$c | ${r}x | $(awk -v r="$r" 'BEGIN { print (r != "-" && r > 1) ? "yes" : "no" }') |"
    done
  done
  if measured haproxy; then
    for c in $CONCS; do
      r=$(rmed gateway haproxy "$c" sut_us)
      echo "| CPU per request <= 1.5x HAProxy's, c$c | ${r}x | $(awk -v r="$r" 'BEGIN { print (r != "-" && r <= 1.5) ? "yes" : "no" }') |"
    done
  fi
fi
if [ -n "$SEL" ]; then
  echo "| selection at 10,000 <= 1.2x at 10: round_robin (the route's strategy), CPU | ${SEL}x | $(awk -v r="$SEL" 'BEGIN { print (r <= 1.2) ? "yes" : "no" }') |"
  awk -F'|' '$2 ~ /^ (weighted|least_active|random|sticky) $/ {
      gsub(/ /, "", $2); gsub(/ /, "", $8); printf "%s%s %sx", sep, $2, $8; sep = ", "
      if ($8 + 0 > 1.2) bad = 1 }
    END { printf " | %s |\n", bad ? "no" : "yes" }' "$T/stratsel.table" |
    sed 's/^/| selection at 10,000 <= 1.2x at 10: the other strategies, CPU | /'
fi
echo
[ -s "$PERF_OUT" ] && cat "$PERF_OUT"
[ -n "$SKIPPED" ] && echo "Skipped:$SKIPPED" && echo
if [ "${BENCH_RAW:-0}" = 1 ]; then
  echo "Raw runs:"
  echo
  sed 's/^/    /' "$RES"
  [ -n "$STRAT_OUT" ] && echo && sed 's/^/    /' "$STRAT_OUT"
fi
exit 0

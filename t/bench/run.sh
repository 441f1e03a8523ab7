#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The local proxy benchmark (issue 3): proxyhost against Debian's proxies,
# every figure a ratio to a direct connection measured in the same run
# against the same loopback target. On demand only, never in make check.
#
#   sh t/bench/run.sh [BUILDDIR]       (or: make bench, in the build dir)
#
# BUILDDIR (or $top_builddir, or the current directory) holds the built
# t/bench/phload, t/bench/phtarget and host/proxyhost with its modules.
# The peers come from t/bench/install-peers.sh; a missing one is skipped
# and named. Knobs (environment):
#   BENCH_DURATION=3      seconds measured per open-rate run
#   BENCH_WARMUP=0.5      seconds of load before each open-rate run counts
#   BENCH_BULK_SECONDS=3  seconds of one bulk stream
#   BENCH_REPEATS=3       runs of each measurement; the table has medians
#   BENCH_CONCURRENCY="32 256"
#   BENCH_LOAD_PROCS=N    generator processes for open-rate runs (default:
#                         the number of CPUs, so that direct is bounded by
#                         the machine rather than by one generator core)
#   BENCH_RESPONSE=128    bytes of the target's response per operation
#   BENCH_IDLE=1000       idle streams held for the RSS figure (0: skip)
#   BENCH_SYSTEMS="proxyhost microsocks dante tinyproxy squid haproxy"
#                         also: tunnelmesh (client + server + agent,
#                         t/bench/tunnel_up.sh), v2ray and v2ray-mux
#                         (SOCKS5 -> VLESS over WebSocket -> freedom,
#                         client + server), wstunnel (npm's, a port
#                         forward over WebSocket, client + server)
#   BENCH_SIZED=1         an operation ends when the response's bytes have
#                         all arrived, phload closing first (phload
#                         --sized), instead of at the target's close; for
#                         v2ray, which holds a stream 2 s after the
#                         target closed it. Every system alike.
#   BENCH_WSTUNNEL=PATH   the wstunnel to run (default: where
#                         install-peers.sh puts it, then $PATH)
#   BENCH_KEEP=1          keep the temporary directory (configs, logs, raw)
# Raw per-run lines go to $T/results; the table goes to stdout.
set -u

top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=run.sh
. "$top_srcdir/t/bench/bench_lib.sh"
PHLOAD=$B/t/bench/phload
PHTARGET=$B/t/bench/phtarget
DUR=${BENCH_DURATION:-3}
WARMUP=${BENCH_WARMUP:-0.5}
BULK_SECS=${BENCH_BULK_SECONDS:-3}
REPEATS=${BENCH_REPEATS:-3}
CONCS=${BENCH_CONCURRENCY:-32 256}
LOAD_PROCS=${BENCH_LOAD_PROCS:-$(nproc)}
RESP=${BENCH_RESPONSE:-128}
SIZED=""
[ "${BENCH_SIZED:-0}" = 1 ] && SIZED=--sized
IDLE_N=${BENCH_IDLE:-1000}
SYSTEMS=${BENCH_SYSTEMS:-proxyhost microsocks dante tinyproxy squid haproxy}

for f in "$PHLOAD" "$PHTARGET"; do
  if [ ! -x "$f" ]; then
    echo "run.sh: $f is missing: make t/bench/phload t/bench/phtarget" >&2
    exit 2
  fi
done

# bench_lib.sh raised ulimit -n (1,000 idle streams take 4,000
# descriptors across the processes), made $T and stops $PIDS (with their
# children) at exit.
chmod 755 "$T" # squid and tinyproxy drop to their own users

note() { echo "# $*" >&2; }
free_port() { "$PHLOAD" --free-port; }

# ---- the target ----------------------------------------------------------
"$PHTARGET" --listen 127.0.0.1:0 >"$T/target.out" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
i=0
while [ $i -lt 50 ] && ! grep -q '^port=' "$T/target.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
TPORT=$(sed -n 's/^port=//p' "$T/target.out")
[ -n "$TPORT" ] || { echo "run.sh: phtarget did not start" >&2; exit 2; }
TADDR=127.0.0.1:$TPORT

# Each measured system: "name protocol phload-mode address pid".
ENTRIES="direct tcp direct $TADDR -"

# probe MODE ADDR: one short run with no error and at least one operation.
probe() {
  if [ "$1" = direct ]; then set -- --mode direct --target "$2"
  else set -- --mode "$1" --proxy "$2" --target "$TADDR"; fi
  out=$("$PHLOAD" "$@" --concurrency 1 --duration 0.2 --warmup 0 \
    --timeout 2 --response-size "$RESP" $SIZED 2>/dev/null) || return 1
  case $out in ops=0\ *) return 1 ;; esac
  return 0
}

# add NAME PROTO MODE ADDR PID: wait (bounded) until it serves, then list it.
add() {
  i=0
  while [ $i -lt 100 ]; do
    if probe "$3" "$4"; then
      ENTRIES="$ENTRIES
$1 $2 $3 $4 $5"
      return 0
    fi
    if ! kill -0 "${5%%,*}" 2>/dev/null; then break; fi
    sleep 0.1
    i=$((i + 1))
  done
  note "$1 ($2) does not serve: skipped; its output:"
  tail -5 "$T/$1.out" 2>/dev/null | sed 's/^/#   /' >&2
  SKIPPED="$SKIPPED $1/$2"
  return 1
}
SKIPPED=""

bg() { # NAME CMD...: start in the background, output to $T/NAME.out
  name=$1
  shift
  "$@" >"$T/$name.out" 2>&1 &
  LAST=$!
  PIDS="$PIDS $LAST"
}

# ---- the systems under test -------------------------------------------------
start_proxyhost() {
  if [ ! -x "$PROXYHOST" ]; then
    note "proxyhost: $PROXYHOST is not built"; SKIPPED="$SKIPPED proxyhost"; return
  fi
  m=$B/modules
  for so in direct socks5 http_proxy; do
    if [ ! -f "$m/$so/.libs/$so.so" ]; then
      note "proxyhost: module $so is not built ($m/$so/.libs/$so.so)"
      SKIPPED="$SKIPPED proxyhost"
      return
    fi
  done
  PS=$(free_port)
  PH=$(free_port)
  cat >"$T/proxyhost.ini" <<EOF
; written by t/bench/run.sh: socks5 + http_proxy over direct, one process
[proxyhost]
modules = $m/direct/.libs/direct.so
modules = $m/socks5/.libs/socks5.so
modules = $m/http_proxy/.libs/http_proxy.so
[log]
level = warn
[admin]
listen =
[direct]
max_concurrent_dials = 512
max_pending_dials = 4096
[socks5]
listen = 127.0.0.1:$PS
max_clients = 4096
[http_proxy]
listen = 127.0.0.1:$PH
max_clients = 4096
EOF
  bg proxyhost "$PROXYHOST" -c "$T/proxyhost.ini"
  add proxyhost socks5 socks5 "127.0.0.1:$PS" "$LAST" &&
    add proxyhost http http-connect "127.0.0.1:$PH" "$LAST"
}

start_microsocks() {
  p=$(free_port)
  bg microsocks microsocks -i 127.0.0.1 -p "$p"
  add microsocks socks5 socks5 "127.0.0.1:$p" "$LAST"
}

start_dante() {
  p=$(free_port)
  # Dante wants one keyword per line, and an external address.
  cat >"$T/danted.conf" <<EOF
logoutput: $T/danted.log
internal: 127.0.0.1 port = $p
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
}
socks pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
  command: connect
}
EOF
  bg dante danted -f "$T/danted.conf" -p "$T/danted.pid"
  add dante socks5 socks5 "127.0.0.1:$p" "$LAST"
}

start_tinyproxy() {
  p=$(free_port)
  cat >"$T/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $p
Listen 127.0.0.1
Timeout 600
MaxClients 4096
Allow 127.0.0.1
ConnectPort $TPORT
DisableViaHeader Yes
LogLevel Critical
EOF
  bg tinyproxy tinyproxy -d -c "$T/tinyproxy.conf"
  add tinyproxy http http-connect "127.0.0.1:$p" "$LAST"
}

start_squid() {
  p=$(free_port)
  mkdir -p "$T/squid"
  chown proxy: "$T/squid" 2>/dev/null
  # Debian's squid.conf refuses CONNECT to ports other than 443: this one
  # allows CONNECT from loopback to any port, caches nothing, logs no access.
  cat >"$T/squid.conf" <<EOF
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
max_filedescriptors 65536
shutdown_lifetime 1 seconds
forwarded_for delete
via off
EOF
  bg squid squid -N -f "$T/squid.conf"
  add squid http http-connect "127.0.0.1:$p" "$LAST"
}

start_haproxy() {
  p=$(free_port)
  # A plain TCP relay, no protocol: the reference for pure relaying cost.
  cat >"$T/haproxy.cfg" <<EOF
global
  maxconn 4096
  nbthread 1
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
listen relay
  bind 127.0.0.1:$p
  server target $TADDR
EOF
  bg haproxy haproxy -db -f "$T/haproxy.cfg"
  add haproxy tcp direct "127.0.0.1:$p" "$LAST"
}

# ---- tunnels: several processes each, their CPU summed ----------------------
# TunnelMesh: client, server and agent (every tunnel default), started by
# t/bench/tunnel_up.sh with the end-to-end tests' helpers; phload opens
# through the client's SOCKS5 listener to the target's IPv4 literal.
start_tunnelmesh() {
  for so in tunnel_server tunnel_agent tunnel_client store_sqlite auth_cache admin_api direct socks5; do
    if [ ! -f "$B/modules/$so/.libs/$so.so" ]; then
      note "tunnelmesh: module $so is not built"; SKIPPED="$SKIPPED tunnelmesh"; return
    fi
  done
  bg tunnelmesh sh "$(dirname "$0")/tunnel_up.sh" "$B" "$T/tunnel.env"
  i=0
  while [ $i -lt 200 ] && [ ! -s "$T/tunnel.env" ] && kill -0 "$LAST" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
  done
  socks="" pids=""
  [ -s "$T/tunnel.env" ] && . "$T/tunnel.env"
  if [ -z "$socks" ]; then
    note "tunnelmesh did not come up; its output:"
    tail -5 "$T/tunnelmesh.out" | sed 's/^/#   /' >&2
    SKIPPED="$SKIPPED tunnelmesh"
    return
  fi
  add tunnelmesh socks5 socks5 "127.0.0.1:$socks" "$(echo $pids | tr ' ' ',')" &&
    echo "server agent client" >"$T/roles.tunnelmesh"
}

# v2ray (Debian's): a SOCKS5 inbound on the client, a VLESS outbound over
# WebSocket (no TLS, as our tunnel runs here), the server's WebSocket
# inbound and a freedom outbound. VLESS adds no encryption of its own: the
# cheapest of v2ray's protocols. MUX=1: Mux.Cool with v2ray's default of
# 8 streams per connection. v2ray holds a stream for its policy's
# uplinkOnly (2 s) after the target closed it (0 loses responses without
# mux: the close overtakes the data), so measure it with BENCH_SIZED=1.
v2ray_configs() { # NAME SOCKS-PORT WS-PORT MUX
  id=9a1ac9c1-7b55-4a3e-8c3c-3f1c0e0b2f11
  mux=false
  [ "$4" = 1 ] && mux=true
  cat >"$T/$1-client.json" <<EOF
{ "log": { "loglevel": "warning", "access": "none" },
  "inbounds": [ { "listen": "127.0.0.1", "port": $2, "protocol": "socks",
                  "settings": { "auth": "noauth", "udp": false } } ],
  "outbounds": [ { "protocol": "vless",
                   "settings": { "vnext": [ { "address": "127.0.0.1", "port": $3,
                       "users": [ { "id": "$id", "encryption": "none" } ] } ] },
                   "streamSettings": { "network": "ws", "wsSettings": { "path": "/tunnel" } },
                   "mux": { "enabled": $mux } } ] }
EOF
  cat >"$T/$1-server.json" <<EOF
{ "log": { "loglevel": "warning", "access": "none" },
  "inbounds": [ { "listen": "127.0.0.1", "port": $3, "protocol": "vless",
                  "settings": { "clients": [ { "id": "$id" } ], "decryption": "none" },
                  "streamSettings": { "network": "ws", "wsSettings": { "path": "/tunnel" } } } ],
  "outbounds": [ { "protocol": "freedom" } ] }
EOF
}
start_v2ray_any() { # NAME MUX
  v_socks=$(free_port)
  v_ws=$(free_port)
  v2ray_configs "$1" "$v_socks" "$v_ws" "$2"
  bg "$1-server" v2ray -config "$T/$1-server.json"
  v_srv=$LAST
  bg "$1" v2ray -config "$T/$1-client.json"
  add "$1" socks5 socks5 "127.0.0.1:$v_socks" "$LAST,$v_srv" &&
    echo "client server" >"$T/roles.$1"
}

# wstunnel (npm's, node): a port forward over one WebSocket per stream,
# the server locked to the target. No SOCKS5 handshake: phload connects
# to the client's port as it would to the target (as with haproxy).
WSTUNNEL=${BENCH_WSTUNNEL:-${PEERS_PREFIX:-/var/tmp/proxyhost-bench-peers}/npm/node_modules/.bin/wstunnel}
[ -x "$WSTUNNEL" ] || WSTUNNEL=$(command -v wstunnel 2>/dev/null || echo "")
start_wstunnel() {
  w_local=$(free_port)
  w_ws=$(free_port)
  bg wstunnel-server "$WSTUNNEL" -s "127.0.0.1:$w_ws" -t "$TADDR"
  w_srv=$LAST
  bg wstunnel "$WSTUNNEL" -t "127.0.0.1:$w_local:$TADDR" "ws://127.0.0.1:$w_ws"
  add wstunnel ws-forward direct "127.0.0.1:$w_local" "$LAST,$w_srv" &&
    echo "client server" >"$T/roles.wstunnel"
}

for s in $SYSTEMS; do
  case $s in
  proxyhost) start_proxyhost ;;
  tunnelmesh) start_tunnelmesh ;;
  v2ray | v2ray-mux)
    if command -v v2ray >/dev/null 2>&1; then
      mux=0
      [ "$s" = v2ray-mux ] && mux=1
      start_v2ray_any "$s" "$mux"
    else
      note "$s: v2ray is not installed (t/bench/install-peers.sh): skipped"
      SKIPPED="$SKIPPED $s"
    fi
    ;;
  wstunnel)
    if [ -n "$WSTUNNEL" ]; then start_wstunnel; else
      note "wstunnel is not installed (t/bench/install-peers.sh): skipped"
      SKIPPED="$SKIPPED wstunnel"
    fi
    ;;
  microsocks | dante | tinyproxy | squid | haproxy)
    bin=$s
    [ "$s" = dante ] && bin=danted
    if command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ]; then
      PATH=$PATH:/usr/sbin "start_$s"
    else
      note "$s is not installed (t/bench/install-peers.sh): skipped"
      SKIPPED="$SKIPPED $s"
    fi
    ;;
  *) note "unknown system $s" ;;
  esac
done

# ---- idle streams: memory, first, on fresh processes ------------------------
rss_kib() { # PID[,PID...] -> VmRSS of the process (summed over the
  # listed ones: a tunnel's client, server and agent), KiB
  for p in $(echo "$1" | tr ',' ' '); do
    awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null
  done | awk '{ s += $1 } END { print s + 0 }'
}
pss_kib() { # PID -> Pss summed over it and its descendants, KiB (pages
  # shared between a peer's processes are counted once, split among them)
  sum=0
  for p in $(descendants "$1"); do
    v=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}
if [ "$IDLE_N" -gt 0 ]; then
  printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
    [ "$pid" = - ] && continue
    if [ "$mode" = direct ]; then set -- --mode direct --target "$addr"
    else set -- --mode "$mode" --proxy "$addr" --target "$TADDR"; fi
    io=$T/idle-$name-$proto.out # one file each: no stale line to match
    before=$(rss_kib "$pid")
    nproc_before=$(descendants "$pid" | wc -l)
    "$PHLOAD" "$@" --idle "$IDLE_N" --concurrency 32 --duration 2 \
      --timeout 20 >"$io" 2>&1 &
    lp=$!
    i=0
    while [ $i -lt 600 ] && ! grep -q '^idle_ready=' "$io" 2>/dev/null &&
      kill -0 "$lp" 2>/dev/null; do
      sleep 0.1
      i=$((i + 1))
    done
    ready=$(sed -n 's/^idle_ready=\([0-9]*\).*/\1/p' "$io")
    during=$(rss_kib "$pid")
    pss=$(pss_kib "$pid")
    procs=$(descendants "$pid" | wc -l)
    wait "$lp"
    err=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$io" | tail -1)
    echo "$name $proto ${ready:-0} $before $during $pss $nproc_before $procs ${err:-?}" >>"$T/idle"
  done
fi

# ---- measurements ------------------------------------------------------------
RES=$T/results
: >"$RES"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# cpu_ticks PID -> CPU time of it, its descendants and its reaped
# children, in clock ticks ("-" for no process)
cpu_ticks() {
  if [ "$1" = - ]; then echo -; return; fi
  for p in $(descendants "$1"); do
    awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null
  done | awk '{ s += $1 } END { print s + 0 }'
}
HZ=$(getconf CLK_TCK)
# parts_ticks PID[,PID...] -> each listed process's cpu_ticks, in order
parts_ticks() {
  [ "$1" = - ] && return
  for p in $(echo "$1" | tr ',' ' '); do printf '%s ' "$(cpu_ticks "$p")"; done
}

# measure NAME PROTO MODE ADDR PID TEST CONC REP
measure() {
  if [ "$3" = direct ]; then set -- "$@" --mode direct --target "$4"
  else set -- "$@" --mode "$3" --proxy "$4" --target "$TADDR"; fi
  name=$1 proto=$2 pid=$5 test=$6 conc=$7 rep=$8
  shift 8
  if [ "$test" = bulk ]; then
    set -- "$@" --bulk 0 --duration "$BULK_SECS"
  else
    set -- "$@" --concurrency "$conc" --duration "$DUR" --warmup "$WARMUP" \
      --procs "$LOAD_PROCS"
  fi
  c0=$(cpu_ticks "$pid")
  t0=$(cpu_ticks "$TPID")
  p0=$(parts_ticks "$pid")
  out=$("$PHLOAD" "$@" --response-size "$RESP" --timeout 10 $SIZED 2>&1 | tail -1)
  c1=$(cpu_ticks "$pid")
  t1=$(cpu_ticks "$TPID")
  p1=$(parts_ticks "$pid")
  cpu=-
  [ "$c0" != - ] && cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
  tcpu=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
  # A system of several processes: each one's CPU too (proxy_cpu_s_1...).
  parts=$(awk -v a="$p0" -v b="$p1" -v hz="$HZ" 'BEGIN {
      n = split(a, x, " "); split(b, y, " ")
      for (i = 1; n > 1 && i <= n; i++) printf " proxy_cpu_s_%d=%.3f", i, (y[i] - x[i]) / hz }')
  echo "$name $proto $test $conc $rep $out proxy_cpu_s=$cpu target_cpu_s=$tcpu$parts" >>"$RES"
}

TESTS=""
for c in $CONCS; do TESTS="$TESTS open:$c"; done
TESTS="$TESTS bulk:1"
n_entries=$(printf '%s\n' "$ENTRIES" | wc -l)
note "target $TADDR; $n_entries systems; repeats $REPEATS; ${DUR}s per open run, ${BULK_SECS}s per bulk run"
rep=1
while [ "$rep" -le "$REPEATS" ]; do
  # Round robin: every system once per repeat, so a slow drift of the
  # machine spreads over all of them instead of biasing one.
  for t in $TESTS; do
    printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
      measure "$name" "$proto" "$mode" "$addr" "$pid" "${t%%:*}" "${t#*:}" "$rep"
    done
  done
  note "repeat $rep of $REPEATS done"
  rep=$((rep + 1))
done

# Resident memory after all the load runs, streams closed.
if [ -s "$T/idle" ]; then
  while read -r name proto rest; do
    pid=$(printf '%s\n' "$ENTRIES" | awk -v n="$name" -v p="$proto" '$1 == n && $2 == p { print $5 }')
    echo "$name $proto $rest $(rss_kib "$pid")"
  done <"$T/idle" >"$T/idle2"
  mv "$T/idle2" "$T/idle"
fi

# ---- the table ---------------------------------------------------------------
# median: of the numbers on stdin, one per line ("-" when none)
median() {
  sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "-"; exit }
      if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# med NAME PROTO TEST CONC KEY -> the median over the repeats
med() {
  awk -v n="$1" -v p="$2" -v t="$3" -v c="$4" -v k="$5" '
    $1 == n && $2 == p && $3 == t && $4 == c {
      for (i = 6; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] }
    }' "$RES" | median
}
# rmed NAME PROTO TEST CONC KEY -> the median over the repeats of the ratio
# to direct's figure in the same repeat (direct ran a few seconds before,
# so a machine that slows down during the run biases no system), 2 decimals
rmed() {
  awk -v n="$1" -v p="$2" -v t="$3" -v c="$4" -v k="$5" '
    function val(   i, kv) {
      for (i = 6; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) return kv[2] }
      return ""
    }
    $3 == t && $4 == c && $1 == "direct" && $2 == "tcp" { d[$5] = val() }
    $3 == t && $4 == c && $1 == n && $2 == p { v[$5] = val() }
    END { for (r in v) if (v[r] != "" && d[r] + 0 > 0) print v[r] / d[r] }' "$RES" |
    median | awk '{ if ($1 == "-") print "-"; else printf "%.2f\n", $1 }'
}
errs() { # NAME PROTO -> errors summed over every run
  awk -v n="$1" -v p="$2" '$1 == n && $2 == p {
      for (i = 6; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "errors") s += kv[2] } }
    END { print s + 0 }' "$RES"
}
cell_errs() { # NAME PROTO TEST CONC -> "!" when a run of this cell had errors
  awk -v n="$1" -v p="$2" -v t="$3" -v c="$4" '
    $1 == n && $2 == p && $3 == t && $4 == c {
      for (i = 6; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "errors" && kv[2] > 0) bad = 1 } }
    END { if (bad) printf "!" }' "$RES"
}
int() { awk -v v="$1" 'BEGIN { if (v == "-") print "-"; else printf "%.0f\n", v }'; }

echo "## proxyhost local proxy benchmark"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)."
echo "Target $TADDR, response $RESP bytes, $REPEATS repeats, ${DUR}s open runs after ${WARMUP}s warm-up with $LOAD_PROCS generator process(es), ${BULK_SECS}s bulk runs."
[ -n "$SIZED" ] && echo "Operations end when the response's bytes have all arrived (BENCH_SIZED=1: phload --sized closes first)."
echo "Load average at the start: $LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
hdr="| system | protocol |"
sep="|---|---|"
for c in $CONCS; do
  hdr="$hdr open/s c$c | p50 c$c | p99 c$c |"
  sep="$sep---:|---:|---:|"
done
echo "Ratios to direct: the median over the repeats of each repeat's figure divided by direct's in the same repeat. open/s and bulk: higher is better; p50/p99 latency: lower is better. \"!\" marks a cell where a run had errors."
echo
echo "$hdr bulk | errors |"
echo "$sep---:|---:|"
printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
  line="| $name | $proto |"
  for c in $CONCS; do
    f=$(cell_errs "$name" "$proto" open "$c")
    for k in ops_per_sec p50_us p99_us; do
      line="$line $(rmed "$name" "$proto" open "$c" "$k")$f |"
    done
  done
  f=$(cell_errs "$name" "$proto" bulk 1)
  line="$line $(rmed "$name" "$proto" bulk 1 mbps)$f |"
  echo "$line $(errs "$name" "$proto") |"
done
echo
echo "Absolute medians (this machine only; for scale, not for comparison across machines):"
echo
hdr="| system | protocol |"
sep="|---|---|"
for c in $CONCS; do
  hdr="$hdr open/s c$c | p50 c$c | p99 c$c |"
  sep="$sep---:|---:|---:|"
done
echo "$hdr bulk MB/s |"
echo "$sep---:|"
printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
  line="| $name | $proto |"
  for c in $CONCS; do
    line="$line $(int "$(med "$name" "$proto" open "$c" ops_per_sec)") |"
    line="$line $(med "$name" "$proto" open "$c" p50_us) us |"
    line="$line $(med "$name" "$proto" open "$c" p99_us) us |"
  done
  echo "$line $(int "$(med "$name" "$proto" bulk 1 mbps)") |"
done
echo
echo "The proxy's own CPU time (user + system, its processes summed; kernel TCP work done in its system calls included), median over the repeats: per operation, and per GB of bulk data. It is much less sensitive than the rates to other load on the machine."
echo
hdr="| system | protocol |"
sep="|---|---|"
for c in $CONCS; do
  hdr="$hdr CPU per open c$c |"
  sep="$sep---:|"
done
echo "$hdr CPU per GB bulk |"
echo "$sep---:|"
# cpu_per NAME PROTO TEST CONC DIVKEY SCALE [CPUKEY] -> median of
# CPUKEY (default proxy_cpu_s) * SCALE / DIVKEY
cpu_per() {
  awk -v n="$1" -v p="$2" -v t="$3" -v c="$4" -v dk="$5" -v sc="$6" -v ck="${7:-proxy_cpu_s}" '
    $1 == n && $2 == p && $3 == t && $4 == c {
      cpu = ""; div = 0
      for (i = 6; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == ck) cpu = kv[2]
        if (kv[1] == dk) div = kv[2]
      }
      if (cpu != "" && cpu != "-" && div > 0) print cpu * sc / div
    }' "$RES" | median
}
printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
  [ "$pid" = - ] && continue
  line="| $name | $proto |"
  for c in $CONCS; do
    line="$line $(int "$(cpu_per "$name" "$proto" open "$c" ops_all 1000000)") us |"
  done
  echo "$line $(awk -v v="$(cpu_per "$name" "$proto" bulk 1 bytes 1000000000)" 'BEGIN { if (v == "-") print "-"; else printf "%.2f s", v }') |"
done
echo
# The tunnels: the same figures for each of their processes.
if ls "$T"/roles.* >/dev/null 2>&1; then
  echo "The systems of several processes, each process's own CPU time (medians):"
  echo
  hdr="| system | process |"
  sep="|---|---|"
  for c in $CONCS; do
    hdr="$hdr CPU per open c$c |"
    sep="$sep---:|"
  done
  echo "$hdr CPU per GB bulk |"
  echo "$sep---:|"
  printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
    [ -f "$T/roles.$name" ] || continue
    i=1
    for role in $(cat "$T/roles.$name"); do
      line="| $name | $role |"
      for c in $CONCS; do
        line="$line $(int "$(cpu_per "$name" "$proto" open "$c" ops_all 1000000 "proxy_cpu_s_$i")") us |"
      done
      echo "$line $(awk -v v="$(cpu_per "$name" "$proto" bulk 1 bytes 1000000000 "proxy_cpu_s_$i")" 'BEGIN { if (v == "-") print "-"; else printf "%.2f s", v }') |"
      i=$((i + 1))
    done
  done
  echo
fi
# The CPU budget of one operation: who spends what, and how much of the
# machine the run kept busy. When the sum of the cores busy is close to
# the number of CPUs, the rate is bounded by CPU per operation, summed.
C1=${CONCS%% *}
echo "CPU per operation at concurrency $C1, by process (medians; generator = phload, all its processes; target = phtarget), and the cores the run kept busy (the three CPU times over the run's ${DUR}s + ${WARMUP}s, approximate):"
echo
echo "| system | protocol | generator | target | proxy | sum | cores busy |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s\n' "$ENTRIES" | while read -r name proto mode addr pid; do
  g=$(cpu_per "$name" "$proto" open "$C1" ops_all 1000000 cpu_s)
  tg=$(cpu_per "$name" "$proto" open "$C1" ops_all 1000000 target_cpu_s)
  px=0
  [ "$pid" != - ] && px=$(cpu_per "$name" "$proto" open "$C1" ops_all 1000000)
  busy=$(awk -v n="$name" -v p="$proto" -v c="$C1" -v d="$DUR" -v w="$WARMUP" '
    $1 == n && $2 == p && $3 == "open" && $4 == c {
      s = 0
      for (i = 6; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] ~ /^(cpu_s|target_cpu_s|proxy_cpu_s)$/ && kv[2] != "-") s += kv[2]
      }
      print s / (d + w)
    }' "$RES" | median)
  echo "| $name | $proto | $(int "$g") us | $(int "$tg") us | $(int "$px") us | $(awk -v a="$g" -v b="$tg" -v c="$px" 'BEGIN { printf "%.0f", a + b + c }') us | $(awk -v v="$busy" 'BEGIN { printf "%.2f", v }') |"
done
echo
if [ -s "$T/idle" ]; then
  echo "Memory with $IDLE_N idle streams, measured first, on fresh processes: the streams are opened through the proxy to the target (32 opening at a time), then held. RSS: the main process's VmRSS fresh, while the streams are held, and at the end after all the load runs. PSS: proportional set size summed over the main process and its children while held (a multi-process peer's shared pages counted once)."
  echo
  echo "| system | protocol | streams held | RSS fresh | RSS held | PSS held, all processes | processes | RSS after load | errors |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
  while read -r name proto ready before during pss np0 np1 err after; do
    echo "| $name | $proto | $ready | $(mib "$before") | $(mib "$during") | $(mib "$pss") | $np0 → $np1 | $(mib "$after") | $err |"
  done <"$T/idle"
  echo
  echo "(proxyhost serves both protocols from one process: its two rows are the same process, the second measured after the first's streams closed.)"
  echo
fi
[ -n "$SKIPPED" ] && echo "Skipped:$SKIPPED"
if [ "${BENCH_RAW:-0}" = 1 ]; then
  echo
  echo "Raw runs:"
  sed 's/^/    /' "$RES"
fi
exit 0

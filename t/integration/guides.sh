#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The user guides' deployment, followed in order as the guides give it
# (issue 24): docs/user-guide/server.md, agent.md and client.md, a
# server, an agent and a client on one machine, ending with the guide's
# curl through client -> server -> agent to a target; then, those three
# stopped, controller.md's and gateway.md's production layout: the
# certificates, a controller on PostgreSQL and Redis, its pool made with
# proxyhostctl, gateway w1 ready, and curl through the gateway and one of
# the pool's upstream proxies to the target. What runs is what the
# guides mark:
#
#   <!-- guide: ROLE -->                      a block of commands ("# "
#                                             lines: root's, "$ " lines: a
#                                             user's; "\" continues one;
#                                             the other lines are the
#                                             output it must print, "... "
#                                             a part of a line)
#   <!-- guide: ROLE file PATH -->            PATH holds the block
#   <!-- guide: ROLE file PATH from SRC -->   PATH is SRC (in the source
#                                             tree) with the block's keys set
#
# A line ending in "&&" or "|" continues a command too.
# Commands run in one shell, in the guides' order, in a working directory
# of their own with host/ and tools/ of the build in PATH, all as root
# (a "$ " command too: HOME is alice's). "proxyhost -c FILE" starts that
# role in the background, and the lines shown after it must appear in its
# log; "systemctl enable --now proxyhost@ROLE" does what the unit does
# (deploy/systemd/proxyhost@.service.in): "proxyhost -c
# /etc/proxyhost/ROLE.ini --check-config", then that role in the
# background as the user proxyhost (setpriv), its log what "journalctl -u
# proxyhost@ROLE" prints; "sudo -u USER CMD" is setpriv too (the machine
# need not have sudo). A command shown with its output is retried until
# it prints it (a readiness check), within 90 s. Every other command must
# succeed at once.
#
# The whole test runs in network and mount namespaces of its own (unshare
# -mn, as root; skipped for other users): the guides' own ports
# (8443, 9470..9472, 1080, 443) and addresses are private to it, nothing
# listens on the machine's network. The substitutions, all of them:
#   S1 /etc/proxyhost, /var/lib/proxyhost, /home/alice (and HOME) -> $T/root/...;
#      $T/root/etc/proxyhost exists, as the package (or make install)
#      makes /etc/proxyhost; without a system user proxyhost on this
#      machine, one is added to the mount namespace's own /etc/passwd and
#      /etc/group (bind mounts: the machine's files are not changed)
#   S2 server.ini's [store_pg] dsn -> a database of the test's PostgreSQL
#      (t/lib/pg.sh; the guide's DSN names db.internal)
#   S3 the agent's private network: 10.20.0.2 (its resolver, t/lib/dnsd.py)
#      and 10.20.0.80 (wiki.office.internal, openssl s_server on 443,
#      its CA in CURL_CA_BUNDLE) on the namespace's loopback, and
#      targets.allow_host_local = 10.20.0.80/32 added to agent.ini (the
#      target is on the agent's own host here)
#   S4 tunnel.example.com -> 127.0.0.1 in the namespace's /etc/hosts
#   S5 the bearers the server's "token create" printed: 'tok_…' (agent.md)
#      and $TOKEN (client.md); server.md's tunnel.crt "copied to them as
#      tunnel-ca.pem" (into the working directory, before agent.md)
#   S6 controller.md: the DSN 'host=db.internal ... password=PASSWORD' -> a database of the
#      test's PostgreSQL; its Redis (10.0.0.5:6379) and the pool's
#      upstream proxies (192.0.2.1..5: tinyproxy with BasicAuth and
#      microsocks, with the guide's secrets) run on the namespace's
#      loopback; cp.example.org -> 127.0.0.1 in its /etc/hosts; the
#      controller's files under $T/root2 (S1), its commands in their own
#      working directory
if [ -z "${GUIDES_NS:-}" ]; then
  if [ "$(id -u)" != 0 ]; then
    # In a user namespace the test would be its root, and PostgreSQL
    # refuses to run as root.
    echo "1..0 # SKIP needs root (network and mount namespaces of its own)"
    exit 0
  fi
  if unshare -m -n true 2>/dev/null; then
    GUIDES_NS=1 exec unshare -m -n sh "$0" "$@"
  fi
  echo "not ok 1 - guides.sh needs network and mount namespaces (unshare -mn)"
  echo "1..1"
  exit 1
fi
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules store_pg auth_cache admin_api tunnel_server process_metrics \
  direct tunnel_agent tunnel_client socks5 controlplane_server redis_ownership \
  controlplane_client outcome_reporter pool round_robin weighted least_active \
  random sticky http_proxy
for b in redis-server tinyproxy microsocks; do
  command -v "$b" >/dev/null 2>&1
  ok $? "$b is installed (scripts/install-deps.sh)"
done

R=$T/root
W=$T/work
guides="docs/user-guide/server.md docs/user-guide/agent.md docs/user-guide/client.md
  docs/user-guide/controller.md docs/user-guide/gateway.md"
TAP_ON_FAIL='for f in "$T"/log-*; do echo "$f:"; grep -v level=debug "$f" | tail -5; done'

# ---- the namespace: loopback, the agent's network, the server's name ----------
ip link set lo up && for a in 10.20.0.2 10.20.0.80 10.0.0.5 10.0.0.9; do
  ip addr add "$a/32" dev lo || break
done
ok $? "a private network: 127.0.0.1, 10.20.0.2 and 10.20.0.80 (S3), 10.0.0.5 (S6), 10.0.0.9 (a gateway client) on loopback"
# The pool's upstream proxies are other hosts: a network namespace of
# their own behind a veth pair (192.0.2.1..5 there, 192.0.2.254 here), so
# that their port 1080 is not the gateway's.
unshare -n sleep 600 &
UPNS=$!
PIDS="$PIDS $UPNS"
upns() { nsenter -t "$UPNS" -n "$@"; }
wait_cond '[ "$(readlink /proc/$UPNS/ns/net)" != "$(readlink /proc/$$/ns/net)" ]' &&
  ip link add up0 type veth peer name up1 netns "$UPNS" &&
  ip addr add 192.0.2.254/24 dev up0 && ip link set up0 up &&
  upns ip link set lo up && upns ip link set up1 up &&
  upns ip addr add 192.0.2.1/32 dev up1 && upns ip addr add 192.0.2.2/32 dev up1 &&
  upns ip addr add 192.0.2.3/32 dev up1 && upns ip addr add 192.0.2.4/32 dev up1 &&
  upns ip addr add 192.0.2.5/32 dev up1 && upns ip route add default dev up1
ok $? "the upstreams' network: 192.0.2.1..5 behind a veth pair (S6)"
{ cat /etc/hosts; echo "127.0.0.1 tunnel.example.com cp.example.org"
  echo "10.20.0.80 wiki.office.internal"; } >"$T/hosts"
mount --bind "$T/hosts" /etc/hosts
[ "$(getent hosts tunnel.example.com | awk '{ print $1 }')" = 127.0.0.1 ]
ok $? "tunnel.example.com and cp.example.org are 127.0.0.1 in this namespace (S4, S6)"
# S1: the guides' system user, in this mount namespace only.
if ! id proxyhost >/dev/null 2>&1; then
  pu=999
  while [ $pu -gt 100 ] && { getent passwd $pu || getent group $pu; } >/dev/null; do pu=$((pu - 1)); done
  { cat /etc/passwd; echo "proxyhost:x:$pu:$pu:proxyhost:/nonexistent:/usr/sbin/nologin"; } >"$T/passwd" &&
    { cat /etc/group; echo "proxyhost:x:$pu:"; } >"$T/group" &&
    mount --bind "$T/passwd" /etc/passwd && mount --bind "$T/group" /etc/group
fi
[ "$(id -un proxyhost 2>/dev/null)" = proxyhost ]
ok $? "the system user proxyhost exists (S1: $(id proxyhost 2>&1))"

# ---- what the guides' deployment needs around it ----------------------------
start_pg "$T/pg"; ok $? "PostgreSQL starts (S2)"
DSN=$(pg_new_db proxyhost); ok $? "a database for the server's store_pg"
python3 "$top_srcdir/t/lib/dnsd.py" --addr 10.20.0.2 --port 53 \
  --zone wiki.office.internal=10.20.0.80 --lifetime 300 >"$T/dns.log" 2>&1 &
PIDS="$PIDS $!"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/target.key" -out "$T/target.pem" \
  -days 1 -subj /CN=wiki.office.internal \
  -addext subjectAltName=DNS:wiki.office.internal >"$T/openssl.log" 2>&1
openssl s_server -quiet -www -accept 10.20.0.80:443 -cert "$T/target.pem" \
  -key "$T/target.key" </dev/null >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
target_up() { python3 -c "import socket; socket.create_connection(('10.20.0.80', 443), 1).close()"; }
wait_for target_up; ok $? "https://wiki.office.internal/ (S3: 10.20.0.80:443, resolved by 10.20.0.2)"
export CURL_CA_BUNDLE="$T/target.pem"
DSN2=$(pg_new_db pool); ok $? "a database for the controller's store_pg (S6)"
mkdir -p "$T/redis"
redis-server --bind 10.0.0.5 --port 6379 --save '' --appendonly no --protected-mode no --dir "$T/redis" \
  >"$T/redis.log" 2>&1 &
PIDS="$PIDS $!"
# The pool's upstreams, with the credentials controller.md writes.
tiny() { # ADDRESS USER PASSWORD
  printf 'Port 3128\nListen %s\nTimeout 60\nMaxClients 20\nLogLevel Info\nLogFile "%s"\nPidFile "%s"\nBasicAuth %s %s\n' \
    "$1" "$T/tiny-$1.log" "$T/tiny-$1.pid" "$2" "$3" >"$T/tiny-$1.conf"
  # nsenter itself in the background: a function would fork a subshell,
  # whose pid is not the proxy's and which runs the EXIT trap at its end
  nsenter -t "$UPNS" -n tinyproxy -d -c "$T/tiny-$1.conf" >"$T/tiny-$1.out" 2>&1 &
  PIDS="$PIDS $!"
}
tiny 192.0.2.1 alice s3cret
tiny 192.0.2.2 bob s3cret-b
tiny 192.0.2.4 bob s3cret-b
nsenter -t "$UPNS" -n microsocks -i 192.0.2.3 -p 1080 -u alice -P s3cret >"$T/ms3.log" 2>&1 &
PIDS="$PIDS $!"
nsenter -t "$UPNS" -n microsocks -i 192.0.2.5 -p 1080 >"$T/ms5.log" 2>&1 &
PIDS="$PIDS $!"
up() { python3 -c "import socket; socket.create_connection(('$1', $2), 1).close()"; }
wait_for up 10.0.0.5 6379 && wait_for up 192.0.2.1 3128 && wait_for up 192.0.2.2 3128 &&
  wait_for up 192.0.2.3 1080 && wait_for up 192.0.2.4 3128 && wait_for up 192.0.2.5 1080
ok $? "Redis on 10.0.0.5:6379 and the upstream proxies p1..p5 listen (S6)"

# ---- the marked blocks, in order ----------------------------------------------
# $T is 0711 (t/lib/pg.sh): the user proxyhost reaches its files below.
mkdir -p "$T/g" "$R/home/alice" "$R/etc/proxyhost" "$T/root2/etc/proxyhost" "$W"
n=0
for f in $guides; do
  awk -v out="$T/g" -v file="$f" -v start="$(ls "$T/g" | grep -c '\.meta$')" '
    BEGIN { seq = start }
    function flush() { if (inb) { close(body) } inb = 0 }
    /^ *<!-- guide: [a-z]+( file [^ ]+( from [^ ]+)?)? -->$/ {
      line = $0; sub(/^ *<!-- guide: /, "", line); sub(/ -->$/, "", line)
      marked = NR; meta = line; next
    }
    /^ *```/ {
      if (inb) { flush(); next }
      if (marked == NR - 1) {
        match($0, /^ */); indent = RLENGTH
        seq++; name = sprintf("%s/%03d", out, seq)
        body = name ".body"; printf "" > body
        print file ":" NR " " meta > (name ".meta"); close(name ".meta")
        inb = 1
      }
      next
    }
    inb { print substr($0, indent + 1) > body }
  ' "$top_srcdir/$f"
done
n=$(ls "$T/g" | grep -c '\.meta$')
[ "$n" -ge 10 ]; ok $? "the five guides mark their deployment ($n blocks)"

# S1: the roots under $T/root.
roots() {
  sed -e "s|/etc/proxyhost|$R/etc/proxyhost|g" -e "s|/var/lib/proxyhost|$R/var/lib/proxyhost|g" \
    -e "s|/home/alice|$R/home/alice|g" -e "s|~/|$R/home/alice/|g"
}
# set_keys BLOCK FILE: FILE with the [section] key = value lines of BLOCK set.
set_keys() {
  awk '
    FNR == 1 && FNR != NR { sec = "" }
    FNR == NR {
      if ($0 ~ /^\[.*\]$/) { sec = $0; next }
      if ($0 ~ /^[a-z_.]+ *=/) {
        k = $0; sub(/ *=.*/, "", k); want[sec SUBSEP k] = $0; order[++nw] = sec SUBSEP k
      }
      next
    }
    function rest() {
      for (i = 1; i <= nw; i++) {
        split(order[i], p, SUBSEP)
        if (p[1] == sec && !(order[i] in done)) { print want[order[i]]; done[order[i]] = 1 }
      }
    }
    /^\[.*\]$/ { rest(); sec = $0; print; next }
    /^[a-z_.]+ *=/ {
      k = $0; sub(/ *=.*/, "", k)
      if ((sec SUBSEP k) in want) { print want[sec SUBSEP k]; done[sec SUBSEP k] = 1; next }
    }
    { print }
    END { rest() }
  ' "$1" "$2"
}

cd "$W" || exit 1
PATH="$top_builddir/host:$top_builddir/tools:$PATH"
# sudo -u USER CMD...: the guides' way to run a command as the daemon's
# user; setpriv keeps the environment (PATH) as sudo keeps it here.
sudo() {
  [ "$1" = -u ] || { echo "sudo: only -u USER CMD here" >&2; return 2; }
  _u=$2; shift 2
  setpriv --reuid="$_u" --regid="$_u" --init-groups -- "$@"
}
# journalctl -u proxyhost@ROLE: that role's log (systemctl below).
journalctl() { [ "$1" = -u ] && cat "$T/log-${2#proxyhost@}"; }
HOME=$R/home/alice
export PATH HOME
AGENT_BEARER= TOKEN=
export TOKEN
failed=
nd=0
DAEMONS=
for meta in "$T"/g/*.meta; do
  [ -z "$failed" ] || break
  b=${meta%.meta}
  # shellcheck disable=SC2046 # the meta line is split on purpose
  set -- $(cat "$meta")
  where=$1 role=$2
  case $where in docs/user-guide/agent.md:*) # S5: the server's CA to the peers
    [ -e tunnel-ca.pem ] || cp tunnel.crt tunnel-ca.pem ;;
  esac
  case $where in docs/user-guide/controller.md:*)
    if [ "$R" = "$T/root" ]; then
      # The tunnel roles end here: the control plane's use the same
      # ports (9470, 1080) on this one machine. S6: its own root and
      # working directory.
      last_tunnel=$last
      # client.md's curl has returned, but its stream ends a moment later
      # (both directions closed through server and agent): stopping the
      # roles before that resets it.
      wait_long grep -q 'msg="stream end"' "$T/log-client"
      for p in $DAEMONS; do kill "$p"; wait_exit "$p" 15; done
      DAEMONS=
      R=$T/root2 W=$T/work2
      mkdir -p "$W" && cd "$W" || exit 1
    fi ;;
  esac
  if [ "${3:-}" = file ]; then
    path=$(printf '%s\n' "$4" | roots)
    mkdir -p "$(dirname "$path")"
    roots <"$b.body" >"$b.ini"
    if [ "${5:-}" = from ]; then
      set_keys "$b.ini" "$top_srcdir/$6" >"$path"
    else
      cp "$b.ini" "$path"
    fi
    case $path in
    */server.ini) # S2
      sed -i "s|^dsn = .*|dsn = $DSN|" "$path" ;;
    */agent.ini) # S3
      [ "$(grep '^\[' "$path" | tail -1)" = "[tunnel_agent]" ] &&
        echo "targets.allow_host_local = 10.20.0.80/32" >>"$path" ;;
    esac
    ok $? "$where: $role's $4 written"
    continue
  fi
  # A block of commands: "# " or "$ " lines (a "\" at the end continues
  # one), each followed by the output it shows.
  awk -v pre="$b" '
    function out() { close(c); close(w) }
    cont { print > c; cont = /(\\|&&|\|)$/; next }
    /^[#$] / { if (k) out(); k++; c = sprintf("%s-%02d.cmd", pre, k); w = sprintf("%s-%02d.want", pre, k)
             printf "" > w; print substr($0, 3) > c; cont = /(\\|&&|\|)$/; next }
    k && NF { print > w }
  ' "$b.body"
  for c in "$b"-*.cmd; do
    cmd=$(roots <"$c")
    cmd=$(printf '%s\n' "$cmd" | sed -e "s|tok_…|$AGENT_BEARER|g" \
      -e "s#host=db.internal dbname=proxyhost user=proxyhost password=PASSWORD#$DSN2#") # S5, S6
    want=${c%.cmd}.want
    nd=$((nd + 1))
    name="$where: $(head -1 "$c" | tr -d '\\' | cut -c1-60)"
    case $cmd in
    "systemctl enable --now proxyhost@"*)
      # the unit: its ExecStartPre, then its ExecStart as User=proxyhost
      unit=${cmd#systemctl enable --now proxyhost@}
      ini=$(echo "/etc/proxyhost/$unit.ini" | roots)
      if ! proxyhost -c "$ini" --check-config >"$c.out" 2>&1; then
        ok 1 "$name (the unit's --check-config)"; sed 's/^/#   | /' "$c.out"; failed=1; continue
      fi
      setpriv --reuid=proxyhost --regid=proxyhost --init-groups -- \
        "$top_builddir/host/proxyhost" -c "$ini" >>"$T/log-$unit" 2>&1 &
      pid=$!
      PIDS="$PIDS $pid" DAEMONS="$DAEMONS $pid"
      # started once the host started its modules (readiness: the
      # guide's own check after it)
      wait_long grep -qF 'msg="proxyhost started"' "$T/log-$unit" && running "$pid"
      ok $? "$name (started as proxyhost)" || failed=1
      continue ;;
    "proxyhost -c "*" --"*) ;;
    "proxyhost -c "*)
      # its own process (a subshell of this one would run the EXIT trap)
      sh -c "exec $cmd" >>"$T/log-$role" 2>&1 &
      pid=$!
      PIDS="$PIDS $pid" DAEMONS="$DAEMONS $pid"
      rc=0
      while read -r line; do
        line=${line#... }
        wait_long grep -qF -- "$line" "$T/log-$role" || { rc=1; echo "#   not logged: $line"; }
      done <"$want"
      running "$pid" || rc=1
      ok $rc "$name (started; its log shows what the guide shows)" || failed=1
      continue ;;
    esac
    tries=1
    # a readiness check: up to 90 s (a gateway waits one ownership_lease,
    # 30 s, for its first proxy on a new Redis)
    [ -s "$want" ] && tries=900
    i=0
    while [ $i -lt $tries ]; do
      i=$((i + 1))
      eval "$cmd" >"$c.out" 2>&1; rc=$?
      missing=
      while read -r line; do
        case $line in
        "... "*) grep -qF -- "${line#... }" "$c.out" ;;
        *) grep -qxF -- "$line" "$c.out" ;;
        esac || missing="$missing $line"
      done <"$want"
      [ $rc = 0 ] && [ -z "$missing" ] && break
      sleep 0.1
    done
    is "$rc${missing:+ missing:$missing}" 0 "$name" || { sed 's/^/#   | /' "$c.out" | tail -10; failed=1; }
    case $cmd in
    *"token create"*--agent*) AGENT_BEARER=$(sed -n 's/^bearer  *//p' "$c.out") ;; # S5
    *"token create"*) TOKEN=$(sed -n 's/^bearer  *//p' "$c.out") ;;
    esac
    last=$c.out
  done
done
[ -z "$failed" ]; ok $? "every marked command of the five guides ran ($nd)"

# ---- the tunnel's stream: client.md's last command, its curl -----------------
: "${last_tunnel:=$last}"
like "$(cat "$last_tunnel" 2>/dev/null)" "s_server" \
  "client.md's curl reached https://wiki.office.internal/ through client, server and agent"
like "$(cat "$T/log-server")" 'msg="tunnel stream end"' "the server relayed the stream"
like_re "$(cat "$T/log-agent")" 'msg="stream ended".* code=ok' "the agent dialled the target for it"
like_re "$(cat "$T/log-client")" 'code=ok' "the client's stream ended ok"

# ---- the gateway: curl through it from a client in 10.0.0.0/8 ----------------
for i in 1 2 3 4 5; do
  got=$("$CURL" -s -m 10 --interface 10.0.0.9 -x http://10.0.0.9:8080 https://wiki.office.internal/)
  like "$got" "s_server" "curl through gateway w1's HTTP proxy ($i, round robin over p1..p5)"
done
got=$("$CURL" -s -m 10 --interface 10.0.0.9 --proxy socks5h://10.0.0.9:1080 https://wiki.office.internal/)
like "$got" "s_server" "... and through its SOCKS5 listener"
m=$(http_get "http://127.0.0.1:9481/metrics")
is "$(metric "$m" 'proxyhost_pool_opens_total{result="ok"}')" 6 "the gateway's pool opened all six through upstream proxies"

done_testing

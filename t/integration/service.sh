#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# What a service manager sees: sd_notify readiness (READY=1 once every
# module is ready, RELOADING=1 + MONOTONIC_USEC then READY=1 on SIGHUP,
# STOPPING=1 on a stop) on a path and an abstract socket, SIGUSR1
# reopening the log file alone, and, as root, dropping to [proxyhost]
# user after start (and refusing an unknown user).
. "$top_srcdir/t/lib/testlib.sh"

port=$(free_port)
write_conf() { # EXTRA-PROXYHOST-LINES EXTRA-PROBE-LINES
  cat >"$T/svc.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD
drain_timeout = 2s
$1
[admin]
listen = 127.0.0.1:$port
[log]
file = $T/svc.log
[probe]
$2
EOC
}

# notify_listen SOCKET: t/lib/notify_listen.py bound on SOCKET, received
# datagrams in $T/notify.out.
notify_listen() {
  rm -f "$T/notify.out" "$T/notify.ready"
  python3 "$top_srcdir/t/lib/notify_listen.py" --socket "$1" \
    --out "$T/notify.out" --ready-file "$T/notify.ready" --lifetime 30 &
  PIDS="$PIDS $!"
  wait_file "$T/notify.ready"
}
got() { grep -c "$1" "$T/notify.out" 2>/dev/null; }
has() { [ "$(got "$1")" -ge "${2:-1}" ]; }

# A module that never reports ready: no READY=1, only a STATUS line.
notify_listen "$T/notify.sock"
write_conf "" "ready = false"
NOTIFY_SOCKET=$T/notify.sock start_proxyhost "$T/svc.ini"
wait_for healthy "$port"; ok $? "a module not ready: the host runs"
wait_for has 'STATUS=starting'; ok $? "STATUS says it is waiting"
sleep 0.3
! has 'READY=1'; ok $? "no READY=1 while a module is not ready"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
# The listener may write the datagram after the host has exited (a loaded
# machine): wait for it.
wait_for has '^STOPPING=1'; ok $? "STOPPING=1 on the stop, ready or not"

for sock in "$T/notify.sock" "@proxyhost-test-$$"; do
  case $sock in @*) kind=abstract ;; *) kind=path ;; esac
  rm -f "$T/notify.sock"
  notify_listen "$sock"; ok $? "[$kind] a notify socket is listening"
  write_conf "" ""
  NOTIFY_SOCKET=$sock start_proxyhost "$T/svc.ini"
  wait_for has 'READY=1'; ok $? "[$kind] READY=1 once every module started and is ready"
  healthy "$port"; ok $? "[$kind] the host serves by then"
  has "MAINPID=$PH_PID"; ok $? "[$kind] READY=1 names the main pid"
  kill -HUP "$PH_PID"
  wait_for has 'READY=1' 2; ok $? "[$kind] SIGHUP ends in READY=1 again"
  has '^RELOADING=1|MONOTONIC_USEC=[0-9][0-9]*|'; ok $? "[$kind] after RELOADING=1 with MONOTONIC_USEC"
  reload=$(grep -n 'RELOADING=1' "$T/notify.out" | head -1 | cut -d: -f1)
  last=$(grep -n '^READY=1' "$T/notify.out" | tail -1 | cut -d: -f1)
  [ "${reload:-99}" -lt "${last:-0}" ]; ok $? "[$kind] in that order"
  kill -TERM "$PH_PID"
  wait_exit "$PH_PID" 10; is "$EXIT" 0 "[$kind] stops with exit 0"
  wait_for has '^STOPPING=1'; ok $? "[$kind] STOPPING=1 on the stop"
  sed 's/^/#   /' "$T/notify.out"
done

# A bad NOTIFY_SOCKET is reported, and the host runs anyway.
write_conf "" ""
: >"$T/svc.log"
NOTIFY_SOCKET=relative/path start_proxyhost "$T/svc.ini"
wait_for healthy "$port"; ok $? "a bad NOTIFY_SOCKET does not stop the host"
like "$(cat "$T/svc.log")" "NOTIFY_SOCKET is neither" "and is logged"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10

# SIGUSR1: the log file is reopened (rotation), without a reload.
write_conf "" ""
rm -f "$T/svc.log"
start_proxyhost "$T/svc.ini"
wait_for healthy "$port"
mv "$T/svc.log" "$T/svc.log.1"
kill -USR1 "$PH_PID"
wait_file "$T/svc.log"; ok $? "SIGUSR1 reopens the log file under its name"
wait_for grep -q "log file reopened" "$T/svc.log"; ok $? "and says so in the new file"
unlike "$(cat "$T/svc.log")" "configuration reloaded" "without a reload"
reloads=$(metric "$(http_get "http://127.0.0.1:$port/metrics")" 'proxyhost_reloads_total{result="ok"}')
is "${reloads:-0}" 0 "no reload was counted"
like "$(cat "$T/svc.log.1")" "proxyhost started" "the rotated file kept the old lines"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "then stops with exit 0"

# [proxyhost] user: an unknown user is refused (exit 2), root or not.
write_conf "user = no-such-user-proxyhost" ""
err=$("$PROXYHOST" -c "$T/svc.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "an unknown [proxyhost] user is a configuration error"
like "$err" "no such user" "named as such"
write_conf "group = nogroup" ""
"$PROXYHOST" -c "$T/svc.ini" --check-config >/dev/null 2>&1
is $? 2 "group without user is refused"

if [ "$(id -u)" -ne 0 ]; then
  skip "not root: the privilege drop is tested as root (CI)"
elif ! id nobody >/dev/null 2>&1; then
  skip "no user nobody"
else
  chmod 755 "$T"
  : >"$T/svc.log"
  chmod 666 "$T/svc.log"
  write_conf "user = nobody" ""
  start_proxyhost "$T/svc.ini"
  wait_for healthy "$port"; ok $? "as root with user = nobody: the host runs"
  nobody=$(id -u nobody)
  uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$PH_PID/status")
  is "$uids" "$nobody $nobody $nobody $nobody" "every uid is nobody's after start"
  groups=$(awk '/^Groups:/ {print $2}' "/proc/$PH_PID/status")
  gids=$(awk '/^Gid:/ {print $2}' "/proc/$PH_PID/status")
  is "$groups" "$gids" "the only supplementary group is the user's own"
  like "$(cat "$T/svc.log")" "dropped root privileges" "the drop is logged"
  # Threads too (glibc changes every thread's ids).
  bad=
  for t in /proc/"$PH_PID"/task/*; do
    u=$(awk '/^Uid:/ {print $2}' "$t/status")
    [ "$u" = "$nobody" ] || bad="$bad $(basename "$t")"
  done
  is "$bad" "" "every thread runs as nobody"
  kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "and stops with exit 0"
fi
done_testing

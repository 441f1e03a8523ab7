#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Module threads (SDK 1.2) in a real proxyhost process: probe starts named
# threads that post back to the loop; the log shows them started and
# joined; SIGTERM joins them and exits 0; a thread that ignores its stop
# makes the host exit 5 after the drain deadline, without waiting forever.
. "$top_srcdir/t/lib/testlib.sh"

port=$(free_port)
write_conf() { # EXTRA-PROBE-LINES [DRAIN-TIMEOUT]
  cat >"$T/threads.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD
drain_timeout = ${2:-5s}
[admin]
listen = 127.0.0.1:$port
[log]
level = info
[probe]
threads = 2
thread_posts = 10
thread_queue = 4
$1
EOC
}

# comm_of PID: the names of the process's threads, one per line.
comm_of() { cat /proc/"$1"/task/*/comm 2>/dev/null; }
calls_done() {
  [ "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" probe_thread_calls_total)" = 20 ]
}

write_conf ""
start_proxyhost "$T/threads.ini"
wait_for healthy "$port"; ok $? "proxyhost with probe's threads is healthy"
wait_for calls_done; ok $? "the threads' 20 posts ran on the loop (queues of 4)"
log=$(cat "$T/ph.log")
like "$log" 'module=probe msg="module thread started" thread=t0' "thread t0 started, logged"
like "$log" 'module=probe msg="module thread started" thread=t1' "thread t1 started, logged"
like "$log" 'module=probe msg="probe thread running"' "run runs"
names=$(comm_of "$PH_PID")
like "$names" "ph-probe-t0" "the OS thread is named ph-probe-t0"
like "$names" "ph-probe-t1" "and ph-probe-t1"
metrics=$(http_get "http://127.0.0.1:$port/metrics")
like "$metrics" 'proxyhost_module_threads{module="probe"} 2' "/metrics counts them"
like "$metrics" 'proxyhost_thread_queue_full_total{module="probe"}' \
  "with the queue-full counter per module"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "SIGTERM exits 0"
log=$(cat "$T/ph.log")
like "$log" 'module=probe msg="module thread joined" thread=t0' "t0 joined at the module's stop"
like "$log" 'module=probe msg="module thread joined" thread=t1' "t1 joined"
joined_line=$(grep -n 'msg="module thread joined" thread=t1' "$T/ph.log" | head -1 | cut -d: -f1)
stopped_line=$(grep -n 'msg="proxyhost stopped"' "$T/ph.log" | head -1 | cut -d: -f1)
[ -n "$joined_line" ] && [ -n "$stopped_line" ] && [ "$joined_line" -lt "$stopped_line" ]
ok $? "before the host stopped"

# A thread that does not return after its stop: exit 5 after drain_timeout
# (at least 1 s), never destroying the module under it.
: >"$T/ph.log"
write_conf "thread_ignore_stop = true" 300ms
start_proxyhost "$T/threads.ini"
wait_for healthy "$port"; ok $? "restarted with threads that ignore stop"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 15; is "$EXIT" 5 "a thread past the drain deadline exits 5"
like "$(cat "$T/ph.log")" 'module=probe msg="module thread did not return by the drain deadline' \
  "and says which module's thread"
unlike "$(cat "$T/ph.log")" 'msg="proxyhost stopped"' "it exits at once, destroying nothing"

done_testing

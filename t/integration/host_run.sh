#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A real proxyhost process: admin endpoints, SIGHUP reload, SIGTERM drain
# within the deadline, the drain deadline (exit 0 with a warning), and
# start-up failures.
. "$top_srcdir/t/lib/testlib.sh"

port=$(free_port)
pm=""
have_module process_metrics && pm=", process_metrics"
write_conf() { # GREETING EXTRA-PROBE-LINES [DRAIN-TIMEOUT]
  cat >"$T/run.ini" <<EOC
[proxyhost]
modules = probe$pm
module_path = $TMOD, $top_builddir/modules
drain_timeout = ${3:-5s}
[admin]
listen = 127.0.0.1:$port
[log]
level = info
[probe]
greeting = $1
secret = do-not-log-me
jobs = 3
$2
EOC
}

write_conf first ""
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "/healthz answers 200"
out=$(http_get "http://127.0.0.1:$port/readyz")
like "$out" "200" "/readyz is 200 when every module is ready"
metrics=$(http_get "http://127.0.0.1:$port/metrics")
like "$metrics" "200" "/metrics answers 200"
like "$metrics" "proxyhost_build_info{version=\"0.1.0\",abi=\"$PH_ABI\"} 1" "build info exported"
is "$(metric "$metrics" probe_jobs_done_total)" 3 "module jobs finished through the pool"
if [ -n "$pm" ]; then
  like "$metrics" "process_open_fds " "process_metrics module exports fds"
  like "$metrics" "# TYPE process_cpu_seconds_total counter" \
    "CPU time is the standard counter"
  cpu=$(metric "$metrics" process_cpu_seconds_total)
  printf '%s' "$cpu" | grep -Eq '^[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?$'
  ok $? "with a number of seconds ($cpu)"
  unlike "$metrics" "process_cpu_seconds " "and no longer the old gauge"
else
  for n in 1 2 3 4; do
    skip "process_metrics not built (configure --disable-module-process_metrics)"
  done
fi
printf '%s\n' "$metrics" | sed 1d >"$T/metrics.txt"
"$PROMTOOL" check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1
ok $? "promtool accepts the exposition"
sed 's/^/# promtool: /' "$T/promtool.out"

# SIGHUP re-reads the configuration and calls every module's reload.
write_conf second "fixed = 2"
kill -HUP "$PH_PID"
reloaded() { [ "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" probe_reloads_total)" = 1 ]; }
wait_for reloaded; ok $? "SIGHUP reaches the module's reload"
like "$(cat "$T/ph.log")" "greeting=second" "the module sees the new value"
like "$(cat "$T/ph.log")" 'msg="this key changes only after a restart; old value kept" section=probe key=fixed' \
  "a changed PH_CONF_RESTART key is reported on reload"
printf '[probe]\ncount = nope\n' >>"$T/run.ini"
kill -HUP "$PH_PID"
failed() { http_get "http://127.0.0.1:$port/metrics" | grep -qF 'proxyhost_reloads_total{result="failed"} 1'; }
wait_for failed; ok $? "an invalid configuration on SIGHUP is refused and counted"
running "$PH_PID"; ok $? "and the process keeps running"
like "$(cat "$T/ph.log")" "run.ini:" "the refusal names file:line"
unlike "$(cat "$T/ph.log")" "do-not-log-me" "the secret never reaches the log"

# A value that passes the types but not the module's check callback: the
# reload is refused as a whole (greeting stays), and the process serves on.
write_conf third "word = Not-Letters"
kill -HUP "$PH_PID"
failed2() { http_get "http://127.0.0.1:$port/metrics" | grep -qF 'proxyhost_reloads_total{result="failed"} 2'; }
wait_for failed2; ok $? "a value the module's check refuses on SIGHUP is refused and counted"
running "$PH_PID"; ok $? "and the process keeps running"
is "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" probe_reloads_total)" 1 \
  "the module's reload did not run"
healthy "$port"; ok $? "/healthz still answers 200"
like "$(cat "$T/ph.log")" 'run.ini:13: probe.word: \"Not-Letters\" is not lower-case letters' \
  "the refusal names file:line: section.key: reason"
unlike "$(cat "$T/ph.log")" "greeting=third" "the valid new values were not applied either"

# SIGTERM: drain (probe takes 300 ms) and exit 0 within the deadline.
write_conf second "stop_delay = 300ms"
kill -HUP "$PH_PID"
reloaded2() { [ "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" probe_reloads_total)" = 2 ]; }
wait_for reloaded2
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "SIGTERM drains and exits 0"
like "$(cat "$T/ph.log")" "probe drained" "the module finished its drain"

# A module slower than drain_timeout is cut off: still a stop that was
# asked for, so exit 0 (a unit need not special-case it), with a warning.
: >"$T/ph.log"
write_conf second "stop_delay = 20s" 300ms
start_proxyhost "$T/run.ini"
wait_for healthy "$port"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "drain deadline exceeded still exits 0"
like "$(cat "$T/ph.log")" "drain deadline passed" "and says which module was cut off"
like "$(cat "$T/ph.log")" "drain cut short: clients were still connected" "with a warning"
like "$(cat "$T/ph.log")" "drain_cut_short=true" "and a field of the last line"

# Readiness follows the modules.
write_conf second "ready = false"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"
out=$(http_get "http://127.0.0.1:$port/readyz")
like "$out" "503" "/readyz is 503 while a module is not ready"
like "$out" "module probe is not ready" "and names it"
kill -INT "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "SIGINT stops like SIGTERM"

# Start-up failures exit 4 with the module named.
write_conf second "fail_start = true"
"$PROXYHOST" -c "$T/run.ini" >"$T/out" 2>&1; rc=$?
is "$rc" 4 "a failing start exits 4"
like "$(cat "$T/out")" "module probe: start failed" "naming the module"
printf '[proxyhost]\nmodules = %s/needs_provider.so\n[admin]\nlisten =\n' "$TMOD" >"$T/np.ini"
"$PROXYHOST" -c "$T/np.ini" >"$T/out" 2>&1; rc=$?
# A missing provider is a configuration error, found before any init.
is "$rc" 2 "a missing provider exits 2"
like "$(cat "$T/out")" "requires the \"no.such.service\" service, which no loaded module provides; no module in the module path provides it" "naming the service"

done_testing

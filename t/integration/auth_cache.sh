#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# auth_cache in a real proxyhost process (issue 10), in front of
# auth_local's "access" service (the database stores come later):
#  - the configuration errors of its store key (--check-config, exit 2,
#    file:line: section.key: reason): unset, not a loaded provider of
#    "access", itself; a bound out of range;
#  - started, it is ready once the store's revision was read (TM-P1-26)
#    and /metrics has tunnelmesh_authorization_cache_requests_total with
#    its four cache values and nothing else (TM-OBS-6/16), in the prefix
#    scheme (t/lib/metrics_lint.py);
#  - a SIGHUP that switches the cache off is applied, and the process
#    stops cleanly.
# What the cache does with checks is t/unit/auth/test_auth_cache.c's job.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
MODS="$top_builddir/modules"

require_modules auth_cache auth_local

# conf FILE ADMIN LINE...: auth_local and auth_cache, the LINEs in
# [auth_cache].
conf() {
  f=$1 a=$2
  shift 2
  {
    printf '[proxyhost]\nmodules = auth_local, auth_cache\n'
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$MODS"
    printf '[admin]\nlisten = 127.0.0.1:%s\n[auth_cache]\n' "$a"
    for l in "$@"; do printf '%s\n' "$l"; done
  } >"$f"
}

check_config() { "$PROXYHOST" -c "$1" --check-config 2>&1; }

conf "$T/nostore.ini" 0
out=$(check_config "$T/nostore.ini"); rc=$?
is "$rc" 2 "no store: --check-config exits 2"
like "$out" "auth_cache.store: required key is not set" "and names the key"

conf "$T/typo.ini" 0 "store = store_sqlit"
out=$(check_config "$T/typo.ini"); rc=$?
is "$rc" 2 "a store that is not loaded: exit 2"
like "$out" "$T/typo.ini:8: auth_cache.store: \"store_sqlit\" is not a loaded module instance that provides the \"access\" service" \
  "names file:line, section and key, and says why"

conf "$T/self.ini" 0 "store = auth_cache"
out=$(check_config "$T/self.ini"); rc=$?
is "$rc" 2 "auth_cache as its own store: exit 2"
like "$out" "cannot wrap itself" "and says so"

conf "$T/bound.ini" 0 "store = auth_local" "max_entries = 0"
out=$(check_config "$T/bound.ini"); rc=$?
is "$rc" 2 "max_entries = 0: exit 2"
like "$out" "auth_cache.max_entries" "names the key"

admin=$(free_port)
conf "$T/ok.ini" "$admin" "store = auth_local"
out=$(check_config "$T/ok.ini"); rc=$?
is "$rc" 0 "store = auth_local passes --check-config"
start_proxyhost "$T/ok.ini"
wait_for healthy "$admin"; ok $? "proxyhost starts with auth_cache"
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_for ready; ok $? "TM-P1-26: ready once the store's revision was read"

m=$(http_get "http://127.0.0.1:$admin/metrics")
for c in hit miss shared bypass; do
  is "$(metric "$m" "tunnelmesh_authorization_cache_requests_total{cache=\"$c\"}")" 0 \
    "TM-OBS-16: tunnelmesh_authorization_cache_requests_total{cache=\"$c\"} is exported"
done
n=$(printf '%s\n' "$m" | grep -c '^tunnelmesh_authorization_cache_requests_total')
is "$n" 4 "TM-OBS-16: no other series of it"
is "$(metric "$m" proxyhost_auth_cache_entries)" 0 "proxyhost_auth_cache_entries 0"
printf '%s\n' "$m" | tail -n +2 >"$T/scrape.txt"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/scrape.txt" 600 auth_cache auth_local \
  >"$T/lint.out" 2>&1
ok $? "the scrape passes metrics_lint.py (names in the prefix scheme)"
sed 's/^/#   /' "$T/lint.out" | grep problem

conf "$T/ok.ini" "$admin" "store = auth_local" "enabled = false"
kill -HUP "$PH_PID"
reloaded() {
  [ "$(metric "$(http_get "http://127.0.0.1:$admin/metrics")" \
    'proxyhost_reloads_total{result="ok"}')" = 1 ]
}
wait_for reloaded; ok $? "TM-UPG-11: a SIGHUP with enabled = false is applied"
wait_for ready; ok $? "off, it stays ready"

kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"
done_testing

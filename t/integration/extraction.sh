#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Exclusive extraction through admin_api and proxyhostctl (CP-1-5,
# CP-4-5; docs/user-guide/controller.md, "Exclusive extraction"): a real
# proxyhost running store_sqlite (a real SQLite file), redis_ownership (a
# private redis-server, t/lib/redis.sh) and admin_api with authority =
# redis_ownership. No controlplane_server runs, so no worker owns the
# proxy: a request extracts it at once. Checked: the states through
# GET/POST/DELETE /v1/pool/proxies/{id}/extraction and proxyhostctl proxy
# extraction|extract|return; an idempotent second POST; the state kept in
# Redis (it survives a restart of proxyhost); the proxy asked of the store
# before Redis for GET and POST (404 while Redis is down), not for a
# return (an id the store no longer has); a malformed id 400, no token
# 401, a body or a query 400, Redis down 503; admin_api without authority
# 501, naming the key; an authority that is not loaded refused by
# --check-config. The reclaim from a live owner: gateway_e2e.sh.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
require_modules store_sqlite redis_ownership admin_api pool_api

CTL="$top_builddir/tools/proxyhostctl"
"$CTL" admin-token new "$T/admin.token" >/dev/null
start_redis "$T/redis"; ok $? "redis-server starts"
ctl() { "$CTL" --admin "127.0.0.1:$port" --token-file "$T/admin.token" "$@"; }
api() { # api METHOD PATH [BODY] [-notoken]: out, code
  if [ "${4:-}" = -notoken ]; then
    code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' -X "$1" \
      -H 'Content-Type: application/json' ${3:+--data "$3"} "http://127.0.0.1:$port$2")
  else
    code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' -X "$1" \
      -H "Authorization: Bearer $(cat "$T/admin.token")" \
      -H 'Content-Type: application/json' ${3:+--data "$3"} "http://127.0.0.1:$port$2")
  fi
  out=$(cat "$T/body")
}
ready() { [ "$(http_get "http://127.0.0.1:$port/readyz" | head -1)" = 200 ]; }
# field PATH: a field of the last answer ($out), "-" when absent (a.b: nested)
field() {
  printf '%s' "$out" | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("-" if v is None else v)' "$1" 2>/dev/null || echo -
}

# write_ini FILE AUTHORITY-LINE
write_ini() {
  cat >"$1" <<EOC
[proxyhost]
modules = store_sqlite, redis_ownership, admin_api, pool_api
module_path = $top_builddir/modules
[admin]
listen = 127.0.0.1:$port
[store_sqlite]
path = $T/pool.db
[redis_ownership]
hold_fresh_state = false
address = 127.0.0.1:$REDIS_PORT
cluster_id = c1
command_timeout = 300ms
reconnect.max = 300ms
[admin_api]
store = store_sqlite
token_file = $T/admin.token
[pool_api]
store = store_sqlite
token_file = $T/admin.token
$2
EOC
}

port=$(free_port)
write_ini "$T/on.ini" "authority = redis_ownership"
out=$("$PROXYHOST" -c "$T/on.ini" --check-config 2>&1)
ok $? "a configuration with [pool_api] authority = redis_ownership passes --check-config"
start_proxyhost "$T/on.ini"
wait_for ready "$port"; ok $? "proxyhost with store_sqlite, redis_ownership, admin_api, pool_api starts (ready: Redis connected)"
ctl proxy add p1 --protocol http_connect --host 192.0.2.1 --port 3128 \
  --groups residential --capacity 10 >/dev/null
ok $? "proxyhostctl proxy add p1"

# The shape, whatever the authority answers.
api GET /v1/pool/proxies/p1/extraction "" -notoken
is "$code" 401 "no admin token: 401"
api POST /v1/pool/proxies/p1/extraction "" -notoken
is "$code" 401 "... also for POST"
api POST /v1/pool/proxies/P1/extraction
is "$code:$(field error.code)" "400:invalid" "a malformed id (upper case): 400 invalid"
long=$(printf 'q%.0s' $(seq 1 129))
api GET "/v1/pool/proxies/$long/extraction"
is "$code" 400 "a 129-byte id: 400"
api PUT /v1/pool/proxies/p1/extraction
is "$code" 405 "PUT on the extraction: 405"
api POST /v1/pool/proxies/nosuch/extraction
is "$code:$(field error.code)" "404:not_found" "CP-4-5 an unknown proxy: 404 not_found"
ctl proxy extract nosuch >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "proxyhostctl proxy extract of an unknown proxy: exit 1"
like "$(cat "$T/err")" "404 not_found: no such proxy" "... saying so"
api POST /v1/pool/proxies/p1/extraction '{"x":1}'
is "$code" 400 "a POST with a body: 400"
api GET '/v1/pool/proxies/p1/extraction?a=b'
is "$code" 400 "a GET with a query: 400"

api GET /v1/pool/proxies/p1/extraction
is "$code:$(field state)" "200:available" "CP-1-5 GET of a proxy never extracted: 200 available"
is "$(field owner):$(field extracted_at)" "-:-" "... no owner, no extracted_at"
api POST /v1/pool/proxies/p1/extraction
is "$code:$(field state)" "200:extracted" "CP-1-5 CP-4-5 POST of an unowned proxy: 200 extracted"
at=$(field extracted_at)
like_re "$at" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$' \
  "... extracted_at is RFC 3339 with ms, UTC ($at)"
is "$(field proxy_id)" p1 "... of p1"
api POST /v1/pool/proxies/p1/extraction
is "$code:$(field state):$(field extracted_at)" "200:extracted:$at" \
  "CP-1-5 a second POST is idempotent: 200, the first extracted_at"
api GET /v1/pool/proxies/p1/extraction
is "$code:$(field state):$(field extracted_at)" "200:extracted:$at" "CP-1-5 GET: extracted"
out=$(ctl proxy extraction p1); rc=$?
is "$rc" 0 "proxyhostctl proxy extraction p1: exit 0"
like "$out" "state        extracted" "... prints the state"
out=$(ctl --json proxy extract p1); rc=$?
is "$rc:$(field state)" "0:extracted" "proxyhostctl --json proxy extract p1: exit 0, the JSON"

# Kept in Redis, not in the process.
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "proxyhost stops cleanly"
start_proxyhost "$T/on.ini"
wait_for ready "$port"; ok $? "proxyhost starts again (same Redis), ready"
api GET /v1/pool/proxies/p1/extraction
is "$code:$(field state):$(field extracted_at)" "200:extracted:$at" \
  "CP-1-5 the extraction is in Redis: still extracted after a restart"

api DELETE /v1/pool/proxies/p1/extraction
is "$code:$(field state)" "200:available" "DELETE: 200 available"
api GET /v1/pool/proxies/p1/extraction
is "$code:$(field state)" "200:available" "... and GET says available"
out=$(ctl proxy extract p1); rc=$?
is "$rc" 0 "proxyhostctl proxy extract p1: exit 0"
like "$out" "state        extracted" "... extracted"
out=$(ctl proxy return p1); rc=$?
is "$rc" 0 "proxyhostctl proxy return p1: exit 0"
like "$out" "state        available" "... available"
# A proxy deleted from the store while extracted can still be returned.
api POST /v1/pool/proxies/p1/extraction
redis_cli "$T/redis" HSET 'ph:cp:{c1}:extracted' gone-px 1796156500158 >/dev/null
api DELETE /v1/pool/proxies/gone-px/extraction
is "$code:$(field state)" "200:available" "DELETE of an id the store no longer has: 200 available"
is "$(redis_cli "$T/redis" HEXISTS 'ph:cp:{c1}:extracted' gone-px)" 0 "... and its Redis entry is gone"

# Redis down: the store is still asked first; Redis fails closed.
stop_redis "$T/redis"
api POST /v1/pool/proxies/nosuch/extraction
is "$code" 404 "CP-4-5 Redis down, an unknown proxy: still 404 (the store is asked first)"
api POST /v1/pool/proxies/p1/extraction
is "$code:$(field error.code)" "503:unavailable" "Redis down: POST 503 unavailable"
ctl proxy extraction p1 >/dev/null 2>&1; is "$?" 1 "... proxyhostctl exit 1"
restart_redis "$T/redis"; ok $? "redis-server restarts"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "proxyhost stops cleanly"

# Without authority: off, 501 naming the key.
write_ini "$T/off.ini" ""
: >"$T/ph.log"
start_proxyhost "$T/off.ini"
wait_for healthy "$port"; ok $? "pool_api without authority starts"
api POST /v1/pool/proxies/p1/extraction
is "$code:$(field error.code)" "501:not_implemented" "without [pool_api] authority: 501 not_implemented"
like "$(field error.message)" "[pool_api] authority is not set" "... naming the key"
ctl proxy extraction p1 >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "proxyhostctl proxy extraction: exit 1"
like "$(cat "$T/err")" "501 not_implemented" "... printing the error"
ctl proxy show p1 >/dev/null; ok $? "the pool's other routes still work"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "proxyhost stops cleanly"

# An authority that is not loaded: a configuration error.
write_ini "$T/bad.ini" "authority = redis_ownership.eu"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
[ "$rc" -ne 0 ]; ok $? "authority naming an instance that is not loaded fails --check-config"
like "$out" "authority" "... naming the key"

# An upgraded controller configuration (issue 25 item 6): the pool's routes
# were admin_api's, with [admin_api] authority; the new admin_api refuses
# the key and says where it went, rather than start without them.
sed -e 's/^modules = .*/modules = store_sqlite, redis_ownership, admin_api/' \
  -e '/^\[pool_api\]/,$d' "$T/on.ini" >"$T/old.ini"
printf 'authority = redis_ownership\n' >>"$T/old.ini"
out=$("$PROXYHOST" -c "$T/old.ini" --check-config 2>&1); rc=$?
[ "$rc" -ne 0 ]; ok $? "an old [admin_api] authority fails --check-config"
like "$out" "admin_api.authority: moved to [pool_api] authority" "... saying where it went"
like "$out" "load pool_api" "... and which module to load"
# A [pool_api] section with pool_api not loaded.
sed -e 's/^modules = .*/modules = store_sqlite, redis_ownership, admin_api/' \
  "$T/on.ini" >"$T/noload.ini"
out=$("$PROXYHOST" -c "$T/noload.ini" --check-config 2>&1); rc=$?
[ "$rc" -ne 0 ]; ok $? "a [pool_api] section without pool_api loaded fails --check-config"
like "$out" "pool_api" "... naming the section"
printf '%s\n' "$out" | sed 's/^/# /' | head -3
stop_redis "$T/redis"
done_testing

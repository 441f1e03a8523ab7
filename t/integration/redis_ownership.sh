#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# redis_ownership in a real proxyhost (the controller role's authority)
# against a private redis-server with a password: /readyz follows the
# Redis connection (down: 503, fail closed; back: 200), the password is
# redacted and never logged or exported, the metrics follow the prefix
# scheme (proxyhost_cp_redis_*), a unix socket address works, and the
# process stops cleanly.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
require_modules redis_ownership
PY=${PYTHON3:-python3}
REDIS_PASSWORD=redis-auth-Pq72mz
export REDIS_PASSWORD

start_redis "$T/redis" || { ok 1 "redis-server starts"; done_testing; exit 1; }
ok 0 "redis-server starts (requirepass)"
admin=$(free_port)
cat >"$T/c.ini" <<EOC
[proxyhost]
modules = redis_ownership
module_path = $top_builddir/modules
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[redis_ownership]
# a new Redis for this test: no gateway can hold an ownership it forgot
hold_fresh_state = false
address = 127.0.0.1:$REDIS_PORT
cluster_id = it
command_timeout = 300ms
reconnect.min = 50ms
reconnect.max = 300ms
EOC
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
not_ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 503 ]; }

out=$(PROXYHOST_REDIS_OWNERSHIP_PASSWORD=$REDIS_PASSWORD "$PROXYHOST" -c "$T/c.ini" --print-config 2>&1)
like "$out" "password = [redacted]" "the password is redacted in --print-config"
unlike "$out" "$REDIS_PASSWORD" "... and not printed"

PROXYHOST_REDIS_OWNERSHIP_PASSWORD=$REDIS_PASSWORD start_proxyhost "$T/c.ini"
pid=$PH_PID
wait_for ready "$admin"; ok $? "connected with AUTH: /readyz is 200"
http_get "http://127.0.0.1:$admin/metrics" >/dev/null
cp "$T/body" "$T/metrics.txt"
like "$(cat "$T/metrics.txt")" "proxyhost_cp_redis_connected 1" "proxyhost_cp_redis_connected is 1"
"$PY" "$top_srcdir/t/lib/metrics_lint.py" "$T/metrics.txt" 600 cp_redis >"$T/lint.out" 2>&1
ok $? "the metrics are in the prefix scheme (proxyhost_cp_redis_*)"
sed 's/^/#   /' "$T/lint.out" | head -5

stop_redis "$T/redis"
wait_for not_ready "$admin"; ok $? "Redis stopped: /readyz is 503 (fail closed)"
restart_redis "$T/redis" || ok 1 "redis-server restarts"
wait_for ready "$admin"; ok $? "Redis back: /readyz is 200 again"

kill -TERM "$pid"
wait_exit "$pid" 10; is "$EXIT" 0 "stops cleanly"

# A unix socket address.
PROXYHOST_REDIS_OWNERSHIP_PASSWORD=$REDIS_PASSWORD start_proxyhost "$T/c.ini" \
  --set "redis_ownership.address=$T/redis/redis.sock"
pid=$PH_PID
wait_for ready "$admin"; ok $? "a unix socket address: connected, /readyz is 200"
kill -TERM "$pid"
wait_exit "$pid" 10; is "$EXIT" 0 "stops cleanly"

# A wrong password: refused by Redis, never ready, never logged.
PROXYHOST_REDIS_OWNERSHIP_PASSWORD=wrong-pass-Hh31 start_proxyhost "$T/c.ini"
pid=$PH_PID
wait_for healthy "$admin"; ok $? "with a wrong password the host runs (healthy)"
wait_for grep -q "redis refused the handshake" "$T/ph.log"
ok $? "the refusal is logged"
not_ready "$admin"; ok $? "... and it is not ready"
unlike "$(cat "$T/ph.log")" "wrong-pass-Hh31" "the wrong password is not logged"
unlike "$(cat "$T/ph.log")" "$REDIS_PASSWORD" "the password is never logged"
kill -TERM "$pid"
wait_exit "$pid" 10; is "$EXIT" 0 "stops cleanly"
stop_redis "$T/redis"
done_testing

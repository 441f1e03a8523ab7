#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# docs/api/openapi.yaml and the routes admin_api and pool_api serve agree
# (t/lib/openapi_check.py over admin_api's GET /v1/routes and pool_api's
# GET /v1/pool, each module's own route table), and every documented route
# answers from its module in a real process (both over store_sqlite):
# without the admin token each is a 401 with the Error shape, not the
# host's 404 or 405. Each module serves only its own prefix: loaded
# alone, the other's routes are the host's 404 (issue 25 item 6).
. "$top_srcdir/t/lib/testlib.sh"
require_modules admin_api pool_api store_sqlite
PY=${PYTHON3:-python3}
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "1..0 # SKIP PyYAML missing (Debian python3-yaml, scripts/install-deps.sh)"
  exit 0
fi

port=$(free_port)
"$top_builddir/tools/proxyhostctl" admin-token new "$T/admin.token" >/dev/null
# run_ini FILE MODULES: admin_api and/or pool_api over store_sqlite.
run_ini() {
  {
    printf '[proxyhost]\nmodules = store_sqlite, %s\n' "$2"
    printf 'module_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n' \
      "$top_builddir/modules" "$port"
    printf '[store_sqlite]\npath = %s\n' "$T/pool.db"
    for m in admin_api pool_api; do
      case ", $2," in *", $m,"*)
        printf '[%s]\nstore = store_sqlite\ntoken_file = %s\n' "$m" "$T/admin.token" ;;
      esac
    done
  } >"$1"
}
run_ini "$T/run.ini" "admin_api, pool_api"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with admin_api and pool_api starts"
url="http://127.0.0.1:$port"
auth="Authorization: Bearer $(cat "$T/admin.token")"
"$CURL" -s -m 5 -H "$auth" "$url/v1/routes" >"$T/routes.json"
like "$(cat "$T/routes.json")" '"routes":[' "GET /v1/routes answers admin_api's route table"
unlike "$(cat "$T/routes.json")" '/v1/pool' "... without the pool's routes"
"$CURL" -s -m 5 -H "$auth" "$url/v1/pool" >"$T/pool_routes.json"
like "$(cat "$T/pool_routes.json")" '{"method":"GET","path":"/v1/pool/proxies"}' \
  "GET /v1/pool answers pool_api's route table"
unlike "$(cat "$T/pool_routes.json")" '/v1/users' "... without admin_api's"

"$PY" "$top_srcdir/t/lib/openapi_check.py" "$top_srcdir/docs/api/openapi.yaml" \
  "$T/routes.json" "$T/pool_routes.json" >"$T/check.out" 2>&1
i=0
while IFS= read -r line; do
  i=$((i + 1))
  case $line in
  "not ok "*) ok 1 "TM-DOC-8 openapi: ${line#not ok * - }" ;;
  "ok "*) ok 0 "TM-DOC-8 openapi: ${line#ok * - }" ;;
  "#   "*) printf '%s\n' "$line" ;;
  esac
done <"$T/check.out"
like "$(cat "$T/check.out")" "# checks" "openapi_check.py ran to the end"

# Every documented route, with its parameters filled in, reaches the module.
"$PY" - "$top_srcdir/docs/api/openapi.yaml" >"$T/ops" <<'PYEOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for path, item in doc["paths"].items():
    if item.get("x-served-by") == "host":
        continue  # the host's /v1/status: t/integration/status_page.sh
    for m in item:
        if m in ("get", "post", "patch", "delete"):
            p = path.replace("{name}", "alice").replace("{id}", "tok_0000000000000001")
            print(m.upper(), p)
PYEOF
while read -r m p; do
  out=$("$CURL" -s -m 5 -X "$m" -w ' %{http_code}' "$url$p")
  like "$out" '{"error":{"code":"unauthorized","message":' "$m $p without the token: the module's JSON error"
  like "$out" " 401" "$m $p without the token: 401"
done <"$T/ops"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"

# Each module alone: its own prefix only; the other's is the host's 404.
for pair in "admin_api:/v1/pool/proxies:/v1/users" "pool_api:/v1/users:/v1/pool/proxies"; do
  mod=${pair%%:*} rest=${pair#*:}
  other=${rest%%:*} own=${rest#*:}
  run_ini "$T/one.ini" "$mod"
  start_proxyhost "$T/one.ini"
  wait_for healthy "$port"; ok $? "$mod alone starts"
  is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -H "$auth" "$url$own")" 200 \
    "$mod alone: GET $own 200"
  out=$("$CURL" -s -m 5 -w ' %{http_code}' -H "$auth" "$url$other")
  like "$out" " 404" "$mod alone: GET $other is the host's 404"
  unlike "$out" '"error":{' "... not a module's JSON error"
  kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "$mod alone stops cleanly"
done
done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# docs/api/openapi.yaml and the routes admin_api serves agree
# (t/lib/openapi_check.py over GET /v1/routes, the module's own route
# table), and every documented route answers from the module in a real
# process: without the admin token each is a 401 with the Error shape,
# not the host's 404 or 405.
. "$top_srcdir/t/lib/testlib.sh"
require_modules admin_api
PY=${PYTHON3:-python3}
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "1..0 # SKIP PyYAML missing (Debian python3-yaml, scripts/install-deps.sh)"
  exit 0
fi

port=$(free_port)
"$top_builddir/tools/proxyhostctl" admin-token new "$T/admin.token" >/dev/null
admin_api_conf "$T/run.ini" "$port"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with admin_api starts"
url="http://127.0.0.1:$port"
"$CURL" -s -m 5 -H "Authorization: Bearer $(cat "$T/admin.token")" \
  "$url/v1/routes" >"$T/routes.json"
like "$(cat "$T/routes.json")" '"routes":[' "GET /v1/routes answers the route table"

"$PY" "$top_srcdir/t/lib/openapi_check.py" "$top_srcdir/docs/api/openapi.yaml" \
  "$T/routes.json" >"$T/check.out" 2>&1
i=0
while IFS= read -r line; do
  i=$((i + 1))
  case $line in
  "not ok "*) ok 1 "openapi: ${line#not ok * - }" ;;
  "ok "*) ok 0 "openapi: ${line#ok * - }" ;;
  "#   "*) printf '%s\n' "$line" ;;
  esac
done <"$T/check.out"
like "$(cat "$T/check.out")" "# checks" "openapi_check.py ran to the end"

# Every documented route, with its parameters filled in, reaches the module.
"$PY" - "$top_srcdir/docs/api/openapi.yaml" >"$T/ops" <<'PYEOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for path, item in doc["paths"].items():
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
done_testing

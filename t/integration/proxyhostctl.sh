#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# proxyhostctl against a real proxyhost running admin_api over an
# authz.store: the steps of docs/operations/authorization.md ("Managing
# users, tokens, agents and policies") from an empty store to working
# credentials (a user, a client token, an agent, an agent token, a
# policy; list, rotate, disable, revoke), the bearer printed once, the
# readable tables and --json, every exit status (0, 1, 2, 3), the admin
# token file's rules, and no secret in the host's log. It runs once over
# fakeaz (the in-memory test store) and once over store_sqlite (a real
# SQLite database made at the first start) when that module is built;
# STORES overrides the list.
. "$top_srcdir/t/lib/testlib.sh"
require_modules admin_api

CTL="$top_builddir/tools/proxyhostctl"
port=$(free_port)
ctl() { "$CTL" --admin "127.0.0.1:$port" --token-file "$T/admin.token" "$@"; }

out=$("$CTL" admin-token new "$T/admin.token"); rc=$?
is "$rc" 0 "admin-token new: exit 0"
like "$out" "admin token written to $T/admin.token (mode 0600)" "... says where"
is "$(stat -c %a "$T/admin.token")" 600 "... the file is mode 0600"
is "$(wc -c <"$T/admin.token" | tr -d ' ')" 65 "... 64 hex characters and a newline"
"$CTL" admin-token new "$T/admin.token" >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "admin-token new over an existing file: exit 2"
like "$(cat "$T/err")" "File exists (remove it first" "... it is never overwritten"

run_store() {
STORE=$1
echo "# ---- over $STORE"
port=$(free_port)
store_conf=""
case $STORE in
store_sqlite) rm -f "$T"/authz.db*; store_conf="[store_sqlite]
path = $T/authz.db" ;;
esac
cat >"$T/run.ini" <<EOC
[proxyhost]
modules = $STORE, admin_api
module_path = $TMOD, $top_builddir/modules
[admin]
listen = 127.0.0.1:$port
[admin_api]
store = $STORE
token_file = $T/admin.token
$store_conf
EOC
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with $STORE and admin_api starts"

# From nothing to working credentials.
out=$(ctl user create alice); rc=$?
is "$rc" 0 "user create alice: exit 0"
like "$out" "name         alice" "... prints the record"
out=$(ctl token create --user alice); rc=$?
is "$rc" 0 "token create (a client token): exit 0"
like "$out" "This bearer token is shown once and will not be shown again" \
  "... says the secret is shown once"
bearer=$(printf '%s\n' "$out" | sed -n 's/^bearer  *//p')
tok=${bearer%%.*}
like "$tok" "tok_" "... the bearer starts with the token id ($tok)"
[ "${#bearer}" -gt 40 ]; ok $? "... and carries a secret after it"
out=$(ctl agent create edge-1 --owner alice); rc=$?
is "$rc" 0 "agent create edge-1 --owner alice"
out=$(ctl token create --user alice --agent edge-1); rc=$?
is "$rc" 0 "token create --agent (an agent token)"
like "$out" "scopes       agent" "... with the agent scope"
agent_bearer=$(printf '%s\n' "$out" | sed -n 's/^bearer  *//p')
out=$(ctl policy create --agent edge-1 --token "$tok" --host '*.example.com' --ports 443); rc=$?
is "$rc" 0 "policy create"
pol=$(printf '%s\n' "$out" | sed -n 's/^id  *//p')
like "$pol" "pol_" "... its id ($pol)"

# Lists: tables by default, JSON with --json, never a secret.
out=$(ctl token list --user alice); rc=$?
is "$rc" 0 "token list"
like "$out" "ID" "... a table with a header"
like "$out" "$tok" "... the client token"
unlike "$out" "${bearer#*.}" "... and not its secret"
out=$(ctl --json token show "$tok")
like "$out" "{\"id\":\"$tok\"" "token show --json: the server's JSON"
unlike "$out" "${bearer#*.}" "... without the secret"
out=$(ctl policy list --agent edge-1)
like "$out" "*.example.com" "policy list shows the host pattern"
like "$(ctl user list)" "alice" "user list"
like "$(ctl agent list --owner alice)" "edge-1" "agent list --owner"

# access check: what the store's access service answers a stream open
# (store_sqlite provides one; fakeaz has none: 503).
if [ "$STORE" = store_sqlite ]; then
  out=$(ctl --json access check --token "$tok" --agent edge-1 --host www.example.com --port 443); rc=$?
  is "$rc" 0 "access check: exit 0"
  like "$out" '"verdict":"allow","code":"ok"' "... the policy allows www.example.com:443"
  out=$(ctl --json access check --token "$tok" --agent edge-1 --host www.example.com --port 80); rc=$?
  like "$out" '"verdict":"deny","code":"forbidden"' "... not port 80"
  is "$rc" 4 "issue 28: a deny exits 4 (scripts can test the verdict)"
  like "$(ctl --json access check --token "$tok" --agent edge-1 --host example.com --port 443)" \
    '"verdict":"deny"' "... nor example.com itself (the pattern is *.example.com)"
  like "$(ctl access check --token "$tok" --agent edge-1 --host www.example.com --port 443)" \
    "verdict" "... a readable record without --json"
  ctl access check --token "$tok" --agent edge-1 --host WWW.example.com --port 443 >/dev/null 2>&1
  is $? 2 "... a host not in normal form is a usage error"
  is "$("$CURL" -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$T/admin.token")" \
    "http://127.0.0.1:$port/v1/authorize?token=$tok&agent=edge-1&host=www.example.com.&port=443")" 400 \
    "... and 400 from the API (a trailing dot)"
  is "$("$CURL" -s -o /dev/null -w '%{http_code}' \
    "http://127.0.0.1:$port/v1/authorize?token=$tok&agent=edge-1&host=www.example.com&port=443")" 401 \
    "... 401 without the admin token"
else
  ctl access check --token "$tok" --agent edge-1 --host www.example.com --port 443 >/dev/null 2>&1
  is $? 1 "access check over a store without access: refused (503)"
fi

# Rotate, disable, revoke.
out=$(ctl token rotate "$tok"); rc=$?
is "$rc" 0 "token rotate"
new_bearer=$(printf '%s\n' "$out" | sed -n 's/^bearer  *//p')
[ -n "$new_bearer" ] && [ "$new_bearer" != "$bearer" ]; ok $? "... a new bearer, printed once"
like "$out" "will not be shown again" "... with the notice"
like "$(ctl agent disable edge-1)" "enabled      no" "agent disable"
like "$(ctl user disable alice)" "enabled      no" "user disable"
like "$(ctl user enable alice)" "enabled      yes" "user enable"
out=$(ctl token revoke "$tok"); rc=$?
is "$rc" 0 "token revoke"
unlike "$out" "revoked_at   -" "... revoked_at set"
like "$(ctl token set-expiry "${agent_bearer%%.*}" 1900000000)" "expires_at   2030-03-17" "token set-expiry"
like "$(ctl token set-scopes "${agent_bearer%%.*}" agent,stream)" "stream" "token set-scopes"
like "$(ctl policy update "$pol" --ports 80-8080)" "port_max     8080" "policy update --ports"

# Exit statuses.
ctl user create alice >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "a taken name: exit 1"
like "$(cat "$T/err")" "error: 409 conflict:" "... the server's error on stderr"
ctl user delete alice >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "delete a user that owns an agent: exit 1"
like "$(cat "$T/err")" "409 busy" "... busy"
ctl policy create --agent edge-1 --user alice --host '*' --ports 0 >/dev/null 2>&1; rc=$?
is "$rc" 2 "a bad port: exit 2, nothing sent"
ctl user frobnicate >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "an unknown subcommand: exit 2"
# issue 28: an error is one line and a hint, not the whole usage
is "$(wc -l <"$T/err" | tr -d ' ')" 2 "... said in one line and a hint"
like "$(cat "$T/err")" "proxyhostctl --help" "... the hint names --help"
ctl frobnicate >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "an unknown command: exit 2"
like "$(head -1 "$T/err")" 'unknown command "frobnicate"' "... naming it"
"$CTL" --admin "nonsense::" --token-file "$T/admin.token" user list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "issue 28: a malformed --admin is a usage error: exit 2, nothing sent"
like "$(cat "$T/err")" 'bad admin address "nonsense::"' "... naming it"
"$CTL" --admin "127.0.0.1:$port" --admin-token xyz user list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "a token on the command line is refused: exit 2"
like "$(cat "$T/err")" "use --token-file FILE" "... pointing at the file"
dead=$(free_port)
"$CTL" --admin "127.0.0.1:$dead" --token-file "$T/admin.token" user list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 3 "nothing listening: exit 3"
like "$(cat "$T/err")" "cannot reach the admin listener at 127.0.0.1:$dead" "... says so"
PROXYHOSTCTL_ADMIN="127.0.0.1:$port" PROXYHOSTCTL_TOKEN_FILE="$T/admin.token" \
  "$CTL" user show alice >/dev/null; rc=$?
is "$rc" 0 "PROXYHOSTCTL_ADMIN and PROXYHOSTCTL_TOKEN_FILE"
printf 'wrong-token-wrong-token-wrong-token-x\n' >"$T/wrong.token"; chmod 600 "$T/wrong.token"
"$CTL" --admin "127.0.0.1:$port" --token-file "$T/wrong.token" user list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "a wrong admin token: exit 1"
like "$(cat "$T/err")" "401 unauthorized" "... 401"
# This host loads admin_api alone: the pool's routes are pool_api's (issue
# 25 item 6). proxyhostctl gets the host's 404 and says what to load.
ctl proxy list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "proxy list without pool_api: exit 1"
like "$(cat "$T/err")" "error: the server answered 404" "... the host's 404"
like "$(cat "$T/err")" "/v1/pool/... is the pool_api module's" "... and a hint naming pool_api"
ctl user show nobody >/dev/null 2>"$T/err"
unlike "$(cat "$T/err")" "hint:" "a module's own 404 gives no hint"
chmod 644 "$T/wrong.token"
"$CTL" --admin "127.0.0.1:$port" --token-file "$T/wrong.token" user list >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "a world-readable token file: exit 2"
like "$(cat "$T/err")" "chmod 600" "... with the fix"
out=$("$CTL" --help); rc=$?
is "$rc" 0 "--help: exit 0"
like "$out" "Exit status: 0 done, 1 refused by the server, 2 usage, 3" "--help documents the exit statuses"

# Clean up what was made, then check the log for secrets.
is "$(ctl policy delete "$pol")" "deleted" "policy delete"
ctl agent delete edge-1 >/dev/null; ok $? "agent delete"
ctl user delete alice >/dev/null; ok $? "user delete"
out=$(ctl --json user list)
like "$out" "\"items\":[]" "the store is empty again"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "proxyhost stops cleanly"
unlike "$(cat "$T/ph.log")" "${bearer#*.}" "no bearer secret in the host's log"
unlike "$(cat "$T/ph.log")" "$(cat "$T/admin.token")" "nor the admin token"

}

if [ -z "${STORES:-}" ]; then
  STORES=fakeaz
  if have_module store_sqlite; then STORES="$STORES store_sqlite"
  else skip "store_sqlite not built: proxyhostctl runs over fakeaz only"; fi
fi
for s in $STORES; do run_store "$s"; done
done_testing

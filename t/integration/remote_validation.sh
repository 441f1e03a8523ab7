#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# remote_validation in a real proxyhost: socks5 and http_proxy with
# auth_local (auth = password), remote_validation and direct, against the
# loopback endpoint t/lib/validation_endpoint.py (which allows users named
# allow*, denies deny*). curl through both frontends with known
# credentials and a known target: allowed and denied streams, the
# forbidden answers (SOCKS5 0x02, HTTP 403), the endpoint seeing the
# documented JSON and one connection, the metrics; then, at debug level,
# the log, /metrics and the SOCKS5 replies searched for the username, the
# password and the target: absent (TM-TEST-30, TM-P1-39). The
# configuration checks: an http endpoint off loopback, user information in
# the URL, a frontend naming no such provider; an empty endpoint is a
# pass-through.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"

require_modules socks5 http_proxy direct remote_validation auth_local
[ -x "$top_builddir/tools/proxyhost-passwd" ] || {
  echo "1..0 # SKIP proxyhost-passwd not built"
  exit 0
}

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }
ep_stats() { http_get "http://127.0.0.1:$ep_port/stats" | sed -n 2p; }

# Names no other text of the test carries, to search for.
USER_OK=allow-rvuser7
USER_NO=deny-rvuser8
PASS=Pw-rv-s3cret-91
TARGET=rvtarget.test

start_dnsd "$TARGET=127.0.0.1"; ok $? "DNS test server on loopback"
start_file_server "$T/www" "hello through validation"
ok $? "HTTP target on 127.0.0.1"
http_port=$FILE_SERVER_PORT

/usr/bin/python3 "$top_srcdir/t/lib/validation_endpoint.py" \
  --port-file "$T/ep.port" --lifetime 300 >"$T/ep.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/ep.port"; ok $? "the validation endpoint on loopback"
ep_port=$(cat "$T/ep.port")

hash=$(password_hash "$PASS")
admin=$(free_port)
sport=$(free_port)
hport=$(free_port)
write_conf() { # write_conf FILE ENDPOINT
  cat >"$1" <<EOC
[proxyhost]
modules = auth_local, remote_validation, socks5, http_proxy, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = debug
[socks5]
listen = 127.0.0.1:$sport
auth = password
validation = remote_validation
[http_proxy]
listen = 127.0.0.1:$hport
auth = password
validation = remote_validation
[direct]
resolver_servers = 127.0.0.1:$dns_port
[auth_local]
users = $USER_OK:$hash
users = $USER_NO:$hash
[remote_validation]
endpoint = $2
EOC
}

# ---- configuration checks -----------------------------------------------
write_conf "$T/bad.ini" "http://10.1.2.3:8080/validate"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "an http endpoint off loopback is refused (exit 2)"
like "$out" "remote_validation.endpoint" "... naming the key"
like "$out" "allow_plain_http" "... and the way out"
write_conf "$T/bad.ini" "https://u:p@validate.example/"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "user information in the URL is refused"
unlike "$out" "u:p@" "the refusal does not echo the URL's credentials"
write_conf "$T/bad.ini" "ftp://127.0.0.1/"
"$PROXYHOST" -c "$T/bad.ini" --check-config >/dev/null 2>&1
is "$?" 2 "a scheme other than http(s) is refused"
write_conf "$T/bad.ini" "https://validate.example/v1"
printf '[socks5]\nvalidation = nosuch\n' >>"$T/bad.ini"
out=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a frontend naming no validation provider is refused"
like "$out" "socks5.validation" "... naming the key"
write_conf "$T/ok.ini" "https://validate.example/v1"
"$PROXYHOST" -c "$T/ok.ini" --check-config >/dev/null 2>&1
is "$?" 0 "an https endpoint passes --check-config"

# ---- the proxy -------------------------------------------------------------
write_conf "$T/rv.ini" "http://127.0.0.1:$ep_port/validate"
start_proxyhost "$T/rv.ini"
PID=$PH_PID
wait_for healthy "$admin"; ok $? "proxyhost with remote_validation is healthy"
wait_for port_open "$sport"

out=$("$CURL" -s -m 10 --noproxy '' \
  --proxy "socks5h://$USER_OK:$PASS@127.0.0.1:$sport" \
  "http://$TARGET:$http_port/hello.txt" 2>&1)
is "$out" "hello through validation" "SOCKS5: the endpoint allows: the stream opens"
$PROBE reply --proxy "127.0.0.1:$sport" --target "$TARGET:$http_port" \
  --auth "$USER_NO:$PASS" >"$T/reply_no" 2>&1
is "$(cat "$T/reply_no")" 0x02 "SOCKS5: the endpoint denies: reply 0x02 (not allowed)"
$PROBE reply --proxy "127.0.0.1:$sport" --target "$TARGET:$http_port" \
  --auth "$USER_OK:$PASS" >"$T/reply_ok" 2>&1
is "$(cat "$T/reply_ok")" 0x00 "SOCKS5: allowed again (from the cache)"
code=$("$CURL" -s -m 10 -o /dev/null -w '%{http_code}' --noproxy '' \
  --proxy "http://$USER_OK:$PASS@127.0.0.1:$hport" \
  "http://$TARGET:$http_port/hello.txt")
is "$code" 200 "HTTP: the endpoint allows: 200"
code=$("$CURL" -s -m 10 -o /dev/null -w '%{http_code}' --noproxy '' \
  --proxy "http://$USER_NO:$PASS@127.0.0.1:$hport" \
  "http://$TARGET:$http_port/hello.txt")
is "$code" 403 "HTTP: the endpoint denies: 403"
code=$("$CURL" -s -m 10 -o /dev/null -w '%{http_code}' --noproxy '' \
  --proxy "http://$USER_OK:$PASS@127.0.0.1:$hport" -p \
  "http://$TARGET:$http_port/hello.txt")
is "$code" 200 "HTTP CONNECT: allowed"

s=$(ep_stats)
like "$s" "bad=0" "the endpoint got the documented JSON every time ($s)"
like "$s" "connections=1 " "one kept-alive connection to the endpoint"

m=$(metrics_of "$admin")
hits=$(metric "$m" 'tunnelmesh_remote_validation_cache_requests_total{cache="hit"}')
[ "${hits:-0}" -ge 1 ]; ok $? "TM-OBS-9: cache hits counted ($hits)"
like "$m" 'proxyhost_remote_validation_requests_total{result="deny"}' \
  "requests counted by result"
like "$m" 'stage="remote_validation",result="rejected"' \
  "TM-OBS-11: the remote_validation stage, rejected for the deny"
like "$m" 'error_class="forbidden"' "the deny is an open refused as forbidden"
printf '%s\n' "$m" >"$T/metrics.txt"
"$PY" "$top_srcdir/t/lib/metrics_lint.py" "$T/metrics.txt" 1000 socks5 \
  http_proxy direct auth_local remote_validation >"$T/lint.log" 2>&1
ok $? "the scrape passes metrics_lint.py: $(tail -1 "$T/lint.log")"

# ---- TM-TEST-30: nothing identifying anywhere -------------------------------
kill -TERM "$PID"
wait_exit "$PID" 10; is "$EXIT" 0 "proxyhost exits 0"
like "$(cat "$T/ph.log")" "level=debug" "the log is at debug level"
for where in "$T/ph.log" "$T/metrics.txt" "$T/reply_no" "$T/reply_ok"; do
  w=$(basename "$where")
  unlike "$(cat "$where")" "$PASS" "TM-TEST-30: no password in $w"
  unlike "$(cat "$where")" "$TARGET" "TM-TEST-30: no target in $w"
done
for where in "$T/metrics.txt" "$T/reply_no" "$T/reply_ok"; do
  unlike "$(cat "$where")" "rvuser" "TM-TEST-30: no username in $(basename "$where")"
done
# The frontends' access line names the authenticated principal (user=, by
# its design, TM-SEC: never a credential); nothing else does, and no line
# of remote_validation.
unlike "$(grep -v ' msg=access ' "$T/ph.log")" "rvuser" \
  "TM-TEST-30: no username in the log but the access lines' user="
unlike "$(grep ' msg=access ' "$T/ph.log" | sed 's/ user=[^ ]*//')" "rvuser" \
  "TM-TEST-30: ... and only there"
like "$(cat "$T/ph.log")" 'module=remote_validation msg="remote validation answer" result=deny' \
  "remote_validation's own debug lines are among those searched"
unlike "$(cat "$T/ph.log")" "/validate" "TM-P1-39: the endpoint URL is not logged per request"

# ---- an empty endpoint: a pass-through ---------------------------------------
write_conf "$T/off.ini" ""
: >"$T/ph.log"
start_proxyhost "$T/off.ini"
PID=$PH_PID
wait_for healthy "$admin"; ok $? "with an empty endpoint"
wait_for port_open "$sport"
before=$(ep_stats)
out=$("$CURL" -s -m 10 --noproxy '' \
  --proxy "socks5h://$USER_NO:$PASS@127.0.0.1:$sport" \
  "http://$TARGET:$http_port/hello.txt" 2>&1)
is "$out" "hello through validation" "TM-P1-35: every stream passes"
is "$(ep_stats)" "$before" "TM-P1-35: ... without a request"
m=$(metrics_of "$admin")
like "$m" 'tunnelmesh_remote_validation_cache_requests_total{cache="bypass"} 1' \
  "TM-OBS-16: counted as bypass"
kill -TERM "$PID"
wait_exit "$PID" 10; is "$EXIT" 0 "proxyhost exits 0"

done_testing

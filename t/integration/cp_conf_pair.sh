#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The two shipped control-plane roles talk to each other as shipped
# (issue 24): conf/controller.ini and conf/gateway.ini, copied as an
# operator would and changed only where a deployment must, with the
# certificates made now by openssl at the names docs/user-guide/
# controller.md and gateway.md give ("A production layout"): one CA
# (ca.pem on the controller's host, controller-ca.pem on the gateway's),
# the controller's server certificate, the gateway's client certificate
# whose URI SAN is spiffe://example.org/prod/worker/w7 (the worker id of
# conf/gateway.ini's example). The substitutions, with sed on the copies:
#   /etc/proxyhost, /var/lib/proxyhost  -> under $T/root
#   the listeners (admin, gRPC, HTTP, SOCKS5) -> free ports on 127.0.0.1
#   [redis_ownership] address           -> the test's redis-server
# and the controller's certificate names 127.0.0.1 (IP SAN), the address
# the gateway dials, where production names cp.example.org. Every other
# key is the shipped one (timers too: the first assignment waits one
# ownership_lease, 30 s, on a new Redis).
# Then: the gateway registers over mTLS, takes its snapshot, is given the
# pool's one proxy (microsocks with a password from secrets_dir) and is
# ready; curl through its HTTP proxy and its SOCKS5 listener reaches a
# target through that proxy.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api \
  controlplane_client outcome_reporter pool round_robin weighted least_active \
  random sticky http_proxy socks5 direct

CTL="$top_builddir/tools/proxyhostctl"
PW=pw-Pair-Never-Logged-6b1f
R=$T/root
TAP_ON_FAIL='grep -q "127.0.0.1" "$T/microsocks.log"
ok $? "microsocks logged the streams it carried" || sed 's/^/# /' "$T/microsocks.log"
for f in ctl gw; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -8; done'

command -v microsocks >/dev/null 2>&1
ok $? "microsocks is installed (scripts/install-deps.sh)"
start_redis "$T/redis"; ok $? "redis-server starts"

# ---- the certificates, as controller.md makes them ---------------------------
mkdir -p "$T/pki" "$R/etc/proxyhost/tls" "$R/etc/proxyhost/secrets" "$R/var/lib/proxyhost"
(
  cd "$T/pki" || exit 1
  q() { "$@" >>"$T/openssl.log" 2>&1; }
  q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 2 -subj /CN=proxyhost-cp-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign || exit 1
  leaf() {
    q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" &&
      printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$2" "$3" >"$1.cnf" &&
      q openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out "$1.pem" -days 2 -extfile "$1.cnf"
  }
  leaf controller 'IP:127.0.0.1' serverAuth &&
    leaf w7 'URI:spiffe://example.org/prod/worker/w7' clientAuth &&
    chmod 0600 ./*.key
)
ok $? "openssl made the CA, the controller's and worker w7's certificates"
# The controller's host.
install -m 0644 "$T/pki/controller.pem" "$R/etc/proxyhost/tls/controller.pem"
install -m 0600 "$T/pki/controller.key" "$R/etc/proxyhost/tls/controller.key"
install -m 0644 "$T/pki/ca.pem" "$R/etc/proxyhost/tls/ca.pem"
chmod 0700 "$R/etc/proxyhost/secrets"
(umask 077 && printf 'bob:%s\n' "$PW" >"$R/etc/proxyhost/secrets/upstream-a")
"$CTL" admin-token new "$R/var/lib/proxyhost/admin.token" >/dev/null
ok $? "proxyhostctl admin-token new"
# The gateway's host.
install -m 0644 "$T/pki/w7.pem" "$R/etc/proxyhost/gateway.pem"
install -m 0600 "$T/pki/w7.key" "$R/etc/proxyhost/gateway.key"
install -m 0644 "$T/pki/ca.pem" "$R/etc/proxyhost/controller-ca.pem"

# ---- the shipped files, copied and changed where a deployment must -----------
adm=$(free_port) cpp=$(free_port) gwa=$(free_port) hp=$(free_port) sp=$(free_port)
sed -e "/^[^;]/s|/etc/proxyhost|$R/etc/proxyhost|g" -e "/^[^;]/s|/var/lib/proxyhost|$R/var/lib/proxyhost|g" \
  -e "s|^listen = 127.0.0.1:9470\$|listen = 127.0.0.1:$adm|" \
  -e "s|^listen = 0.0.0.0:7443\$|listen = 127.0.0.1:$cpp|" \
  -e "s|^address = 127.0.0.1:6379\$|address = 127.0.0.1:$REDIS_PORT|" \
  "$top_srcdir/conf/controller.ini" >"$T/controller.ini"
sed -e "/^[^;]/s|/etc/proxyhost|$R/etc/proxyhost|g" \
  -e "s|^listen = 127.0.0.1:9481\$|listen = 127.0.0.1:$gwa|" \
  -e "s|^listen = 127.0.0.1:8080\$|listen = 127.0.0.1:$hp|" \
  -e "s|^listen = 127.0.0.1:1080\$|listen = 127.0.0.1:$sp|" \
  "$top_srcdir/conf/gateway.ini" >"$T/gateway.ini"
# Exactly the listed lines differ from the shipped files.
n=$(diff "$top_srcdir/conf/controller.ini" "$T/controller.ini" | grep -c '^>')
is "$n" 10 "controller.ini: 10 lines changed (2 listeners, Redis, 7 paths: admin_api and pool_api share the admin token)"
n=$(diff "$top_srcdir/conf/gateway.ini" "$T/gateway.ini" | grep -c '^>')
is "$n" 6 "gateway.ini: 6 lines changed (3 listeners, 3 paths)"
grep -q '^tls.mode = mtls$' "$T/controller.ini" && grep -q '^tls.mode = mtls$' "$T/gateway.ini"
ok $? "both are mTLS as shipped"

IDS="-control-plane 127.0.0.1:$cpp -cluster-id prod -worker-id w7 -instance-id w7-$(hostname) -zone eu-1"
out=$("$PROXYHOST" -c "$T/controller.ini" --check-config 2>&1)
ok $? "conf/controller.ini passes --check-config" || echo "# $out"
# shellcheck disable=SC2086 # $IDS is split on purpose
out=$("$PROXYHOST" -c "$T/gateway.ini" $IDS --check-config 2>&1)
ok $? "conf/gateway.ini passes --check-config with conf/gateway.ini's flags" || echo "# $out"

# ---- run them ------------------------------------------------------------------
"$PROXYHOST" -c "$T/controller.ini" >>"$T/ctl.log" 2>&1 &
PIDS="$PIDS $!"
status_of() { http_get "http://127.0.0.1:$1/readyz" | head -1; }
ready() { [ "$(status_of "$1")" = 200 ]; }
wait_long ready "$adm"; ok $? "the controller is ready (SQLite, Redis, its mTLS gRPC server)"
ctl() { "$CTL" --admin "127.0.0.1:$adm" --token-file "$R/var/lib/proxyhost/admin.token" "$@" >>"$T/ctl.out" 2>&1; }
upp=$(free_port)
microsocks -i 127.0.0.1 -p "$upp" -u bob -P "$PW" >"$T/microsocks.log" 2>&1 &
PIDS="$PIDS $!"
wait_for port_open "$upp"; ok $? "an upstream SOCKS5 proxy (microsocks, user bob) listens"
ctl credential add upstream-a &&
  ctl proxy add p1 --protocol socks5 --host 127.0.0.1 --port "$upp" \
    --groups residential --capacity 10 --secret-ref upstream-a &&
  ctl route add web --position 100 --host '*' --group residential --strategy round_robin
ok $? "the pool: credential upstream-a, proxy p1, route web (proxyhostctl)"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$T/gateway.ini" $IDS >>"$T/gw.log" 2>&1 &
PIDS="$PIDS $!"
registered() {
  m=$(http_get "http://127.0.0.1:$gwa/metrics")
  [ "$(metric "$m" 'proxyhost_cp_gateway_session_state{state="running"}')" = 1 ]
}
wait_long registered; ok $? "the gateway registered over mTLS: its session is running"
m=$(http_get "http://127.0.0.1:$adm/metrics")
like "$m" 'proxyhost_cp_controller_rpcs_total{method="RegisterWorker",code="OK"} 1' \
  "the controller answered its RegisterWorker OK"
# A new Redis: the first assignment waits one ownership_lease (30 s, the
# shipped default), then one assign_interval (5 s) and a snapshot.
wait_long ready "$gwa" || wait_long ready "$gwa" || wait_long ready "$gwa"
ok $? "the gateway is ready: its snapshot gives it p1"
like "$(curl -s -m 5 "http://127.0.0.1:$gwa/v1/cp/view")" '"proxy_id":"p1"' \
  "its view (GET /v1/cp/view) holds p1"

"${PYTHON3:-python3}" "$top_srcdir/t/lib/http_target.py" serve --port-file "$T/target.port" \
  --lifetime 120 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; tgt=$(cat "$T/target.port")
ok $? "an HTTP target on 127.0.0.1:$tgt"
got=$("$CURL" -s -m 10 -x "http://127.0.0.1:$hp" "http://127.0.0.1:$tgt/hello")
is "$got" "hello through http_proxy" "curl through the gateway's HTTP proxy reaches the target through p1"
got=$("$CURL" -s -m 10 --proxy "socks5h://127.0.0.1:$sp" "http://127.0.0.1:$tgt/hello")
is "$got" "hello through http_proxy" "... and through its SOCKS5 listener"
m=$(http_get "http://127.0.0.1:$gwa/metrics")
is "$(metric "$m" 'proxyhost_pool_opens_total{result="ok"}')" 2 \
  "the gateway's pool counted both opens ok (through an upstream)"
grep -q "127.0.0.1" "$T/microsocks.log"
ok $? "microsocks logged the streams it carried" || sed 's/^/# /' "$T/microsocks.log"
for f in ctl gw; do
  grep -q "$PW" "$T/$f.log"
  [ $? = 1 ]; ok $? "no upstream password in the $f log"
done

done_testing

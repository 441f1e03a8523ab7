#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The gateway's configuration (the 000 design's section 9, CP-9-1..9):
# conf/gateway.ini and the module's sample pass --check-config; the five
# identity keys are required and come from their flags (-control-plane,
# -cluster-id, -worker-id, -instance-id, -zone) or their PROXY_POOL_*
# environment names; mtls needs its three files; plaintext only to a
# loopback address (CP-9-9).
. "$top_srcdir/t/lib/testlib.sh"

MODS="$top_builddir/modules"
require_modules controlplane_client outcome_reporter

GW="$top_srcdir/conf/gateway.ini"
SET="--set proxyhost.module_path=$MODS"
IDS="-control-plane 127.0.0.1:7443 -cluster-id c1 -worker-id w1 -instance-id i1 -zone z1"

sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made with openssl"
TLS="--set controlplane_client.tls.cert_file=$T/worker.pem \
 --set controlplane_client.tls.key_file=$T/worker.key \
 --set controlplane_client.tls.ca_file=$T/ca.pem"

cp "$top_srcdir/modules/controlplane_client/controlplane_client.ini.sample" \
  "$T/s.ini"
printf '[proxyhost]\nmodule_path = %s\n' "$MODS" >>"$T/s.ini"
"$PROXYHOST" -c "$T/s.ini" --check-config >/dev/null 2>&1
is $? 0 "the sample passes --check-config"

# shellcheck disable=SC2086
out=$("$PROXYHOST" -c "$GW" $SET --check-config 2>&1); rc=$?
is "$rc" 2 "conf/gateway.ini without the identity is refused (CP-9-2)"
for k in address cluster_id worker_id instance_id zone; do
  like "$out" "controlplane_client.$k: required" "... $k is required"
done
# Refused by name, with the flag and the environment name to pass.
like "$out" "controlplane_client.cluster_id: required key is not set (flag -cluster-id, environment PROXY_POOL_CLUSTER_ID)" \
  "CP-9-3: no cluster id: refused, naming -cluster-id and PROXY_POOL_CLUSTER_ID"
like "$out" "controlplane_client.worker_id: required key is not set (flag -worker-id, environment PROXY_POOL_WORKER_ID)" \
  "CP-9-4: no worker id: refused, naming -worker-id and PROXY_POOL_WORKER_ID"
# Each one alone missing, the other four given: the process does not start.
for miss in cluster-id worker-id; do
  case $miss in
  cluster-id) ids="-control-plane 127.0.0.1:7443 -worker-id w1 -instance-id i1 -zone z1" id=CP-9-3 ;;
  *) ids="-control-plane 127.0.0.1:7443 -cluster-id c1 -instance-id i1 -zone z1" id=CP-9-4 ;;
  esac
  # shellcheck disable=SC2086
  out=$(timeout 30 "$PROXYHOST" -c "$GW" $SET $TLS $ids 2>&1); rc=$?
  is "$rc" 2 "$id: without -$miss the gateway does not start (exit 2)"
  like "$out" "(flag -$miss, environment PROXY_POOL_" "$id: ... and says which flag and environment name"
done

# The controller's address is only ever "address" (-control-plane): the
# gateway has no listen key to reuse for it (CP-9-1), in its table, its
# sample or conf/gateway.ini's section.
# shellcheck disable=SC2086
out=$("$PROXYHOST" -c "$GW" $SET $TLS $IDS \
  --set controlplane_client.listen=127.0.0.1:7443 --check-config 2>&1); rc=$?
is "$rc" 2 "CP-9-1: controlplane_client has no listen key (refused)"
like "$out" "controlplane_client.listen: unknown key" "CP-9-1: ... as an unknown key"
! grep -q '^[;# ]*listen' "$top_srcdir/modules/controlplane_client/controlplane_client.ini.sample"
ok $? "CP-9-1: the sample documents no listen key"
awk '/^\[/ { s = $0 } s == "[controlplane_client]" && /^listen/' "$GW" >"$T/gwlisten"
[ ! -s "$T/gwlisten" ]
ok $? "CP-9-1: conf/gateway.ini sets no listen in [controlplane_client]"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$GW" $SET $TLS $IDS --check-config >/dev/null 2>&1
is $? 0 "conf/gateway.ini with its flags and mtls files passes --check-config (CP-9-7)"

# shellcheck disable=SC2086
out=$("$PROXYHOST" -c "$GW" $SET $TLS -worker-id w7 --control-plane 127.0.0.1:7443 \
  -cluster-id c1 -instance-id i1 -zone z1 --print-config 2>&1)
like "$out" "worker_id = w7  ; from -worker-id" "-worker-id w7 sets worker_id (CP-9-2)"
like "$out" "address = 127.0.0.1:7443  ; from -control-plane" \
  "--control-plane sets address"
like "$out" "zone = z1  ; from -zone" "-zone sets zone"

# shellcheck disable=SC2086
out=$(PROXY_POOL_CONTROL_PLANE_ADDRESS=127.0.0.1:7444 PROXY_POOL_CLUSTER_ID=c2 \
  PROXY_POOL_WORKER_ID=w8 PROXY_POOL_INSTANCE_ID=i2 PROXY_POOL_ZONE=z2 \
  "$PROXYHOST" -c "$GW" $SET $TLS --print-config 2>&1)
like "$out" "address = 127.0.0.1:7444" "PROXY_POOL_CONTROL_PLANE_ADDRESS sets address"
like "$out" "cluster_id = c2" "PROXY_POOL_CLUSTER_ID sets cluster_id"
like "$out" "worker_id = w8" "PROXY_POOL_WORKER_ID sets worker_id"
like "$out" "instance_id = i2" "PROXY_POOL_INSTANCE_ID sets instance_id"
like "$out" "zone = z2" "PROXY_POOL_ZONE sets zone"

# shellcheck disable=SC2086
out=$(PROXY_POOL_WORKER_ID=w8 "$PROXYHOST" -c "$GW" $SET $TLS $IDS \
  --print-config 2>&1)
like "$out" "worker_id = w1  ; from -worker-id" "a flag wins over the environment"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$GW" $SET $IDS --set controlplane_client.tls.ca_file=$T/none.pem \
  --check-config >/dev/null 2>&1
is $? 2 "mtls without readable files is refused (CP-9-7)"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$GW" $SET -control-plane 192.0.2.1:7443 -cluster-id c1 \
  -worker-id w1 -instance-id i1 -zone z1 \
  --set controlplane_client.tls.mode=disabled --check-config >/dev/null 2>&1
is $? 2 "plaintext to a non-loopback address is refused (CP-9-9)"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$GW" $SET $IDS --set controlplane_client.tls.mode=disabled \
  --check-config >/dev/null 2>&1
is $? 0 "plaintext to a loopback address passes (CP-9-9)"

# shellcheck disable=SC2086
"$PROXYHOST" -c "$GW" $SET $TLS $IDS --set controlplane_client.backoff.min=10s \
  --set controlplane_client.backoff.max=1s --check-config >/dev/null 2>&1
is $? 2 "backoff.max below backoff.min is refused"

done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The relay's certificates renewed without a restart (issue 27, issue 23
# item 14; TM-PROTO-2): two servers a and b (store_pg on one private
# PostgreSQL, presence, relay over mutual TLS, relay.tls.ca trusting two
# CAs), an agent on b, a client on a, a stream relayed a -> b:
#   - b's certificate renewed (same CA, same node, a new subject CN) and
#     SIGHUP: a new TLS connection presenting a node certificate
#     (openssl s_client) is served the renewed one; the relayed stream
#     still works over the link made before; no link or session closed;
#     the reload logged and counted (proxyhost_tls_reloads_total
#     {module="tunnel_server",result="ok"});
#   - a key that does not match b's certificate: refused, logged
#     ("relay TLS certificate not reloaded"), counted (result="error"),
#     the renewed certificate stays, streams go on;
#   - a's certificate renewed from the second CA and SIGHUP: a new node c
#     (trusting only that CA) holding the agent gets a link from a, which
#     must present the renewed certificate (the old one is refused by c);
#   - c's files changed, no SIGHUP: tls.reload_check_interval re-reads
#     them (trigger=file_change).
# Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules tunnel_server tunnel_agent tunnel_client store_pg \
  auth_cache admin_api direct socks5
. "$top_srcdir/t/lib/tunnel.sh"
TAP_ON_FAIL='tail -n 5 "$T/a.log" "$T/b.log"'

tn_pg_setup; ok $? "a private PostgreSQL at the current schema (TN_DSN), the admin token, dnsd.py"
start_file_server "$T/www" "hello over a renewed relay"; ok $? "file server up"
web=$FILE_SERVER_PORT

# ---- certificates: two CAs; each leaf names its node -------------------------
mkdir -p "$T/pki"
P=$T/pki
tn_pki_ca "$P" ca1 && tn_pki_ca "$P" ca2 && cat "$P/ca1.pem" "$P/ca2.pem" >"$P/both.pem" &&
  tn_pki_node "$P" node-a ca1 node-a && tn_pki_node "$P" node-b ca1 node-b &&
  tn_pki_node "$P" node-b-renewed ca1 node-b && tn_pki_node "$P" node-a-renewed ca2 node-a &&
  tn_pki_node "$P" node-c ca1 node-c && tn_pki_node "$P" node-c-renewed ca1 node-c
ok $? "certificates: two CAs, node-a and node-b (ca1), their renewals, node-c"
# The operator's paths (what certbot's live/ directory is).
for n in a b c; do
  cp "$T/pki/node-$n.pem" "$T/live-$n.pem"
  cp "$T/pki/node-$n.key" "$T/live-$n.key"
done
mtls() { # NODE RELAY-PORT CA [EXTRA]
  printf 'node_id = node-%s\npresence = true\npresence.zone = z1\n' "$1"
  printf 'presence.relay_addr = 127.0.0.1:%s\npresence.lease = 3s\n' "$2"
  printf 'relay = true\nrelay.listen = 127.0.0.1:%s\nrelay.trust_domain = tm.test\n' "$2"
  printf 'relay.tls.cert = %s/live-%s.pem\nrelay.tls.key = %s/live-%s.key\nrelay.tls.ca = %s\n' \
    "$T" "$1" "$T" "$1" "$3"
  printf '%s\n' "${4:-}"
}
ra=$(free_port) rb=$(free_port) rc=$(free_port)
tn_server a "$(mtls a "$ra" "$T/pki/both.pem")"; ok $? "server a (node-a), relay over mutual TLS"
tn_server b "$(mtls b "$rb" "$T/pki/both.pem")"; ok $? "server b (node-b)"
tn_creds a; ok $? "credentials"
tn_agent ag b; tn_wait_sessions "$ag_admin" agent 1; ok $? "the agent, on b only"
tn_client c a; wait_for tn_ready "$c_admin"; ok $? "a client on a"
get() { [ "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" = "hello over a renewed relay" ]; }
wait_long get; ok $? "TM-PROTO-2: a stream through a reaches the agent on b over the mTLS relay"

# served_cn PORT: the subject CN a new TLS connection presenting node-a's
# certificate (the listener asks for one) is served.
served_cn() {
  openssl s_client -connect "127.0.0.1:$1" -CAfile "$T/pki/both.pem" \
    -cert "$T/pki/node-a.pem" -key "$T/pki/node-a.key" \
    -verify_return_error </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed -n 's/.*CN *= *//p'
}
is "$(served_cn "$rb")" node-b "b's relay listener serves node-b's certificate"

accepted() { grep -c 'msg="relay link accepted"' "$T/b.log"; }
link_closed() { grep -c 'msg="relay link closed"' "$T/a.log"; }
closed() { tn_sum "$1" '^proxyhost_stream_tunnel_sessions_closed_total'; }
reloads() { tn_sum "$1" "^proxyhost_tls_reloads_total\\{.*module=\"tunnel_server\".*result=\"$2\""; }
n_acc=$(accepted) n_lc=$(link_closed) c_closed=$(closed "$c_admin") ag_closed=$(closed "$ag_admin")
[ "$n_acc" -ge 1 ]; ok $? "b accepted a's link ($n_acc)"

# ---- b renewed (same CA), SIGHUP -----------------------------------------------
cp "$T/pki/node-b-renewed.pem" "$T/live-b.pem"
cp "$T/pki/node-b-renewed.key" "$T/live-b.key"
kill -HUP "$b_pid"
wait_cond '[ "$(served_cn "$rb")" = node-b-renewed ]'
ok $? "issue 27: after SIGHUP a new relay connection to b is served the renewed certificate"
like "$(cat "$T/b.log")" "relay TLS certificate reloaded" "the reload is logged"
is "$(reloads "$b_admin" ok)" 1 "and counted (result=ok; the tunnel listener is plain ws here)"
get; ok $? "a relayed stream still works"
is "$(accepted)" "$n_acc" "over the link made before (b accepted no new link)"
is "$(link_closed)" "$n_lc" "a closed no relay link"
is "$(closed "$c_admin")" "$c_closed" "the client's session was not closed"
is "$(closed "$ag_admin")" "$ag_closed" "the agent's session was not closed"

# ---- a mismatched pair on b: refused, the renewed one stays -------------------
cp "$T/pki/node-b.key" "$T/live-b.key"
kill -HUP "$b_pid"
wait_cond 'grep -q "relay TLS certificate not reloaded" "$T/b.log"'
ok $? "a key that does not match the certificate: not reloaded, logged"
is "$(reloads "$b_admin" error)" 1 "counted (result=error)"
is "$(served_cn "$rb")" node-b-renewed "the certificate in use stays"
get; ok $? "relayed streams go on"
unlike "$(cat "$T/b.log")" "PRIVATE KEY" "no key material in the log"
cp "$T/pki/node-b-renewed.key" "$T/live-b.key"

# ---- a renewed from ca2, SIGHUP: new links out present it ---------------------
cp "$T/pki/node-a-renewed.pem" "$T/live-a.pem"
cp "$T/pki/node-a-renewed.key" "$T/live-a.key"
kill -HUP "$a_pid"
wait_cond 'grep -q "relay TLS certificate reloaded" "$T/a.log"'
ok $? "a reloaded its relay certificate"
get; ok $? "a's link to b, made before, still carries streams"
# node-c trusts ca2 only: a's first certificate (ca1) would be refused.
tn_server cs "$(mtls c "$rc" "$T/pki/ca2.pem" 'tls.reload_check_interval = 100ms')"
ok $? "server cs (node-c), trusting ca2 only"
tn_agent ag3 cs; tn_wait_sessions "$ag3_admin" agent 1; ok $? "the agent on c too"
kill -TERM "$ag_pid"; wait_exit "$ag_pid" 30
via_c() { get && grep -q 'msg="relay link accepted".*peer_node=node-a' "$T/cs.log"; }
wait_long via_c
ok $? "issue 27: the agent left b: a's new link to c presents the renewed certificate (ca2), accepted"

# ---- c's files changed, no SIGHUP: the poll re-reads them ----------------------
cp "$T/pki/node-c-renewed.pem" "$T/live-c.pem"
cp "$T/pki/node-c-renewed.key" "$T/live-c.key"
wait_cond '[ "$(served_cn "$rc")" = node-c-renewed ]'
ok $? "tls.reload_check_interval: c serves its renewed certificate without a SIGHUP"
grep -q 'relay TLS certificate reloaded.*trigger=file_change' "$T/cs.log"
ok $? "logged with trigger=file_change"
get; ok $? "streams through c go on"

for p in c ag3 cs a b; do
  kill -TERM "$(eval echo "\$${p}_pid")"
  wait_exit "$(eval echo "\$${p}_pid")" 30
  is "$EXIT" 0 "$p stops cleanly"
done

done_testing

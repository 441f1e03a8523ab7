#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Authorization across proxyhost processes that share one PostgreSQL
# database (the TunnelMesh cluster mode), each with auth_cache in front of
# store_pg, observed through GET /v1/authorize (proxyhostctl access
# check), which asks the cache what a stream open would be answered:
#  - a token revoked through node a is refused by node b once b's
#    revision poll saw the change (TM-P1-27, TM-P1-34; the 3-s bound on
#    new streams, TM-TEST-35, is tunnel_revoke.sh's); the
#    time it took is printed, not checked (t/bench/authz.sh measures the
#    distribution);
#  - the 5-minute allow TTL does not delay it (TM-P1-7, TM-P1-34);
#  - a steady run of checks over a fixed set of principals and targets
#    costs the database one authorization read per key with the cache,
#    one per check without it (TM-P1-8, TM-UPG-11), counted by
#    pg_stat_statements on the database's side;
#  - PostgreSQL stopped mid-run: allows end (TM-P1-31/32, TM-SEC-4),
#    nothing the database denies is allowed, node b is not ready, and it
#    recovers by itself when the database is back (TM-P1-26).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules store_pg auth_cache admin_api
. "$top_srcdir/t/lib/authz_nodes.sh"

az_setup "$T"; ok $? "PostgreSQL with the v10 schema and pg_stat_statements"
az_node a; ok $? "node a starts and is ready"
az_node b; ok $? "node b starts and is ready"
az_node nocache "[auth_cache]
enabled = false"; ok $? "node nocache (auth_cache enabled = false) starts"

az_ctl "$a_port" user create alice >/dev/null &&
  az_ctl "$a_port" agent create a1 --owner alice >/dev/null &&
  az_ctl "$a_port" policy create --agent a1 --user alice --host '*' \
    --ports 1-65535 >/dev/null
ok $? "through node a: user alice, agent a1, a policy for alice"
tok=$(az_token_id "$(az_ctl "$a_port" token create --user alice)")
like_re "$tok" '^tok_[0-9a-f]{16}$' "a stream token for alice"

is "$(az_verdict "$b_port" "$tok" a1 example.org 443)" allow \
  "node b allows alice's token to example.org:443 through a1"
is "$(az_verdict "$b_port" "$tok" a2 example.org 443)" deny \
  "... not through an agent that does not exist"
is "$(az_verdict "$b_port" tok_0000000000000000 a1 example.org 443)" deny \
  "... nor an unknown token"

# Revoke through a, refused by b (TM-TEST-35's streams: tunnel_revoke.sh).
az_ctl "$a_port" token revoke "$tok" >/dev/null; ok $? "token revoked through node a"
is "$(az_verdict "$a_port" "$tok" a1 example.org 443)" deny \
  "node a refuses it at once (its own write moved its revision, TM-P1-29)"
ms=$(az_wait_verdict "$b_port" deny "$tok" a1 example.org 443 750)
ok $? "TM-P1-27: node b refuses the revoked token (after its revision poll)"
echo "# node b refused the revoked token after ${ms:-?} ms (revision_poll 2s)"

# Steady state: 4 tokens x 5 targets, 10 rounds, on b and on nocache.
toks=""
for i in 1 2 3 4; do
  toks="$toks $(az_token_id "$(az_ctl "$a_port" token create --user alice)")"
done
steady() { # PORT: 10 rounds over the 20 keys; prints the verdicts seen
  r=0
  while [ $r -lt 10 ]; do
    for t in $toks; do
      for h in a.test b.test c.test d.test e.test; do
        az_verdict "$1" "$t" a1 "$h" 443
      done
    done
    r=$((r + 1))
  done | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
wait_cond '[ "$(az_verdict "$b_port" "${toks##* }" a1 a.test 443)" = allow ]'
az_reset_queries
seen=$(steady "$b_port")
with=$(az_policy_queries)
http_get "http://127.0.0.1:$b_port/metrics" | grep '^tunnelmesh_authorization_cache_requests_total\|^tunnelmesh_authorization_revision\|generations' | sed 's/^/# node b: /'
az_ctl "$b_port" --json access check --token "${toks##* }" --agent a1 --host a.test --port 443 | sed 's/^/# /'
pg_psql authz -c "select revision from authorization_revision" | sed 's/^/# db /'
is "$seen" " 200 allow;" "200 checks on node b: every one allowed"
az_reset_queries
seen=$(steady "$nocache_port")
without=$(az_policy_queries)
is "$seen" " 200 allow;" "200 checks on node nocache: every one allowed"
echo "# authorization reads by the database: $with with the cache, $without without"
ok $([ "$without" -ge 200 ]; echo $?) "TM-UPG-11: without the cache every check reads the database ($without)"
ok $([ "$with" -le 20 ]; echo $?) "TM-P1-8: with it at most one read per key, at least 90 % fewer ($with of 200)"

# PostgreSQL goes away.
t1=${toks%% *}
t1=${t1:-$(echo $toks | cut -d' ' -f1)}
t1=$(echo $toks | cut -d' ' -f1)
t2=$(echo $toks | cut -d' ' -f2)
az_ctl "$a_port" token revoke "$t2" >/dev/null
az_wait_verdict "$b_port" deny "$t2" a1 a.test 443 750 >/dev/null
ok $? "a second token revoked, refused by node b"
is "$(az_verdict "$b_port" "$t1" a1 a.test 443)" allow "node b allows the first (cached)"
pg_pause; ok $? "PostgreSQL stopped"
ms=$(az_wait_verdict "$b_port" unavailable "$t1" a1 a.test 443 1000)
ok $? "TM-P1-31/32: node b stops allowing the cached allow once its revision is stale"
echo "# node b stopped allowing ${ms:-?} ms after the database stopped (stale_allow 5s past the last good poll)"
bad=0
i=0
while [ $i -lt 10 ]; do
  v1=$(az_verdict "$b_port" "$t1" a1 a.test 443)
  v2=$(az_verdict "$b_port" "$t2" a1 a.test 443)
  [ "$v1" = allow ] && bad=$((bad + 1))
  [ "$v2" = allow ] && bad=$((bad + 1))
  i=$((i + 1))
  sleep 0.1
done
is "$bad" 0 "TM-SEC-4: while the database is down nothing is allowed, the revoked token least of all"
ready_port "$b_port"; ok $([ $? -ne 0 ]; echo $?) "TM-P1-26: node b is not ready while it cannot read its revision"
pg_resume; ok $? "PostgreSQL started again"
az_wait_verdict "$b_port" allow "$t1" a1 a.test 443 1500 >/dev/null
ok $? "node b recovers by itself: the first token is allowed again"
is "$(az_verdict "$b_port" "$t2" a1 a.test 443)" deny "... and the revoked one still refused"
wait_for ready_port "$b_port"; ok $? "... and node b is ready again"

for n in a b nocache; do
  eval "kill -TERM \$${n}_pid"
  eval "wait_exit \$${n}_pid 20"; ok $? "node $n stops"
done
grep -F "$AZ_DSN" "$T"/a.log "$T"/b.log >/dev/null
ok $([ $? -ne 0 ]; echo $?) "no node logged the DSN"
done_testing

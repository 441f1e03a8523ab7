#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every fuzz target runs over its seeds (t/fuzz/seeds/NAME/*) through
# t/fuzz/replay.c: the target's own contract checks abort on a violation,
# and the ASan build in CI catches memory errors. A target whose module is
# disabled is not built and is skipped, named.
. "$top_srcdir/t/lib/testlib.sh"

for name in conf admin_request admin_api admin_pool json socks5 http_head http_body http_response policy \
    az_bearer host_norm tm_frame tm_payload tm_url tm_wsc tm_session tm_token ts_bearer \
    cp_requests cp_checker_requests cp_secret cp_snapshot cp_delta cp_view cp_spiffe ro_reply \
    cpc_registered cpc_outcomes_ack cpc_revokes up_hs http1_head \
    echo_answer chk_echo chk_task ui_cookie ui_form status_query ctl_proxy_live \
    ctl_status; do
  bin="$top_builddir/t/fuzz/replay_$name"
  if [ ! -x "$bin" ]; then
    skip "fuzz target $name not built (its module is disabled)"
    continue
  fi
  n=0
  for seed in "$top_srcdir/t/fuzz/seeds/$name"/*; do
    [ -f "$seed" ] || continue
    "$bin" "$seed" >"$T/replay.out" 2>&1
    ok $? "fuzz_$name: $(basename "$seed")"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ]; ok $? "fuzz_$name has seeds ($n)"
done

# The driver fails loudly on a missing input instead of passing nothing.
if [ -x "$top_builddir/t/fuzz/replay_conf" ]; then
  "$top_builddir/t/fuzz/replay_conf" "$T/no-such-seed" >/dev/null 2>&1
  is "$?" 2 "a missing seed file is an error, not a pass"
fi

done_testing

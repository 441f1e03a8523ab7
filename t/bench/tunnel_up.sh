#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A TunnelMesh tunnel for t/bench/run.sh to measure: a tunnel server
# (SQLite store + auth_cache), an agent (direct) and a client (socks5) as
# three proxyhost processes on loopback, every tunnel default (strict
# opens, flow control, fair writer, the cache, 32 dial slots), started
# with the end-to-end tests' helpers (t/lib/tunnel.sh). Only the log
# level is raised to warn, as run.sh does for the local proxy.
#
#   sh t/bench/tunnel_up.sh BUILDDIR ENVFILE
#
# TUNNEL_UP_SERVER, TUNNEL_UP_AGENT, TUNNEL_UP_CLIENT: INI text appended
# to that role's configuration (sections and keys, e.g. a larger window
# for an experiment; run.sh leaves them empty: strict defaults).
#
# Once the agent is connected and the client ready it writes ENVFILE:
#   socks=PORT pids="SERVER AGENT CLIENT"
# then waits; on SIGTERM (or SIGINT) it stops the processes and removes
# its temporary directory (testlib.sh's cleanup).
set -u
top_builddir=$(cd "$1" && pwd) || exit 2
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
ENVFILE=$2
PROXYHOST=${PROXYHOST:-$top_builddir/host/proxyhost}
CURL=${CURL:-curl}
export top_srcdir top_builddir PROXYHOST CURL
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
trap 'exit 0' TERM INT # exit runs testlib.sh's cleanup (the EXIT trap)

for m in tunnel_server tunnel_agent tunnel_client store_sqlite auth_cache admin_api direct socks5; do
  have_module "$m" || { echo "tunnel_up.sh: module $m not built" >&2; exit 2; }
done
WARN='[log]
level = warn'
tn_setup || exit 2
tn_trio 1 "$WARN
${TUNNEL_UP_SERVER:-}" "$WARN
${TUNNEL_UP_AGENT:-}" "$WARN
${TUNNEL_UP_CLIENT:-}" || { echo "tunnel_up.sh: the tunnel did not come up" >&2; exit 2; }
echo "socks=$c1_socks pids=\"$s1_pid $a1_pid $c1_pid\"" >"$ENVFILE.tmp" &&
  mv "$ENVFILE.tmp" "$ENVFILE"
# Wait for the signal; sleep in short steps so that the trap runs soon.
while :; do sleep 1; done

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The documentation says what the build does (issue 24: following the
# guides literally on a fresh machine found each of these wrong). Each
# case is one class of error, checked by t/lib/docs_lint.py against the
# tree and the built programs: the ABI the build reports, admin_api's
# and pool_api's routes, proxyhostctl's commands (its own help), the docs
# index, every anchor and quoted section reference, tables, one tunnel host, agent
# name and port across the server, agent and client guides, directories
# and the system user made before use, the installed programs and pages,
# configure's options, the package description, proxyhost(8)'s SEE ALSO,
# the controller's authority wiring and CA file, the upgrade runbook's
# steps, seed 001's documents and their sections, a configuration.md row
# for every key of the tunnel roles, and no shipped part called planned.
. "$top_srcdir/t/lib/testlib.sh"

command -v python3 >/dev/null 2>&1 || { skip "no python3"; done_testing; exit $?; }
lint() { python3 "$top_srcdir/t/lib/docs_lint.py" "$top_srcdir" "$@" 2>&1; }
check() { # DESCRIPTION CHECK [ARG...]
  d=$1; shift
  out=$(lint "$@")
  is "$out" "" "$d"
}

abi=$("$PROXYHOST" --version | sed -n 's/.*module SDK ABI \([0-9]*\.[0-9]*\)).*/\1/p')
like_re "$abi" '^[0-9]+\.[0-9]+$' "the build reports its ABI ($abi)"
check "every ABI the docs show as the build's is $abi" abi "$abi"
check "operations.md lists every admin_api and pool_api route collection" routes
ctl="$top_builddir/tools/proxyhostctl"
if [ -x "$ctl" ]; then
  "$ctl" help >"$T/help" 2>&1
  check "every proxyhostctl command in the docs exists; its token file is said first" ctl "$T/help"
else
  skip "proxyhostctl not built (admin_api configured out)"
fi
check "TM-DOC-10: docs/README.md links every document of docs/ exactly once" index
check "every #anchor and quoted section reference resolves (and is above/below as said)" anchors
check "no table is broken by a paragraph" tables
check "the server, agent and client guides and roles agree: host, agent name, port, admin port" tunnel
check "the guides make directories and the user proxyhost before using them" paths
check "every --with option the docs name is configure's" configure
# debian/ is not in the release tarball (distcheck runs this from it).
if [ -f "$top_srcdir/debian/control" ]; then
  check "every program and man page of the package is in operations.md and the README" \
    installed "$top_srcdir/debian/proxyhost.install"
  check "debian/control describes every program and role of the package" \
    control "$top_srcdir/debian/proxyhost.install"
else
  skip "no debian/ (a release tarball): the package's lists not checked"
fi
check "proxyhost(8) SEE ALSO names every other page" seealso
check "pool_api with redis_ownership: authority loaded first and named in [pool_api]; no [admin_api] authority; one CA file per page" ini
check "TM-DOC-11, TM-UPG-1, TM-UPG-2, TM-UPG-3, TM-UPG-4, TM-UPG-5, TM-UPG-6, TM-UPG-7, TM-UPG-8: the upgrade runbook writes out the seed's eight steps, each saying what the seed's step does, and the v8 writer" runbook
check "TM-DOC-1, TM-DOC-2, TM-DOC-4, TM-DOC-5, TM-DOC-6, TM-DOC-7, TM-P2-28: each of seed 001's documents has the sections the seed names; the pool is first-screen latency, never single-stream speed" seeddocs
check "TM-DOC-3: configuration.md gives the precedence and has a row for every key of the three roles' samples" confkeys
check "no shipped part is called planned or to come" stale

# The checker finds what it is for: a copy of the tree with one error of
# each of a few classes planted.
mkdir -p "$T/src"
(cd "$top_srcdir" && tar cf - README.md NEWS.md docs sdk/ABI.md conf man \
  modules/admin_api/api_routes.c modules/pool_api/pool_routes.c modules/tunnel_client/tunnel_client.ini.sample \
  modules/tunnel_agent/tunnel_agent.ini.sample modules/tunnel_server/tunnel_server.ini.sample configure.ac \
  deploy/systemd) | (cd "$T/src" && tar xf -)
printf '\nSee [x](operations.md#no-such-heading) and `proxyhostctl user frob`.\n' >>"$T/src/docs/sdk.md"
printf '\n$ proxyhost --version\nproxyhost 0.1.0 (module SDK ABI 0.9)\n' >>"$T/src/docs/sdk.md"
sed -i 's/tunnel\.example\.com/tunnel.example.net/' "$T/src/docs/user-guide/server.md"
like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" anchors)" "no heading of docs/operations.md" \
  "a planted broken anchor is found"
if [ -x "$ctl" ]; then
  like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" ctl "$T/help")" "no command user frob" \
    "a planted unknown proxyhostctl command is found"
fi
like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" abi "$abi")" "shows ABI 0.9" \
  "a planted wrong ABI is found"
like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" tunnel)" "tunnel host names differ" \
  "a planted second host name is found"
sed -i 's/connections\.max = 4/connections.max = 6/' "$T/src/docs/operations/authorization.md"
like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" runbook)" "step 7 does not say" \
  "a planted wrong step of the runbook is found"
sed -i '/^| `stream.max_pending_opens` |/d' "$T/src/docs/operations/configuration.md"
like "$(python3 "$top_srcdir/t/lib/docs_lint.py" "$T/src" confkeys)" "stream.max_pending_opens has no row" \
  "a planted missing key row is found"
done_testing

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
# steps, and no shipped part called planned.
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
check "docs/README.md links every document of docs/ exactly once" index
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
check "the upgrade runbook writes out the seed's eight steps and the v8 writer (seed 001)" runbook
check "no shipped part is called planned or to come" stale

# The checker finds what it is for: a copy of the tree with one error of
# each of a few classes planted.
mkdir -p "$T/src"
(cd "$top_srcdir" && tar cf - README.md NEWS.md docs sdk/ABI.md conf man \
  modules/admin_api/api_routes.c modules/pool_api/pool_routes.c modules/tunnel_client/tunnel_client.ini.sample \
  modules/tunnel_agent/tunnel_agent.ini.sample configure.ac \
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
done_testing

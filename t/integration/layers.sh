#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Layers you can see (issue 25 item 1): modules/lib (general code) <-
# modules/frontend (the frontend kit) <- the modules; private contracts
# in modules/contracts, including only SDK headers; one
# -I$(top_srcdir)/modules (AM_CPPFLAGS) and cross-folder includes by path;
# no include cycle among the files of one folder under modules/ and host/.
# t/lib/layers.py does the reading; each check names what breaks it.
# Runs on whatever tree it is given (in distcheck, the tarball's).
. "$top_srcdir/t/lib/testlib.sh"

command -v python3 >/dev/null 2>&1 || { skip "no python3"; done_testing; exit $?; }
check() { # CHECK DESCRIPTION
  out=$(python3 "$top_srcdir/t/lib/layers.py" "$top_srcdir" "$1" 2>&1)
  is "$out" "" "$2" || printf '%s\n' "$out" | head -40 | sed 's/^/# /'
}

for d in lib frontend contracts; do
  [ -f "$top_srcdir/modules/$d/local.mk" ]
  ok $? "modules/$d exists with its local.mk"
done
[ ! -d "$top_srcdir/modules/common" ]
ok $? "modules/common is gone"
: >"$T/nolocal"
for d in "$top_srcdir"/modules/*/; do
  n=$(basename "$d")
  # An in-tree build makes folders of build products only (the strategy
  # modules' modules/NAME/NAME.la): a folder counts when it holds sources.
  find "$d" -maxdepth 2 \( -name '*.[ch]' -o -name '*.mk' \) | grep -q . ||
    continue
  ls "$d"*.mk >/dev/null 2>&1 || ls "$d"*/local.mk >/dev/null 2>&1 ||
    echo "$n" >>"$T/nolocal"
done
is "$(cat "$T/nolocal")" "" "every folder under modules/ has its local.mk"
check cycles "no include cycle among the files of one folder (modules/*, host/)"
check flags "one -I\$(top_srcdir)/modules, in AM_CPPFLAGS; no per-target -I into modules/"
check layers "lib <- frontend <- modules; contracts include only SDK headers; cross-folder includes by path"
check testkit "no modules/, host/ or sdk/ file includes a t/lib header or names a test macro"
check tunnel "TM-PROTO-42, TM-P1-2, TM-PROTO-9: the tunnel protocol layer includes no network, configuration, database, logging or session code; the tunnel roles include no SQL client or store code; no Redis in the tunnel roles, auth_cache or the stores"
# The check sees a violation: a copy of the tree whose module includes tap.h.
mkdir -p "$T/tree/t/lib" "$T/tree/modules/x"
: >"$T/tree/t/lib/tap.h"
printf '#include "tap.h"\nconst char *d = PH_BUILD_MODULES;\n' >"$T/tree/modules/x/x.c"
like "$(python3 "$top_srcdir/t/lib/layers.py" "$T/tree" testkit 2>&1)" \
  'modules/x/x.c: includes the test kit' "testkit refuses a module including a t/lib header"
mkdir -p "$T/tree/modules/tunnel_common/proto" "$T/tree/modules/tunnel_server"
printf '#include <sys/socket.h>\n#include "tm_proto.h"\n' >"$T/tree/modules/tunnel_common/proto/tm_proto.c"
: >"$T/tree/modules/tunnel_common/proto/tm_proto.h"
printf '#include <libpq-fe.h>\n' >"$T/tree/modules/tunnel_server/ts_open.c"
printf 'LIBADD = $(HIREDIS_LIBS)\n' >"$T/tree/modules/tunnel_server/local.mk"
out=$(python3 "$top_srcdir/t/lib/layers.py" "$T/tree" tunnel 2>&1)
like "$out" 'tm_proto.c includes "sys/socket.h": the protocol layer' \
  "tunnel refuses networking in the protocol layer"
unlike "$out" '"tm_proto.h"' "... and takes the layer's own header"
like "$out" 'ts_open.c includes "libpq-fe.h"' "tunnel refuses an SQL client in a tunnel role"
like "$out" 'tunnel_server/local.mk names Redis' "tunnel refuses a Redis library in a tunnel role's build"

done_testing

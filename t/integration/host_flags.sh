#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Module keys' command-line flags (ABI 1.4, ph_conf_key.flag): the probe
# module's [probe] count answers to -probe-count. Each spelling sets it,
# it beats --set, the environment and the file, a wrong value names the
# flag, an unknown or valueless flag is refused, two instances make it
# ambiguous, --print-config says where the value came from, and -c is
# still -c (a flag starting with c is not read as -c ontrol...).
. "$top_srcdir/t/lib/testlib.sh"

cat >"$T/f.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD
[admin]
listen =
[probe]
count = 5
EOC
count_from() { # ARGS...: the printed count line
  "$PROXYHOST" -c "$T/f.ini" --print-config "$@" 2>&1 | grep '^count = '
}
like "$(count_from -probe-count 7)" "count = 7  ; from -probe-count" \
  "-flag VALUE sets the key and --print-config names the flag"
like "$(count_from --probe-count 8)" "count = 8" "--flag VALUE"
like "$(count_from -probe-count=9)" "count = 9" "-flag=VALUE"
like "$(count_from --probe-count=10)" "count = 10" "--flag=VALUE"
like "$(count_from --set probe.count=11 -probe-count 12)" "count = 12" \
  "the flag beats --set of the same key"
like "$(PROXYHOST_PROBE_COUNT=13 count_from -probe-count 14)" "count = 14" \
  "the flag beats the environment"
like "$(count_from)" "count = 5  ; from" "without the flag the file's value"
# The flag may come before -c: options are read in any order.
out=$("$PROXYHOST" -probe-count 15 -c "$T/f.ini" --print-config 2>&1 | grep '^count = ')
like "$out" "count = 15" "a flag before -c"

err=$("$PROXYHOST" -c "$T/f.ini" --check-config -probe-count 101 2>&1); rc=$?
is "$rc" 2 "an out-of-range flag value exits 2"
like "$err" "-probe-count: probe.count: 101 is above the maximum 100" \
  "and the message names the flag, the key and the bound"
err=$("$PROXYHOST" -c "$T/f.ini" --check-config -no-such-flag x 2>&1); rc=$?
is "$rc" 2 "an unknown flag exits 2"
like "$err" "-no-such-flag: unknown option (no loaded module has a key with this flag)" \
  "and says no module declares it"
err=$("$PROXYHOST" -c "$T/f.ini" --check-config -probe-count 2>&1); rc=$?
is "$rc" 2 "a flag without a value exits 2"
like "$err" "-probe-count needs a value" "and says so"

cat >"$T/two.ini" <<EOC
[proxyhost]
modules = probe, probe.two
module_path = $TMOD
[admin]
listen =
EOC
err=$("$PROXYHOST" -c "$T/two.ini" --check-config -probe-count 3 2>&1); rc=$?
is "$rc" 2 "a flag two instances declare exits 2"
like "$err" "-probe-count: ambiguous: [probe] count and [probe.two] count both take it; use --set" \
  "and names both sections"
out=$("$PROXYHOST" -c "$T/two.ini" --check-config --set probe.two.count=3 2>&1); rc=$?
is "$rc" 0 "--set still reaches one instance"
done_testing

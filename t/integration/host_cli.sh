#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The proxyhost command line: queries, configuration errors with file:line,
# precedence, redaction, includes, module listing and exit codes.
. "$top_srcdir/t/lib/testlib.sh"

out=$("$PROXYHOST" --version); rc=$?
is "$rc" 0 "--version exits 0"
like "$out" "proxyhost 0.1.0 (module SDK ABI $PH_ABI)" "--version names the ABI"
"$PROXYHOST" --help >/dev/null; is $? 0 "--help exits 0"
"$PROXYHOST" --bogus >/dev/null 2>&1; is $? 2 "unknown option exits 2"

err=$("$PROXYHOST" -c "$T/missing.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "missing configuration file exits 2"
like "$err" "missing.ini" "the missing file is named"

cat >"$T/good.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD
[admin]
listen =
[probe]
count = 5
secret = topsecret-value
EOC
out=$("$PROXYHOST" -c "$T/good.ini" --check-config 2>&1); rc=$?
is "$rc" 0 "--check-config accepts a good configuration"
like "$out" "configuration ok: 1 module(s)" "and says so"

# One error class per case: the message is file:line: section.key: reason.
check_error() { # NAME INI-BODY EXPECTED [ARGS...]
  printf '[proxyhost]\nmodules = probe\nmodule_path = %s\n%b' "$TMOD" "$2" >"$T/bad.ini"
  name=$1 want=$3
  shift 3
  err=$("$PROXYHOST" -c "$T/bad.ini" --check-config "$@" 2>&1); rc=$?
  is "$rc" 2 "$name: exit 2"
  like "$err" "$want" "$name: message"
}
check_error "unknown section" '[nosuch]\nx = 1\n' "bad.ini:4: nosuch: unknown section"
check_error "unknown key" '[probe]\ncolour = red\n' "bad.ini:5: probe.colour: unknown key"
check_error "above maximum" '[probe]\ncount = 101\n' "bad.ini:5: probe.count: 101 is above the maximum 100"
check_error "bad integer" '[probe]\ncount = many\n' "bad.ini:5: probe.count:"
check_error "bad boolean" '[probe]\nready = maybe\n' "bad.ini:5: probe.ready:"
check_error "bad duration" '[probe]\nstop_delay = soon\n' "bad.ini:5: probe.stop_delay:"
check_error "bad size" '[probe]\nbuffer = 12 apples\n' "bad.ini:5: probe.buffer:"
check_error "bad enum" '[probe]\nmode = turbo\n' "bad.ini:5: probe.mode:"
check_error "host key range" 'threads = 0\n' "bad.ini:4: proxyhost.threads:"
check_error "duplicate key" '[probe]\ncount = 1\ncount = 2\n' "bad.ini:6: probe.count: duplicate key"
# Values only the module understands: its check callback runs once the
# types passed, with the same file:line: section.key: reason and exit 2.
check_error "module check" '[probe]\nword = Not-Letters\n' \
  'bad.ini:5: probe.word: "Not-Letters" is not lower-case letters'
check_error "module check, --set" '' "probe.word: \"x1\"" --set probe.word=x1
like "$err" "--set: probe.word:" "module check, --set: the source is named"
check_error "types first" '[probe]\nword = Not-Letters\ncount = 101\n' \
  "bad.ini:6: probe.count: 101 is above the maximum 100"
unlike "$err" "probe.word" "types first: no module check on a typed failure"
# Start-up runs the checks before any init: exit 2, not 4 (fail_init
# would exit 4 if init ran).
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\n[admin]\nlisten =\n[probe]\nword = UPPER\nfail_init = true\n' "$TMOD" >"$T/start.ini"
err=$("$PROXYHOST" -c "$T/start.ini" 2>&1); rc=$?
is "$rc" 2 "start-up: a value the module's check refuses exits 2"
like "$err" 'start.ini:7: probe.word: "UPPER" is not lower-case letters' "start-up: file:line: section.key: reason"
unlike "$err" "init failed" "start-up: no init ran"
err=$(printf 'stray = 1\n[proxyhost]\n' >"$T/stray.ini"; "$PROXYHOST" -c "$T/stray.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a key before any section exits 2"
like "$err" "stray.ini:1:" "and names the line"
# A value longer than inih's default buffer (199 bytes) is read whole,
# and its own bound then names the key (issue 24 item 2).
long=$(python3 -c 'print("x" * 300)')
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\n[admin]\nlisten =\n[probe]\ngreeting = %s\n' "$TMOD" "$long" >"$T/long.ini"
err=$("$PROXYHOST" -c "$T/long.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a 300-byte greeting (max 64) is refused"
like "$err" "long.ini:7: probe.greeting: value is too long (300 bytes, max 64)" \
  "by the key's own bound, naming file:line, the key and the bound"
# The line limit is 8191 bytes, line terminator excluded (Debian's inih
# reads lines into a buffer of ini_max_line bytes, which the host sets;
# a longer line is refused, never cut and its tail read as the next
# line). tags: 8 items joined with ',' to 8184 bytes.
tags=$(python3 -c 'print(",".join(["t" * 1023] * 7 + ["u" * 1016]))')
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\n[admin]\nlisten =\n[probe]\ntags = %s\n' "$TMOD" "$tags" >"$T/limit.ini"
is "$(sed -n 7p "$T/limit.ini" | tr -d '\n' | wc -c)" 8191 "fixture: an 8191-byte line"
out=$("$PROXYHOST" -c "$T/limit.ini" --print-config 2>&1); rc=$?
is "$rc" 0 "an 8191-byte line is accepted"
like "$out" "tags = $tags  ; from $T/limit.ini:7" "and read whole"
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\n[admin]\nlisten =\n[probe]\ntags = %sv\ncount = 7\n' "$TMOD" "$tags" >"$T/limit.ini"
err=$("$PROXYHOST" -c "$T/limit.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "an 8192-byte line is a configuration error (exit 2)"
is "$err" "proxyhost: $T/limit.ini:7: probe.tags: line too long (max 8191 bytes)" \
  "8192 bytes: file:line, the key and the limit, one line"
err=$("$PROXYHOST" -c "$T/limit.ini" 2>&1); rc=$?
is "$rc" 2 "8192 bytes: start-up refuses it the same way"
like "$err" "$T/limit.ini:7: probe.tags: line too long" "start-up: file:line"
# Issue 24 item 2: a module_path and a modules entry under a deep
# directory (a build tree under a long path), longer than inih's default
# 199-byte line, one line each: loaded from there.
deep=$T; i=0
while [ $i -lt 12 ]; do deep="$deep/$(printf '%060d' 0)"; i=$((i + 1)); done
mkdir -p "$deep" && ln -s "$TMOD" "$deep/mods"
printf '[proxyhost]\nmodules = probe\nmodule_path = %s/mods\n[admin]\nlisten =\n[probe]\ncount = 7\n' "$deep" >"$T/deep.ini"
[ "$(sed -n 3p "$T/deep.ini" | wc -c)" -gt 750 ]; ok $? "fixture: a module_path line of over 750 bytes"
out=$("$PROXYHOST" -c "$T/deep.ini" --print-config 2>&1); rc=$?
is "$rc" 0 "a 750-byte module_path line is accepted"
like "$out" "module_path = $deep/mods  ; from $T/deep.ini:3" "and read whole"
like "$out" "count = 7  ; from $T/deep.ini:7" "and the module is loaded from there"
printf '[proxyhost]\nmodules = %s/mods/probe.so\n[admin]\nlisten =\n[probe]\ncount = 7\n' "$deep" >"$T/deep2.ini"
out=$("$PROXYHOST" -c "$T/deep2.ini" --check-config 2>&1); rc=$?
is "$rc" 0 "a 750-byte modules entry (a path) loads the module"
mkdir -p "$T/longinc/conf.d"
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\ninclude = conf.d/*.ini\n[admin]\nlisten =\n' "$TMOD" >"$T/longinc/main.ini"
semis=$(python3 -c 'print(";" * 8191, end="")')
printf '[probe]\n%scount = 7\n' "$semis" >"$T/longinc/conf.d/probe.ini"
err=$("$PROXYHOST" -c "$T/longinc/main.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a long comment line in an included file exits 2"
like "$err" "$T/longinc/conf.d/probe.ini:2: line too long (max 8191 bytes)" \
  "and names the included file and its line"
unlike "$err" "probe.count" "the comment's tail was not read as a key"
err=$("$PROXYHOST" -c "$T/good.ini" --set probe.count --check-config 2>&1); rc=$?
is "$rc" 2 "malformed --set exits 2"
like "$err" "--set" "and the message names --set"
err=$("$PROXYHOST" -c "$T/good.ini" --set probe.count=500 --check-config 2>&1); rc=$?
is "$rc" 2 "--set value out of range exits 2"
like "$err" "probe.count: 500 is above the maximum 100" "and names the key"

# Precedence (covers TM-CFG-1): --set > environment > file > default.
pc() { "$PROXYHOST" -c "$T/good.ini" --print-config "$@" 2>&1; }
like "$(pc)" "count = 5" "file beats default"
like "$(PROXYHOST_PROBE_COUNT=6 pc)" "count = 6" "environment beats file"
like "$(PROXYHOST_PROBE_COUNT=6 pc --set probe.count=7)" "count = 7" "--set beats environment"
like "$(pc)" "greeting = hello" "default used when nothing sets a key"
like "$(PROXYHOST_LOG_LEVEL=debug pc)" "level = debug" "host keys take the environment too"
err=$(PROXYHOST_PROBE_COUNT=600 "$PROXYHOST" -c "$T/good.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a bad environment value exits 2"
like "$err" "env PROXYHOST_PROBE_COUNT: probe.count" "and names the variable"

# Redaction: a sensitive value never appears, whatever its source.
out=$(pc)
like "$out" "secret = [redacted]" "--print-config redacts sensitive keys (TM-CFG-26)"
unlike "$out" "topsecret-value" "the secret from the file is absent"
out=$(PROBE_SECRET=env-secret-value pc)
unlike "$out" "env-secret-value" "the secret from the key's own env alias is absent"
like "$out" "env PROBE_SECRET" "the alias is named as the source"

# include = conf.d/*.ini, relative to the including file, sorted.
mkdir -p "$T/inc/conf.d"
printf '[proxyhost]\nmodules = probe\nmodule_path = %s\ninclude = conf.d/*.ini\n[admin]\nlisten =\n' "$TMOD" >"$T/inc/main.ini"
printf '[probe]\ncount = 8\n' >"$T/inc/conf.d/10-probe.ini"
printf '[log]\nlevel = warn\n' >"$T/inc/conf.d/20-log.ini"
out=$("$PROXYHOST" -c "$T/inc/main.ini" --print-config 2>&1)
like "$out" "count = 8" "included file applied"
like "$out" "10-probe.ini:2" "source of an included value named"
like "$out" "level = warn" "every matching file included"

# Every in-tree module says its own version as MAJOR.MINOR.PATCH (the
# status page and --list-modules show it beside the module's name).
mkdir -p "$T/tree"
for so in "$top_builddir"/modules/*/.libs/*.so; do ln -sf "$so" "$T/tree/"; done
bad=$("$PROXYHOST" --set proxyhost.module_path="$T/tree" --list-modules 2>&1 |
  awk 'NF >= 3 && $2 !~ /^[0-9]+\.[0-9]+\.[0-9]+$/ { print $1 " " $2 }')
n=$(ls "$T/tree" | wc -l)
[ "$n" -ge 1 ] && [ -z "$bad" ]
ok $? "every in-tree module's version is MAJOR.MINOR.PATCH ($n modules)" || echo "# $bad"

# Module listing and load failures.
out=$("$PROXYHOST" --set proxyhost.module_path="$TMOD" --list-modules 2>&1); rc=$?
is "$rc" 0 "--list-modules exits 0"
like "$out" "probe" "lists a good module"
like "$out" "refused:" "flags a refused module"
printf '[proxyhost]\nmodules = %s/bad_major.so\n' "$TMOD" >"$T/badmod.ini"
err=$("$PROXYHOST" -c "$T/badmod.ini" --check-config 2>&1); rc=$?
is "$rc" 3 "a refused module exits 3"
like "$err" "module ABI 2.0 is not compatible with host ABI $PH_ABI" "with both versions"

# A module built against SDK 1.1 (t/modules/keys_v11.c: ABI 1.1, the 1.1
# ph_conf_key layout) next to a 1.2 module: the host reads its key table
# with the 1.1 element size.
like "$out" "keys_v11             1.1.0   1.1" "--list-modules: keys_v11 is built for ABI 1.1"
port=$(free_port)
cat >"$T/v11.ini" <<EOC
[proxyhost]
modules = keys_v11, probe
module_path = $TMOD
[admin]
listen = 127.0.0.1:$port
[keys_v11]
greeting = hello
count = 7
tags = x, y
  z
secret = hush-hush
[probe]
count = 9
EOC
out=$("$PROXYHOST" -c "$T/v11.ini" --check-config 2>&1); rc=$?
is "$rc" 0 "1.1 key table: --check-config accepts it"
like "$out" "configuration ok: 2 module(s)" "1.1 key table: next to probe (1.2)"
out=$("$PROXYHOST" -c "$T/v11.ini" --print-config 2>&1)
like "$out" "count = 7  ; from $T/v11.ini:8" "1.1 key table: value and its file:line"
like "$out" "tags = x,y,z  ; from $T/v11.ini:9" "1.1 key table: list with a continuation line"
like "$out" "mode = fast  ; from default" "1.1 key table: enum default"
like "$out" "secret = [redacted]" "1.1 key table: the sensitive flag holds"
like "$out" "timeout = 5s  ; from default" "1.1 key table: the last key"
err=$("$PROXYHOST" -c "$T/v11.ini" --set keys_v11.count=101 --check-config 2>&1); rc=$?
is "$rc" 2 "1.1 key table: a value out of its bounds exits 2"
like "$err" "--set: keys_v11.count: 101 is above the maximum 100" "and names the key"
awk '{ print } /^greeting = hello$/ { print "colour = red" }' "$T/v11.ini" >"$T/v11bad.ini"
err=$("$PROXYHOST" -c "$T/v11bad.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "1.1 key table: an unknown key exits 2"
like "$err" "v11bad.ini:8: keys_v11.colour: unknown key" "and names its file:line"
start_proxyhost "$T/v11.ini"
wait_for healthy "$port"; ok $? "1.1 key table: the host runs with it"
metrics=$(http_get "http://127.0.0.1:$port/metrics")
is "$(metric "$metrics" keys_v11_count)" 7 "1.1 key table: init read the integer"
is "$(metric "$metrics" keys_v11_tags)" 3 "1.1 key table: init read the list"
is "$(metric "$metrics" keys_v11_secret_bytes)" 9 "1.1 key table: init read the secret"
like "$(cat "$T/ph.log")" 'msg="keys_v11 read" greeting=hello mode=fast tags=x,y,z last_tag=z' \
  "1.1 key table: every value as configured"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10
is "$EXIT" 0 "1.1 key table: clean stop"

# The build-tree binary finds the build-tree modules without a module_path.
: >"$T/empty.ini"
if have_module process_metrics; then
  out=$("$PROXYHOST" --set proxyhost.modules=process_metrics -c "$T/empty.ini" --check-config 2>&1); rc=$?
  is "$rc" 0 "build-tree binary loads a build-tree module by name"
else
  skip "process_metrics not built (configure --disable-module-process_metrics)"
fi

done_testing

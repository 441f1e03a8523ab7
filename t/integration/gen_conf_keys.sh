#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A converted module's .ini.sample is the one declaration of its keys:
# tools/gen_conf_keys.awk makes its C table from the "; type:" lines at
# build time. Here: the running host holds each converted module to its
# sample (every key's default as the sample shows it, every int bound
# enforced at the bound and one past it, every enum's values), and the
# generator turns units into the table's integers and refuses a sample
# it cannot read with file:line, so a wrong line fails the build.
. "$top_srcdir/t/lib/testlib.sh"

AWK=${AWK:-awk}
GEN="$top_srcdir/tools/gen_conf_keys.awk"
MODS="$top_builddir/modules"
CONVERTED="store_sqlite store_pg auth_cache direct auth_local remote_validation outcome_reporter admin_api pool_api process_metrics echo pool redis_ownership controlplane_server tunnel_server socks5 http_proxy controlplane_client checker tunnel_client tunnel_agent"

# conf MODULES BODY: $T/c.ini loading MODULES, BODY after [admin].
conf() {
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[admin]\nlisten =\n%b' \
    "$1" "$MODS" "$2" >"$T/c.ini"
}
# modules_for M: what M needs loaded (auth_cache caches auth_local).
modules_for() { [ "$1" = auth_cache ] && echo 'auth_local, auth_cache' || echo "$1"; }
# base_for M: the section with the required keys set.
base_for() {
  case $1 in
  auth_cache) printf '[auth_cache]\nstore = auth_local\n' ;;
  controlplane_client | checker)
    printf '[%s]\naddress = 127.0.0.1:7443\ncluster_id = c\n%s = w\ninstance_id = i\nzone = z\n' \
      "$1" "$([ "$1" = checker ] && echo checker_id || echo worker_id)" ;;
  tunnel_client) printf '[tunnel_client]\nserver_url = ws://127.0.0.1:9/t\nagent = a\n' ;;
  tunnel_agent) printf '[tunnel_agent]\nserver_url = ws://127.0.0.1:9/t\n' ;;
  *) printf '[%s]\n' "$1" ;;
  esac
}
# keys_of M: name, type, range, attributes and value of each key of M's
# sample, one line a key, separated by ';' (which only the value, last,
# may hold).
keys_of() {
  "$AWK" -v s="[$1]" '
    /^\[/ || /^; \[[a-z0-9_.]+\]$/ { in_s = ($0 == s || $0 == "; " s); next }
    in_s && /^; type: / { t = substr($0, 9); next }
    in_s && t != "" && /^(;[ \t]*)?[a-z][a-z0-9_.]* =/ {
      line = $0; sub(/^;[ \t]*/, "", line)
      name = line; sub(/ =.*/, "", name)
      val = line; sub(/^[^=]*= ?/, "", val)
      n = index(t, ","); head = n ? substr(t, 1, n - 1) : t
      attrs = n ? substr(t, n + 1) : ""
      split(head, w, " ")
      print name ";" w[1] ";" w[2] ";" attrs ";" val; t = "" }' \
    "$top_srcdir/modules/$1/$1.ini.sample"
}

for m in $CONVERTED; do
  if ! have_module "$m" || { [ "$m" = auth_cache ] && ! have_module auth_local; }; then
    skip "$m: not built"
    continue
  fi
  n=$(keys_of "$m" | wc -l)
  [ "$n" -gt 0 ]
  ok $? "$m: its sample declares its keys ($n)"
  mods=$(modules_for "$m")
  base=$(base_for "$m")
  conf "$mods" "$base\n"
  printed=$("$PROXYHOST" -c "$T/c.ini" --print-config 2>&1 |
    sed -n "/^\[$m\]/,/^\[/p")
  keys_of "$m" >"$T/keys"
  while IFS=';' read -r name type range attrs val; do
    # The default the host prints is the sample's value (an example
    # value or a required key's stands for "unset"; a secret is redacted;
    # a path under /var moves with the build's localstatedir).
    case "$attrs" in
    *required* | *example*) want="" ;;
    *) want=$val ;;
    esac
    case "$attrs" in *secret*) [ -n "$want" ] && want='[redacted]' ;; esac
    # The host prints a list's items joined by "," alone.
    [ "$type" = list ] && want=$(printf '%s' "$want" | sed 's/, */,/g')
    line=$(printf '%s\n' "$printed" | grep "^$name = ")
    case "$attrs" in
    *localstatedir*)
      like "$line" "${val#/var}  ; from default" "$m.$name: default from the sample" ;;
    *required*)
      [ -z "$line" ] || like "$line" "$name = " "$m.$name: listed" ;;
    *) is "$line" "$name = $want  ; from default" "$m.$name: default from the sample" ;;
    esac
    # Bounds: an int at its sample's maximum passes, one past it does not.
    hi=${range#*..}
    if [ "$type" = int ] && [ -n "$hi" ]; then
      conf "$mods" "$base\n$name = $hi\n"
      "$PROXYHOST" -c "$T/c.ini" --print-config >/dev/null 2>&1
      ok $? "$m.$name = $hi (the sample's maximum) is accepted"
      conf "$mods" "$base\n$name = $((hi + 1))\n"
      err=$("$PROXYHOST" -c "$T/c.ini" --print-config 2>&1)
      like "$err" "$m.$name: $((hi + 1)) is above the maximum $hi" \
        "$m.$name = $((hi + 1)) is refused"
    fi
    if [ "$type" = enum ]; then
      conf "$mods" "$base\n$name = nope\n"
      err=$("$PROXYHOST" -c "$T/c.ini" --print-config 2>&1)
      like "$err" "$m.$name: nope is not one of $range" "$m.$name: the sample's values"
    fi
  done <"$T/keys"
done

# ---- the generator on its own ---------------------------------------------
# gen BODY: the generator's output (and exit status in $rc) for a sample
# of module "x" whose [x] section is BODY.
gen() {
  printf '[proxyhost]\nmodules = x\n\n[x]\n%b' "$1" >"$T/x.ini.sample"
  out=$("$AWK" -f "$GEN" "$T/x.ini.sample" 2>&1); rc=$?
}
gen '; How long.\n; type: duration 50ms..1h, restart\nt = 5s\n; Bytes.\n; type: size 1KiB..16MiB, reloadable\nb = 64KiB\n'
is "$rc" 0 "durations and sizes: generated"
is "$(printf '%s\n' "$out" | head -1)" "/* SPDX-License-Identifier: BSD-2-Clause */" \
  "the licence line first (an in-tree build puts the file in the source tree: licence.sh)"
like "$out" 'PH_CONF_KEY("t", PH_CONF_DURATION, "5s", 50, 3600000, PH_CONF_RESTART, NULL, "How long", NULL)' \
  "1h is 3600000 ms, 50ms is 50, restart is PH_CONF_RESTART"
like "$out" 'PH_CONF_KEY("b", PH_CONF_SIZE, "64KiB", 1024, 16777216, 0,' "KiB and MiB are bytes"
gen '; Who.\n; type: string 1.., reloadable, env LEGACY_ID, flag -worker-id\n; id = w1\n; type: enum a|b, reloadable\ne = a\n'
like "$out" 'PH_CONF_KEY_FLAG("worker-id", "id", PH_CONF_STRING, "w1", 1, 0, 0, "LEGACY_ID", "Who", NULL)' \
  "flag and env; an open range is unbounded; a commented key is declared"
like "$out" 'PH_CONF_KEY("e", PH_CONF_ENUM, "a", 0, 0, 0, NULL, "Who", "a|b")' \
  "enum values; a key with no prose of its own keeps the previous help"
gen '; A "quoted" name. More.\n; type: string 0..8, reloadable, secret, example\ns = abc\n'
like "$out" '"", 0, 8, PH_CONF_SENSITIVE, NULL, "A \"quoted\" name", NULL)' \
  "secret; an example value is no default; quotes escaped; first sentence"
gen '; Mode.\n; type: enum a|b, restart\n; m = a\nm = b\n; Next.\n; type: int 0..9, restart\nn = 1\n'
is "$rc" 0 "a key declared on a commented line may be set below it (the sample's setting)"
like "$out" 'PH_CONF_KEY("m", PH_CONF_ENUM, "a", 0, 0, PH_CONF_RESTART, NULL, "Mode", "a|b")' \
  "its default is the commented line's value, not the setting's"
like "$out" 'PH_CONF_KEY("n", PH_CONF_INT, "1", 0, 9, PH_CONF_RESTART, NULL, "Next", NULL)' \
  "and the keys after it are read as before"
gen '; Mode.\n; type: enum a|b, restart\n; m = a\nm = b\nm = a\n'
like "$out" "x.ini.sample:9: key m twice" "a sample setting a key twice fails"
gen '; Mode.\n; type: enum a|b, restart\nm = a\nm = b\n'
like "$out" "x.ini.sample:8: key m twice" "a key declared on a live line cannot be set again"
gen '; No type line.\nk = 1\n'
is "$rc" 1 "a key without a type line fails"
like "$out" "x.ini.sample:6: key k has no \"; type:\" line" "and names file:line"
gen '; Bad unit.\n; type: duration 0..1d, reloadable\nk = 1s\n'
like "$out" 'x.ini.sample:6: bad unit "d" for a duration' "an unknown unit fails"
gen '; Both.\n; type: int 0..1, restart, reloadable\nk = 1\n'
like "$out" "x.ini.sample:6: say exactly one of restart and reloadable" \
  "restart and reloadable together fail"
gen '; Neither.\n; type: int 0..1\nk = 1\n'
is "$rc" 1 "neither restart nor reloadable fails"
gen '; Typo.\n; type: int 0..1, restrat\nk = 1\n'
like "$out" 'unknown attribute "restrat"' "an unknown attribute fails"
gen '; Dangling.\n; type: int 0..1, restart\n'
is "$rc" 1 "a type line with no key fails"
gen '; Twice.\n; type: int 0..1, restart\nk = 1\n; type: int 0..1, restart\nk = 1\n'
like "$out" "key k twice" "a key declared twice fails"
printf '; [proxyhost]\n; modules = x\n; [x]\n; Left out.\n; [admin] listen is not a section.\n; type: int 0..9, reloadable\n; k = 3\n' \
  >"$T/x.ini.sample"
out=$("$AWK" -f "$GEN" "$T/x.ini.sample" 2>&1)
like "$out" 'PH_CONF_KEY("k", PH_CONF_INT, "3", 0, 9, 0, NULL, "Left out", NULL)' \
  "a section left out as a whole (; [x]) is read; a prose line that only starts with [name] is prose"
printf '[y]\n' >"$T/x.ini.sample"
"$AWK" -f "$GEN" "$T/x.ini.sample" >/dev/null 2>&1
is "$?" 1 "a sample without its module's section fails"

# ---- shared keys: a group file holds every sample that shares them ---------
# ggen GROUPS BODY: as gen, with -v groups=GROUPS.
ggen() {
  printf '[proxyhost]\nmodules = x\n\n[x]\n%b' "$2" >"$T/x.ini.sample"
  out=$("$AWK" -v groups="$1" -f "$GEN" "$T/x.ini.sample" 2>&1); rc=$?
}
printf '# a group\n; type: size 4KiB..1MiB, reloadable\n@buf = 256KiB\n; type: string 3..128, restart\nlisten = *\n' \
  >"$T/g.keys"
ggen "$T/g.keys=stream." '; Buffer.\n; type: size 4096..1048576, reloadable\nstream.buf = 256KiB\n; Where.\n; type: string 3..128, restart\nlisten = 1.2.3.4:5\n'
is "$rc" 0 "a sample that matches its group (bounds spelt either way, its own listen default) is generated"
like "$out" 'PH_CONF_KEY("stream.buf", PH_CONF_SIZE, "256KiB", 4096, 1048576, 0,' \
  "the group's @ is the prefix given"
ggen "$T/g.keys=stream." '; Buffer.\n; type: size 4KiB..2MiB, reloadable\nstream.buf = 256KiB\n; Where.\n; type: string 3..128, restart\nlisten = a\n'
is "$rc" 1 "a bound other than the group's fails the build"
like "$out" "x.ini.sample:7: key stream.buf: \"type: size 4KiB..2MiB, reloadable\" but its group $T/g.keys says \"type: size 4KiB..1MiB, reloadable\"" \
  "and names the sample's line and the group"
ggen "$T/g.keys=stream." '; Buffer.\n; type: size 4KiB..1MiB, restart\nstream.buf = 256KiB\n; Where.\n; type: string 3..128, restart\nlisten = a\n'
is "$rc" 1 "restart where the group says reloadable fails"
ggen "$T/g.keys=stream." '; Buffer.\n; type: size 4KiB..1MiB, reloadable\nstream.buf = 64KiB\n; Where.\n; type: string 3..128, restart\nlisten = a\n'
like "$out" 'key stream.buf: default "64KiB" but its group' "another default fails"
ggen "$T/g.keys=streams." '; Buffer.\n; type: size 4KiB..1MiB, reloadable\nstream.buf = 256KiB\n; Where.\n; type: string 3..128, restart\nlisten = a\n'
like "$out" "lacks key streams.buf of its group" "a sample without one of its group's keys fails"
printf '; type: string 0..64, restart, example\npath = *\n; type: int 1..9, restart\nn = 3\n' >"$T/h.keys"
printf '[proxyhost]\nmodules = x\n\n[x]\n; Where.\n; type: string 3..128, restart\nlisten = a:1\n' >"$T/x.ini.sample"
out=$("$AWK" -v groups="$T/g.keys=s. $T/h.keys" -v complete=1 -f "$GEN" "$T/x.ini.sample" 2>&1)
like "$out" 'PH_CONF_KEY("s.buf", PH_CONF_SIZE, "256KiB", 4096, 1048576, 0, NULL, "a key of g.keys", NULL)' \
  "complete=1 (a test's table): a group key the sample lacks is added with the group's default"
like "$out" 'PH_CONF_KEY("n", PH_CONF_INT, "3", 1, 9, PH_CONF_RESTART, NULL, "a key of h.keys", NULL)' \
  "... from every group named"
like "$out" 'PH_CONF_KEY("path", PH_CONF_STRING, "", 0, 64,' "... an example's * as no default"
printf '[proxyhost]\nmodules = x\n\n[x]\n; Size.\n; type: size 4KiB..1MiB, reloadable\ns.buf = 256KiB\n' >"$T/x.ini.sample"
out=$("$AWK" -v groups="$T/g.keys=s." -v complete=1 -f "$GEN" "$T/x.ini.sample" 2>&1)
like "$out" "key listen has no default here: the sample must write it out" \
  "... but a key whose default is each module's (*) must be written out"
ggen "$T/none.keys" '; K.\n; type: int 0..1, restart\nk = 1\n'
like "$out" "none.keys: cannot read this group file" "a missing group file fails"

done_testing

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The manual pages cover what they claim: every key of every built module
# is in proxyhost-modules(5) under its section, every host key is in
# proxyhost.ini(5), and proxyhost-passwd and proxyhostctl answer --help as
# their pages say.
. "$top_srcdir/t/lib/testlib.sh"

mods=
for m in $(sed -n 's/^PH_MODULE(\[\([a-z0-9_]*\)\].*/\1/p' "$top_srcdir/configure.ac"); do
  # auth_cache needs a store; auth_local is the one every build may have.
  [ "$m" = auth_cache ] && ! have_module auth_local && continue
  have_module "$m" && mods="$mods${mods:+,}$m"
done
# One module per line (continuation lines), as docs/configuration.md
# shows for long lists.
cat >"$T/all.ini" <<EOC
[proxyhost]
modules = $(printf '%s' "$mods" | sed 's/,/\n  /g')
include = $T/none/*.ini
EOC
case ",$mods," in *,auth_cache,*)
  printf '[auth_cache]\nstore = auth_local\n' >>"$T/all.ini" ;;
esac
# tunnel_client needs its server, agent and a token (keys required).
case ",$mods," in *,tunnel_client,*)
  printf '[tunnel_client]\nserver_url = ws://127.0.0.1:1/tunnel\nagent = a\ntoken = t\n' >>"$T/all.ini" ;;
esac
# tunnel_agent needs its server and a token (added in tm-client, where the
# merged tree has the agent module).
case ",$mods," in *,tunnel_agent,*)
  printf '[tunnel_agent]\nserver_url = ws://127.0.0.1:1/agent\ntoken = t\n' >>"$T/all.ini" ;;
esac
# controlplane_client needs its five identity keys (required) and, for
# --print-config without files, plaintext to loopback.
case ",$mods," in *,controlplane_client,*)
  printf '[controlplane_client]\naddress = 127.0.0.1:1\ncluster_id = c\nworker_id = w\ninstance_id = i\nzone = z\ntls.mode = disabled\n' >>"$T/all.ini" ;;
esac
# checker: the same five identity keys.
case ",$mods," in *,checker,*)
  printf '[checker]\naddress = 127.0.0.1:1\ncluster_id = c\nchecker_id = k\ninstance_id = i\nzone = z\ntls.mode = disabled\n' >>"$T/all.ini" ;;
esac
"$PROXYHOST" -c "$T/all.ini" --print-config >"$T/keys" 2>"$T/err"
ok $? "--print-config with every built module ($mods)"
sed 's/^/#   /' "$T/err" | head -5

page="$top_builddir/man/proxyhost-modules.5"
host_page="$top_builddir/man/proxyhost.ini.5"
[ -f "$page" ] && [ -f "$host_page" ]; ok $? "the pages are built"
missing=
sect=
while IFS= read -r line; do
  case $line in
  '['*']') sect=${line#[}; sect=${sect%]} ;;
  *' = '*)
    key=${line%% = *}
    case $sect in
    proxyhost | log | admin) f=$host_page ;;
    *) f=$page
       grep -qxF ".SS [$sect]" "$page" || missing="$missing [$sect]" ;;
    esac
    grep -qxF ".B $key" "$f" || missing="$missing $sect.$key"
    ;;
  esac
done <"$T/keys"
is "$missing" "" "every key of every section is documented"
[ "$(grep -c ' = ' "$T/keys")" -gt 10 ]; ok $? "keys were read ($(grep -c ' = ' "$T/keys"))"

if have_auth_local; then
  pw="$top_builddir/tools/proxyhost-passwd"
  out=$("$pw" --help 2>/dev/null); rc=$?
  is "$rc" 0 "proxyhost-passwd --help exits 0"
  like "$out" "usage: proxyhost-passwd" "and prints its usage on stdout"
  out=$("$pw" -h 2>/dev/null); is $? 0 "proxyhost-passwd -h too"
  "$pw" --bogus </dev/null >/dev/null 2>&1; is $? 2 "an unknown option exits 2"
  like "$(cat "$top_builddir/man/proxyhost-passwd.1")" "\\-\\-help" "its page documents --help"
else
  skip "auth_local not built: no proxyhost-passwd"
fi
if have_module admin_api; then
  ctl="$top_builddir/tools/proxyhostctl"
  out=$("$ctl" --help 2>/dev/null); rc=$?
  is "$rc" 0 "proxyhostctl --help exits 0"
  like "$out" "usage: proxyhostctl" "and prints its usage on stdout"
  "$ctl" --bogus >/dev/null 2>&1; is $? 2 "proxyhostctl: an unknown option exits 2"
  ctlpage=$(cat "$top_builddir/man/proxyhostctl.1")
  like "$ctlpage" "\\-\\-help" "proxyhostctl(1) documents --help"
  for word in "user create" "token create" \
    "token show|rotate|revoke|delete" "token set\\-expiry" "token set\\-scopes" "agent create" "policy create" \
    "policy update" "admin\\-token new" "proxy add" "proxy show|drain|disable|enable|delete" \
    "route move" "credential add" "credential show|rotate|delete" PROXYHOSTCTL_ADMIN PROXYHOSTCTL_TOKEN_FILE \
    "proxyhostctl status" "last_seen" "unknown"; do
    like "$ctlpage" "$word" "proxyhostctl(1) documents $word"
  done
  like "$ctlpage" "state: unknown (not in the controller's view)" \
    "proxyhostctl(1) documents proxy show's live state (issue 28)"
  like "$ctlpage" ".SH EXIT STATUS" "proxyhostctl(1) documents the exit statuses"
else
  skip "admin_api not built: no proxyhostctl"
fi
done_testing

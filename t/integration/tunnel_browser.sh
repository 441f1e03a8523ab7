#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A real browser through TunnelMesh: headless Chromium with
# --proxy-server=socks5://CLIENT loads a page of 32 images and 8 scripts
# from a local page server (page.test, resolved by the agent through
# dnsd.py: remote DNS) through client -> server -> agent; every resource
# is in the page server's access log and the DOM says all images loaded.
# curl loads every resource the same way. Chromium's own background hosts
# resolve to nothing (--host-resolver-rules; the proxy address is
# excluded, or Chromium cannot reach it) and, through the proxy, to
# NXDOMAIN at the agent: nothing leaves loopback. A missing chromium is a
# failure (scripts/install-deps.sh installs it), never a skip.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5
PY=${PYTHON3:-python3}
IMAGES=32
SCRIPTS=8

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ]; ok $? "chromium is installed (scripts/install-deps.sh)"

tn_setup; ok $? "admin token and dnsd.py"
# The page: 32 images, 8 scripts; onload writes the count into the DOM.
mkdir -p "$T/www"
{
  printf '<!doctype html><html><head><title>tm</title></head><body>\n'
  i=0
  while [ $i -lt $IMAGES ]; do printf '<img src="/img/%d.svg">\n' $i; i=$((i + 1)); done
  i=0
  while [ $i -lt $SCRIPTS ]; do printf '<script src="/js/%d.js"></script>\n' $i; i=$((i + 1)); done
  printf '<p id="r">waiting</p><script>window.onload=function(){var n=0;'
  printf 'for(const i of document.images){if(i.complete&&i.naturalWidth>0)n++;}'
  printf 'document.getElementById("r").textContent="images="+n+" scripts="+window.tmjs;};</script>\n'
  printf '</body></html>\n'
} >"$T/www/index.html"
mkdir -p "$T/www/img" "$T/www/js"
i=0
while [ $i -lt $IMAGES ]; do
  printf '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#%02x0000"/></svg>\n' $i >"$T/www/img/$i.svg"
  i=$((i + 1))
done
i=0
while [ $i -lt $SCRIPTS ]; do
  printf 'window.tmjs=(window.tmjs||0)+1;\n' >"$T/www/js/$i.js"
  i=$((i + 1))
done
$PY "$top_srcdir/t/lib/page_server.py" "$T/www" "$T/page.port" "$T/access.log" >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/page.port"; ok $? "page server up"
web=$(cat "$T/page.port")

tn_server s; tn_creds s; tn_agent a s; tn_client c s
tn_wait_sessions "$a_admin" agent 1 && wait_for tn_ready "$c_admin"
ok $? "server, agent and client up and connected"

# curl: the page and every resource.
n=0
for p in index.html $(i=0; while [ $i -lt $IMAGES ]; do echo img/$i.svg; i=$((i + 1)); done) \
  $(i=0; while [ $i -lt $SCRIPTS ]; do echo js/$i.js; i=$((i + 1)); done); do
  "$CURL" -s -f -m 10 --proxy "socks5h://127.0.0.1:$c_socks" -o /dev/null \
    "http://page.test:$web/$p" && n=$((n + 1))
done
is "$n" $((1 + IMAGES + SCRIPTS)) "curl fetched the page and its $((IMAGES + SCRIPTS)) resources through the tunnel"
: >"$T/access.log"

# Chromium.
mkdir -p "$T/chrome"
dom=$(timeout 60 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
  --no-first-run --disable-background-networking --disable-extensions \
  --user-data-dir="$T/chrome" \
  --proxy-server="socks5://127.0.0.1:$c_socks" --proxy-bypass-list='<-loopback>' \
  --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE page.test, EXCLUDE 127.0.0.1' \
  --virtual-time-budget=20000 --dump-dom "http://page.test:$web/index.html" 2>"$T/chrome.err")
like "$dom" "images=$IMAGES scripts=$SCRIPTS" "Chromium loaded all $IMAGES images and $SCRIPTS scripts through the tunnel (DOM)"
got=$(grep -c '^GET /img/\|^GET /js/' "$T/access.log")
is "$got" $((IMAGES + SCRIPTS)) "... and each resource is in the page server's access log"
grep -q '^GET /index.html' "$T/access.log"; ok $? "... the page itself too"
like_re "$(tn_metrics "$c_admin")" 'tunnelmesh_stream_open_total\{component="client",result="success",error_class="ok",open_mode="strict"\} [1-9]' \
  "the browser's streams were strict opens"

done_testing

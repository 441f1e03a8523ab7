#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install the peer proxies that t/bench/run.sh measures against, from Debian:
# microsocks, dante-server, tinyproxy, squid and haproxy; the peer tunnels
# of issue 11: v2ray (Debian's) and wstunnel (npm's, with Debian's nodejs
# and npm), the latter with `npm install --prefix` into
# $PEERS_PREFIX/npm (default /var/tmp/proxyhost-bench-peers/npm; run.sh
# looks there), pinned to one version, its install scripts not run (the
# optional native helpers of its websocket library fall back to
# JavaScript). The npm registry must be reachable for that step.
#
# The benchmark starts each peer itself, with its own configuration in a
# temporary directory, so none of them may stay running as a system
# service: while apt installs them a policy-rc.d refuses every service
# start, and afterwards each peer's service is stopped and disabled.
#
# Usage (as root): sh t/bench/install-peers.sh
set -eu

PKGS="microsocks dante-server tinyproxy squid haproxy v2ray"
# Debian's npm conflicts with a nodejs that bundles its own (NodeSource's):
# only a machine without npm gets Debian's two packages.
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
SERVICES="microsocks danted tinyproxy squid haproxy v2ray"
WSTUNNEL_VERSION=1.4.0
PEERS_PREFIX=${PEERS_PREFIX:-/var/tmp/proxyhost-bench-peers}
POLICY=/usr/sbin/policy-rc.d

if [ "$(id -u)" -ne 0 ]; then
  echo "install-peers.sh: must run as root (apt-get install)" >&2
  exit 1
fi

# Refuse service starts during the install, unless a policy is already in
# place (then it is left exactly as it was).
own_policy=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$POLICY"
  chmod 755 "$POLICY"
  own_policy=1
fi
cleanup() {
  if [ "$own_policy" = 1 ]; then rm -f "$POLICY"; fi
}
trap cleanup EXIT INT TERM

export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=300 update -q
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends $PKGS

# Stop and disable whatever a service manager may have started anyway
# (a policy written by someone else may allow starts).
for svc in $SERVICES; do
  if command -v systemctl >/dev/null 2>&1; then
    if [ -d /run/systemd/system ]; then
      systemctl disable --now "$svc" >/dev/null 2>&1 || true
    else
      systemctl disable "$svc" >/dev/null 2>&1 || true # offline: links only
    fi
  fi
  if [ -x "/etc/init.d/$svc" ]; then
    "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    if command -v update-rc.d >/dev/null 2>&1; then
      update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  fi
done

# wstunnel from npm, into its own prefix (nothing installed globally).
mkdir -p "$PEERS_PREFIX/npm"
npm install --prefix "$PEERS_PREFIX/npm" --ignore-scripts --no-audit --no-fund \
  "wstunnel@$WSTUNNEL_VERSION" >/dev/null

# Report any peer daemon still running (the benchmark would collide with
# its default ports and skew the measurement).
left=0
for bin in microsocks danted tinyproxy squid haproxy v2ray; do
  if pids=$(pidof "$bin" 2>/dev/null); then
    echo "install-peers.sh: warning: $bin still running (pid $pids)" >&2
    left=1
  fi
done

for bin in microsocks danted tinyproxy squid haproxy v2ray; do
  path=$(command -v "$bin" 2>/dev/null || ls "/usr/sbin/$bin" 2>/dev/null || true)
  echo "installed: $bin ${path:-MISSING}"
done
w=$PEERS_PREFIX/npm/node_modules/.bin/wstunnel
[ -x "$w" ] || w=MISSING
echo "installed: wstunnel $w"
exit "$left"

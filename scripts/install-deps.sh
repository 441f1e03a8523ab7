#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs every Debian 12 package proxyhost needs to build, test, package
# and benchmark. Run as root (or through sudo). Safe to run again: apt
# skips what is installed.
#
# The test servers (redis-server, PostgreSQL) are for the test suites,
# which start their own instances in temporary directories: none may stay
# running as a system service. While apt installs them a policy-rc.d
# refuses every service start (unless a policy is already in place, which
# is then left as it was), and afterwards their services are stopped and
# disabled, as t/bench/install-peers.sh does for the benchmark's peers.
set -eu

BUILD="build-essential autoconf automake libtool libtool-bin pkg-config
  libev-dev libinih-dev libc-ares-dev libhttp-parser-dev libssl-dev
  libcurl4-openssl-dev libpq-dev libsqlite3-dev"
# The control plane (protobuf-c, gRPC core, hiredis) and the tunnel (lws).
FUTURE="libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libprotobuf-dev
  libgrpc-dev libwebsockets-dev libwebsockets-evlib-ev
  libhiredis-dev"
# CI builds the Debian packages (debian/) with dpkg-buildpackage, checks
# them with lintian and installs them in a clean Debian root made by
# mmdebstrap (.ci/packages).
PACKAGE="debhelper dh-autoreconf dpkg-dev fakeroot lintian mmdebstrap"
# sqlite3 and psql (postgresql-client, with postgresql) for the migration
# and store tests.
# python3-grpcio, python3-grpc-tools: a gRPC client this project did not
# write, calling the controller (CP-1-1) from stubs generated at test time.
# chromium: the headless browser of t/integration/tunnel_browser.sh (TunnelMesh
# through a real browser; a missing browser fails that test).
# microsocks and tinyproxy: the upstream proxies of
# t/integration/upstream_hs.sh (the pool's SOCKS5 and CONNECT handshakes);
# the test runs its own instances, so tinyproxy's service is stopped below.
TEST="curl openssl python3 python3-yaml python3-grpcio python3-grpc-tools
  prometheus sqlite3 chromium microsocks"
SERVERS="redis-server postgresql tinyproxy"
SERVICES="redis-server postgresql tinyproxy"
POLICY=/usr/sbin/policy-rc.d

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi

own_policy=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
  own_policy=1
fi
cleanup() {
  if [ "$own_policy" = 1 ]; then $SUDO rm -f "$POLICY"; fi
}
trap cleanup EXIT INT TERM

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends \
  $BUILD $FUTURE $PACKAGE $TEST $SERVERS

# Stop and disable whatever a service manager may have started anyway (a
# policy written by someone else may allow starts).
for svc in $SERVICES; do
  if command -v systemctl >/dev/null 2>&1; then
    if [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    else
      $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true # offline: links only
    fi
  fi
  if [ -x "/etc/init.d/$svc" ]; then
    $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    if command -v update-rc.d >/dev/null 2>&1; then
      $SUDO update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  fi
done
for bin in redis-server postgres tinyproxy; do
  if pids=$(pidof "$bin" 2>/dev/null); then
    echo "install-deps.sh: warning: $bin still running (pid $pids)" >&2
  fi
done

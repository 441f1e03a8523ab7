#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs every Debian 12 package proxyhost needs to build, test and benchmark.
# Run as root (or through sudo). Safe to run again: apt skips what is installed.
set -eu

BUILD="build-essential autoconf automake libtool libtool-bin pkg-config
  libev-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libprotobuf-dev
  libgrpc-dev libssl-dev libwebsockets-dev libwebsockets-evlib-ev
  libhiredis-dev libpq-dev libsqlite3-dev libinih-dev libc-ares-dev libhttp-parser-dev"
TEST="redis-server postgresql curl openssl python3 prometheus"

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends $BUILD $TEST

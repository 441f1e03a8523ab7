#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Generates configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --force --install --warnings=all

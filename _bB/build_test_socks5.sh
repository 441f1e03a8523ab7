#!/bin/sh
# Builds t/unit/test_socks5 by hand (no Makefile.am entry yet).
set -e
cd "$(dirname "$0")"
B=$PWD
CFLAGS_EXTRA="${CFLAGS_EXTRA:--g -O2}"
gcc -I. -I.. -D_GNU_SOURCE -I../sdk -I../host -I../t/lib -I../modules/common \
  -DPH_TEST_MODDIR="\"$B/t/modules/.libs\"" -DPH_BUILD_MODULES="\"$B/modules\"" \
  -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Werror -pthread $CFLAGS_EXTRA \
  -c -o t/unit/test_socks5.o ../t/unit/test_socks5.c
gcc $CFLAGS_EXTRA $LDFLAGS_EXTRA -o t/unit/test_socks5 t/unit/test_socks5.o host/.libs/libphmock.a -linih -lev -lm -ldl -pthread

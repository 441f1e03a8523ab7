# SPDX-License-Identifier: BSD-2-Clause
# modules/pool/up_hs.mk: the upstream proxy handshakes (issue 13, CP-5-3):
# HTTP CONNECT and SOCKS5 as a pure codec (up_hs.h), its unit test, a
# probe that runs it over blocking sockets against real proxies
# (t/integration/upstream_hs.sh: Debian's microsocks and tinyproxy) and
# its fuzz target, replayed over t/fuzz/seeds/up_hs by
# t/integration/fuzz_replay.sh.
#
# UP_HS_SOURCES is for the pool module's sources (modules/pool/local.mk);
# its users also need UP_HS_CPPFLAGS and link modules/common/libphcommon.la
# (host_norm) and $(OPENSSL_LIBS) (OPENSSL_cleanse).
EXTRA_DIST += modules/pool/up_hs.mk t/integration/upstream_hs.sh \
	t/unit/test_up_hs.c t/lib/up_hs_probe.c t/fuzz/fuzz_up_hs.c

UP_HS_SOURCES = modules/pool/up_hs.c modules/pool/up_hs.h \
	modules/pool/up_connect.c modules/pool/up_socks5.c
UP_HS_CPPFLAGS = $(OPENSSL_CFLAGS) -I$(top_srcdir)/modules/pool \
	-I$(top_srcdir)/modules/common

# Built with the pool (configure checks OpenSSL for the control plane's
# modules, the pool among them).
if MODULE_POOL
check_PROGRAMS += t/unit/test_up_hs t/lib/up_hs_probe t/fuzz/replay_up_hs
TESTS += t/unit/test_up_hs t/integration/upstream_hs.sh

t_unit_test_up_hs_SOURCES = t/unit/test_up_hs.c $(UP_HS_SOURCES)
t_unit_test_up_hs_CPPFLAGS = $(TEST_CPPFLAGS) $(UP_HS_CPPFLAGS)
t_unit_test_up_hs_LDADD = modules/common/libphcommon.la $(OPENSSL_LIBS)

t_lib_up_hs_probe_SOURCES = t/lib/up_hs_probe.c $(UP_HS_SOURCES)
t_lib_up_hs_probe_CPPFLAGS = $(AM_CPPFLAGS) $(UP_HS_CPPFLAGS)
t_lib_up_hs_probe_LDADD = modules/common/libphcommon.la $(OPENSSL_LIBS)

t_fuzz_replay_up_hs_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_up_hs.c \
	$(UP_HS_SOURCES) modules/common/host_norm.c
t_fuzz_replay_up_hs_CPPFLAGS = $(AM_CPPFLAGS) $(UP_HS_CPPFLAGS)
t_fuzz_replay_up_hs_LDADD = $(OPENSSL_LIBS)
endif

# SPDX-License-Identifier: BSD-2-Clause
# modules/upstream: the upstream kit (issue 25 item 1): the handshakes a
# gateway, and the coming checker, speak to an upstream proxy (issue 13,
# CP-5-3): HTTP CONNECT and SOCKS5 as a pure codec, and the Basic token
# an `http` upstream gets with requests forwarded in absolute form
# (up_hs.h). A kit, not a module: it uses no module, and the pool links
# it (modules/pool/local.mk).
#
# libphupstream.la uses modules/lib/host_norm.c but does not carry it:
# whatever links libphupstream.la links modules/frontend/libphfrontend.la too
# (the pool does, through CP_VIEW_LDADD), so host_norm.o is never in one
# link twice; and $(OPENSSL_LIBS) (OPENSSL_cleanse). Its users compile
# with UPSTREAM_CPPFLAGS (up_hs.h).
#
# Also here: its unit test, a probe that runs it over blocking sockets
# against real proxies (t/integration/upstream_hs.sh: Debian's microsocks
# and tinyproxy) and its fuzz target, replayed over t/fuzz/seeds/up_hs by
# t/integration/fuzz_replay.sh.
EXTRA_DIST += t/integration/upstream_hs.sh \
	t/unit/connectors/test_up_hs.c t/lib/up_hs_probe.c t/fuzz/fuzz_up_hs.c

UPSTREAM_CPPFLAGS = $(OPENSSL_CFLAGS)
UPSTREAM_LDADD = %D%/libphupstream.la \
	modules/frontend/libphfrontend.la $(OPENSSL_LIBS)

# Built with the pool, its only user so far (configure checks OpenSSL for
# the control plane's modules, the pool among them).
if UPSTREAM_ANY
noinst_LTLIBRARIES += %D%/libphupstream.la
modules_upstream_libphupstream_la_SOURCES = \
	%D%/up_hs.c %D%/up_hs.h \
	%D%/up_connect.c %D%/up_socks5.c
modules_upstream_libphupstream_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(UPSTREAM_CPPFLAGS)

UNIT_TESTS += t/unit/connectors/test_up_hs
check_PROGRAMS += t/lib/up_hs_probe t/fuzz/replay_up_hs
TESTS += t/integration/upstream_hs.sh

t_unit_connectors_test_up_hs_CPPFLAGS = $(AM_CPPFLAGS) $(UPSTREAM_CPPFLAGS)
t_unit_connectors_test_up_hs_LDADD = $(UPSTREAM_LDADD)

t_lib_up_hs_probe_SOURCES = t/lib/up_hs_probe.c
t_lib_up_hs_probe_CPPFLAGS = $(AM_CPPFLAGS) $(UPSTREAM_CPPFLAGS)
t_lib_up_hs_probe_LDADD = $(UPSTREAM_LDADD)

t_fuzz_replay_up_hs_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_up_hs.c
t_fuzz_replay_up_hs_CPPFLAGS = $(AM_CPPFLAGS) $(UPSTREAM_CPPFLAGS)
t_fuzz_replay_up_hs_LDADD = $(UPSTREAM_LDADD)
endif

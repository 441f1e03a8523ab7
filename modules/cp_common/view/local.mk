# SPDX-License-Identifier: BSD-2-Clause
# modules/cp_common/view/local.mk: the gateway's pure control-plane parts
# (issue 12): the immutable snapshot view behind <proxyhost/pool_view.h>
# (cp_view*, CP-1-20, CP-3-8/9/17/18) and the bounded outcome queue with
# its batches and digest (cp_outcomes, CP-1-33, CP-5-1/7..10/15), as
# libcpview.la. No I/O, no loop. Whatever links it links
# modules/cp_common/proto/libcpproto.la and modules/frontend/libphfrontend.la too
# (host_norm.c), and $(OPENSSL_LIBS) (SHA-256, OPENSSL_cleanse).
EXTRA_DIST += t/integration/cp_outcome_digest.sh
# The gateway's guide starts here (its section "The snapshot view").
nobase_dist_doc_DATA += docs/user-guide/gateway.md

if CP_ANY
noinst_LTLIBRARIES += %D%/libcpview.la
modules_cp_common_view_libcpview_la_SOURCES = \
	%D%/cp_view.c %D%/cp_view.h \
	%D%/cp_view_sub.c \
	%D%/cp_view_int.h %D%/cp_view_build.c \
	%D%/cp_outcomes.c %D%/cp_outcomes.h \
	%D%/or_status.c %D%/or_status.h
# The generated headers must exist before these compile.
%D%/libcpview_la-cp_view.lo \
%D%/libcpview_la-cp_view_sub.lo \
%D%/libcpview_la-cp_view_build.lo \
%D%/libcpview_la-cp_outcomes.lo: $(CP_GEN)/proto.stamp
modules_cp_common_view_libcpview_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS)
CP_VIEW_LDADD = %D%/libcpview.la \
	modules/cp_common/proto/libcpproto.la modules/frontend/libphfrontend.la \
	$(OPENSSL_LIBS)

UNIT_TESTS += t/unit/cp/test_cp_view t/unit/cp/test_cp_outcomes
t_unit_cp_test_cp_view_SOURCES = t/unit/cp/test_cp_view.c t/lib/cp_view_fixture.h
t_unit_cp_test_cp_view_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(OPENSSL_CFLAGS)
t_unit_cp_test_cp_view_LDADD = $(CP_VIEW_LDADD)
t_unit_cp_test_cp_outcomes_CPPFLAGS = $(t_unit_cp_test_cp_view_CPPFLAGS)
t_unit_cp_test_cp_outcomes_LDADD = $(CP_VIEW_LDADD)

# A fuzz target: the view compiled from any snapshot protobuf-c accepts,
# replayed over t/fuzz/seeds/cp_view by t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_cp_view
t_fuzz_replay_cp_view_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_view.c
t_fuzz_replay_cp_view_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS)
t_fuzz_replay_cp_view_LDADD = $(CP_VIEW_LDADD)

# The digest against Python's hashlib and protobuf (CP-5-12): the shell
# test runs test_cp_outcomes in its dump mode.
TESTS += t/integration/cp_outcome_digest.sh
endif

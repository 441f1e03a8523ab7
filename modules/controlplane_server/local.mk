# modules/controlplane_server: the controller's gRPC WorkerControlPlane
# server. So far its pure request checks (cp_requests.c) and their unit
# test; the module comes with the gRPC layer and the Redis authority
# (issue 12).
EXTRA_DIST += modules/controlplane_server/local.mk

if MODULE_CONTROLPLANE_SERVER
UNIT_TESTS_CP_REQUESTS = t/unit/test_cp_requests
check_PROGRAMS += $(UNIT_TESTS_CP_REQUESTS)
TESTS += $(UNIT_TESTS_CP_REQUESTS)
t_unit_test_cp_requests_SOURCES = t/unit/test_cp_requests.c \
	modules/controlplane_server/cp_requests.c \
	modules/controlplane_server/cp_requests.h
t_unit_test_cp_requests_CPPFLAGS = $(TEST_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(OPENSSL_CFLAGS) -I$(top_srcdir)/modules/controlplane_server
t_unit_test_cp_requests_LDADD = modules/cp_common/libcpproto.la \
	$(OPENSSL_LIBS)
endif

# The request checks' fuzz target, replayed over t/fuzz/seeds/cp_requests
# by t/integration/fuzz_replay.sh.
if MODULE_CONTROLPLANE_SERVER
check_PROGRAMS += t/fuzz/replay_cp_requests
t_fuzz_replay_cp_requests_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_requests.c \
	modules/controlplane_server/cp_requests.c
t_fuzz_replay_cp_requests_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(OPENSSL_CFLAGS) -I$(top_srcdir)/modules/controlplane_server
t_fuzz_replay_cp_requests_LDADD = modules/cp_common/libcpproto.la \
	$(OPENSSL_LIBS)
endif
EXTRA_DIST += t/fuzz/fuzz_cp_requests.c

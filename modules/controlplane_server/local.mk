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

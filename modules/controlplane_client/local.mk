# modules/controlplane_client: the gateway's side of the control plane.
# So far its pure session supervisor (cp_supervisor.c) and its unit test;
# the module itself comes with the gRPC layer (issue 12).
EXTRA_DIST += modules/controlplane_client/local.mk

if MODULE_CONTROLPLANE_CLIENT
UNIT_TESTS_CP_SUPERVISOR = t/unit/test_cp_supervisor
check_PROGRAMS += $(UNIT_TESTS_CP_SUPERVISOR)
TESTS += $(UNIT_TESTS_CP_SUPERVISOR)
t_unit_test_cp_supervisor_SOURCES = t/unit/test_cp_supervisor.c \
	modules/controlplane_client/cp_supervisor.c \
	modules/controlplane_client/cp_supervisor.h
t_unit_test_cp_supervisor_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/modules/controlplane_client \
	-I$(top_srcdir)/modules/common -I$(top_srcdir)/modules/cp_common
t_unit_test_cp_supervisor_LDADD = modules/common/libphcommon.la
endif

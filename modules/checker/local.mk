# SPDX-License-Identifier: BSD-2-Clause
# modules/checker: the checker role (issue 26, CP-6-1..6): a client of the
# controller's CheckerControlPlane (checker.c: the session, the task
# stream, the checks on the loop, the reports), its keys (chk_conf.c),
# messages (chk_wire.c), observation queue (chk_report.c), the probe
# engine over the upstream kit (chk_probe.c, chk_url.c), a check's fair
# time budget (chk_budget.c), its lateness at the deadline (chk_late.c)
# and the reading of the echo endpoint's
# answer (chk_echo.c).
EXTRA_DIST += conf/checker.ini t/integration/checker_role.sh \
	t/integration/checker_dns.sh t/integration/checker_dns_controller.sh \
	t/integration/checker_controller.sh t/integration/health_loop.sh \
	t/integration/health_redis_restart.sh \
	t/fuzz/fuzz_chk_echo.c t/fuzz/fuzz_chk_task.c
nobase_dist_doc_DATA += docs/user-guide/checker.md

CHK_CORE = %D%/chk_probe.c %D%/chk_probe.h \
	%D%/chk_url.c %D%/chk_url.h \
	%D%/chk_echo.c %D%/chk_echo.h \
	%D%/chk_dial.c %D%/chk_dial.h \
	%D%/chk_budget.c %D%/chk_budget.h \
	%D%/chk_late.c %D%/chk_late.h %D%/chk_errno.h
CHK_SOURCES = %D%/checker.c \
	%D%/chk_conf.c %D%/chk_conf.h \
	%D%/chk_wire.c %D%/chk_wire.h \
	%D%/chk_report.c %D%/chk_report.h \
	%D%/chk_status.c %D%/chk_status.h \
	modules/cp_common/grpc/cp_grpc_held.h \
	$(CHK_CORE)
CHK_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS)
CHK_LIBS = modules/cp_common/grpc/libcpgrpc.la \
	modules/cp_common/view/libcpview.la \
	modules/cp_common/snapshot/libcpsnapshot.la \
	modules/upstream/libphupstream.la modules/frontend/libphfrontend.la \
	$(OPENSSL_LIBS)

if MODULE_CHECKER
module_LTLIBRARIES += %D%/checker.la
modules_checker_checker_la_SOURCES = $(CHK_SOURCES)
nodist_modules_checker_checker_la_SOURCES = %D%/chk_conf_keys.c
modules_checker_checker_la_CPPFLAGS = $(CHK_CPPFLAGS)
modules_checker_checker_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_checker_checker_la_LIBADD = $(CHK_LIBS)
dist_samples_DATA += %D%/checker.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
CONF_KEYS_C += %D%/chk_conf_keys.c
CHK_KEY_GROUPS = $(KEYS_CP_GRPC_TLS) $(KEYS_TLS_RELOAD) \
	$(KEYS_CP_GRPC_COMMON) $(KEYS_CP_GRPC_CLIENT)
%D%/chk_conf_keys.c: %D%/checker.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(CHK_KEY_GROUPS)
	$(GEN_CONF_KEYS) -v table=chk_conf_keys -v groups="$(CHK_KEY_GROUPS)" \
		$(srcdir)/%D%/checker.ini.sample >$@.tmp && mv $@.tmp $@
# The generated headers must exist before these compile.
%D%/checker_la-checker.lo %D%/checker_la-chk_wire.lo \
%D%/checker_la-chk_conf.lo %D%/checker_la-chk_report.lo: \
	$(CP_GEN)/proto.stamp

# The probe engine against real sockets, the echo answer's reading, the
# task and batch messages (CP-6-1, CP-6-3..5).
# The status panel through the mock host (issue 28).
UNIT_TESTS += t/unit/cp/test_chk_status
t_unit_cp_test_chk_status_SOURCES = t/unit/cp/test_chk_status.c \
	%D%/chk_status.c %D%/chk_status.h
t_unit_cp_test_chk_status_LDADD = host/libphmock.la $(EV_LIBS)
t_unit_cp_test_chk_status_DEPENDENCIES = host/libphmock.la

UNIT_TESTS += t/unit/cp/test_chk_probe t/unit/cp/test_chk_wire \
	t/unit/cp/test_chk_budget t/unit/cp/test_chk_late
t_unit_cp_test_chk_late_SOURCES = t/unit/cp/test_chk_late.c \
	%D%/chk_late.c
t_unit_cp_test_chk_late_CPPFLAGS = $(CHK_CPPFLAGS)
t_unit_cp_test_chk_budget_SOURCES = t/unit/cp/test_chk_budget.c \
	%D%/chk_budget.c %D%/chk_probe.c %D%/chk_url.c %D%/chk_echo.c
t_unit_cp_test_chk_budget_CPPFLAGS = $(CHK_CPPFLAGS)
t_unit_cp_test_chk_budget_LDADD = modules/upstream/libphupstream.la \
	modules/frontend/libphfrontend.la $(OPENSSL_LIBS)
t_unit_cp_test_chk_probe_SOURCES = t/unit/cp/test_chk_probe.c $(CHK_CORE)
t_unit_cp_test_chk_probe_CPPFLAGS = $(CHK_CPPFLAGS)
t_unit_cp_test_chk_probe_LDADD = modules/upstream/libphupstream.la \
	modules/frontend/libphfrontend.la $(OPENSSL_LIBS) -lpthread
t_unit_cp_test_chk_wire_SOURCES = t/unit/cp/test_chk_wire.c \
	%D%/chk_wire.c %D%/chk_report.c $(CHK_CORE)
t_unit_cp_test_chk_wire_CPPFLAGS = $(CHK_CPPFLAGS)
t_unit_cp_test_chk_wire_LDADD = $(CHK_LIBS)
t/unit/cp/test_chk_wire-test_chk_wire.$(OBJEXT) \
t/unit/cp/test_chk_wire-chk_wire.$(OBJEXT) \
t/unit/cp/test_chk_wire-chk_report.$(OBJEXT): $(CP_GEN)/proto.stamp

# Fuzz targets replayed by t/integration/fuzz_replay.sh: the echo answer
# as the checker reads it, and a CheckTask.
check_PROGRAMS += t/fuzz/replay_chk_echo t/fuzz/replay_chk_task
t_fuzz_replay_chk_echo_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_chk_echo.c \
	%D%/chk_echo.c
t_fuzz_replay_chk_echo_CPPFLAGS = $(AM_CPPFLAGS)
t_fuzz_replay_chk_echo_LDADD = modules/frontend/libphfrontend.la
t_fuzz_replay_chk_task_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_chk_task.c \
	%D%/chk_wire.c %D%/chk_report.c $(CHK_CORE)
t_fuzz_replay_chk_task_CPPFLAGS = $(CHK_CPPFLAGS)
t_fuzz_replay_chk_task_LDADD = $(CHK_LIBS)
t/fuzz/replay_chk_task-fuzz_chk_task.$(OBJEXT) \
t/fuzz/replay_chk_task-chk_wire.$(OBJEXT): $(CP_GEN)/proto.stamp

# The role against real upstreams and t/lib/cp_fake_controller.py's
# CheckerControlPlane (CP-6-1, CP-6-3..6).
if MODULE_ECHO
TESTS += t/integration/checker_role.sh
# The checker dialling names through a `direct` connector, against
# t/lib/dnsd.py (issue 26, i26-dns).
if MODULE_DIRECT
TESTS += t/integration/checker_dns.sh
if MODULE_CONTROLPLANE_SERVER
TESTS += t/integration/checker_dns_controller.sh
endif
endif
# The checker against the real controller (controlplane_server,
# redis_ownership, store_sqlite) and real proxies.
if MODULE_CONTROLPLANE_SERVER
TESTS += t/integration/checker_controller.sh
# The whole health loop: controller, two checkers, a gateway, seven kinds
# of upstream (issue 26 round 2, CP-6-3..7).
TESTS += t/integration/health_loop.sh
# Redis restarted empty under the health loop: verdicts written again,
# the checker registered again (issue 26, CP-6-6, CP-6-7).
TESTS += t/integration/health_redis_restart.sh
endif
endif
endif

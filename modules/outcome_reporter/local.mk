# modules/outcome_reporter: the gateway's outcome queue and its
# ReportOutcomes calls (issue 12, CP-1-29..33, CP-5-1..18): provides
# "outcome.sink" (sdk/proxyhost/outcome_sink.h) over cp_outcomes.h's ring
# and sends its batches through controlplane_client's "cp.session"
# (modules/contracts/cp_session.h). Its integration test runs it
# against t/lib/cp_fake_controller.py and the real controller, with the
# test module t/modules/outcome_probe.c recording outcomes on demand.
EXTRA_DIST += t/integration/cp_outcomes.sh

OR_SOURCES = %D%/outcome_reporter.c
OR_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS)

if MODULE_OUTCOME_REPORTER
module_LTLIBRARIES += %D%/outcome_reporter.la
modules_outcome_reporter_outcome_reporter_la_SOURCES = $(OR_SOURCES)
modules_outcome_reporter_outcome_reporter_la_CPPFLAGS = $(OR_CPPFLAGS)
modules_outcome_reporter_outcome_reporter_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_outcome_reporter_outcome_reporter_la_LIBADD = $(CP_VIEW_LDADD)
dist_samples_DATA += %D%/outcome_reporter.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_outcome_reporter_outcome_reporter_la_SOURCES = \
	%D%/outcome_reporter_keys.c
CONF_KEYS_C += %D%/outcome_reporter_keys.c
%D%/outcome_reporter_keys.c: %D%/outcome_reporter.ini.sample \
		$(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=or_keys \
		$(srcdir)/%D%/outcome_reporter.ini.sample >$@.tmp && mv $@.tmp $@
# The generated headers must exist before these compile. (Named through the
# _OBJECTS variable: a rule whose target is one object automake generates
# makes automake drop its own compile rule for it.)
$(modules_outcome_reporter_outcome_reporter_la_OBJECTS): $(CP_GEN)/proto.stamp

# The status classes (CP-5-16, CP-5-17); the module through the mock
# host with a fake cp.session (CP-2-4, CP-5-1, CP-5-7..10, CP-5-15..18).
UNIT_TESTS += t/unit/cp/test_or_status t/unit/cp/test_outcome_reporter
t_unit_cp_test_or_status_SOURCES = t/unit/cp/test_or_status.c \
	modules/cp_common/view/or_status.c
t_unit_cp_test_or_status_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_cp_test_outcome_reporter_SOURCES = t/unit/cp/test_outcome_reporter.c \
	$(OR_SOURCES)
nodist_t_unit_cp_test_outcome_reporter_SOURCES = %D%/outcome_reporter_keys.c
t_unit_cp_test_outcome_reporter_CPPFLAGS = $(OR_CPPFLAGS)
t_unit_cp_test_outcome_reporter_LDADD = host/libphmock.la $(CP_VIEW_LDADD)
t/unit/cp/test_outcome_reporter-test_outcome_reporter.$(OBJEXT) \
t/unit/cp/test_outcome_reporter-outcome_reporter.$(OBJEXT): $(CP_GEN)/proto.stamp

# A module that records outcomes through "outcome.sink" when the test asks
# (an admin route).
check_LTLIBRARIES += t/modules/outcome_probe.la
t_modules_outcome_probe_la_SOURCES = t/modules/outcome_probe.c
t_modules_outcome_probe_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)

if MODULE_CONTROLPLANE_CLIENT
TESTS += t/integration/cp_outcomes.sh
endif
endif

# SPDX-License-Identifier: BSD-2-Clause
# modules/lib/local.mk: general code every layer may use (libphlib.la)
# (included from Makefile.am; paths are from the top).

# The two shared layers under the modules (docs/sdk.md, "Layers"):
# modules/lib/ (general code: lists, id tables, clocks, bounded writers,
# JSON, metric tables, CIDR, host names, TLS reload) and modules/frontend/
# (the frontend kit: listeners, sessions, relay, access log, client ACL,
# the open map). Static convenience libraries built position-independent;
# libphfrontend.la carries libphlib.la, so a module links one of them.
noinst_LTLIBRARIES += modules/lib/libphlib.la
modules_lib_libphlib_la_SOURCES = \
	modules/lib/backoff.c modules/lib/backoff.h \
	modules/lib/bw.c modules/lib/bw.h \
	modules/lib/cidr.c modules/lib/cidr.h \
	modules/lib/clocks.h modules/lib/guard.h \
	modules/lib/conf_values.c modules/lib/conf_values.h \
	modules/lib/host_norm.c modules/lib/host_norm.h \
	modules/lib/http1_head.c modules/lib/http1_head.h \
	modules/lib/kcache.c modules/lib/kcache.h \
	modules/lib/sflight.c modules/lib/sflight.h \
	modules/lib/idtab.h modules/lib/ilist.h \
	modules/lib/json.c modules/lib/json.h \
	modules/lib/metric_table.c modules/lib/metric_table.h \
	modules/lib/tls_reload.c modules/lib/tls_reload.h

# Its unit tests.
UNIT_TESTS += t/unit/lib/test_json t/unit/lib/test_bw t/unit/lib/test_metric_table \
	t/unit/lib/test_host_norm t/unit/lib/test_ilist t/unit/lib/test_idtab \
	t/unit/lib/test_clocks t/unit/lib/test_http1_head t/unit/lib/test_cache_sf
t_unit_lib_test_http1_head_LDADD = modules/lib/libphlib.la $(LDADD)
t_unit_lib_test_cache_sf_LDADD = modules/lib/libphlib.la host/libphmock.la
t_unit_lib_test_bw_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_lib_test_json_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_lib_test_metric_table_LDADD = $(FRONTEND_MOCK_LDADD)
t_unit_lib_test_host_norm_LDADD = $(FRONTEND_TEST_LDADD)

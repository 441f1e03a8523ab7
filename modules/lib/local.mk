# SPDX-License-Identifier: BSD-2-Clause
# modules/lib/local.mk: general code every layer may use (libphlib.la)
# (included from Makefile.am; paths are from the top).

# The two shared layers under the modules (docs/sdk.md, "Layers"):
# modules/lib/ (general code: lists, id tables, clocks, bounded writers,
# JSON, metric tables, CIDR, host names, TLS reload) and modules/frontend/
# (the frontend kit: listeners, sessions, relay, access log, client ACL,
# the open map). Static convenience libraries built position-independent;
# libphfrontend.la carries libphlib.la, so a module links one of them.
noinst_LTLIBRARIES += %D%/libphlib.la
modules_lib_libphlib_la_SOURCES = \
	%D%/access_req.c %D%/access_req.h \
	%D%/admin_token.c %D%/admin_token.h \
	%D%/b64.c %D%/b64.h \
	%D%/backoff.c %D%/backoff.h \
	%D%/bw.c %D%/bw.h \
	%D%/cidr.c %D%/cidr.h \
	%D%/clocks.h %D%/guard.h %D%/hex.h %D%/section_name.h \
	%D%/conf_values.c %D%/conf_values.h \
	%D%/host_norm.c %D%/host_norm.h \
	%D%/http1_head.c %D%/http1_head.h \
	%D%/kcache.c %D%/kcache.h \
	%D%/sflight.c %D%/sflight.h \
	%D%/idtab.h %D%/ilist.h %D%/lat_window.h %D%/minute_ring.h \
	%D%/json.c %D%/json.h \
	%D%/metric_table.c %D%/metric_table.h \
	%D%/tls_reload.c %D%/tls_reload.h

# Its unit tests.
UNIT_TESTS += t/unit/lib/test_json t/unit/lib/test_bw t/unit/lib/test_metric_table \
	t/unit/lib/test_host_norm t/unit/lib/test_ilist t/unit/lib/test_idtab \
	t/unit/lib/test_clocks t/unit/lib/test_http1_head t/unit/lib/test_cache_sf \
	t/unit/lib/test_b64 t/unit/lib/test_lat_window \
	t/unit/lib/test_minute_ring t/unit/lib/test_conf_limits
t_unit_lib_test_http1_head_LDADD = %D%/libphlib.la $(LDADD)
t_unit_lib_test_cache_sf_LDADD = %D%/libphlib.la host/libphmock.la
t_unit_lib_test_b64_LDADD = %D%/libphlib.la $(LDADD)
# ph_conf_limits: a module's check holding a bound its table does not.
t_unit_lib_test_conf_limits_LDADD = %D%/libphlib.la host/libphmock.la
t_unit_lib_test_bw_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_lib_test_json_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_lib_test_metric_table_LDADD = $(FRONTEND_MOCK_LDADD)
t_unit_lib_test_host_norm_LDADD = $(FRONTEND_TEST_LDADD)

# SPDX-License-Identifier: BSD-2-Clause
# modules/frontend/local.mk: the frontend kit (libphfrontend.la, carrying libphlib.la)
# (included from Makefile.am; paths are from the top).

noinst_LTLIBRARIES += %D%/libphfrontend.la
modules_frontend_libphfrontend_la_SOURCES = \
	%D%/access_log.c %D%/access_log.h \
	%D%/client_acl.c %D%/client_acl.h \
	%D%/frontend_check.c %D%/frontend_check.h \
	%D%/frontend_gate.c %D%/frontend_gate.h \
	%D%/frontend_server.c %D%/frontend_server.h \
	%D%/frontend_services.c %D%/frontend_services.h \
	%D%/frontend_session.c %D%/frontend_session.h \
	%D%/hangup.c %D%/hangup.h \
	%D%/listener.c %D%/listener.h \
	%D%/open_map.c %D%/open_map.h \
	%D%/provider_check.c %D%/provider_check.h \
	%D%/relay.c %D%/relay.h \
	%D%/stream_metrics.c %D%/stream_metrics.h \
	%D%/traffic_gate.h
modules_frontend_libphfrontend_la_LIBADD = modules/lib/libphlib.la

# Its unit tests.
UNIT_TESTS += t/unit/frontend/test_open_map t/unit/frontend/test_client_acl \
	t/unit/frontend/test_relay t/unit/frontend/test_frontend_session
t_unit_frontend_test_client_acl_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_frontend_test_open_map_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_frontend_test_relay_LDADD = $(FRONTEND_MOCK_LDADD)
t_unit_frontend_test_frontend_session_LDADD = t/lib/libphfake.la \
	$(FRONTEND_MOCK_LDADD)
t_unit_frontend_test_frontend_session_SOURCES = \
	t/unit/frontend/test_frontend_session.c
nodist_t_unit_frontend_test_frontend_session_SOURCES = \
	t/unit/frontend/frontend_keys.c
CONF_KEYS_C += t/unit/frontend/frontend_keys.c
t/unit/frontend/frontend_keys.c: t/unit/frontend/frontend_keys.ini.sample \
		$(GEN_CONF_KEYS_AWK) $(KEYS_FRONTEND)
	$(GEN_CONF_KEYS) -v section=fs_host -v table=host_keys -v complete=1 \
		-v groups="$(KEYS_FRONTEND)" \
		$(srcdir)/t/unit/frontend/frontend_keys.ini.sample >$@.tmp && mv $@.tmp $@
EXTRA_DIST += t/unit/frontend/frontend_keys.ini.sample
# The frontends' checks hold their bounds whatever their samples declare
# (socks5's and http_proxy's built .so, each skipped when not built).
UNIT_TESTS += t/unit/frontend/test_frontend_bounds
t_unit_frontend_test_frontend_bounds_LDADD = host/libphmock.la

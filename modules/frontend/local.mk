# SPDX-License-Identifier: BSD-2-Clause
# modules/frontend/local.mk: the frontend kit (libphfrontend.la, carrying libphlib.la)
# (included from Makefile.am; paths are from the top).

noinst_LTLIBRARIES += modules/frontend/libphfrontend.la
modules_frontend_libphfrontend_la_SOURCES = \
	modules/frontend/access_log.c modules/frontend/access_log.h \
	modules/frontend/client_acl.c modules/frontend/client_acl.h \
	modules/frontend/frontend_check.c modules/frontend/frontend_check.h \
	modules/frontend/frontend_gate.c modules/frontend/frontend_gate.h \
	modules/frontend/frontend_keys.h \
	modules/frontend/frontend_server.c modules/frontend/frontend_server.h \
	modules/frontend/frontend_services.c modules/frontend/frontend_services.h \
	modules/frontend/frontend_session.c modules/frontend/frontend_session.h \
	modules/frontend/hangup.c modules/frontend/hangup.h \
	modules/frontend/listener.c modules/frontend/listener.h \
	modules/frontend/open_map.c modules/frontend/open_map.h \
	modules/frontend/provider_check.c modules/frontend/provider_check.h \
	modules/frontend/relay.c modules/frontend/relay.h \
	modules/frontend/stream_metrics.c modules/frontend/stream_metrics.h \
	modules/frontend/traffic_gate.h
modules_frontend_libphfrontend_la_LIBADD = modules/lib/libphlib.la

# Its unit tests.
UNIT_TESTS += t/unit/frontend/test_open_map t/unit/frontend/test_client_acl \
	t/unit/frontend/test_relay t/unit/frontend/test_frontend_session
t_unit_frontend_test_client_acl_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_frontend_test_open_map_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_frontend_test_relay_LDADD = $(FRONTEND_MOCK_LDADD)
t_unit_frontend_test_frontend_session_LDADD = t/lib/libphfake.la \
	$(FRONTEND_MOCK_LDADD)

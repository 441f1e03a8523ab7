# SPDX-License-Identifier: BSD-2-Clause
# modules/http_proxy/local.mk: the HTTP proxy frontend and its unit tests
# (included from Makefile.am; paths are from the top).
if MODULE_HTTP_PROXY
module_LTLIBRARIES += %D%/http_proxy.la
modules_http_proxy_http_proxy_la_SOURCES = %D%/http_proxy.c \
	%D%/http_proxy_int.h \
	%D%/http_conn.c %D%/http_request.c \
	%D%/http_auth.c %D%/http_open.c \
	%D%/http_tunnel.c %D%/http_forward.c \
	%D%/http_reply.c %D%/http_iobuf.c \
	%D%/http_state.c \
	%D%/http_head.c %D%/http_head.h \
	%D%/http_body.c %D%/http_body.h
modules_http_proxy_http_proxy_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_http_proxy_http_proxy_la_LIBADD = modules/frontend/libphfrontend.la \
	$(HTTP_PARSER_LIBS)
dist_samples_DATA += %D%/http_proxy.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_http_proxy_http_proxy_la_SOURCES = %D%/http_proxy_keys.c
CONF_KEYS_C += %D%/http_proxy_keys.c
%D%/http_proxy_keys.c: %D%/http_proxy.ini.sample $(GEN_CONF_KEYS_AWK) $(KEYS_FRONTEND)
	$(GEN_CONF_KEYS) -v table=hp_keys -v groups="$(KEYS_FRONTEND)" \
		$(srcdir)/%D%/http_proxy.ini.sample >$@.tmp && mv $@.tmp $@

UNIT_TESTS += t/unit/frontend/test_http_head t/unit/frontend/test_http_proxy \
	t/unit/frontend/test_http_body
t_unit_frontend_test_http_head_SOURCES = t/unit/frontend/test_http_head.c \
	%D%/http_head.c modules/lib/b64.c modules/lib/bw.c \
	modules/lib/http1_head.c
t_unit_frontend_test_http_head_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_frontend_test_http_head_LDADD = host/libphmock.la $(HTTP_PARSER_LIBS)
t_unit_frontend_test_http_body_SOURCES = t/unit/frontend/test_http_body.c \
	%D%/http_body.c
t_unit_frontend_test_http_body_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_frontend_test_http_body_LDADD = host/libphmock.la
t_unit_frontend_test_http_proxy_LDADD = $(FAKE_TEST_LDADD)
if MODULE_SOCKS5
UNIT_TESTS += t/unit/frontend/test_streams
t_unit_frontend_test_streams_LDADD = host/libphmock.la
endif
endif

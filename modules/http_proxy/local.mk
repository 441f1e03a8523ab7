# SPDX-License-Identifier: BSD-2-Clause
# modules/http_proxy/local.mk: the HTTP proxy frontend
# (included from Makefile.am; paths are from the top).
EXTRA_DIST += modules/http_proxy/local.mk

if MODULE_HTTP_PROXY
module_LTLIBRARIES += modules/http_proxy/http_proxy.la
modules_http_proxy_http_proxy_la_SOURCES = modules/http_proxy/http_proxy.c \
	modules/http_proxy/http_proxy_int.h \
	modules/http_proxy/http_conn.c modules/http_proxy/http_request.c \
	modules/http_proxy/http_auth.c modules/http_proxy/http_open.c \
	modules/http_proxy/http_tunnel.c modules/http_proxy/http_forward.c \
	modules/http_proxy/http_reply.c modules/http_proxy/http_iobuf.c \
	modules/http_proxy/http_state.c \
	modules/http_proxy/http_head.c modules/http_proxy/http_head.h \
	modules/http_proxy/http_body.c modules/http_proxy/http_body.h
modules_http_proxy_http_proxy_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_http_proxy_http_proxy_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_http_proxy_http_proxy_la_LIBADD = modules/frontend/libphfrontend.la \
	$(HTTP_PARSER_LIBS)
samples_DATA += modules/http_proxy/http_proxy.ini.sample
endif
EXTRA_DIST += modules/http_proxy/http_proxy.ini.sample

# Its unit tests.
if MODULE_HTTP_PROXY
check_PROGRAMS += t/unit/frontend/test_http_head t/unit/frontend/test_http_proxy t/unit/frontend/test_http_body
TESTS += t/unit/frontend/test_http_head t/unit/frontend/test_http_proxy t/unit/frontend/test_http_body
endif
t_unit_frontend_test_http_head_SOURCES = t/unit/frontend/test_http_head.c \
	modules/http_proxy/http_head.c modules/lib/bw.c modules/lib/http1_head.c
t_unit_frontend_test_http_head_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_frontend_test_http_head_LDADD = host/libphmock.la $(HTTP_PARSER_LIBS)
t_unit_frontend_test_http_body_SOURCES = t/unit/frontend/test_http_body.c \
	modules/http_proxy/http_body.c
t_unit_frontend_test_http_body_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_frontend_test_http_body_LDADD = host/libphmock.la
t_unit_frontend_test_http_proxy_LDADD = t/lib/libphfake.la host/libphmock.la
if MODULE_HTTP_PROXY
if MODULE_SOCKS5
check_PROGRAMS += t/unit/frontend/test_streams
TESTS += t/unit/frontend/test_streams
endif
endif
t_unit_frontend_test_streams_LDADD = host/libphmock.la

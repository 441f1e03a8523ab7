# modules/tunnel_common: the TunnelMesh protocol (pure: tm_proto, tm_open,
# tm_window, tm_drr; libtmproto.la) and the session layer over
# libwebsockets (tm_session, tm_ws, tm_metrics; libtmsession.la), linked
# into each tunnel role module. Their unit tests and fuzz targets too.
EXTRA_DIST += modules/tunnel_common/local.mk

# libtmsession.la: the session layer, libwebsockets glue and metrics
# (tm-session, tm-ws and the metrics add their sources below with +=).
# This block defines the library once; created by tm-ws (issue 11).
if TUNNEL_ANY
noinst_LTLIBRARIES += modules/tunnel_common/libtmsession.la
modules_tunnel_common_libtmsession_la_SOURCES =
modules_tunnel_common_libtmsession_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(LWS_CFLAGS) $(OPENSSL_CFLAGS) -I$(top_srcdir)/modules/tunnel_common
modules_tunnel_common_libtmsession_la_LIBADD = $(LWS_LIBS) $(OPENSSL_LIBS)
endif

# tm-ws: libwebsockets on the loop (tm_ws.c), the URL parser, the backoff;
# test_tm_ws (client and server in one process through the mock host)
# and the URL parser's fuzz target.
if TUNNEL_ANY
TM_WS_SOURCES = modules/tunnel_common/tm_ws.c \
	modules/tunnel_common/tm_ws.h \
	modules/tunnel_common/tm_ws_url.c modules/tunnel_common/tm_ws_url.h \
	modules/tunnel_common/tm_backoff.c
modules_tunnel_common_libtmsession_la_SOURCES += $(TM_WS_SOURCES)
UNIT_TESTS_LOCAL += t/unit/test_tm_ws
t_unit_test_tm_ws_SOURCES = t/unit/test_tm_ws.c t/unit/tm_ws_stubs.c \
	t/unit/tm_ws_stubs.h \
	$(TM_WS_SOURCES)
t_unit_test_tm_ws_CPPFLAGS = $(TEST_CPPFLAGS) $(LWS_CFLAGS) \
	$(OPENSSL_CFLAGS) -I$(top_srcdir)/modules/tunnel_common \
	-DTM_TEST_SRCDIR='"$(abs_top_srcdir)"'
t_unit_test_tm_ws_LDADD = host/libphmock.la $(LWS_LIBS) $(OPENSSL_LIBS)
check_PROGRAMS += t/fuzz/replay_tm_url
t_fuzz_replay_tm_url_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_url.c \
	modules/tunnel_common/tm_ws_url.c
t_fuzz_replay_tm_url_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/modules/tunnel_common
endif
EXTRA_DIST += t/unit/tm_ws_certs.sh

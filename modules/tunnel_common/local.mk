# modules/tunnel_common: the TunnelMesh protocol (pure: tm_proto, tm_open,
# tm_window, tm_drr; libtmproto.la) and the session layer over
# libwebsockets (tm_session, tm_ws, tm_metrics; libtmsession.la), linked
# into each tunnel role module. Their unit tests and fuzz targets too.
EXTRA_DIST += modules/tunnel_common/local.mk

# tm-proto: the pure protocol (no I/O, no logging, no allocation). It uses
# modules/common/json.c but does not carry it: whatever links
# libtmproto.la links modules/common/libphcommon.la too (the role modules
# do already, for relay.c), so json.o is never in one link twice.
if TUNNEL_ANY
noinst_LTLIBRARIES += modules/tunnel_common/libtmproto.la
modules_tunnel_common_libtmproto_la_SOURCES = \
	modules/tunnel_common/tm_proto.c modules/tunnel_common/tm_proto.h \
	modules/tunnel_common/tm_open.c modules/tunnel_common/tm_open.h \
	modules/tunnel_common/tm_window.c modules/tunnel_common/tm_window.h \
	modules/tunnel_common/tm_drr.c modules/tunnel_common/tm_drr.h
modules_tunnel_common_libtmproto_la_CPPFLAGS = $(MODULE_CPPFLAGS)
endif

# tm-session: the session layer (one connection's streams over an abstract
# transport: the reader, the queues, the windows, the one writer) and the
# seed's metrics. tm-ws adds tm_ws.c to the same library in its own block
# after this one (automake wants the '=' before any '+=').
# Whatever links libtmsession.la links libtmproto.la and
# modules/common/libphcommon.la too (stream_metrics.c, json.c).
if TUNNEL_ANY
noinst_LTLIBRARIES += modules/tunnel_common/libtmsession.la
modules_tunnel_common_libtmsession_la_SOURCES = \
	modules/tunnel_common/tm_session.c modules/tunnel_common/tm_session.h \
	modules/tunnel_common/tm_session_int.h \
	modules/tunnel_common/tm_stream.c modules/tunnel_common/tm_writer.c \
	modules/tunnel_common/tm_metrics.c modules/tunnel_common/tm_metrics.h
modules_tunnel_common_libtmsession_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_tunnel_common_libtmsession_la_LIBADD = $(EV_LIBS)

UNIT_TESTS_TM_SESSION = t/unit/test_tm_session
check_PROGRAMS += $(UNIT_TESTS_TM_SESSION)
TESTS += $(UNIT_TESTS_TM_SESSION)
t_unit_test_tm_session_SOURCES = t/unit/test_tm_session.c \
	t/unit/tm_memlink.c t/unit/tm_memlink.h
t_unit_test_tm_session_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/modules/tunnel_common
t_unit_test_tm_session_LDADD = modules/tunnel_common/libtmsession.la \
	modules/tunnel_common/libtmproto.la modules/common/libphcommon.la \
	host/libphmock.la $(EV_LIBS)
endif

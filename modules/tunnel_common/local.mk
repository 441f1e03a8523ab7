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

# modules/tunnel_common: the TunnelMesh protocol (pure: tm_proto, tm_open,
# tm_window, tm_drr; libtmproto.la) and the session layer over
# libwebsockets (tm_session, tm_ws, tm_metrics; libtmsession.la), linked
# into each tunnel role module. Their unit tests and fuzz targets too.
EXTRA_DIST += modules/tunnel_common/local.mk

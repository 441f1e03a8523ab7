# SPDX-License-Identifier: BSD-2-Clause
# modules/tunnel_common/session/local.mk: the session layer over
# libwebsockets (tm_session, tm_ws, tm_metrics; libtmsession.la), linked
# into each tunnel role module, with its unit tests and fuzz targets.

# tm-session: the session layer (one connection's streams over an abstract
# transport: the reader, the queues, the windows, the one writer) and the
# seed's metrics. tm-ws adds tm_ws.c to the same library in its own block
# after this one (automake wants the '=' before any '+=').
# Whatever links libtmsession.la links libtmproto.la and
# modules/frontend/libphfrontend.la too (stream_metrics.c, json.c): the
# three are TM_SESSION_LDADD.
TM_SESSION_LDADD = %D%/libtmsession.la \
	modules/tunnel_common/proto/libtmproto.la modules/frontend/libphfrontend.la
if TUNNEL_ANY
noinst_LTLIBRARIES += %D%/libtmsession.la
modules_tunnel_common_session_libtmsession_la_SOURCES = \
	%D%/tm_session.c %D%/tm_session.h \
	%D%/tm_session_int.h \
	%D%/tm_stream.c %D%/tm_writer.c \
	%D%/tm_metrics.c %D%/tm_metrics.h \
	%D%/tm_conf.c %D%/tm_conf.h \
	%D%/tm_token.c %D%/tm_token.h \
	%D%/tm_trace.c %D%/tm_trace.h \
	%D%/tm_session_ws.c \
	%D%/tm_session_ws.h
# (merge of tm-session and tm-ws, done in tm-agent: one definition, with
# tm-ws's flags and libraries; tm-ws's block below adds its sources.)
modules_tunnel_common_session_libtmsession_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(LWS_CFLAGS) $(OPENSSL_CFLAGS)
modules_tunnel_common_session_libtmsession_la_LIBADD = $(EV_LIBS) $(LWS_LIBS) \
	$(OPENSSL_LIBS)

UNIT_TESTS += t/unit/tunnel/test_tm_session
t_unit_tunnel_test_tm_session_SOURCES = t/unit/tunnel/test_tm_session.c \
	t/unit/tunnel/tm_memlink.c t/unit/tunnel/tm_memlink.h
t_unit_tunnel_test_tm_session_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(EV_LIBS)
endif

# The bearer token file reader of tunnel_client and tunnel_agent
# (tm_token.c, in libtmsession.la): its unit test.
if TUNNEL_ANY
UNIT_TESTS += t/unit/tunnel/test_tm_token
t_unit_tunnel_test_tm_token_SOURCES = t/unit/tunnel/test_tm_token.c \
	%D%/tm_token.c
t_unit_tunnel_test_tm_token_CPPFLAGS = $(AM_CPPFLAGS)
# tm_conf_check's own hold on the session's limits, whatever a role's
# table (generated from its sample) declares.
UNIT_TESTS += t/unit/tunnel/test_tm_conf
t_unit_tunnel_test_tm_conf_SOURCES = t/unit/tunnel/test_tm_conf.c
t_unit_tunnel_test_tm_conf_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(EV_LIBS)
endif

# tm-ws: libwebsockets on the loop (tm_ws.c), the URL parser, the backoff;
# test_tm_ws (client and server in one process through the mock host).
if TUNNEL_ANY
TM_WS_SOURCES = %D%/tm_ws.c \
	%D%/tm_ws.h %D%/tm_ws_int.h \
	%D%/tm_ws_client.c %D%/tm_ws_tls.c \
	%D%/tm_ws_end.c %D%/tm_ws_server.c \
	%D%/tm_wsc.c %D%/tm_wsc.h \
	%D%/tm_ws_url.c %D%/tm_ws_url.h
modules_tunnel_common_session_libtmsession_la_SOURCES += $(TM_WS_SOURCES)
modules_tunnel_common_session_libtmsession_la_CPPFLAGS += $(LWS_CFLAGS) \
	$(OPENSSL_CFLAGS)
modules_tunnel_common_session_libtmsession_la_LIBADD += $(LWS_LIBS) $(OPENSSL_LIBS)
UNIT_TESTS += t/unit/tunnel/test_tm_ws
t_unit_tunnel_test_tm_ws_SOURCES = t/unit/tunnel/test_tm_ws.c t/unit/tunnel/tm_ws_stubs.c \
	t/unit/tunnel/tm_ws_stubs.h \
	$(TM_WS_SOURCES)
t_unit_tunnel_test_tm_ws_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS) \
	$(OPENSSL_CFLAGS) \
	-DTM_TEST_SRCDIR='"$(abs_top_srcdir)"' -DTM_HAVE_PROTO
t_unit_tunnel_test_tm_ws_LDADD = modules/tunnel_common/proto/libtmproto.la \
	modules/frontend/libphfrontend.la host/libphmock.la $(LWS_LIBS) \
	$(OPENSSL_LIBS)
# The WebSocket client end (tm_wsc.c, pure): its unit test.
UNIT_TESTS += t/unit/tunnel/test_tm_wsc
t_unit_tunnel_test_tm_wsc_SOURCES = t/unit/tunnel/test_tm_wsc.c %D%/tm_wsc.c \
	modules/lib/bw.c modules/lib/http1_head.c
t_unit_tunnel_test_tm_wsc_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
t_unit_tunnel_test_tm_wsc_LDADD = $(LDADD) $(OPENSSL_LIBS)
endif
EXTRA_DIST += t/unit/tunnel/tm_ws_certs.sh

# tm-ws: one real tm_session on each end of a real tm_ws connection.
if TUNNEL_ANY
UNIT_TESTS += t/unit/tunnel/test_tm_ws_session
t_unit_tunnel_test_tm_ws_session_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS)
t_unit_tunnel_test_tm_ws_session_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(LWS_LIBS) $(OPENSSL_LIBS) $(EV_LIBS)

# The fuzz targets, replayed over t/fuzz/seeds/NAME by
# t/integration/fuzz_replay.sh: the session (tm_session), the token file
# reader (tm_token), the WebSocket client end (tm_wsc), the URL parser
# (tm_url).
check_PROGRAMS += t/fuzz/replay_tm_session t/fuzz/replay_tm_token \
	t/fuzz/replay_tm_wsc t/fuzz/replay_tm_url
t_fuzz_replay_tm_session_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_session.c
t_fuzz_replay_tm_session_LDADD = $(TM_SESSION_LDADD) $(EV_LIBS)
t_fuzz_replay_tm_token_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_token.c \
	%D%/tm_token.c
t_fuzz_replay_tm_token_CPPFLAGS = $(AM_CPPFLAGS)
t_fuzz_replay_tm_wsc_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_wsc.c \
	%D%/tm_wsc.c modules/lib/bw.c modules/lib/http1_head.c
t_fuzz_replay_tm_wsc_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
t_fuzz_replay_tm_wsc_LDADD = $(OPENSSL_LIBS)
t_fuzz_replay_tm_url_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_url.c \
	%D%/tm_ws_url.c
t_fuzz_replay_tm_url_CPPFLAGS = $(AM_CPPFLAGS)
endif

# tm-proto: the protocol's specification, installed with the other docs
# (nobase_dist_doc_DATA as in Makefile.am; t/integration/docs_dist.sh
# reads the fragments too).
nobase_dist_doc_DATA += docs/protocol/tunnel.md docs/protocol/proxy-modules.md

# tm-ws: the operations page of the WebSocket transport (installed with
# the other documents; t/integration/docs_dist.sh).
nobase_dist_doc_DATA += docs/operations/tunnel-transport.md

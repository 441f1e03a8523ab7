# SPDX-License-Identifier: BSD-2-Clause
# modules/tunnel_common/proto/local.mk: the TunnelMesh protocol (pure:
# tm_proto, tm_open, tm_window, tm_drr; libtmproto.la), linked into each
# tunnel role module, with its unit tests and fuzz targets.

# tm-proto: the pure protocol (no I/O, no logging, no allocation). It uses
# modules/lib/json.c but does not carry it: whatever links
# libtmproto.la links modules/frontend/libphfrontend.la too (the role modules
# do already, for relay.c), so json.o is never in one link twice.
if TUNNEL_ANY
noinst_LTLIBRARIES += %D%/libtmproto.la
modules_tunnel_common_proto_libtmproto_la_SOURCES = \
	%D%/tm_proto.c %D%/tm_proto.h \
	%D%/tm_open.c %D%/tm_open.h \
	%D%/tm_window.c %D%/tm_window.h \
	%D%/tm_drr.c %D%/tm_drr.h
TM_PROTO_LDADD = %D%/libtmproto.la \
	modules/frontend/libphfrontend.la

UNIT_TESTS += t/unit/tunnel/test_tm_proto t/unit/tunnel/test_tm_open \
	t/unit/tunnel/test_tm_window t/unit/tunnel/test_tm_drr
t_unit_tunnel_test_tm_proto_LDADD = $(TM_PROTO_LDADD)
t_unit_tunnel_test_tm_open_LDADD = $(TM_PROTO_LDADD)
t_unit_tunnel_test_tm_window_LDADD = $(TM_PROTO_LDADD)
t_unit_tunnel_test_tm_drr_LDADD = $(TM_PROTO_LDADD)

# Fuzz targets, replayed over t/fuzz/seeds/tm_frame and tm_payload by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_tm_frame t/fuzz/replay_tm_payload
t_fuzz_replay_tm_frame_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_frame.c
t_fuzz_replay_tm_payload_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_tm_payload.c
t_fuzz_replay_tm_frame_LDADD = $(TM_PROTO_LDADD)
t_fuzz_replay_tm_payload_LDADD = $(TM_PROTO_LDADD)
endif


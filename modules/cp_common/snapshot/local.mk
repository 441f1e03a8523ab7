# modules/cp_common/snapshot/local.mk: the control plane's snapshots, pure code
# (no I/O, no logging, no threads) as libcpsnapshot.la: the checksum
# (cp_checksum), the controller's build, the gateway's validation, deltas
# both ways (cp_snapshot*). Whatever links it links libcpproto.la and
# $(OPENSSL_LIBS) through it. Its unit test, its Python vector test and
# its two fuzz targets.

if CP_ANY
noinst_LTLIBRARIES += %D%/libcpsnapshot.la
modules_cp_common_snapshot_libcpsnapshot_la_SOURCES = \
	%D%/cp_checksum.c %D%/cp_checksum.h \
	%D%/cp_buf.c %D%/cp_buf.h \
	%D%/cp_snapshot.c %D%/cp_snapshot.h \
	%D%/cp_snapshot_int.h %D%/cp_sort.h \
	%D%/cp_snapshot_arena.c \
	%D%/cp_snapshot_arena.h \
	%D%/cp_snapshot_time.c \
	%D%/cp_snapshot_time.h \
	%D%/cp_wire.c %D%/cp_wire.h \
	%D%/cp_snapshot_build.c \
	%D%/cp_snapshot_check.c \
	%D%/cp_snapshot_delta.c
modules_cp_common_snapshot_libcpsnapshot_la_CPPFLAGS = \
	$(CP_SNAPSHOT_CPPFLAGS)
modules_cp_common_snapshot_libcpsnapshot_la_LIBADD = \
	modules/cp_common/proto/libcpproto.la $(OPENSSL_LIBS)
CP_SNAPSHOT_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(OPENSSL_CFLAGS)
CP_SNAPSHOT_LDADD = %D%/libcpsnapshot.la

UNIT_TESTS += t/unit/cp/test_cp_snapshot t/unit/cp/test_cp_sort \
	t/unit/cp/test_cp_wire
# The clients' common reads (cp_wire.h): acknowledgements of any type.
t_unit_cp_test_cp_wire_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_unit_cp_test_cp_wire_LDADD = $(CP_SNAPSHOT_LDADD)
check_PROGRAMS += t/unit/cp/cp_checksum_vector
t_unit_cp_test_cp_snapshot_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_unit_cp_test_cp_snapshot_LDADD = $(CP_SNAPSHOT_LDADD)
# cp_sort.h's in-order fast path, the checksum in any order, the build's
# merge walk (the optimisations t/bench/cpsnap measured).
t_unit_cp_test_cp_sort_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_unit_cp_test_cp_sort_LDADD = $(CP_SNAPSHOT_LDADD)
# The C side of t/integration/cp_checksum_vector.sh: prints a fixed
# snapshot's fields as JSON and its checksum, for the Python peer.
t_unit_cp_cp_checksum_vector_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_unit_cp_cp_checksum_vector_LDADD = $(CP_SNAPSHOT_LDADD)

# Fuzz targets, replayed over t/fuzz/seeds/cp_snapshot and cp_delta by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_cp_snapshot t/fuzz/replay_cp_delta
t_fuzz_replay_cp_snapshot_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_snapshot.c \
	t/fuzz/cp_fuzz_fixture.h
t_fuzz_replay_cp_snapshot_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_fuzz_replay_cp_snapshot_LDADD = $(CP_SNAPSHOT_LDADD)
t_fuzz_replay_cp_delta_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_delta.c \
	t/fuzz/cp_fuzz_fixture.h
t_fuzz_replay_cp_delta_CPPFLAGS = $(CP_SNAPSHOT_CPPFLAGS)
t_fuzz_replay_cp_delta_LDADD = $(CP_SNAPSHOT_LDADD)
endif

# The checksum against an independent Python implementation of the
# definition in docs/api/controlplane.md (skipped without CP_ANY).
TESTS += t/integration/cp_checksum_vector.sh
EXTRA_DIST += t/integration/cp_checksum_vector.sh t/lib/cp_checksum.py

# Its document: the snapshot rules (the checksum's definition is a
# section of docs/api/controlplane.md, which proto.mk installs).
nobase_dist_doc_DATA += docs/protocol/controlplane-snapshots.md

# SPDX-License-Identifier: BSD-2-Clause
# t/bench/controlplane.mk: the control plane's benchmarks (issue 12), on
# demand only: EXTRA_PROGRAMS, built by `make t/bench/cpsnap
# t/bench/cpload` or `make bench-controlplane` (which also runs
# t/bench/controlplane.sh), never by make or make check. t/bench/README.md
# describes them; results in docs/benchmarks.md.
EXTRA_DIST += t/bench/controlplane.mk t/bench/controlplane.sh

if CP_ANY
# The snapshot path against protobuf-c's pack + unpack, linked as the
# snapshot and view unit tests are.
EXTRA_PROGRAMS += t/bench/cpsnap
t_bench_cpsnap_SOURCES = t/bench/cpsnap.c
t_bench_cpsnap_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(OPENSSL_CFLAGS)
t_bench_cpsnap_LDADD = $(CP_VIEW_LDADD) $(CP_SNAPSHOT_LDADD)
endif

if MODULE_REDIS_OWNERSHIP
# The load generator: simulated workers over cp_grpc on the mock host's
# loop, and the EVALSHA baseline of the same runtime script over hiredis
# (the script's text and SHA from redis_ownership's own sources).
EXTRA_PROGRAMS += t/bench/cpload
t_bench_cpload_SOURCES = t/bench/cpload.c \
	modules/redis_ownership/ro_scripts.c
nodist_t_bench_cpload_SOURCES = modules/redis_ownership/ro_lua.c
t_bench_cpload_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	$(HIREDIS_CFLAGS) $(OPENSSL_CFLAGS) \
	-I$(top_builddir)/modules/redis_ownership
t_bench_cpload_LDADD = $(CP_GRPC_LDADD) modules/cp_common/proto/libcpproto.la \
	host/libphmock.la $(HIREDIS_LIBS) $(OPENSSL_LIBS) $(EV_LIBS) $(M_LIBS)
endif

bench-controlplane: all
	$(MAKE) $(AM_MAKEFLAGS) t/bench/cpsnap$(EXEEXT) t/bench/cpload$(EXEEXT) \
	  t/lib/cp_echo_server$(EXEEXT)
	$(SHELL) $(top_srcdir)/t/bench/controlplane.sh .
.PHONY: bench-controlplane

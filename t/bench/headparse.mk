# SPDX-License-Identifier: BSD-2-Clause
# t/bench/headparse.mk: the http_proxy frontend's head parsing cost
# (issue 25 item 2), on demand only: EXTRA_PROGRAMS, built by
# `make t/bench/headparse` or `make bench-headparse` (which also runs
# it), never by make or make check. Results in docs/benchmarks.md.
EXTRA_DIST += t/bench/headparse.mk

if MODULE_HTTP_PROXY
EXTRA_PROGRAMS += t/bench/headparse
t_bench_headparse_SOURCES = t/bench/headparse.c \
	modules/http_proxy/http_head.c modules/lib/b64.c modules/lib/bw.c \
	modules/lib/http1_head.c
t_bench_headparse_CPPFLAGS = $(AM_CPPFLAGS)
t_bench_headparse_LDADD = $(HTTP_PARSER_LIBS)
endif

bench-headparse: t/bench/headparse$(EXEEXT)
	./t/bench/headparse$(EXEEXT)
.PHONY: bench-headparse

# SPDX-License-Identifier: BSD-2-Clause
# t/bench/checker.mk: the pool's health loop benchmark (issue 26), on
# demand only: `make bench-checker` builds phconnect (many cheap CONNECT
# upstreams on one loop) and runs t/bench/checker.sh; never part of make
# or make check. t/bench/README.md describes it; results in
# docs/benchmarks.md.
EXTRA_DIST += t/bench/checker.mk t/bench/checker.sh t/bench/health_watch.py
EXTRA_PROGRAMS += t/bench/phconnect
t_bench_phconnect_SOURCES = t/bench/phconnect.c
t_bench_phconnect_LDADD = $(EV_LIBS)

bench-checker: all t/bench/phconnect$(EXEEXT) t/bench/phload$(EXEEXT) \
	t/bench/phtarget$(EXEEXT)
	$(SHELL) $(top_srcdir)/t/bench/checker.sh .
.PHONY: bench-checker

# SPDX-License-Identifier: BSD-2-Clause
# t/bench/checker.mk: the pool's health loop benchmark (issue 26), on
# demand only: `make bench-checker` builds phconnect (many cheap CONNECT
# upstreams on one loop) and runs t/bench/checker.sh; never part of make
# or make check. t/bench/README.md describes it; results in
# docs/benchmarks.md.
EXTRA_DIST += t/bench/checker.mk t/bench/checker.sh t/bench/health_watch.py \
	t/bench/bench_lib.sh t/bench/controller_scale.sh
EXTRA_PROGRAMS += t/bench/phconnect
t_bench_phconnect_SOURCES = t/bench/phconnect.c
t_bench_phconnect_LDADD = $(EV_LIBS)

bench-checker: all t/bench/phconnect$(EXEEXT) t/bench/phload$(EXEEXT) \
	t/bench/phtarget$(EXEEXT)
	$(SHELL) $(top_srcdir)/t/bench/checker.sh .
.PHONY: bench-checker

# The controller with 10,000 proxies, 4 checkers and 2 gateways (issue 26,
# the third benchmark): t/bench/controller_scale.sh.
bench-controller-scale: all t/bench/phconnect$(EXEEXT)
	$(SHELL) $(top_srcdir)/t/bench/controller_scale.sh .
.PHONY: bench-controller-scale

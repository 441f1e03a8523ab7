# SPDX-License-Identifier: BSD-2-Clause
# t/bench/stratsel.mk: the strategies' pick benchmark (issue 13), on
# demand only: EXTRA_PROGRAMS, built by `make t/bench/stratsel` or
# `make bench-strategies` (which also runs it), never by make or make
# check. t/bench/README.md describes it; results in docs/benchmarks.md.
EXTRA_DIST += t/bench/stratsel.mk

if MODULE_STRATEGIES
EXTRA_PROGRAMS += t/bench/stratsel
t_bench_stratsel_SOURCES = t/bench/stratsel.c $(STRAT_PURE)
t_bench_stratsel_CPPFLAGS = $(AM_CPPFLAGS)
endif

bench-strategies: t/bench/stratsel$(EXEEXT)
	./t/bench/stratsel$(EXEEXT)
.PHONY: bench-strategies

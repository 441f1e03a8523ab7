# SPDX-License-Identifier: BSD-2-Clause
# t/bench/gateway.mk: the gateway benchmark (issue 13), on demand only:
# `make bench-gateway` builds what t/bench/gateway.sh needs (the host, the
# modules, proxyhostctl, phload, phtarget and, with the strategies,
# t/bench/stratsel) and runs it; never part of make or make check.
# t/bench/README.md describes it; results in docs/benchmarks.md.
EXTRA_DIST += t/bench/gateway.mk t/bench/gateway.sh

GATEWAY_BENCH_TOOLS = t/bench/phload$(EXEEXT) t/bench/phtarget$(EXEEXT)
if MODULE_STRATEGIES
GATEWAY_BENCH_TOOLS += t/bench/stratsel$(EXEEXT)
endif

bench-gateway: all $(GATEWAY_BENCH_TOOLS)
	$(SHELL) $(top_srcdir)/t/bench/gateway.sh .
.PHONY: bench-gateway

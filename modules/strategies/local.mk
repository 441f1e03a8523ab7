# SPDX-License-Identifier: BSD-2-Clause
# modules/strategies: the gateway's five dispatch strategies (issue 13,
# CP-1-22), each a module providing "dispatch.strategy"
# (sdk/proxyhost/strategy.h) under its name: round_robin, weighted,
# least_active, random, sticky. The selection code is pure (strat_*.c,
# strat.h) and tested directly (t/unit/connectors/test_strategies); the module files
# are one line each over strat_module.c. One switch for the five:
# --disable-module-strategies.
#
# Each .so is built in modules/NAME/ of the build tree (its sources stay
# here), the layout the host's build-tree module search
# (BUILD/modules/NAME/.libs/NAME.so) and the tests' have_module expect.
nobase_dist_doc_DATA += docs/user-guide/strategies.md

# The sixth strategy, built out of tree against the installed SDK by
# t/integration/sdk_example.sh, and the test module that looks it up by
# name in a real process (any build: it needs only the SDK).
EXTRA_DIST += sdk/examples/strategy_first/first_usable.c \
	sdk/examples/strategy_first/Makefile \
	sdk/examples/strategy_first/first_usable.ini \
	sdk/examples/strategy_first/README.md
check_LTLIBRARIES += t/modules/strategy_probe.la
t_modules_strategy_probe_la_SOURCES = t/modules/strategy_probe.c
t_modules_strategy_probe_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)

STRAT_COMMON = %D%/strat.h %D%/strat_common.c \
	%D%/strat_module.c %D%/strat_module.h
STRAT_STICKY = %D%/strat_sticky.c \
	%D%/strat_hash.c %D%/strat_hash.h \
	%D%/strat_slots.c %D%/strat_slots.h
# Everything pure, for the unit test and the benchmark.
STRAT_PURE = %D%/strat.h %D%/strat_common.c \
	%D%/strat_rr.c %D%/strat_weighted.c \
	%D%/strat_least.c %D%/strat_random.c \
	$(STRAT_STICKY)

if MODULE_STRATEGIES
module_LTLIBRARIES += modules/round_robin/round_robin.la \
	modules/weighted/weighted.la modules/least_active/least_active.la \
	modules/random/random.la modules/sticky/sticky.la
modules_round_robin_round_robin_la_SOURCES = %D%/round_robin.c %D%/strat_rr.c $(STRAT_COMMON)
modules_weighted_weighted_la_SOURCES = %D%/weighted.c %D%/strat_weighted.c $(STRAT_COMMON)
modules_least_active_least_active_la_SOURCES = %D%/least_active.c %D%/strat_least.c $(STRAT_COMMON)
modules_random_random_la_SOURCES = %D%/random.c %D%/strat_random.c $(STRAT_COMMON)
modules_sticky_sticky_la_SOURCES = %D%/sticky.c $(STRAT_STICKY) $(STRAT_COMMON)
modules_round_robin_round_robin_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_weighted_weighted_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_least_active_least_active_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_random_random_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_sticky_sticky_la_LDFLAGS = $(MODULE_LDFLAGS)
dist_samples_DATA += %D%/strategies.ini.sample

# The pure strategies with views built by hand (CP-1-22, CP-1-23, CP-3-6,
# CP-3-9, CP-4-2), and the five modules loaded into the mock host.
UNIT_TESTS += t/unit/connectors/test_strategies t/unit/connectors/test_strategies_module
t_unit_connectors_test_strategies_SOURCES = t/unit/connectors/test_strategies.c $(STRAT_PURE)
t_unit_connectors_test_strategies_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_connectors_test_strategies_module_LDADD = host/libphmock.la
endif

include $(srcdir)/t/bench/stratsel.mk

# modules/pool: the gateway's dispatch connector (issue 13, CP-1-20..25,
# CP-3-6, CP-3-9, CP-4-2..3, CP-5-2..7): matches a request against the
# snapshot view's routing (pool.view), lets the rule's strategy module
# (dispatch.strategy) pick an upstream proxy, reserves its capacity, opens
# a tunnel through it (the upstream kit, modules/upstream: CONNECT or
# SOCKS5) and hands the socket over with a lease; outcomes go to
# outcome.sink, counts to controlplane_client (pool_runtime.h).

POOL_SOURCES = %D%/pool.c %D%/pool_gen.c \
	%D%/pool_attempt.c %D%/pool_match.c \
	%D%/pool_wait.c %D%/pool_dial.c \
	%D%/pool_lease.c %D%/pool_drain.c \
	%D%/pool_gate.c modules/frontend/traffic_gate.h \
	%D%/pool_status.c \
	%D%/pool_int.h \
	modules/contracts/pool_runtime.h
POOL_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS) \
	$(UPSTREAM_CPPFLAGS)

if MODULE_POOL
module_LTLIBRARIES += %D%/pool.la
modules_pool_pool_la_SOURCES = $(POOL_SOURCES)
modules_pool_pool_la_CPPFLAGS = $(POOL_CPPFLAGS)
modules_pool_pool_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_pool_pool_la_LIBADD = modules/upstream/libphupstream.la \
	$(CP_VIEW_LDADD)
dist_samples_DATA += %D%/pool.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_pool_pool_la_SOURCES = %D%/pool_keys.c
CONF_KEYS_C += %D%/pool_keys.c
%D%/pool_keys.c: %D%/pool.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=pool_keys $(srcdir)/%D%/pool.ini.sample >$@.tmp && mv $@.tmp $@
# cp_view.h includes the generated protobuf-c header. (Named through the
# _OBJECTS variable: a rule whose target is one object automake generates
# makes automake drop its own compile rule for it.)
$(modules_pool_pool_la_OBJECTS): $(CP_GEN)/proto.stamp
endif

# End to end (issue 13): controller + Redis + PostgreSQL + two gateways +
# upstream proxies (proxyhost local instances, microsocks, tinyproxy, and
# t/lib/bad_upstream.py for each outcome stage).
EXTRA_DIST += t/integration/gateway_e2e.sh t/lib/bad_upstream.py
if MODULE_POOL
TESTS += t/integration/gateway_e2e.sh
endif

# Streams through a proxy that leaves the view end after a bounded drain
# (issue 22 item 14, CP-3-18, CP-4-2, CP-4-6, CP-4-7): a gateway on the
# fake controller, real upstreams and long-lived CONNECT tunnels.
EXTRA_DIST += t/integration/gateway_drain.sh
if MODULE_POOL
TESTS += t/integration/gateway_drain.sh
endif

# The pool through the mock host, with fake view, sink, strategy and
# connector (CP-1-23..25, CP-2-14, CP-3-9, CP-4-2..7, CP-5-2..5).
if MODULE_POOL
UNIT_TESTS += t/unit/connectors/test_pool_dispatch
t_unit_connectors_test_pool_dispatch_SOURCES = t/unit/connectors/test_pool_dispatch.c \
	t/lib/cp_view_fixture.h $(POOL_SOURCES)
nodist_t_unit_connectors_test_pool_dispatch_SOURCES = %D%/pool_keys.c
t_unit_connectors_test_pool_dispatch_CPPFLAGS = $(AM_CPPFLAGS) $(POOL_CPPFLAGS)
t_unit_connectors_test_pool_dispatch_LDADD = t/lib/libphfake.la host/libphmock.la \
	modules/upstream/libphupstream.la $(CP_VIEW_LDADD)
t/unit/connectors/test_pool_dispatch-test_pool_dispatch.$(OBJEXT) \
t/unit/connectors/test_pool_dispatch-pool_gen.$(OBJEXT): $(CP_GEN)/proto.stamp
endif

# The README's pool demo, scripts/demo-pool.sh.
EXTRA_DIST += t/integration/demo_pool.sh scripts/demo-pool.sh
if MODULE_POOL
TESTS += t/integration/demo_pool.sh
endif

# modules/controlplane_server: the controller's gRPC WorkerControlPlane
# server (issue 12): its pure parts with their unit tests and fuzz
# targets, then the module on the gRPC layer and the Redis authority, and
# the controller's integration tests.
if MODULE_CONTROLPLANE_SERVER
# Its pure parts, each with a unit test: the request checks
# (cp_requests.c), credential material from secrets_dir (cp_secrets.c), a
# WatchSnapshots stream's schedule (cp_watch_plan.c).
UNIT_TESTS += t/unit/cp/test_cp_requests t/unit/cp/test_cp_secrets \
	t/unit/cp/test_cp_watch_plan t/unit/cp/test_cs_sched_plan \
	t/unit/cp/test_cs_hyst \
	t/unit/cp/test_cs_health_item
t_unit_cp_test_cp_requests_SOURCES = t/unit/cp/test_cp_requests.c \
	%D%/cp_requests.c \
	%D%/cp_requests.h
t_unit_cp_test_cp_requests_CPPFLAGS = $(CS_CPPFLAGS)
t_unit_cp_test_cp_requests_LDADD = $(CS_PROTO_LDADD)
t_unit_cp_test_cp_secrets_SOURCES = t/unit/cp/test_cp_secrets.c \
	%D%/cp_secrets.c \
	%D%/cp_secrets.h modules/lib/conf_values.c
t_unit_cp_test_cp_secrets_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
t_unit_cp_test_cp_secrets_LDADD = $(OPENSSL_LIBS)
t_unit_cp_test_cp_watch_plan_SOURCES = t/unit/cp/test_cp_watch_plan.c \
	%D%/cp_watch_plan.c \
	%D%/cp_watch_plan.h
t_unit_cp_test_cp_watch_plan_CPPFLAGS = $(AM_CPPFLAGS)
# The scheduler's pure parts (issue 26): jitter, the checker's choice,
# target probes and their per-host spacing.
t_unit_cp_test_cs_sched_plan_SOURCES = t/unit/cp/test_cs_sched_plan.c \
	%D%/cs_sched_plan.c %D%/cs_sched_plan.h
t_unit_cp_test_cs_sched_plan_CPPFLAGS = $(AM_CPPFLAGS)
# The reducer's pure rules: hysteresis and the panic guard (CP-6-7).
t_unit_cp_test_cs_hyst_SOURCES = t/unit/cp/test_cs_hyst.c \
	%D%/cs_hyst.c %D%/cs_hyst.h
t_unit_cp_test_cs_hyst_CPPFLAGS = $(AM_CPPFLAGS)
# One proxy's items: observations, outcomes by stage, the passive hold.
t_unit_cp_test_cs_health_item_SOURCES = t/unit/cp/test_cs_health_item.c \
	%D%/cs_health_item.c %D%/cs_hyst.c %D%/cs_health_int.h
t_unit_cp_test_cs_health_item_CPPFLAGS = $(CS_CPPFLAGS)
# The reducer with its state through the mock host (a fake authority).
UNIT_TESTS += t/unit/cp/test_cs_health
t_unit_cp_test_cs_health_SOURCES = t/unit/cp/test_cs_health.c \
	%D%/cs_health.c %D%/cs_health_item.c %D%/cs_health_metrics.c \
	%D%/cs_health_fwd.c \
	%D%/cs_members.c %D%/cs_sched_plan.c \
	%D%/cs_hyst.c modules/lib/metric_table.c
t_unit_cp_test_cs_health_CPPFLAGS = $(CS_CPPFLAGS)
t_unit_cp_test_cs_health_LDADD = host/libphmock.la $(EV_LIBS)
t_unit_cp_test_cs_health_DEPENDENCIES = host/libphmock.la
t/unit/cp/test_cs_health-test_cs_health.$(OBJEXT) \
t/unit/cp/test_cs_health-cs_health.$(OBJEXT) \
t/unit/cp/test_cs_health-cs_health_metrics.$(OBJEXT) \
t/unit/cp/test_cs_health-cs_members.$(OBJEXT) \
t/unit/cp/test_cs_health-cs_health_item.$(OBJEXT): $(CP_GEN)/proto.stamp
t/unit/cp/test_cs_health_item-test_cs_health_item.$(OBJEXT) \
t/unit/cp/test_cs_health_item-cs_health_item.$(OBJEXT): $(CP_GEN)/proto.stamp
# The status panels through the mock host's ph_mock_status (issue 28),
# read back by proxyhostctl's reader too.
UNIT_TESTS += t/unit/cp/test_cs_status
t_unit_cp_test_cs_status_SOURCES = t/unit/cp/test_cs_status.c \
	%D%/cs_status.c %D%/cs_health.c %D%/cs_health_item.c \
	%D%/cs_health_metrics.c %D%/cs_health_fwd.c %D%/cs_members.c \
	%D%/cs_sched_plan.c %D%/cs_hyst.c modules/lib/metric_table.c \
	tools/ctl_proxy_live.c
t_unit_cp_test_cs_status_CPPFLAGS = $(CS_CPPFLAGS) -I$(top_srcdir)/tools
t_unit_cp_test_cs_status_LDADD = host/libphmock.la modules/lib/libphlib.la \
	$(CS_PROTO_LDADD) $(EV_LIBS)
t_unit_cp_test_cs_status_DEPENDENCIES = host/libphmock.la
t/unit/cp/test_cs_status-test_cs_status.$(OBJEXT) \
t/unit/cp/test_cs_status-cs_status.$(OBJEXT) \
t/unit/cp/test_cs_status-cs_health.$(OBJEXT) \
t/unit/cp/test_cs_status-cs_health_metrics.$(OBJEXT) \
t/unit/cp/test_cs_status-cs_members.$(OBJEXT) \
t/unit/cp/test_cs_status-cs_health_item.$(OBJEXT): $(CP_GEN)/proto.stamp

# The bounds cs_conf_read holds again in C, under a table widened as a
# wrong sample would (the generated cs_conf_keys.c, copied and changed).
UNIT_TESTS += t/unit/cp/test_cs_conf_held
t_unit_cp_test_cs_conf_held_SOURCES = t/unit/cp/test_cs_conf_held.c \
	%D%/cs_conf.c %D%/cs_sched_plan.c modules/lib/conf_values.c
nodist_t_unit_cp_test_cs_conf_held_SOURCES = %D%/cs_conf_keys.c
t_unit_cp_test_cs_conf_held_CPPFLAGS = $(CS_CPPFLAGS)
t_unit_cp_test_cs_conf_held_LDADD = host/libphmock.la $(EV_LIBS)
t_unit_cp_test_cs_conf_held_DEPENDENCIES = host/libphmock.la
t/unit/cp/test_cs_conf_held-test_cs_conf_held.$(OBJEXT) \
t/unit/cp/test_cs_conf_held-cs_conf.$(OBJEXT): $(CP_GEN)/proto.stamp

# Fuzz targets of the request checks and of the secret file parser,
# replayed over t/fuzz/seeds/cp_requests and cp_secret by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_cp_requests t/fuzz/replay_cp_secret \
	t/fuzz/replay_cp_checker_requests
# The CheckerControlPlane's request checks (issue 26), over
# t/fuzz/seeds/cp_checker_requests.
t_fuzz_replay_cp_checker_requests_SOURCES = t/fuzz/replay.c \
	t/fuzz/fuzz_cp_checker_requests.c %D%/cp_checker_requests.c \
	%D%/cp_requests.c
t_fuzz_replay_cp_checker_requests_CPPFLAGS = $(CS_CPPFLAGS)
t_fuzz_replay_cp_checker_requests_LDADD = $(CS_PROTO_LDADD)
t_fuzz_replay_cp_requests_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_requests.c \
	t/fuzz/fuzz_cp_check.h \
	%D%/cp_requests.c
t_fuzz_replay_cp_requests_CPPFLAGS = $(CS_CPPFLAGS)
t_fuzz_replay_cp_requests_LDADD = $(CS_PROTO_LDADD)
t_fuzz_replay_cp_secret_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_secret.c \
	%D%/cp_secrets.c modules/lib/conf_values.c
t_fuzz_replay_cp_secret_CPPFLAGS = $(t_unit_cp_test_cp_secrets_CPPFLAGS)
t_fuzz_replay_cp_secret_LDADD = $(OPENSSL_LIBS)
endif
# The module's flags (the tests of its parts use them too).
CS_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS)
CS_PROTO_LDADD = modules/cp_common/proto/libcpproto.la $(OPENSSL_LIBS)

# The module: the five WorkerControlPlane RPCs on cp_grpc, the fences in
# cp.authority (redis_ownership), the pool through pool.store.
if MODULE_CONTROLPLANE_SERVER
CS_SOURCES = %D%/cs.h \
	%D%/cs_conf.c %D%/cs_conf.h \
	%D%/cs_unary.c %D%/cs_unary.h \
	%D%/cs_register.c \
	%D%/cs_ack.c \
	%D%/cs_runtime.c \
	%D%/cs_outcomes.c \
	%D%/cs_fenced.c %D%/cs_fenced.h \
	%D%/cs_health.c %D%/cs_health.h \
	%D%/cs_checker.h \
	%D%/cs_checker_metrics.c \
	%D%/cs_checker_register.c \
	%D%/cs_checker_watch.c \
	%D%/cs_checker_report.c \
	%D%/cs_sched.c \
	%D%/cs_sched_plan.c %D%/cs_sched_plan.h \
	%D%/cs_members.c %D%/cs_members.h \
	%D%/cp_checker_requests.c %D%/cp_checker_requests.h \
	%D%/cs_health_int.h %D%/cs_health_metrics.c %D%/cs_health_item.c \
	%D%/cs_health_view.c modules/contracts/cp_health.h %D%/cs_health_fwd.c \
	%D%/cs_hyst.c %D%/cs_hyst.h \
	%D%/cs_watch.c \
	%D%/cs_status.c %D%/cs_status.h \
	%D%/cs_credcheck.c \
	modules/contracts/cp_credcheck.h \
	%D%/cs_pool.c \
	%D%/cs_assign.c \
	%D%/cp_requests.c \
	%D%/cp_secrets.c \
	%D%/cp_watch_plan.c
module_LTLIBRARIES += %D%/controlplane_server.la
modules_controlplane_server_controlplane_server_la_SOURCES = \
	%D%/controlplane_server.c $(CS_SOURCES)
nodist_modules_controlplane_server_controlplane_server_la_SOURCES = \
	%D%/cs_conf_keys.c
modules_controlplane_server_controlplane_server_la_CPPFLAGS = \
	$(CS_CPPFLAGS)
modules_controlplane_server_controlplane_server_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_controlplane_server_controlplane_server_la_LIBADD = \
	modules/cp_common/grpc/libcpgrpc.la modules/cp_common/view/libcpview.la \
	modules/cp_common/snapshot/libcpsnapshot.la \
	modules/frontend/libphfrontend.la $(OPENSSL_LIBS) $(EV_LIBS)
dist_samples_DATA += %D%/controlplane_server.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
CONF_KEYS_C += %D%/cs_conf_keys.c
CS_KEY_GROUPS = $(KEYS_CP_GRPC_TLS) $(KEYS_TLS_RELOAD) \
	$(KEYS_CP_GRPC_COMMON) $(KEYS_CP_GRPC_SERVER)
%D%/cs_conf_keys.c: %D%/controlplane_server.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(CS_KEY_GROUPS)
	$(GEN_CONF_KEYS) -v table=cs_conf_keys -v groups="$(CS_KEY_GROUPS)" \
		$(srcdir)/%D%/controlplane_server.ini.sample >$@.tmp && mv $@.tmp $@
endif
EXTRA_DIST += conf/controller.ini

# The controller's integration tests (each below with what it runs): run
# when controlplane_server is built, always shipped (the list at the end).
CS_INTEGRATION_TESTS =

# The controller end to end: proxyhost with store_sqlite, redis_ownership
# and admin_api, a Python worker (t/lib/cp_client.py on python3-grpcio).
CS_INTEGRATION_TESTS += t/integration/controller.sh
EXTRA_DIST += t/lib/cp_client.py t/lib/cp_py.py t/lib/controller.sh

# Runtime TTLs on Redis server time, not the controller's clock
# (CP-2-12): the controller's wall clock shifted by t/modules/clockshift.
CS_INTEGRATION_TESTS += t/integration/cp_redis_time.sh

# A missing secret file is logged, counted and shown by the admin API
# (issue 23 item 6).
CS_INTEGRATION_TESTS += t/integration/cp_secret_missing.sh

# The controller against hostile or broken workers (issue 22 items 10-13).
CS_INTEGRATION_TESTS += t/integration/controller_hardening.sh

# The controller's and the gateway's mTLS files re-read under traffic
# (issue 23 item 14).
CS_INTEGRATION_TESTS += t/integration/cp_tls_reload.sh

# The keepalive settings seen on the wire (issue 23 item 12, CP-1-13).
CS_INTEGRATION_TESTS += t/integration/cp_keepalive.sh
EXTRA_DIST += t/lib/h2_probe.py

# The control plane end to end with every part real: Redis, PostgreSQL,
# the controller and two gateways over mTLS, views sampled by
# t/lib/cp_views.py (it skips itself when a module was not built).
CS_INTEGRATION_TESTS += t/integration/cp_e2e.sh
EXTRA_DIST += t/lib/cp_views.py t/lib/cp_views.sh

# The shipped conf/controller.ini and conf/gateway.ini run together over
# mTLS, changed only where a deployment must (issue 24).
CS_INTEGRATION_TESTS += t/integration/cp_conf_pair.sh

# Readiness and rebalancing (issue 23 item 4): two real gateways, one
# joining, then one partitioned (SIGSTOP) past its lease and back; each
# gets its share through the drain, never usable by two.
CS_INTEGRATION_TESTS += t/integration/cp_rebalance.sh

# The CheckerControlPlane (issue 26: CP-1-3, CP-6-1, CP-6-2): Python
# checkers (t/lib/cp_checker.py) against a real controller and Redis:
# tasks, deadlines, fences, two checkers, a killed one, mTLS roles.
CS_INTEGRATION_TESTS += t/integration/cp_checker.sh
EXTRA_DIST += t/lib/cp_checker.py
# The pool's health from gateway outcomes (issue 26, CP-6-7): a killed
# upstream made UNHEALTHY and out of the gateway's choices, extraction
# refused, a flaky upstream that does not flap.
CS_INTEGRATION_TESTS += t/integration/cp_health.sh
# Several controllers (issue 26): two on one Redis and PostgreSQL, each
# proxy scheduled by one (rendezvous over the members' leases), a killed
# one's gateway and checker moving to the other through their address
# lists, ownership and health kept.
CS_INTEGRATION_TESTS += t/integration/cp_multi_controller.sh
EXTRA_DIST += t/lib/cp_multi.sh
# A stopping controller leaves the members at once (issue 26).
CS_INTEGRATION_TESTS += t/integration/cp_multi_leave.sh
# Outcomes at a non-member controller move the member's verdict (issue 26).
CS_INTEGRATION_TESTS += t/integration/cp_multi_passive.sh
# Address lists over mTLS: a gateway and a checker move to the other
# controller (issue 26).
CS_INTEGRATION_TESTS += t/integration/cp_multi_mtls.sh
# The scheduler under overload (issue 26, checks starved): one small
# checker, 300 proxies, every proxy a verdict, oldest due first.
CS_INTEGRATION_TESTS += t/integration/cp_check_overload.sh
# A steady pool's renewals on the wire (issue 26): with the shared lease
# form, a renewal's delta costs the same few bytes for 20 and 200 owned.
CS_INTEGRATION_TESTS += t/integration/cp_lease_delta.sh

# The pool's status panels (issue 28): the controller's gateways,
# checkers and proxies, the gateway's view and failures, the checker's
# checks in GET /v1/status, and proxyhostctl proxy show's live state.
CS_INTEGRATION_TESTS += t/integration/cp_status.sh

if MODULE_CONTROLPLANE_SERVER
TESTS += $(CS_INTEGRATION_TESTS)
endif
EXTRA_DIST += $(CS_INTEGRATION_TESTS)

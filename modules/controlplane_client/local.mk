# modules/controlplane_client: the gateway's side of the control plane
# (issue 12): the pure session supervisor (cp_supervisor.c) and the module
# that drives it over gRPC (controlplane_client.c: the session, the
# snapshot stream, the view compiled in a host job and provided as
# "pool.view", readiness), with its keys (cpc_conf.c, the 000 design's
# section 9 flags and environment names) and messages (cpc_wire.c).
EXTRA_DIST += conf/gateway.ini t/integration/cp_gateway_conf.sh \
	t/integration/cp_gateway.sh t/lib/cp_fake_controller.py \
	t/lib/cp_fake.sh t/integration/cp_reload.sh t/lib/mem_count.py

CPC_SOURCES = %D%/controlplane_client.c \
	%D%/cpc_conf.c \
	%D%/cpc_conf.h \
	%D%/cpc_view_route.c \
	%D%/cpc_view_route.h \
	%D%/cpc_wire.c \
	%D%/cpc_wire.h \
	%D%/cpc_outcalls.c \
	%D%/cpc_outcalls.h \
	%D%/cpc_tls_probe.c \
	%D%/cpc_tls_probe.h \
	%D%/cpc_material.c \
	%D%/cpc_material.h \
	modules/contracts/cp_session.h \
	%D%/cp_supervisor.c \
	%D%/cp_supervisor.h \
	modules/cp_common/grpc/cp_grpc_held.h
CPC_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) $(OPENSSL_CFLAGS)
# libcpsnapshot.la brings libcpproto.la (and protobuf-c).
CPC_LIBS = modules/cp_common/grpc/libcpgrpc.la modules/cp_common/view/libcpview.la \
	modules/cp_common/snapshot/libcpsnapshot.la modules/frontend/libphfrontend.la \
	$(OPENSSL_LIBS)

if MODULE_CONTROLPLANE_CLIENT
module_LTLIBRARIES += %D%/controlplane_client.la
modules_controlplane_client_controlplane_client_la_SOURCES = $(CPC_SOURCES)
nodist_modules_controlplane_client_controlplane_client_la_SOURCES = \
	%D%/cpc_conf_keys.c
modules_controlplane_client_controlplane_client_la_CPPFLAGS = $(CPC_CPPFLAGS)
modules_controlplane_client_controlplane_client_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_controlplane_client_controlplane_client_la_LIBADD = $(CPC_LIBS)
dist_samples_DATA += %D%/controlplane_client.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
CONF_KEYS_C += %D%/cpc_conf_keys.c
CPC_KEY_GROUPS = $(KEYS_CP_GRPC_TLS) $(KEYS_TLS_RELOAD) \
	$(KEYS_CP_GRPC_COMMON) $(KEYS_CP_GRPC_CLIENT)
%D%/cpc_conf_keys.c: %D%/controlplane_client.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(CPC_KEY_GROUPS)
	$(GEN_CONF_KEYS) -v table=cpc_conf_keys -v groups="$(CPC_KEY_GROUPS)" \
		$(srcdir)/%D%/controlplane_client.ini.sample >$@.tmp && mv $@.tmp $@
# The generated headers must exist before these compile.
%D%/controlplane_client_la-controlplane_client.lo \
%D%/controlplane_client_la-cpc_conf.lo \
%D%/controlplane_client_la-cpc_wire.lo \
%D%/controlplane_client_la-cpc_outcalls.lo \
%D%/controlplane_client_la-cpc_view_route.lo \
%D%/controlplane_client_la-cpc_tls_probe.lo: \
	$(CP_GEN)/proto.stamp

UNIT_TESTS += t/unit/cp/test_cp_supervisor
t_unit_cp_test_cp_supervisor_SOURCES = t/unit/cp/test_cp_supervisor.c \
	%D%/cp_supervisor.c \
	%D%/cp_supervisor.h
t_unit_cp_test_cp_supervisor_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_cp_test_cp_supervisor_LDADD = modules/frontend/libphfrontend.la

# The gateway's configuration: conf/gateway.ini passes --check-config, the
# flags and PROXY_POOL_* names reach the keys.
TESTS += t/integration/cp_gateway_conf.sh t/integration/cp_gateway.sh
# Two gateways through 50 ownership changes: no session lost to a stale
# epoch (issue 23 item 2).
TESTS += t/integration/cp_epoch_churn.sh

# The messages' readers, replayed by t/integration/fuzz_replay.sh over
# t/fuzz/seeds/NAME: the register answer (cpc_registered), the outcome
# call's answer (cpc_read_outcomes_ack: cpc_outcomes_ack) and the runtime
# answer's drain hints (cpc_read_revokes, CP-4-7: cpc_revokes).
check_PROGRAMS += t/fuzz/replay_cpc_registered \
	t/fuzz/replay_cpc_outcomes_ack t/fuzz/replay_cpc_revokes
CPC_FUZZ_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS)
t_fuzz_replay_cpc_registered_SOURCES = t/fuzz/replay.c \
	t/fuzz/fuzz_cpc_registered.c %D%/cpc_wire.c
t_fuzz_replay_cpc_outcomes_ack_SOURCES = t/fuzz/replay.c \
	t/fuzz/fuzz_cpc_outcomes_ack.c %D%/cpc_wire.c
t_fuzz_replay_cpc_revokes_SOURCES = t/fuzz/replay.c \
	t/fuzz/fuzz_cpc_revokes.c %D%/cpc_wire.c
t_fuzz_replay_cpc_registered_CPPFLAGS = $(CPC_FUZZ_CPPFLAGS)
t_fuzz_replay_cpc_outcomes_ack_CPPFLAGS = $(CPC_FUZZ_CPPFLAGS)
t_fuzz_replay_cpc_revokes_CPPFLAGS = $(CPC_FUZZ_CPPFLAGS)
t_fuzz_replay_cpc_registered_LDADD = $(CP_SNAPSHOT_LDADD)
t_fuzz_replay_cpc_outcomes_ack_LDADD = $(CP_SNAPSHOT_LDADD)
t_fuzz_replay_cpc_revokes_LDADD = $(CP_SNAPSHOT_LDADD)
endif
EXTRA_DIST += t/integration/cp_epoch_churn.sh
# Every control-plane role reloaded under traffic (issue 23 item 1).
if MODULE_CONTROLPLANE_SERVER
if MODULE_CONTROLPLANE_CLIENT
TESTS += t/integration/cp_reload.sh
endif
endif

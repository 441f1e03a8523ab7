# modules/tunnel_agent: the TunnelMesh agent role (issue 11).
if MODULE_TUNNEL_AGENT
module_LTLIBRARIES += %D%/tunnel_agent.la
modules_tunnel_agent_tunnel_agent_la_SOURCES = \
	%D%/tunnel_agent.c %D%/agent_int.h \
	%D%/agent_conf.c %D%/agent_conf.h \
	%D%/agent_pool.c %D%/agent_stream.c \
	%D%/agent_ack.c %D%/agent_status.c \
	%D%/dial_exec.c %D%/dial_exec.h \
	%D%/pool_policy.c %D%/pool_policy.h \
	%D%/target_guard.c %D%/target_guard.h
# The token file reader is tunnel_common's tm_token.c (in libtmsession.la,
# one set of rules for both roles; its fuzz target is fuzz_tm_token).
modules_tunnel_agent_tunnel_agent_la_CPPFLAGS = $(AM_CPPFLAGS) \
 $(LWS_CFLAGS)
modules_tunnel_agent_tunnel_agent_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_tunnel_agent_tunnel_agent_la_LIBADD = $(TM_SESSION_LDADD) \
	$(LWS_LIBS) $(EV_LIBS)
dist_samples_DATA += %D%/tunnel_agent.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_tunnel_agent_tunnel_agent_la_SOURCES = \
	%D%/tunnel_agent_keys.c
CONF_KEYS_C += %D%/tunnel_agent_keys.c
%D%/tunnel_agent_keys.c: %D%/tunnel_agent.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(KEYS_TM_SESSION) $(KEYS_TLS_RELOAD)
	$(GEN_CONF_KEYS) -v table=agent_conf_keys \
		-v groups="$(KEYS_TM_SESSION)=streams. $(KEYS_TLS_RELOAD)" \
		$(srcdir)/%D%/tunnel_agent.ini.sample >$@.tmp && mv $@.tmp $@

# The agent's unit tests: the dial executor through the mock host with a
# fake connector, and the pool controller.
UNIT_TESTS += t/unit/tunnel/test_tm_dial_exec t/unit/tunnel/test_tm_agent_pool \
	t/unit/tunnel/test_tm_agent
t_unit_tunnel_test_tm_dial_exec_SOURCES = t/unit/tunnel/test_tm_dial_exec.c t/unit/tunnel/tm_fakeconn.h \
	%D%/dial_exec.c %D%/dial_exec.h
t_unit_tunnel_test_tm_dial_exec_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_tunnel_test_tm_dial_exec_LDADD = $(FRONTEND_MOCK_LDADD)
# The stream path with the real session on an in-memory transport.
t_unit_tunnel_test_tm_agent_SOURCES = t/unit/tunnel/test_tm_agent.c t/unit/tunnel/tm_fakeconn.h \
	%D%/agent_stream.c %D%/agent_conf.c \
	%D%/agent_ack.c %D%/target_guard.c \
	%D%/dial_exec.c %D%/pool_policy.c
nodist_t_unit_tunnel_test_tm_agent_SOURCES = %D%/tunnel_agent_keys.c
t_unit_tunnel_test_tm_agent_CPPFLAGS = $(AM_CPPFLAGS) \
 $(LWS_CFLAGS)
t_unit_tunnel_test_tm_agent_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(EV_LIBS)
# agent_cfg_check under its generated key table with the bounds dropped
# (t/lib/conf_wide_test.h): it holds the bounds agent_cfg_read relies on
# itself.
UNIT_TESTS += t/unit/tunnel/test_ta_bounds
t_unit_tunnel_test_ta_bounds_SOURCES = t/unit/tunnel/test_ta_bounds.c \
	%D%/agent_conf.c %D%/target_guard.c %D%/pool_policy.c
nodist_t_unit_tunnel_test_ta_bounds_SOURCES = %D%/tunnel_agent_keys.c
t_unit_tunnel_test_ta_bounds_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS)
t_unit_tunnel_test_ta_bounds_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(EV_LIBS)
t_unit_tunnel_test_tm_agent_pool_SOURCES = t/unit/tunnel/test_tm_agent_pool.c \
	%D%/pool_policy.c %D%/pool_policy.h
t_unit_tunnel_test_tm_agent_pool_CPPFLAGS = $(AM_CPPFLAGS)
endif

# The agent role's integration test (against t/lib/tm_peer.py) and its
# ready configuration.
if MODULE_TUNNEL_AGENT
INTEGRATION_TESTS += t/integration/tunnel_agent.sh \
	t/integration/agent_targets.sh
endif
EXTRA_DIST += t/integration/tunnel_agent.sh t/integration/agent_targets.sh
dist_proxyhostconf_DATA += conf/agent.ini
# The agent's documents (installed with the others, nobase_dist_doc_DATA
# as in Makefile.am).
nobase_dist_doc_DATA += docs/user-guide/agent.md \
	docs/operations/connection-pool.md

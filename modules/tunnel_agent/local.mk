# modules/tunnel_agent: the TunnelMesh agent role (issue 11).
EXTRA_DIST += modules/tunnel_agent/local.mk
EXTRA_DIST += modules/tunnel_agent/tunnel_agent.ini.sample
if MODULE_TUNNEL_AGENT
module_LTLIBRARIES += modules/tunnel_agent/tunnel_agent.la
modules_tunnel_agent_tunnel_agent_la_SOURCES = \
	modules/tunnel_agent/tunnel_agent.c modules/tunnel_agent/agent_int.h \
	modules/tunnel_agent/agent_conf.c modules/tunnel_agent/agent_conf.h \
	modules/tunnel_agent/agent_pool.c modules/tunnel_agent/agent_stream.c \
	modules/tunnel_agent/agent_token.c modules/tunnel_agent/agent_token.h \
	modules/tunnel_agent/dial_exec.c modules/tunnel_agent/dial_exec.h \
	modules/tunnel_agent/pool_policy.c modules/tunnel_agent/pool_policy.h
modules_tunnel_agent_tunnel_agent_la_CPPFLAGS = $(MODULE_CPPFLAGS) \
	-I$(top_srcdir)/modules/tunnel_common $(LWS_CFLAGS)
modules_tunnel_agent_tunnel_agent_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_tunnel_agent_tunnel_agent_la_LIBADD = \
	modules/tunnel_common/libtmsession.la \
	modules/tunnel_common/libtmproto.la modules/common/libphcommon.la \
	$(LWS_LIBS) $(EV_LIBS)
samples_DATA += modules/tunnel_agent/tunnel_agent.ini.sample

# The agent's unit tests: the dial executor through the mock host with a
# fake connector, and the pure parts (pool controller, token file).
UNIT_TESTS_TM_AGENT = t/unit/test_tm_dial_exec t/unit/test_tm_agent_pool
check_PROGRAMS += $(UNIT_TESTS_TM_AGENT)
TESTS += $(UNIT_TESTS_TM_AGENT)
t_unit_test_tm_dial_exec_SOURCES = t/unit/test_tm_dial_exec.c \
	modules/tunnel_agent/dial_exec.c modules/tunnel_agent/dial_exec.h
t_unit_test_tm_dial_exec_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/modules/tunnel_agent
t_unit_test_tm_dial_exec_LDADD = host/libphmock.la
t_unit_test_tm_agent_pool_SOURCES = t/unit/test_tm_agent_pool.c \
	modules/tunnel_agent/pool_policy.c modules/tunnel_agent/pool_policy.h \
	modules/tunnel_agent/agent_token.c modules/tunnel_agent/agent_token.h
t_unit_test_tm_agent_pool_CPPFLAGS = $(TEST_CPPFLAGS) \
	-I$(top_srcdir)/modules/tunnel_agent
endif

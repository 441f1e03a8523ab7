# modules/tunnel_server: the TunnelMesh server role (issue 11).
if MODULE_TUNNEL_SERVER
module_LTLIBRARIES += %D%/tunnel_server.la
modules_tunnel_server_tunnel_server_la_SOURCES = \
	%D%/tunnel_server.c %D%/ts_int.h \
	%D%/ts_conf.c %D%/ts_conf_held.c \
	%D%/ts_conn.c %D%/ts_cred.c \
	%D%/ts_bearer.c %D%/ts_bearer.h \
	%D%/ts_open.c %D%/ts_mesh.c %D%/ts_relay.c \
	%D%/ts_status.c %D%/ts_opens.c %D%/ts_opens.h \
	%D%/ts_gone.c %D%/ts_gone.h \
	%D%/open_exec.c %D%/open_exec.h \
	%D%/agent_select.c %D%/agent_select.h
nodist_modules_tunnel_server_tunnel_server_la_SOURCES = %D%/ts_keys.c
modules_tunnel_server_tunnel_server_la_CPPFLAGS = $(AM_CPPFLAGS) \
 $(LWS_CFLAGS)
modules_tunnel_server_tunnel_server_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_tunnel_server_tunnel_server_la_LIBADD = $(TM_SESSION_LDADD) \
	$(LWS_LIBS)
dist_samples_DATA += %D%/tunnel_server.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
CONF_KEYS_C += %D%/ts_keys.c
%D%/ts_keys.c: %D%/tunnel_server.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(KEYS_TM_SESSION) $(KEYS_TLS_RELOAD)
	$(GEN_CONF_KEYS) -v table=ts_keys \
		-v groups="$(KEYS_TM_SESSION)=stream. $(KEYS_TLS_RELOAD)" \
		$(srcdir)/%D%/tunnel_server.ini.sample >$@.tmp && mv $@.tmp $@

# The pure parts on their own (no libwebsockets, no host).
UNIT_TESTS += t/unit/tunnel/test_tunnel_server_exec \
	t/unit/tunnel/test_tunnel_server_select
t_unit_tunnel_test_tunnel_server_exec_SOURCES = t/unit/tunnel/test_tunnel_server_exec.c \
	%D%/open_exec.c
t_unit_tunnel_test_tunnel_server_exec_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_tunnel_test_tunnel_server_select_SOURCES = t/unit/tunnel/test_tunnel_server_select.c \
	%D%/agent_select.c
t_unit_tunnel_test_tunnel_server_select_CPPFLAGS = $(AM_CPPFLAGS)

# The bearer's loggable id, fuzzed; replayed over t/fuzz/seeds/ts_bearer
# by t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_ts_bearer
t_fuzz_replay_ts_bearer_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_ts_bearer.c \
	%D%/ts_bearer.c
t_fuzz_replay_ts_bearer_CPPFLAGS = $(AM_CPPFLAGS)

# The bounds the code holds whatever the sample says (ts_conf_held.c).
UNIT_TESTS += t/unit/tunnel/test_ts_conf_held
t_unit_tunnel_test_ts_conf_held_SOURCES = t/unit/tunnel/test_ts_conf_held.c \
	%D%/ts_conf_held.c
t_unit_tunnel_test_ts_conf_held_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS)
t_unit_tunnel_test_ts_conf_held_LDADD = modules/lib/libphlib.la $(LDADD)

# The module itself through the mock host, its connections in memory.
UNIT_TESTS += t/unit/tunnel/test_tunnel_server
t_unit_tunnel_test_tunnel_server_SOURCES = t/unit/tunnel/test_tunnel_server.c \
	$(modules_tunnel_server_tunnel_server_la_SOURCES)
nodist_t_unit_tunnel_test_tunnel_server_SOURCES = %D%/ts_keys.c
t_unit_tunnel_test_tunnel_server_CPPFLAGS = $(AM_CPPFLAGS) \
 $(LWS_CFLAGS)
t_unit_tunnel_test_tunnel_server_LDADD = $(TM_SESSION_LDADD) host/libphmock.la \
	$(LWS_LIBS) $(EV_LIBS)
endif

# The server role's integration test and its ready configuration.
if MODULE_TUNNEL_SERVER
INTEGRATION_TESTS += t/integration/tunnel_server.sh
endif
EXTRA_DIST += t/integration/tunnel_server.sh
dist_proxyhostconf_DATA += conf/server.ini

# tm-server: the server role's user guide (installed with the other
# documents; t/integration/docs_dist.sh reads the fragments).
nobase_dist_doc_DATA += docs/user-guide/server.md

# modules/tunnel_client: the TunnelMesh client role (issue 11).
# tm-client: the module, its sample, and its unit tests (the pure parts on
# their own; the connector through the mock host over in-memory links).
# (the unit test links everything but tc_link_ws.c: it brings its own
# in-memory links)
TC_SOURCES = %D%/tunnel_client.c \
	%D%/tunnel_client_int.h \
	%D%/tc_conn.c %D%/tc_open.c \
	%D%/tc_stream.c %D%/tc_link.h %D%/tc_status.c
TC_LIBS = $(TM_SESSION_LDADD) $(LWS_LIBS)
if MODULE_TUNNEL_CLIENT
module_LTLIBRARIES += %D%/tunnel_client.la
modules_tunnel_client_tunnel_client_la_SOURCES = $(TC_SOURCES) \
	%D%/tc_link_ws.c
modules_tunnel_client_tunnel_client_la_CPPFLAGS = $(AM_CPPFLAGS) \
 $(LWS_CFLAGS)
modules_tunnel_client_tunnel_client_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_tunnel_client_tunnel_client_la_LIBADD = $(TC_LIBS)
dist_samples_DATA += %D%/tunnel_client.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_tunnel_client_tunnel_client_la_SOURCES = \
	%D%/tunnel_client_keys.c
CONF_KEYS_C += %D%/tunnel_client_keys.c
%D%/tunnel_client_keys.c: %D%/tunnel_client.ini.sample $(GEN_CONF_KEYS_AWK) \
		$(KEYS_TM_SESSION) $(KEYS_TLS_RELOAD)
	$(GEN_CONF_KEYS) -v table=tc_keys \
		-v groups="$(KEYS_TM_SESSION)=stream. $(KEYS_TLS_RELOAD)" \
		$(srcdir)/%D%/tunnel_client.ini.sample >$@.tmp && mv $@.tmp $@

# The connector through the mock host over in-memory links
# (test_tunnel_client), and tunnel_client.c under its generated key table
# with the bounds dropped (test_tc_bounds, t/lib/conf_wide_test.h): its
# check holds the bounds its code relies on itself. Both link the
# module's parts but tc_link_ws.c, and its generated key table.
UNIT_TESTS += t/unit/tunnel/test_tunnel_client t/unit/tunnel/test_tc_bounds
TC_TEST_LDADD = $(TC_LIBS) host/libphmock.la $(EV_LIBS)
t_unit_tunnel_test_tunnel_client_SOURCES = t/unit/tunnel/test_tunnel_client.c \
	$(TC_SOURCES)
nodist_t_unit_tunnel_test_tunnel_client_SOURCES = %D%/tunnel_client_keys.c
t_unit_tunnel_test_tunnel_client_LDADD = $(TC_TEST_LDADD)
t_unit_tunnel_test_tc_bounds_SOURCES = t/unit/tunnel/test_tc_bounds.c \
	$(TC_SOURCES)
nodist_t_unit_tunnel_test_tc_bounds_SOURCES = %D%/tunnel_client_keys.c
t_unit_tunnel_test_tc_bounds_LDADD = $(TC_TEST_LDADD)
endif

# conf/client.ini: a ready client (SOCKS5 on 127.0.0.1:1080 through the
# tunnel), installed beside local.ini.
dist_proxyhostconf_DATA += conf/client.ini

# The client's user guide, installed with the other documents
# (t/integration/docs_dist.sh).
nobase_dist_doc_DATA += docs/user-guide/client.md

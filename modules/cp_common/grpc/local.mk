# modules/cp_common/grpc/local.mk: the gRPC core layer of the control plane
# (issue 12): cp_grpc.{h,c} and its parts, the one place the project calls
# gRPC core's C API, as libcpgrpc.la; its transport keys (cp_grpc_conf);
# the server's front (cp_grpc_front: a cap and a deadline on connections
# that carried no call yet, issue 22 item 10);
# the pure loopback and SPIFFE checks (cp_ident.c). Whatever links
# libcpgrpc.la links modules/frontend/libphfrontend.la too (cidr.c), as with
# libtmproto.la. Tests: test_cp_ident (pure), test_cp_grpc (server and
# client in one process through the mock host, plaintext and mTLS),
# cp_grpc_interop.sh (Debian's python3-grpcio against t/lib/cp_echo_server),
# the SPIFFE check's fuzz target.

if CP_ANY
CP_GRPC_SOURCES = %D%/cp_grpc.h \
	%D%/cp_grpc_int.h \
	%D%/cp_grpc_cq.c %D%/cp_grpc_creds.c \
	%D%/cp_grpc_server.c %D%/cp_grpc_client.c \
	%D%/cp_grpc_unary.c %D%/cp_grpc_unary.h \
	%D%/cp_client_tls.c %D%/cp_client_tls.h \
	%D%/cp_grpc_conf.c %D%/cp_grpc_conf.h \
	%D%/cp_grpc_front.c %D%/cp_grpc_front.h \
	%D%/cp_ident.c %D%/cp_addr_list.c %D%/cp_addr_list.h
noinst_LTLIBRARIES += %D%/libcpgrpc.la
modules_cp_common_grpc_libcpgrpc_la_SOURCES = $(CP_GRPC_SOURCES)
modules_cp_common_grpc_libcpgrpc_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
modules_cp_common_grpc_libcpgrpc_la_CFLAGS = $(AM_CFLAGS) -pthread
modules_cp_common_grpc_libcpgrpc_la_LIBADD = $(GRPC_LIBS) $(OPENSSL_LIBS) -lpthread

CP_GRPC_LDADD = %D%/libcpgrpc.la modules/frontend/libphfrontend.la

# The pure checks alone (no gRPC).
UNIT_TESTS += t/unit/cp/test_cp_ident t/unit/cp/test_cp_grpc
t_unit_cp_test_cp_ident_SOURCES = t/unit/cp/test_cp_ident.c \
	%D%/cp_ident.c %D%/cp_addr_list.c modules/lib/cidr.c
t_unit_cp_test_cp_ident_CPPFLAGS = $(AM_CPPFLAGS)

# Server and client on the mock host's loop, with the proto's messages.
t_unit_cp_test_cp_grpc_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS) \
	-DCP_TEST_SRCDIR='"$(abs_top_srcdir)"'
t_unit_cp_test_cp_grpc_LDADD = $(CP_GRPC_LDADD) modules/cp_common/proto/libcpproto.la \
	host/libphmock.la $(EV_LIBS)
t_unit_cp_test_cp_grpc_SOURCES = t/unit/cp/test_cp_grpc.c
nodist_t_unit_cp_test_cp_grpc_SOURCES = t/unit/cp/cp_grpc_srv_keys.c \
	t/unit/cp/cp_grpc_cli_keys.c
# Their key tables: the key groups, complete (Makefile.am: KEYS_*).
CP_GRPC_TEST_SERVER = $(KEYS_CP_GRPC_TLS) $(KEYS_TLS_RELOAD) \
	$(KEYS_CP_GRPC_COMMON) $(KEYS_CP_GRPC_SERVER)
CP_GRPC_TEST_CLIENT = $(KEYS_CP_GRPC_TLS) $(KEYS_TLS_RELOAD) \
	$(KEYS_CP_GRPC_COMMON) $(KEYS_CP_GRPC_CLIENT)
CONF_KEYS_C += t/unit/cp/cp_grpc_srv_keys.c t/unit/cp/cp_grpc_cli_keys.c
t/unit/cp/cp_grpc_srv_keys.c: t/unit/cp/cp_grpc_keys.ini.sample \
		$(GEN_CONF_KEYS_AWK) $(CP_GRPC_TEST_SERVER)
	$(GEN_CONF_KEYS) -v section=srv -v table=srv_keys -v complete=1 \
		-v groups="$(CP_GRPC_TEST_SERVER)" \
		$(srcdir)/t/unit/cp/cp_grpc_keys.ini.sample >$@.tmp && mv $@.tmp $@
t/unit/cp/cp_grpc_cli_keys.c: t/unit/cp/cp_grpc_keys.ini.sample \
		$(GEN_CONF_KEYS_AWK) $(CP_GRPC_TEST_CLIENT)
	$(GEN_CONF_KEYS) -v section=cli -v table=cli_keys -v complete=1 \
		-v groups="$(CP_GRPC_TEST_CLIENT)" \
		$(srcdir)/t/unit/cp/cp_grpc_keys.ini.sample >$@.tmp && mv $@.tmp $@

# The interop test's server: canned, valid answers to every
# WorkerControlPlane RPC, on the layer and the mock host.
check_PROGRAMS += t/lib/cp_echo_server
t_lib_cp_echo_server_SOURCES = t/lib/cp_echo_server.c
nodist_t_lib_cp_echo_server_SOURCES = t/unit/cp/cp_grpc_srv_keys.c
t_lib_cp_echo_server_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS)
t_lib_cp_echo_server_LDADD = $(CP_GRPC_LDADD) modules/cp_common/proto/libcpproto.la \
	host/libphmock.la $(EV_LIBS)
TESTS += t/integration/cp_grpc_interop.sh

# The SPIFFE check's fuzz target, replayed over t/fuzz/seeds/cp_spiffe by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_cp_spiffe
t_fuzz_replay_cp_spiffe_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_cp_spiffe.c \
	%D%/cp_ident.c modules/lib/cidr.c
t_fuzz_replay_cp_spiffe_CPPFLAGS = $(AM_CPPFLAGS)
endif
EXTRA_DIST += t/integration/cp_grpc_interop.sh t/lib/cp_grpc_interop.py \
	t/unit/cp/cp_grpc_certs.sh t/unit/cp/cp_grpc_keys.ini.sample

# The transport's operations page (t/integration/docs_dist.sh).
nobase_dist_doc_DATA += docs/operations/control-plane-transport.md

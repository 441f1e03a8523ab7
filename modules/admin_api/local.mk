# SPDX-License-Identifier: BSD-2-Clause
# modules/admin_api/local.mk: the JSON admin API and proxyhostctl
# (included from Makefile.am; paths are from the top).
if MODULE_ADMIN_API
# The JSON admin API (ABI 1.3 routes) over authz.store, and its client;
# the pool's routes are pool_api's (modules/pool_api/local.mk), the code
# both share the admin kit's (modules/admin_kit/local.mk).
module_LTLIBRARIES += %D%/admin_api.la
modules_admin_api_admin_api_la_SOURCES = %D%/admin_api.c \
	%D%/api_json.c %D%/api_json.h \
	%D%/api_routes.c %D%/api_routes.h \
	%D%/api_authorize.c %D%/api_authorize.h
modules_admin_api_admin_api_la_CPPFLAGS = $(ADMIN_KIT_CPPFLAGS) $(OPENSSL_CFLAGS)
modules_admin_api_admin_api_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_admin_api_admin_api_la_LIBADD = $(ADMIN_KIT_LIBADD) $(OPENSSL_LIBS)
dist_samples_DATA += %D%/admin_api.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_admin_api_admin_api_la_SOURCES = %D%/admin_api_keys.c
CONF_KEYS_C += %D%/admin_api_keys.c
%D%/admin_api_keys.c: %D%/admin_api.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=api_keys $(srcdir)/%D%/admin_api.ini.sample >$@.tmp && mv $@.tmp $@
bin_PROGRAMS += tools/proxyhostctl
tools_proxyhostctl_SOURCES = tools/proxyhostctl.c tools/ctl_http.c \
	tools/ctl_http.h tools/ctl_print.c tools/ctl_print.h \
	tools/ctl_cmd.h tools/ctl_pool.c tools/ctl_proxy_live.c \
	tools/ctl_proxy_live.h tools/ctl_status.c \
	tools/ctl_status_print.c tools/ctl_status_print.h tools/ctl_live.c \
	tools/ctl_live.h tools/ctl_agents.c
tools_proxyhostctl_LDADD = modules/frontend/libphfrontend.la

# proxyhostctl proxy show's reading of the status JSON (issue 28), over
# t/fuzz/seeds/ctl_proxy_live.
check_PROGRAMS += t/fuzz/replay_ctl_proxy_live
t_fuzz_replay_ctl_proxy_live_SOURCES = t/fuzz/replay.c \
	t/fuzz/fuzz_ctl_proxy_live.c tools/ctl_proxy_live.c tools/ctl_proxy_live.h
t_fuzz_replay_ctl_proxy_live_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
t_fuzz_replay_ctl_proxy_live_LDADD = modules/frontend/libphfrontend.la

UNIT_TESTS += t/unit/auth/test_admin_api
t_unit_auth_test_admin_api_LDADD = $(FRONTEND_MOCK_LDADD)
# proxyhostctl's reading of /v1/status (issue 28), and its fuzz target
# (replayed by t/integration/fuzz_replay.sh).
check_PROGRAMS += t/fuzz/replay_ctl_status
t_fuzz_replay_ctl_status_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_ctl_status.c \
	tools/ctl_status_print.c tools/ctl_print.c tools/ctl_live.c
t_fuzz_replay_ctl_status_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
t_fuzz_replay_ctl_status_LDADD = modules/frontend/libphfrontend.la
UNIT_TESTS += t/unit/auth/test_ctl_status
t_unit_auth_test_ctl_status_SOURCES = t/unit/auth/test_ctl_status.c \
	tools/ctl_status_print.c tools/ctl_print.c tools/ctl_live.c
t_unit_auth_test_ctl_status_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
t_unit_auth_test_ctl_status_LDADD = modules/frontend/libphfrontend.la
endif

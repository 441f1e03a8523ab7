# SPDX-License-Identifier: BSD-2-Clause
# modules/auth_cache/local.mk: the authorization cache
# (included from Makefile.am; paths are from the top).
if MODULE_AUTH_CACHE
module_LTLIBRARIES += %D%/auth_cache.la
modules_auth_cache_auth_cache_la_SOURCES = %D%/auth_cache.c \
	%D%/auth_cache_int.h \
	%D%/access_cache.c \
	%D%/cache_gen.c %D%/cache_gen.h \
	%D%/cache_key.c %D%/cache_key.h \
	%D%/revision_watch.c %D%/store_check.c \
	modules/lib/access_req.c modules/lib/host_norm.c \
	modules/frontend/provider_check.c \
	modules/lib/metric_table.c modules/lib/kcache.c modules/lib/sflight.c
modules_auth_cache_auth_cache_la_LDFLAGS = $(MODULE_LDFLAGS)
dist_samples_DATA += %D%/auth_cache.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_auth_cache_auth_cache_la_SOURCES = %D%/auth_cache_keys.c
CONF_KEYS_C += %D%/auth_cache_keys.c
%D%/auth_cache_keys.c: %D%/auth_cache.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) $(srcdir)/%D%/auth_cache.ini.sample >$@.tmp && mv $@.tmp $@

# The module through the mock host; one generation on its own.
UNIT_TESTS += t/unit/auth/test_auth_cache t/unit/auth/test_auth_cache_gen
t_unit_auth_test_auth_cache_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/t/modules
t_unit_auth_test_auth_cache_LDADD = host/libphmock.la
t_unit_auth_test_auth_cache_gen_SOURCES = t/unit/auth/test_auth_cache_gen.c \
	%D%/cache_gen.c %D%/cache_key.c
t_unit_auth_test_auth_cache_gen_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_auth_test_auth_cache_gen_LDADD = modules/lib/libphlib.la $(LDADD)
endif

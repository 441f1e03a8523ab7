# SPDX-License-Identifier: BSD-2-Clause
# modules/auth_cache/local.mk: the authorization cache
# (included from Makefile.am; paths are from the top).
if MODULE_AUTH_CACHE
module_LTLIBRARIES += modules/auth_cache/auth_cache.la
modules_auth_cache_auth_cache_la_SOURCES = modules/auth_cache/auth_cache.c \
	modules/auth_cache/auth_cache_int.h \
	modules/auth_cache/access_cache.c \
	modules/auth_cache/cache_gen.c modules/auth_cache/cache_gen.h \
	modules/auth_cache/cache_key.c modules/auth_cache/cache_key.h \
	modules/auth_cache/revision_watch.c modules/auth_cache/store_check.c \
	modules/lib/host_norm.c modules/frontend/provider_check.c \
	modules/lib/metric_table.c modules/lib/kcache.c modules/lib/sflight.c
modules_auth_cache_auth_cache_la_LDFLAGS = $(MODULE_LDFLAGS)
dist_samples_DATA += modules/auth_cache/auth_cache.ini.sample

# The module through the mock host; one generation on its own.
UNIT_TESTS += t/unit/auth/test_auth_cache t/unit/auth/test_auth_cache_gen
t_unit_auth_test_auth_cache_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/t/modules
t_unit_auth_test_auth_cache_LDADD = host/libphmock.la
t_unit_auth_test_auth_cache_gen_SOURCES = t/unit/auth/test_auth_cache_gen.c \
	modules/auth_cache/cache_gen.c modules/auth_cache/cache_key.c
t_unit_auth_test_auth_cache_gen_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_auth_test_auth_cache_gen_LDADD = modules/lib/libphlib.la $(LDADD)
endif

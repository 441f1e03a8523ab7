# SPDX-License-Identifier: BSD-2-Clause
# modules/direct/local.mk: the direct connector and its unit tests
# (included from Makefile.am; paths are from the top).
if MODULE_DIRECT
module_LTLIBRARIES += %D%/direct.la
modules_direct_direct_la_SOURCES = %D%/direct.c \
	%D%/dialer.c %D%/dialer.h \
	%D%/policy.c %D%/policy.h \
	%D%/resolver.c %D%/resolver.h \
	%D%/resolver_qcache.h
modules_direct_direct_la_CPPFLAGS = $(AM_CPPFLAGS) $(CARES_CFLAGS)
modules_direct_direct_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_direct_direct_la_LIBADD = modules/frontend/libphfrontend.la $(CARES_LIBS)
dist_samples_DATA += %D%/direct.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_direct_direct_la_SOURCES = %D%/direct_keys.c
CONF_KEYS_C += %D%/direct_keys.c
%D%/direct_keys.c: %D%/direct.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=direct_keys $(srcdir)/%D%/direct.ini.sample >$@.tmp && mv $@.tmp $@

UNIT_TESTS += t/unit/connectors/test_direct_policy t/unit/connectors/test_direct \
	t/unit/connectors/test_resolver_qcache
t_unit_connectors_test_direct_policy_SOURCES = t/unit/connectors/test_direct_policy.c \
	%D%/policy.c modules/lib/cidr.c modules/lib/host_norm.c
t_unit_connectors_test_direct_policy_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_connectors_test_direct_LDADD = host/libphmock.la
endif

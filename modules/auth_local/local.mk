# SPDX-License-Identifier: BSD-2-Clause
# modules/auth_local/local.mk: the local authorizer and proxyhost-passwd
# (included from Makefile.am; paths are from the top).
if MODULE_AUTH_LOCAL
module_LTLIBRARIES += %D%/auth_local.la
modules_auth_local_auth_local_la_SOURCES = %D%/auth_local.c \
	%D%/access_local.c %D%/access_local.h \
	%D%/pwhash.c %D%/pwhash.h modules/lib/b64.c \
	modules/lib/access_req.c modules/lib/host_norm.c modules/lib/kcache.c \
	modules/lib/metric_table.c modules/lib/sflight.c
modules_auth_local_auth_local_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
modules_auth_local_auth_local_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_auth_local_auth_local_la_LIBADD = $(OPENSSL_LIBS)
dist_samples_DATA += %D%/auth_local.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_auth_local_auth_local_la_SOURCES = %D%/auth_local_keys.c
CONF_KEYS_C += %D%/auth_local_keys.c
%D%/auth_local_keys.c: %D%/auth_local.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=auth_keys $(srcdir)/%D%/auth_local.ini.sample >$@.tmp && mv $@.tmp $@
# Prints the hash line for a password read from stdin.
bin_PROGRAMS += tools/proxyhost-passwd
tools_proxyhost_passwd_SOURCES = tools/proxyhost_passwd.c \
	%D%/pwhash.c %D%/pwhash.h modules/lib/b64.c
tools_proxyhost_passwd_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
tools_proxyhost_passwd_LDADD = $(OPENSSL_LIBS)

# Its unit tests compile pwhash.c (with the module's flags).
UNIT_TESTS += t/unit/auth/test_auth_local t/unit/auth/test_access
t_unit_auth_test_auth_local_SOURCES = t/unit/auth/test_auth_local.c \
	%D%/pwhash.c
t_unit_auth_test_auth_local_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
t_unit_auth_test_auth_local_LDADD = modules/lib/libphlib.la host/libphmock.la \
	$(OPENSSL_LIBS)
t_unit_auth_test_access_SOURCES = t/unit/auth/test_access.c %D%/pwhash.c \
	modules/lib/b64.c
t_unit_auth_test_access_CPPFLAGS = $(t_unit_auth_test_auth_local_CPPFLAGS)
t_unit_auth_test_access_LDADD = host/libphmock.la $(OPENSSL_LIBS)
endif

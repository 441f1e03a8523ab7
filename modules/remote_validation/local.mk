# SPDX-License-Identifier: BSD-2-Clause
# modules/remote_validation/local.mk: the remote validation authorizer
# (included from Makefile.am; paths are from the top).
if MODULE_REMOTE_VALIDATION
module_LTLIBRARIES += %D%/remote_validation.la
modules_remote_validation_remote_validation_la_SOURCES = \
	%D%/remote_validation.c \
	%D%/rv_http.c %D%/rv_http.h \
	%D%/rv_key.c %D%/rv_key.h \
	modules/lib/kcache.c modules/lib/metric_table.c modules/lib/sflight.c
modules_remote_validation_remote_validation_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(LIBCURL_CFLAGS) $(OPENSSL_CFLAGS)
modules_remote_validation_remote_validation_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_remote_validation_remote_validation_la_LIBADD = $(LIBCURL_LIBS) \
	$(OPENSSL_LIBS)
dist_samples_DATA += %D%/remote_validation.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_remote_validation_remote_validation_la_SOURCES = \
	%D%/remote_validation_keys.c
CONF_KEYS_C += %D%/remote_validation_keys.c
%D%/remote_validation_keys.c: %D%/remote_validation.ini.sample \
		$(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=rv_keys \
		$(srcdir)/%D%/remote_validation.ini.sample >$@.tmp && mv $@.tmp $@
UNIT_TESTS += t/unit/auth/test_remote_validation
# rv_key.c is compiled in as well: its key is checked against a known
# answer (TM-P1-38).
t_unit_auth_test_remote_validation_SOURCES = \
	t/unit/auth/test_remote_validation.c %D%/rv_key.c
t_unit_auth_test_remote_validation_CPPFLAGS = $(AM_CPPFLAGS) $(OPENSSL_CFLAGS)
t_unit_auth_test_remote_validation_LDADD = host/libphmock.la $(OPENSSL_LIBS)
endif

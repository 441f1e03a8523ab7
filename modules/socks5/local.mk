# SPDX-License-Identifier: BSD-2-Clause
# modules/socks5/local.mk: the SOCKS5 frontend and its unit tests
# (included from Makefile.am; paths are from the top).
if MODULE_SOCKS5
module_LTLIBRARIES += %D%/socks5.la
modules_socks5_socks5_la_SOURCES = %D%/socks5.c \
	%D%/socks5_proto.c %D%/socks5_proto.h
modules_socks5_socks5_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_socks5_socks5_la_LIBADD = modules/frontend/libphfrontend.la
dist_samples_DATA += %D%/socks5.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_socks5_socks5_la_SOURCES = %D%/socks5_keys.c
CONF_KEYS_C += %D%/socks5_keys.c
%D%/socks5_keys.c: %D%/socks5.ini.sample $(GEN_CONF_KEYS_AWK) $(KEYS_FRONTEND)
	$(GEN_CONF_KEYS) -v table=s5_keys -v groups="$(KEYS_FRONTEND)" \
		$(srcdir)/%D%/socks5.ini.sample >$@.tmp && mv $@.tmp $@

UNIT_TESTS += t/unit/frontend/test_socks5_proto t/unit/frontend/test_socks5
t_unit_frontend_test_socks5_proto_SOURCES = t/unit/frontend/test_socks5_proto.c \
	%D%/socks5_proto.c
t_unit_frontend_test_socks5_proto_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_frontend_test_socks5_proto_LDADD = $(FRONTEND_TEST_LDADD)
t_unit_frontend_test_socks5_LDADD = $(FAKE_TEST_LDADD)
endif

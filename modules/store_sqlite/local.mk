# SPDX-License-Identifier: BSD-2-Clause
# modules/store_sqlite/local.mk: the embedded SQLite authorization store
# (included from Makefile.am; paths are from the top).
if MODULE_STORE_SQLITE
module_LTLIBRARIES += %D%/store_sqlite.la
modules_store_sqlite_store_sqlite_la_SOURCES = \
	%D%/store_sqlite.c %D%/store_sqlite.h \
	%D%/sq_pool.c %D%/sq_pool.h \
	%D%/sq_call.c %D%/sq_sql.c \
	%D%/sq_rows.c %D%/sq_access.c \
	%D%/sq_write.c %D%/sq_list.c \
	%D%/sq_proxies.c %D%/sq_proxies_write.c \
	modules/lib/metric_table.c modules/lib/metric_table.h
modules_store_sqlite_store_sqlite_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(SQLITE3_CFLAGS) $(OPENSSL_CFLAGS) \
	-DPH_LOCALSTATEDIR='"$(localstatedir)"'
modules_store_sqlite_store_sqlite_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_store_sqlite_store_sqlite_la_LIBADD = \
	modules/store_common/libphstore.la \
	modules/store_common/libphstore_sqlite.la $(SQLITE3_LIBS) $(OPENSSL_LIBS)
dist_samples_DATA += %D%/store_sqlite.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_store_sqlite_store_sqlite_la_SOURCES = %D%/store_sqlite_keys.c
CONF_KEYS_C += %D%/store_sqlite_keys.c
%D%/store_sqlite_keys.c: %D%/store_sqlite.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) $(srcdir)/%D%/store_sqlite.ini.sample >$@.tmp && mv $@.tmp $@

# The store through the mock host, with the contract suites.
UNIT_TESTS += t/unit/auth/test_store_sqlite
t_unit_auth_test_store_sqlite_SOURCES = t/unit/auth/test_store_sqlite.c \
	t/unit/auth/store_contract.h t/unit/auth/pool_contract.h
t_unit_auth_test_store_sqlite_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE3_CFLAGS)
t_unit_auth_test_store_sqlite_LDFLAGS = -export-dynamic
t_unit_auth_test_store_sqlite_LDADD = host/libphmock.la \
	modules/store_common/libphstore.la $(SQLITE3_LIBS) -ldl
endif

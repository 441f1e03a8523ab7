# SPDX-License-Identifier: BSD-2-Clause
# modules/store_sqlite/local.mk: the embedded SQLite authorization store
# (included from Makefile.am; paths are from the top).
if MODULE_STORE_SQLITE
module_LTLIBRARIES += modules/store_sqlite/store_sqlite.la
modules_store_sqlite_store_sqlite_la_SOURCES = \
	modules/store_sqlite/store_sqlite.c modules/store_sqlite/store_sqlite.h \
	modules/store_sqlite/sq_pool.c modules/store_sqlite/sq_pool.h \
	modules/store_sqlite/sq_call.c modules/store_sqlite/sq_sql.c \
	modules/store_sqlite/sq_rows.c modules/store_sqlite/sq_access.c \
	modules/store_sqlite/sq_write.c modules/store_sqlite/sq_list.c \
	modules/store_sqlite/sq_proxies.c modules/store_sqlite/sq_proxies_write.c \
	modules/lib/metric_table.c modules/lib/metric_table.h
modules_store_sqlite_store_sqlite_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(SQLITE3_CFLAGS) $(OPENSSL_CFLAGS) \
	-DPH_LOCALSTATEDIR='"$(localstatedir)"'
modules_store_sqlite_store_sqlite_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_store_sqlite_store_sqlite_la_LIBADD = \
	modules/store_common/libphstore.la \
	modules/store_common/libphstore_sqlite.la $(SQLITE3_LIBS) $(OPENSSL_LIBS)
dist_samples_DATA += modules/store_sqlite/store_sqlite.ini.sample

# The store through the mock host, with the contract suites.
UNIT_TESTS += t/unit/auth/test_store_sqlite
t_unit_auth_test_store_sqlite_SOURCES = t/unit/auth/test_store_sqlite.c \
	t/unit/auth/store_contract.h t/unit/auth/pool_contract.h
t_unit_auth_test_store_sqlite_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE3_CFLAGS)
t_unit_auth_test_store_sqlite_LDFLAGS = -export-dynamic
t_unit_auth_test_store_sqlite_LDADD = host/libphmock.la \
	modules/store_common/libphstore.la $(SQLITE3_LIBS) -ldl
endif

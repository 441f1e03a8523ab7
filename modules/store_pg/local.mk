# SPDX-License-Identifier: BSD-2-Clause
# modules/store_pg/local.mk: the PostgreSQL authorization store
# (included from Makefile.am; paths are from the top).

# The PostgreSQL authorization store: libpq asynchronous on the loop
# (pg_pool, pg_conn), the store's calls, the revision poll.
if MODULE_STORE_PG
module_LTLIBRARIES += %D%/store_pg.la
STORE_PG_SOURCES = \
	%D%/pg_pool.c %D%/pg_pool.h \
	%D%/pg_pool_int.h %D%/pg_conn.c \
	modules/lib/metric_table.c modules/lib/metric_table.h
modules_store_pg_store_pg_la_SOURCES = $(STORE_PG_SOURCES) \
	%D%/store_pg.c %D%/store_pg_int.h \
	%D%/store_pg_req.c %D%/pg_sql.c \
	%D%/pg_sql.h %D%/pg_result.c \
	%D%/pg_record.h %D%/pg_poll.c \
	%D%/pg_access.c %D%/pg_authn.c \
	%D%/pg_list.c %D%/pg_write.c \
	%D%/pg_proxies.c %D%/pg_proxies_sql.h \
	%D%/pg_presence.c \
	%D%/pg_presence_sql.h %D%/pg_presence_view.c
modules_store_pg_store_pg_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
# -z nodelete: dlclose leaves store_pg.so and libpq's libraries (OpenSSL,
# Kerberos, LDAP, some with thread-local storage) mapped. Unloading them
# at exit leaves a stale dynamic-TLS entry that makes LeakSanitizer's
# tracer crash (gcc 12, glibc 2.36) in every sanitizer run of a process
# that loaded the module; nothing else is lost, exit is near anyway.
modules_store_pg_store_pg_la_LDFLAGS = $(MODULE_LDFLAGS) -Wl,-z,nodelete
modules_store_pg_store_pg_la_LIBADD = modules/store_common/libphstore.la \
	modules/store_common/libphstore_pg.la $(LIBPQ_LIBS)
dist_samples_DATA += %D%/store_pg.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_store_pg_store_pg_la_SOURCES = %D%/store_pg_keys.c
CONF_KEYS_C += %D%/store_pg_keys.c
%D%/store_pg_keys.c: %D%/store_pg.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) $(srcdir)/%D%/store_pg.ini.sample >$@.tmp && mv $@.tmp $@

# store_pg's programs need a PostgreSQL cluster: t/integration/store_pg.sh
# starts one and runs them (they are not TESTS of their own).
check_PROGRAMS += t/unit/auth/test_pg_pool t/unit/auth/test_store_pg
t_unit_auth_test_pg_pool_SOURCES = t/unit/auth/test_pg_pool.c $(STORE_PG_SOURCES)
t_unit_auth_test_pg_pool_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
t_unit_auth_test_pg_pool_LDADD = host/libphmock.la $(LIBPQ_LIBS)
t_unit_auth_test_store_pg_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
t_unit_auth_test_store_pg_LDADD = host/libphmock.la $(LIBPQ_LIBS)
# tm.presence (issue 27) on a real cluster, several mocks on one database.
check_PROGRAMS += t/unit/auth/test_tm_presence_pg
t_unit_auth_test_tm_presence_pg_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
t_unit_auth_test_tm_presence_pg_LDADD = host/libphmock.la $(LIBPQ_LIBS)
# store_contract.c is #included (one TAP plan), as in test_store_sqlite.
check_PROGRAMS += t/unit/auth/test_store_pg_contract
t_unit_auth_test_store_pg_contract_SOURCES = t/unit/auth/test_store_pg_contract.c \
	t/unit/auth/store_contract.h t/unit/auth/pool_contract.h
t_unit_auth_test_store_pg_contract_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
t_unit_auth_test_store_pg_contract_LDADD = host/libphmock.la \
	modules/store_common/libphstore.la $(LIBPQ_LIBS)
endif

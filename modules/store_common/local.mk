# SPDX-License-Identifier: BSD-2-Clause
# modules/store_common/local.mk: the authorization schema, its migrations and the stores' shared library
# (included from Makefile.am; paths are from the top).

# ---- the authorization schema and its migrations -----------------------
# migrations/README.md says how the chain works. The SQL is installed for
# operators under $(pkgdatadir)/migrations/ in the tree's layout, and
# embedded at build time (scripts/embed-sql.sh) into the driver the
# stores and proxyhost-migrate link, so no store reads it from disk.
AZ_SQL_FILES = migrations/ddl.sql migrations/baseline/v0008.sql \
	migrations/incremental/v0008_to_v0009/sqlite.sql \
	migrations/incremental/v0008_to_v0009/postgres.sql \
	migrations/incremental/v0009_to_v0010/sqlite.sql \
	migrations/incremental/v0009_to_v0010/postgres.sql \
	migrations/incremental/v0010_to_v0011/sqlite.sql \
	migrations/incremental/v0010_to_v0011/postgres.sql
nobase_dist_pkgdata_DATA = $(AZ_SQL_FILES) migrations/README.md
EXTRA_DIST += scripts/embed-sql.sh
# One NAME=FILE per array of modules/store_common/migrations_sql.h.
%D%/migrations_sql.c: $(srcdir)/scripts/embed-sql.sh \
		$(srcdir)/migrations/ddl.sql $(srcdir)/migrations/baseline/v0008.sql \
		$(srcdir)/migrations/incremental/v0008_to_v0009/sqlite.sql \
		$(srcdir)/migrations/incremental/v0008_to_v0009/postgres.sql \
		$(srcdir)/migrations/incremental/v0009_to_v0010/sqlite.sql \
		$(srcdir)/migrations/incremental/v0009_to_v0010/postgres.sql \
		$(srcdir)/migrations/incremental/v0010_to_v0011/sqlite.sql \
		$(srcdir)/migrations/incremental/v0010_to_v0011/postgres.sql
	$(AM_V_GEN)$(MKDIR_P) modules/store_common && \
	$(SHELL) $(srcdir)/scripts/embed-sql.sh $@ store_common/migrations_sql.h \
	  az_sql_ddl_text=$(srcdir)/migrations/ddl.sql \
	  az_sql_baseline_v0008_text=$(srcdir)/migrations/baseline/v0008.sql \
	  az_sql_v0008_to_v0009_sqlite=$(srcdir)/migrations/incremental/v0008_to_v0009/sqlite.sql \
	  az_sql_v0008_to_v0009_postgres=$(srcdir)/migrations/incremental/v0008_to_v0009/postgres.sql \
	  az_sql_v0009_to_v0010_sqlite=$(srcdir)/migrations/incremental/v0009_to_v0010/sqlite.sql \
	  az_sql_v0009_to_v0010_postgres=$(srcdir)/migrations/incremental/v0009_to_v0010/postgres.sql \
	  az_sql_v0010_to_v0011_sqlite=$(srcdir)/migrations/incremental/v0010_to_v0011/sqlite.sql \
	  az_sql_v0010_to_v0011_postgres=$(srcdir)/migrations/incremental/v0010_to_v0011/postgres.sql
CLEANFILES += %D%/migrations_sql.c
if STORE_ANY
# The engine-neutral driver, the registry and the embedded SQL. A store
# links it and its engine's library below (separate, so that store_sqlite
# does not depend on libpq, nor store_pg on SQLite).
BUILT_SOURCES += %D%/migrations_sql.c
noinst_LTLIBRARIES += %D%/libphstore.la
# With the stores' shared, engine-neutral code: token material, the
# authorization decision, request validation, the revision's state and
# metrics.
modules_store_common_libphstore_la_SOURCES = \
	%D%/migrations.c %D%/migrations.h \
	%D%/migrations_sql.h \
	%D%/az_token.c %D%/az_token.h \
	%D%/az_eval.c %D%/az_eval.h \
	%D%/az_validate.c %D%/az_validate.h \
	%D%/az_revision.c %D%/az_revision.h \
	%D%/az_row.c %D%/az_row.h \
	modules/lib/bw.c modules/lib/bw.h \
	modules/lib/cidr.c modules/lib/cidr.h \
	modules/lib/host_norm.c modules/lib/host_norm.h \
	modules/lib/access_req.c modules/lib/access_req.h
nodist_modules_store_common_libphstore_la_SOURCES = \
	%D%/migrations_sql.c
modules_store_common_libphstore_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(OPENSSL_CFLAGS)
modules_store_common_libphstore_la_LIBADD = $(OPENSSL_LIBS)
# The command that shows and applies pending steps: a system program. It
# reads --config with the host's configuration reader (host/libphcore.la).
sbin_PROGRAMS += tools/proxyhost-migrate
tools_proxyhost_migrate_SOURCES = tools/proxyhost_migrate.c \
	tools/migrate_target.c tools/migrate_target.h
tools_proxyhost_migrate_CPPFLAGS = $(AM_CPPFLAGS)
tools_proxyhost_migrate_LDADD = %D%/libphstore.la \
	host/libphcore.la
UNIT_TESTS += t/unit/auth/test_migrations t/unit/auth/test_az_eval
t_unit_auth_test_migrations_CPPFLAGS = $(AM_CPPFLAGS) \
	-DAZ_TEST_SRCDIR='"$(abs_top_srcdir)"'
t_unit_auth_test_migrations_LDADD = %D%/libphstore.la
t_unit_auth_test_az_eval_LDADD = %D%/libphstore.la $(LDADD)

# Each engine's library, built with its store and linked with its
# AZ_WITH_* define into proxyhost-migrate (the SQLite one into
# test_migrations too).
modules_store_common_libphstore_sqlite_la_SOURCES = \
	%D%/migrate_sqlite.c %D%/migrate_sqlite.h
modules_store_common_libphstore_sqlite_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE3_CFLAGS)
modules_store_common_libphstore_sqlite_la_LIBADD = $(SQLITE3_LIBS)
modules_store_common_libphstore_pg_la_SOURCES = \
	%D%/migrate_pg.c %D%/migrate_pg.h
modules_store_common_libphstore_pg_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBPQ_CFLAGS)
modules_store_common_libphstore_pg_la_LIBADD = $(LIBPQ_LIBS)
AZ_SQLITE_CPPFLAGS = -DAZ_WITH_SQLITE=1 $(SQLITE3_CFLAGS)
if MODULE_STORE_SQLITE
noinst_LTLIBRARIES += %D%/libphstore_sqlite.la
tools_proxyhost_migrate_CPPFLAGS += $(AZ_SQLITE_CPPFLAGS)
tools_proxyhost_migrate_LDADD += %D%/libphstore_sqlite.la
t_unit_auth_test_migrations_CPPFLAGS += $(AZ_SQLITE_CPPFLAGS)
t_unit_auth_test_migrations_LDADD += %D%/libphstore_sqlite.la
endif
if MODULE_STORE_PG
noinst_LTLIBRARIES += %D%/libphstore_pg.la
tools_proxyhost_migrate_CPPFLAGS += -DAZ_WITH_POSTGRES=1 $(LIBPQ_CFLAGS)
tools_proxyhost_migrate_LDADD += %D%/libphstore_pg.la
endif
endif

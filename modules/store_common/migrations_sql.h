/* SPDX-License-Identifier: BSD-2-Clause */
/* The SQL files of migrations/, as C strings. Defined in the generated
 * migrations_sql.c (scripts/embed-sql.sh, run by Makefile.am); only
 * migrations.c reads them, through az_sql_ddl() and the registry. */
#ifndef PH_STORE_MIGRATIONS_SQL_H
#define PH_STORE_MIGRATIONS_SQL_H

extern const char az_sql_ddl_text[];           /* migrations/ddl.sql */
extern const char az_sql_baseline_v0008_text[]; /* baseline/v0008.sql */
/* incremental/v0008_to_v0009/{sqlite,postgres}.sql */
extern const char az_sql_v0008_to_v0009_sqlite[];
extern const char az_sql_v0008_to_v0009_postgres[];
/* incremental/v0009_to_v0010/{sqlite,postgres}.sql */
extern const char az_sql_v0009_to_v0010_sqlite[];
extern const char az_sql_v0009_to_v0010_postgres[];
/* incremental/v0010_to_v0011/{sqlite,postgres}.sql */
extern const char az_sql_v0010_to_v0011_sqlite[];
extern const char az_sql_v0010_to_v0011_postgres[];

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Which database proxyhost-migrate works on: --sqlite PATH, --postgres
 * DSN, PROXYHOST_MIGRATE_DSN, or a store's section of a proxyhost
 * configuration (--config FILE [--store NAME]). */
#ifndef PH_MIGRATE_TARGET_H
#define PH_MIGRATE_TARGET_H

#include <stddef.h>

#include "store_common/migrations.h"

/* The environment variable that carries a PostgreSQL DSN, so that a
 * password need not be on a command line (where ps shows it). */
#define MIGRATE_DSN_ENV "PROXYHOST_MIGRATE_DSN"

typedef struct migrate_target {
  az_engine engine;
  char *location; /* SQLite path or PostgreSQL DSN (malloc'd). A DSN is
                     never printed: it may hold a password. */
  char from[320]; /* where it came from, for messages ("--sqlite",
                     "FILE: [store_pg] dsn"): never the value itself */
} migrate_target;

/* Reads FILE as proxyhost reads it (includes, conf.d drop-ins, and the
 * environment's PROXYHOST_<SECTION>_<KEY> over the files) and takes
 * [store_sqlite] path or [store_pg] dsn (or the first line of its
 * dsn_file, as store_pg reads it). store names the section (a
 * named instance: "store_pg.main"); without it, exactly one of the two
 * must be set. 0, or -1 with why. */
int migrate_target_from_config(const char *file, const char *store,
                               migrate_target *t, char *why, size_t whylen);

void migrate_target_free(migrate_target *t);

#endif

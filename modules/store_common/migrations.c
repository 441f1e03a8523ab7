/* SPDX-License-Identifier: BSD-2-Clause */
/* The engine-neutral migration driver and the registry of steps
 * (migrations.h). It never touches a database itself: the engine's ops
 * read the version and run one script, which is one transaction. */
#include "migrations.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/bw.h"
#include "migrations_sql.h"

/* The registry (TM-P1-22): one entry per directory of
 * migrations/incremental/, in order. A new step adds its line here, its
 * two scripts to migrations_sql.h and Makefile.am's AZ_SQL_EMBED, and
 * bumps AZ_SCHEMA_VERSION (migrations/README.md has the whole list). */
static const az_step steps[] = {
    {8, 9, az_sql_v0008_to_v0009_sqlite, az_sql_v0008_to_v0009_postgres,
     "v0008_to_v0009"},
    {9, 10, az_sql_v0009_to_v0010_sqlite, az_sql_v0009_to_v0010_postgres,
     "v0009_to_v0010"},
    {10, 11, az_sql_v0010_to_v0011_sqlite, az_sql_v0010_to_v0011_postgres,
     "v0010_to_v0011"},
};

const char *az_sql_ddl(void) { return az_sql_ddl_text; }
const char *az_sql_baseline_v8(void) { return az_sql_baseline_v0008_text; }

const az_step *az_steps(size_t *n) {
  *n = sizeof(steps) / sizeof(steps[0]);
  return steps;
}

const char *az_engine_name(az_engine engine) {
  switch (engine) {
  case AZ_ENGINE_SQLITE:
    return "sqlite";
  case AZ_ENGINE_POSTGRES:
    return "postgres";
  }
  return "?";
}

const char *az_step_sql(const az_step *step, az_engine engine) {
  switch (engine) {
  case AZ_ENGINE_SQLITE:
    return step->sqlite;
  case AZ_ENGINE_POSTGRES:
    return step->postgres;
  }
  return NULL;
}

/* Formats into buf, always terminated; a message that does not fit is
 * cut, never overflows. */
static void say(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...) {
  if (!buf || len == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

int az_version_none(long long ours, char *why, size_t whylen) {
  if (ours == 0)
    return 0;
  say(why, whylen, "the database has tables of the proxyhost schema but no "
                   "schema_meta: its version is unknown");
  return -1;
}

int az_version_row(int rc, long long v, int valid, char *why,
                   size_t whylen) {
  if (rc < 0)
    return -1;
  if (rc == 0) {
    say(why, whylen, "schema_meta has no row (id 1): the version is unknown");
    return -1;
  }
  if (!valid || v <= 0 || v > 1000000) {
    say(why, whylen, "schema_meta.version is not a valid version");
    return -1;
  }
  return (int)v;
}

int az_exec_before(int open, char *why, size_t whylen) {
  if (!open)
    return 0;
  say(why, whylen, "a transaction is already open on the connection");
  return -1;
}

int az_exec_after(int open, char *why, size_t whylen) {
  if (!open)
    return 0;
  say(why, whylen, "the script left its transaction open (it was rolled "
                   "back)");
  return -1;
}

int az_registry_check(char *why, size_t whylen) {
  size_t n;
  const az_step *s = az_steps(&n);
  if (n == 0) {
    say(why, whylen, "the migration registry is empty");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (s[i].to != s[i].from + 1) {
      say(why, whylen, "step %s goes from %d to %d, not one version up",
          s[i].name, s[i].from, s[i].to);
      return -1;
    }
    if (i > 0 && s[i].from != s[i - 1].to) {
      say(why, whylen, "step %s does not start where %s ends", s[i].name,
          s[i - 1].name);
      return -1;
    }
    if (!s[i].sqlite || !*s[i].sqlite || !s[i].postgres || !*s[i].postgres) {
      say(why, whylen, "step %s lacks a script for an engine", s[i].name);
      return -1;
    }
  }
  if (s[n - 1].to != AZ_SCHEMA_VERSION) {
    say(why, whylen, "the last step ends at %d, the schema version is %d",
        s[n - 1].to, AZ_SCHEMA_VERSION);
    return -1;
  }
  return 0;
}

/* The steps that lead from version v to AZ_SCHEMA_VERSION: *first and
 * *count within the registry. -1 when there is no such chain. Bounded by
 * the registry's size. */
static int chain_from(int v, size_t *first, size_t *count) {
  size_t n;
  const az_step *s = az_steps(&n);
  for (size_t i = 0; i < n; i++) {
    if (s[i].from != v)
      continue;
    int at = v;
    size_t j = i;
    while (j < n && s[j].from == at) {
      at = s[j].to;
      j++;
    }
    if (at != AZ_SCHEMA_VERSION)
      return -1;
    *first = i;
    *count = j - i;
    return 0;
  }
  return -1;
}

/* Runs one script and checks that it left the database at want. */
static int run(const az_engine_ops *ops, void *db, const char *sql,
               const char *what, int before, int want, char *why,
               size_t whylen) {
  char err[512] = "";
  if (ops->exec(db, sql, err, sizeof(err)) < 0) {
    /* Another migrator may have run the same step at the same time: the
     * step's own version check (under the lock it takes) then failed
     * here. The database being at the target is success, and so is one
     * the other migrator has already taken further along the chain (the
     * caller then skips the steps below it). */
    char err2[256] = "";
    int now = ops->version(db, err2, sizeof(err2));
    if (now >= want && now <= AZ_SCHEMA_VERSION)
      return now;
    const char *e = err[0] ? err : "unknown error";
    if (now >= 0 && now != before) {
      say(why, whylen, "%s failed (the database is now at version %d): %s",
          what, now, e);
      return AZ_MIGRATE_ERROR;
    }
    if (before == 0)
      say(why, whylen, "%s failed and was rolled back (the database is "
          "still empty): %s", what, e);
    else
      say(why, whylen, "%s failed and was rolled back (the database is "
          "still at version %d): %s", what, before, e);
    return AZ_MIGRATE_ERROR;
  }
  int now = ops->version(db, err, sizeof(err));
  if (now < 0) {
    say(why, whylen, "%s ran, but the version cannot be read back: %s",
        what, err);
    return AZ_MIGRATE_ERROR;
  }
  /* Above want: another migrator ran the next step between our commit
   * and this read (the caller skips what it did). */
  if (now < want || now > AZ_SCHEMA_VERSION) {
    say(why, whylen, "%s ran, but the database is at version %d, not %d",
        what, now, want);
    return AZ_MIGRATE_ERROR;
  }
  return now;
}

int az_migrate(const az_engine_ops *ops, void *db, int apply, char *why,
               size_t whylen, char *plan, size_t planlen) {
  if (why && whylen)
    why[0] = '\0';
  /* The plan, one line a step; a line that does not fit is left out. */
  ph_bw pw;
  ph_bw_init(&pw, plan, plan ? planlen : 0, PH_BW_TEXT);
  if (!ops || !ops->version || !ops->exec ||
      (ops->engine != AZ_ENGINE_SQLITE && ops->engine != AZ_ENGINE_POSTGRES)) {
    say(why, whylen, "no database engine given to the migration driver");
    return AZ_MIGRATE_ERROR;
  }
  const char *engine = az_engine_name(ops->engine);
  int v = ops->version(db, why, whylen);
  if (v < 0)
    return AZ_MIGRATE_ERROR;
  if (v > AZ_SCHEMA_VERSION) {
    say(why, whylen,
        "the database is at schema version %d, newer than this build's %d: "
        "nothing was changed; run a proxyhost that knows version %d, or "
        "restore the backup taken before the upgrade",
        v, AZ_SCHEMA_VERSION, v);
    return AZ_MIGRATE_REFUSED;
  }
  if (v == AZ_SCHEMA_VERSION)
    return v;
  if (v == 0) {
    ph_bw_printf(&pw, "new database -> v%d (migrations/ddl.sql)\n",
                 AZ_SCHEMA_VERSION);
    if (!apply)
      return 0;
    return run(ops, db, az_sql_ddl(), "creating the schema (ddl.sql)", 0,
               AZ_SCHEMA_VERSION, why, whylen);
  }
  size_t first, count, n;
  const az_step *s = az_steps(&n);
  if (chain_from(v, &first, &count) < 0) {
    say(why, whylen,
        "the database is at schema version %d and this build has no "
        "migration from it (its steps start at version %d): nothing was "
        "changed",
        v, n ? s[0].from : AZ_SCHEMA_VERSION);
    return AZ_MIGRATE_REFUSED;
  }
  for (size_t i = first; i < first + count; i++)
    ph_bw_printf(&pw, "v%d -> v%d (migrations/incremental/%s/%s.sql)\n",
                 s[i].from, s[i].to, s[i].name, engine);
  if (!apply)
    return v;
  for (size_t i = first; i < first + count; i++) {
    if (s[i].from < v)
      continue; /* done meanwhile by another migrator (run) */
    char what[96];
    snprintf(what, sizeof(what), "step v%d -> v%d (%s/%s.sql)", s[i].from,
             s[i].to, s[i].name, engine);
    v = run(ops, db, az_step_sql(&s[i], ops->engine), what, s[i].from,
            s[i].to, why, whylen);
    if (v < 0)
      return v;
  }
  return v;
}

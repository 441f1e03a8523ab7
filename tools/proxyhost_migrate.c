/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhost-migrate: shows and applies the authorization schema's
 * migrations (migrations/README.md) on a SQLite or PostgreSQL database.
 *
 *   proxyhost-migrate status|plan|apply
 *       (--sqlite PATH | --postgres DSN | --config FILE [--store NAME])
 *
 * With no database option, PROXYHOST_MIGRATE_DSN names a PostgreSQL
 * database. Exit statuses: 0 done (status: current), 1 an error, 2 bad
 * usage, 3 a database this build must not touch (newer, or no chain of
 * steps from its version), 4 (status only) steps are pending.
 * proxyhost-migrate(8) documents it. It never prints a DSN: PostgreSQL
 * databases are named by host, port, database and user. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "migrate_target.h"
#include "store_common/migrations.h"
#ifdef AZ_WITH_SQLITE
#include "store_common/migrate_sqlite.h"
#endif
#ifdef AZ_WITH_POSTGRES
#include "store_common/migrate_pg.h"
#endif

#define EXIT_ERROR 1
#define EXIT_USAGE 2
#define EXIT_REFUSED 3
#define EXIT_PENDING 4

static const char *prog = "proxyhost-migrate";

static void usage(FILE *out) {
  fprintf(out,
          "usage: %s status|plan|apply DATABASE\n"
          "Shows or applies the migrations of the proxyhost authorization "
          "schema\n(this build: version %d).\n"
          "  status   the database's version and whether it is current\n"
          "  plan     the steps apply would run\n"
          "  apply    runs them, each in one transaction; again: nothing\n"
          "DATABASE, one of:\n"
          "  --sqlite PATH      a SQLite file (apply creates a missing one, "
          "mode 0600)\n"
          "  --postgres DSN     a PostgreSQL connection string or URI\n"
          "  --config FILE      the store section of a proxyhost "
          "configuration:\n"
          "                     [store_sqlite] path, or [store_pg] dsn or\n"
          "                     the first line of its dsn_file\n"
          "  --store NAME       with --config: that section (store_pg.NAME)\n"
          "  (none)             the DSN in $%s\n"
          "  -h, --help         this text\n"
          "Exit: 0 done (status: current), 1 error, 2 usage, 3 refused "
          "(newer or\nunknown version), 4 steps pending (status).\n"
          "Engines of this build:%s%s\n"
          "See proxyhost-migrate(8).\n",
          prog, AZ_SCHEMA_VERSION, MIGRATE_DSN_ENV,
#ifdef AZ_WITH_SQLITE
          " sqlite",
#else
          "",
#endif
#ifdef AZ_WITH_POSTGRES
          " postgres"
#else
          ""
#endif
  );
}

/* An open database and what to call it in output. */
typedef struct target_db {
  const az_engine_ops *ops;
  void *db;
  char name[512];
} target_db;

static int open_target(const migrate_target *t, int apply, target_db *out,
                       char *why, size_t whylen) {
  memset(out, 0, sizeof(*out));
  if (t->engine == AZ_ENGINE_SQLITE) {
#ifdef AZ_WITH_SQLITE
    struct stat sb;
    int missing = stat(t->location, &sb) < 0 && errno == ENOENT;
    snprintf(out->name, sizeof(out->name), "sqlite %s", t->location);
    sqlite3 *db = NULL;
    /* status and plan never create the file: a missing one is read as
     * the empty database it would start as. */
    int rc = missing && !apply
                 ? az_sqlite_open(":memory:", 0, &db, why, whylen)
                 : az_sqlite_open(t->location, apply, &db, why, whylen);
    if (rc < 0)
      return -1;
    out->ops = &az_sqlite_ops;
    out->db = db;
    return 0;
#else
    snprintf(why, whylen, "this build has no SQLite support "
             "(configure --disable-module-store_sqlite)");
    return -1;
#endif
  }
#ifdef AZ_WITH_POSTGRES
  PGconn *conn = az_pg_connect(t->location, "proxyhost-migrate", why, whylen);
  if (!conn)
    return -1;
  const char *host = PQhost(conn);
  snprintf(out->name, sizeof(out->name),
           "postgres database %s on %s port %s as %s", PQdb(conn),
           host && *host ? host : "(default)", PQport(conn), PQuser(conn));
  out->ops = &az_pg_ops;
  out->db = conn;
  return 0;
#else
  snprintf(why, whylen, "this build has no PostgreSQL support "
           "(configure --disable-module-store_pg)");
  return -1;
#endif
}

static void close_target(target_db *d) {
  if (!d->db)
    return;
#ifdef AZ_WITH_SQLITE
  if (d->ops == &az_sqlite_ops)
    sqlite3_close(d->db);
#endif
#ifdef AZ_WITH_POSTGRES
  if (d->ops == &az_pg_ops)
    PQfinish(d->db);
#endif
  d->db = NULL;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* Prints each line of plan with a prefix. */
static void print_plan(const char *prefix, const char *plan) {
  for (const char *p = plan; *p;) {
    size_t n = strcspn(p, "\n");
    printf("%s%.*s\n", prefix, (int)n, p);
    p += n + (p[n] == '\n');
  }
}

static int run(const char *cmd, const migrate_target *t) {
  int apply = strcmp(cmd, "apply") == 0;
  char why[1024] = "", plan[4096] = "";
  target_db d;
  if (open_target(t, apply, &d, why, sizeof(why)) < 0) {
    fprintf(stderr, "%s: %s\n", prog, why);
    return EXIT_ERROR;
  }
  /* status and plan read; apply changes. Both through the one driver. */
  int v = az_migrate(d.ops, d.db, apply, why, sizeof(why), plan,
                     sizeof(plan));
  int rc = 0;
  if (v == AZ_MIGRATE_REFUSED) {
    fprintf(stderr, "%s: %s: %s\n", prog, d.name, why);
    rc = EXIT_REFUSED;
  } else if (v < 0) {
    fprintf(stderr, "%s: %s: %s\n", prog, d.name, why);
    rc = EXIT_ERROR;
  } else if (strcmp(cmd, "status") == 0) {
    int steps = count_lines(plan);
    printf("database: %s\n", d.name);
    printf("from: %s\n", t->from);
    if (v == 0)
      printf("schema version: none (a new database)\n");
    else
      printf("schema version: %d\n", v);
    printf("this build: version %d\n", AZ_SCHEMA_VERSION);
    if (steps == 0) {
      printf("state: current\n");
    } else if (v == 0) {
      printf("state: no schema yet: run %s apply to create it\n", prog);
      rc = EXIT_PENDING;
    } else {
      printf("state: %d step%s pending: run %s apply\n", steps,
             steps == 1 ? "" : "s", prog);
      rc = EXIT_PENDING;
    }
  } else if (strcmp(cmd, "plan") == 0) {
    if (!plan[0])
      printf("nothing to do: %s is at version %d (current)\n", d.name, v);
    else
      print_plan("", plan);
  } else if (!plan[0]) {
    printf("nothing to do: %s is at version %d (current)\n", d.name, v);
  } else {
    print_plan("applied: ", plan);
    printf("%s is at version %d (current)\n", d.name, v);
  }
  close_target(&d);
  return rc;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"sqlite", required_argument, NULL, 'S'},
      {"postgres", required_argument, NULL, 'P'},
      {"config", required_argument, NULL, 'c'},
      {"store", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *sqlite = NULL, *postgres = NULL, *config = NULL, *store = NULL;
  int opt;
  while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
    switch (opt) {
    case 'S':
      sqlite = optarg;
      break;
    case 'P':
      postgres = optarg;
      break;
    case 'c':
      config = optarg;
      break;
    case 's':
      store = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  const char *cmd = optind + 1 == argc ? argv[optind] : "";
  if (strcmp(cmd, "status") != 0 && strcmp(cmd, "plan") != 0 &&
      strcmp(cmd, "apply") != 0) {
    fprintf(stderr, "%s: give one command: status, plan or apply\n", prog);
    usage(stderr);
    return EXIT_USAGE;
  }
  if (!!sqlite + !!postgres + !!config > 1) {
    fprintf(stderr, "%s: give one of --sqlite, --postgres and --config\n",
            prog);
    return EXIT_USAGE;
  }
  if (store && !config) {
    fprintf(stderr, "%s: --store goes with --config\n", prog);
    return EXIT_USAGE;
  }
  migrate_target t;
  memset(&t, 0, sizeof(t));
  char why[1024];
  if (config) {
    if (migrate_target_from_config(config, store, &t, why, sizeof(why)) < 0) {
      fprintf(stderr, "%s: %s\n", prog, why);
      return EXIT_ERROR;
    }
  } else {
    const char *env = getenv(MIGRATE_DSN_ENV);
    const char *value = sqlite ? sqlite : postgres ? postgres : env;
    if (!value || !*value) {
      fprintf(stderr, "%s: no database: give --sqlite PATH, --postgres DSN "
              "or --config FILE, or set %s\n", prog, MIGRATE_DSN_ENV);
      return EXIT_USAGE;
    }
    t.engine = sqlite ? AZ_ENGINE_SQLITE : AZ_ENGINE_POSTGRES;
    t.location = strdup(value);
    if (!t.location) {
      fprintf(stderr, "%s: out of memory\n", prog);
      return EXIT_ERROR;
    }
    snprintf(t.from, sizeof(t.from), "%s",
             sqlite ? "--sqlite" : postgres ? "--postgres" : MIGRATE_DSN_ENV);
    /* A DSN given on the command line may hold a password: blank our
     * copy of it, which is what ps shows from now on. The environment
     * variable is the better way (proxyhost-migrate(8)). */
    if (postgres)
      memset((char *)postgres, 'x', strlen(postgres));
  }
  int rc = run(cmd, &t);
  migrate_target_free(&t);
  return rc;
}

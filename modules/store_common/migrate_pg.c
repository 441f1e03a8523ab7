/* SPDX-License-Identifier: BSD-2-Clause */
/* The PostgreSQL engine of the migration driver (migrate_pg.h). */
#include "migrate_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void az_pg_result_error(const PGresult *res, char *why, size_t whylen) {
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg =
      res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  if (!msg) {
    /* No server error: the connection is gone or libpq ran out of
     * memory. libpq's own text may name the connection: not copied. */
    snprintf(why, whylen, "postgres: no answer from the server (the "
             "connection failed)");
    return;
  }
  snprintf(why, whylen, "postgres: %s: %s", state ? state : "?????", msg);
}

/* Leaves the connection outside any transaction, as exec found it. */
static void rollback(PGconn *conn) {
  PGTransactionStatusType ts = PQtransactionStatus(conn);
  if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
    PQclear(PQexec(conn, "ROLLBACK"));
}

/* Runs a query whose answer is one row of one integer column (or
 * NULL): 1 and *val, 0 for no row or NULL, -1 with why. */
static int one_int(PGconn *conn, const char *sql, long long *val,
                   char *why, size_t whylen) {
  PGresult *res = PQexec(conn, sql);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    az_pg_result_error(res, why, whylen);
    PQclear(res);
    rollback(conn);
    return -1;
  }
  int ret = 0;
  if (PQntuples(res) > 0 && PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)) {
    char *end;
    *val = strtoll(PQgetvalue(res, 0, 0), &end, 10);
    ret = *end ? -1 : 1;
    if (ret < 0)
      snprintf(why, whylen, "postgres: an integer was expected");
  }
  PQclear(res);
  return ret;
}

static int pg_version(void *handle, char *why, size_t whylen) {
  PGconn *conn = handle;
  long long meta = 0, ours = 0;
  /* current_schema(): where the unqualified names of ddl.sql resolve. */
  if (one_int(conn,
              "SELECT count(*) FROM information_schema.tables "
              "WHERE table_schema = current_schema() "
              "AND table_name = 'schema_meta'",
              &meta, why, whylen) < 0)
    return -1;
  if (meta == 0) {
    if (one_int(conn,
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name IN "
                "('users', 'agents', 'service_tokens', 'agent_policies', "
                "'authorization_revision')",
                &ours, why, whylen) < 0)
      return -1;
    return az_version_none(ours, why, whylen);
  }
  long long v = 0;
  int rc = one_int(conn, "SELECT version FROM schema_meta WHERE id = 1", &v,
                   why, whylen);
  return az_version_row(rc, v, 1, why, whylen);
}

static int pg_exec(void *handle, const char *sql, char *why, size_t whylen) {
  PGconn *conn = handle;
  if (PQstatus(conn) != CONNECTION_OK) {
    snprintf(why, whylen, "postgres: the connection is not open");
    return -1;
  }
  if (az_exec_before(PQtransactionStatus(conn) != PQTRANS_IDLE, why,
                     whylen) < 0)
    return -1;
  /* One simple-query message: the server stops at the first error and
   * leaves the script's transaction aborted, which is rolled back. */
  PGresult *res = PQexec(conn, sql);
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    az_pg_result_error(res, why, whylen);
    PQclear(res);
    rollback(conn);
    return -1;
  }
  PQclear(res);
  int open = PQtransactionStatus(conn) != PQTRANS_IDLE;
  if (open)
    rollback(conn);
  return az_exec_after(open, why, whylen);
}

const az_engine_ops az_pg_ops = {
    .engine = AZ_ENGINE_POSTGRES,
    .version = pg_version,
    .exec = pg_exec,
};

static void quiet_notices(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* Replaces every occurrence of secret in text (in place) with "***"
 * (a secret shorter than that with as many '*'): the text never grows. */
static void redact(char *text, const char *secret) {
  size_t n = secret ? strlen(secret) : 0;
  if (n == 0)
    return;
  size_t rep = n < 3 ? n : 3;
  char *from = text, *p;
  while ((p = strstr(from, secret)) != NULL) {
    memset(p, '*', rep);
    memmove(p + rep, p + n, strlen(p + n) + 1);
    from = p + rep; /* past the stars: a secret made of '*' ends too */
  }
}

static void free_secret(char *s) {
  if (!s)
    return;
  volatile char *v = s;
  while (*v)
    *v++ = '\0';
  free(s);
}

PGconn *az_pg_connect(const char *dsn, const char *application_name,
                      char *why, size_t whylen) {
  if (!dsn || !*dsn) {
    snprintf(why, whylen, "no PostgreSQL DSN");
    return NULL;
  }
  char *perr = NULL;
  PQconninfoOption *opts = PQconninfoParse(dsn, &perr);
  if (!opts) {
    /* libpq quotes the part it could not read, which may be a password. */
    snprintf(why, whylen, "the PostgreSQL DSN cannot be parsed (its text "
             "is not shown: it may hold a password)");
    PQfreemem(perr);
    return NULL;
  }
  char *password = NULL;
  for (PQconninfoOption *o = opts; o->keyword; o++)
    if (strcmp(o->keyword, "password") == 0 && o->val && *o->val)
      password = strdup(o->val);
  PQconninfoFree(opts);

  /* Earlier keywords are defaults: the DSN (expanded from dbname) wins. */
  const char *keys[] = {"connect_timeout", "fallback_application_name",
                        "dbname", NULL};
  const char *vals[] = {AZ_PG_CONNECT_TIMEOUT,
                        application_name ? application_name : "proxyhost",
                        dsn, NULL};
  PGconn *conn = PQconnectdbParams(keys, vals, 1);
  if (!conn) {
    snprintf(why, whylen, "cannot connect to PostgreSQL: out of memory");
    free_secret(password);
    return NULL;
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", PQerrorMessage(conn));
    for (char *c = msg; *c; c++)
      if (*c == '\n' || *c == '\r' || *c == '\t')
        *c = ' ';
    size_t len = strlen(msg);
    while (len > 0 && msg[len - 1] == ' ')
      msg[--len] = '\0';
    redact(msg, dsn);
    redact(msg, password);
    snprintf(why, whylen, "cannot connect to PostgreSQL: %s", msg);
    PQfinish(conn);
    free_secret(password);
    return NULL;
  }
  free_secret(password);
  PQsetNoticeProcessor(conn, quiet_notices, NULL);
  /* A session setting, not a startup option (poolers refuse those). */
  PGresult *res = PQexec(conn, AZ_PG_LOCK_TIMEOUT_SQL);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    az_pg_result_error(res, why, whylen);
    PQclear(res);
    PQfinish(conn);
    return NULL;
  }
  PQclear(res);
  return conn;
}

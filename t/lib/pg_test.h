/* SPDX-License-Identifier: BSD-2-Clause */
/* What the unit tests of store_pg on a real PostgreSQL share
 * (test_store_pg, test_tm_presence_pg, test_store_pg_contract): blocking
 * SQL on the side (the operator, another writer) and several mock hosts,
 * each with a client module whose init takes the next slot of the test's
 * array of clients (each started with mock_test.h's mock_test_boot).
 *
 *   PG_TEST_MODULE              store_pg.so in the build tree
 *   pg_test_exec(base, db, q)   q on database db of the cluster named by
 *                               base (a connection string without
 *                               dbname): 0, or -1 with the error printed
 *                               as a TAP comment
 *   pg_test_int(base, db, q)    the first column of q's first row as a
 *                               number; -999 when there is none
 *   PG_TEST_CLIENT_BASE         the fields PG_TEST_CLIENTS uses (api,
 *                               ctx, m), first in the test's client
 *   PG_TEST_CLIENTS(type, max)  defines clients[max] of type, n_clients,
 *                               cl_init (fails with PH_ENOMEM past max)
 *                               and slice() (every live mock one
 *                               PG_TEST_SLICE ms slice)
 */
#ifndef PH_PG_TEST_H
#define PH_PG_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

/* The module under test, as built. */
#define PG_TEST_MODULE PH_BUILD_MODULES "/store_pg/.libs/store_pg.so"

#ifndef PG_TEST_SLICE
#define PG_TEST_SLICE 20
#endif

static inline PGconn *pg_test_connect(const char *base, const char *db) {
  char dsn[1024];
  snprintf(dsn, sizeof(dsn), "%s dbname=%s", base, db);
  return PQconnectdb(dsn);
}

static inline int pg_test_exec(const char *base, const char *db,
                               const char *q) {
  PGconn *c = pg_test_connect(base, db);
  PGresult *r = PQexec(c, q);
  ExecStatusType st = PQresultStatus(r);
  int good = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!good)
    printf("# sql: %s\n", PQerrorMessage(c));
  PQclear(r);
  PQfinish(c);
  return good ? 0 : -1;
}

static inline long long pg_test_int(const char *base, const char *db,
                                    const char *q) {
  PGconn *c = pg_test_connect(base, db);
  PGresult *r = PQexec(c, q);
  long long v = -999;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
    v = atoll(PQgetvalue(r, 0, 0));
  PQclear(r);
  PQfinish(c);
  return v;
}

#define PG_TEST_CLIENT_BASE                                                 \
  const ph_api *api;                                                        \
  ph_ctx *ctx;                                                              \
  ph_mock *m

#define PG_TEST_CLIENTS(type, max)                                          \
  static type clients[max];                                                 \
  static int n_clients;                                                     \
  static int cl_init(ph_ctx *ctx, const ph_api *a, void **state) {          \
    if (n_clients >= (max))                                                 \
      return PH_ENOMEM;                                                     \
    type *c = &clients[n_clients++];                                        \
    c->api = a;                                                             \
    c->ctx = ctx;                                                           \
    *state = c;                                                             \
    return PH_OK;                                                           \
  }                                                                         \
  static void slice(void) {                                                 \
    for (int i = 0; i < n_clients; i++)                                     \
      if (clients[i].m)                                                     \
        ph_mock_run_for(clients[i].m, PG_TEST_SLICE);                       \
  }

#endif

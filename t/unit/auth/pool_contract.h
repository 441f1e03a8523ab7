/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool.store contract suite (sdk/proxyhost/pool_store.h): one set of
 * cases, run against any provider of "pool.store" loaded in the mock
 * host: test_store_sqlite runs it against store_sqlite, the PostgreSQL
 * contract test against store_pg (issue 12, CP-1-19, CP-8-5). As
 * store_contract.h: the test #includes pool_contract.c after
 * store_contract.c (one TAP plan, and its harness is shared). */
#ifndef PH_TEST_POOL_CONTRACT_H
#define PH_TEST_POOL_CONTRACT_H

#include "store_contract.h"

typedef struct pool_contract_env {
  /* The provider and its fresh database (setup), as the authz suite. */
  const store_contract_env *base;
  /* Runs SQL on the database of the last setup from another connection
   * (another process's write, a fault); 0 or -1. NULL: those cases are
   * skipped. */
  int (*exec)(void *arg, const char *sql);
} pool_contract_env;

/* Runs every case; the number of failed assertions. */
int pool_contract_run(const pool_contract_env *env);

/* Both suites, authz then pool, against the provider instance name, for
 * a test that names its hooks as the env fields: setup, break_db,
 * repair_db, revision_delete, revision_set, revision_bump and pool_exec
 * (the pool suite's exec). */
#define STORE_CONTRACTS_RUN(name)                                              \
  do {                                                                         \
    store_contract_env env_ = {.provider = (name),                             \
                               .setup = setup,                                 \
                               .break_db = break_db,                           \
                               .repair_db = repair_db,                         \
                               .revision_delete = revision_delete,             \
                               .revision_set = revision_set,                   \
                               .revision_bump = revision_bump};                \
    store_contract_run(&env_);                                                 \
    pool_contract_env penv_ = {.base = &env_, .exec = pool_exec};              \
    pool_contract_run(&penv_);                                                 \
  } while (0)

#endif

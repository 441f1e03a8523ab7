/* SPDX-License-Identifier: BSD-2-Clause */
/* The authorization store contract suite: one set of cases, run against
 * any provider of "access" and "authz.store" (authz_store.h) loaded in the
 * mock host. test_store_sqlite runs it against store_sqlite; the
 * PostgreSQL test runs the same cases against store_pg (TM-TEST-25, 39).
 *
 * The suite starts a fresh mock host per group of cases with the
 * configuration the environment makes, adds a consumer module of its own
 * that looks both services up by the provider's name at start, and
 * drives everything from the loop thread. Every wait is bounded. TAP
 * lines go to stdout through t/lib/tap.h, whose counters are per
 * translation unit: a test does not link store_contract.c but includes
 * it after tap.h (#include "store_contract.c"), so that its cases and the
 * test's own count in one plan. The provider's configuration is the
 * environment's; the consumer module is the suite's
 * ("contract_client"). */
#ifndef PH_TEST_STORE_CONTRACT_H
#define PH_TEST_STORE_CONTRACT_H

#include <stdint.h>

#include <proxyhost/mock.h>

typedef struct store_contract_env {
  /* The provider's instance name ("store_sqlite", "store_pg"). */
  const char *provider;
  void *arg;
  /* A fresh, empty database, and the configuration text that loads the
   * provider on it ([proxyhost] modules and its section) with max_pending
   * calls in flight, TTLs of 5 s / 1 s and a revision re-read of at most
   * 200 ms. The text stays valid until the next call. NULL: the case is
   * skipped. */
  const char *(*setup)(void *arg, int max_pending);
  /* Fault hooks, each optional (NULL: the cases that need it are
   * skipped). They act on the database of the last setup, from another
   * connection, on the test's thread, and return 0 or -1. */
  int (*break_db)(void *arg);  /* every later call fails until repaired */
  int (*repair_db)(void *arg);
  int (*revision_delete)(void *arg); /* DELETE the row id = 1 */
  int (*revision_set)(void *arg, int64_t value);
  /* A write by another process: revision + 1. */
  int (*revision_bump)(void *arg);
} store_contract_env;

/* Runs every case. Returns the number of failed assertions (0: all
 * passed). */
int store_contract_run(const store_contract_env *env);

#endif

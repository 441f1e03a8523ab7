/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock host's usual start in a unit test, in one call: new, add the
 * test's module (if any), init and start.
 *
 *   ph_mock *m = mock_test_boot(text, &fake_mod, err, sizeof err);
 *   if (!m) { printf("# %s\n", err); return NULL; }
 *
 * host_test.h's host_test_start is the same with a bail-out. */
#ifndef PH_MOCK_TEST_H
#define PH_MOCK_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

/* A module linked into the test, var, named name, version ver, with the
 * given fields:
 *
 *   MOCK_TEST_MODULE(user_mod, "user", "1.0",
 *                    .requires = MOCK_TEST_NAMES(PH_CONNECTOR_SERVICE),
 *                    .init = user_init, .start = user_start);
 */
#define MOCK_TEST_MODULE(var, name, ver, ...)                                  \
  static const ph_module var = {PH_MODULE_HEADER(name, ver), __VA_ARGS__}
/* A NULL-terminated list of names (provides, requires) for it. */
#define MOCK_TEST_NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* fn, the init of such a module that keeps the host's api and its
 * context in two variables and nothing else:
 *
 *   static const ph_api *api;
 *   static ph_ctx *ctx;
 *   MOCK_TEST_KEEP(user_init, api, ctx);
 */
#define MOCK_TEST_KEEP(fn, api_var, ctx_var)                                   \
  static int fn(ph_ctx *ctx, const ph_api *a, void **state) {                  \
    (api_var) = a;                                                             \
    (ctx_var) = ctx;                                                           \
    *state = NULL;                                                             \
    return PH_OK;                                                              \
  }

/* The same for a struct var with members api and ctx, zeroed first:
 *
 *   static struct { const ph_api *api; ph_ctx *ctx; ... } F;
 *   MOCK_TEST_INIT(front_init, F);
 */
#define MOCK_TEST_INIT(fn, var)                                                \
  static int fn(ph_ctx *ctx, const ph_api *a, void **state) {                  \
    memset(&(var), 0, sizeof(var));                                            \
    (var).api = a;                                                             \
    (var).ctx = ctx;                                                           \
    *state = NULL;                                                             \
    return PH_OK;                                                              \
  }

/* A mock host under the configuration ini with mod added (NULL: only the
 * .so modules ini names), initialised and started; NULL, the mock freed,
 * with the failing step's reasons in err (the ph_mock_* err rules). */
static inline ph_mock *mock_test_boot(const char *ini, const ph_module *mod,
                                      char *err, size_t errlen) {
  ph_mock *m = ph_mock_new(ini, err, errlen);
  if (m && ((mod && ph_mock_add(m, mod, err, errlen) != PH_OK) ||
            ph_mock_init(m, err, errlen) != PH_OK ||
            ph_mock_start(m, err, errlen) != PH_OK)) {
    ph_mock_free(m);
    m = NULL;
  }
  return m;
}

/* Whether the mock host inits under ini with mod added (new, add, init;
 * never started): 1 with err "", or 0 with the failing step's reasons in
 * err (a module's check refusing a key among them). For a test of what a
 * configuration is refused for. */
static inline int mock_test_inits(const char *ini, const ph_module *mod,
                                  char *err, size_t errlen) {
  err[0] = 0;
  ph_mock *m = ph_mock_new(ini, err, errlen);
  int up = m && (!mod || ph_mock_add(m, mod, err, errlen) == PH_OK) &&
           ph_mock_init(m, err, errlen) == PH_OK;
  ph_mock_free(m);
  if (up)
    err[0] = 0;
  return up;
}

/* An init that keeps nothing, for a module under test for its
 * configuration check only. */
static inline int mock_test_init_none(ph_ctx *ctx, const ph_api *a,
                                      void **state) {
  (void)ctx;
  (void)a;
  *state = NULL;
  return PH_OK;
}

/* mock_test_boot that says why it failed: a "# mock host: <reasons>"
 * diagnostic line on stdout, then NULL. */
static inline ph_mock *mock_test_start(const char *ini, const ph_module *mod,
                                       char *err, size_t errlen) {
  ph_mock *m = mock_test_boot(ini, mod, err, errlen);
  if (!m)
    printf("# mock host: %s\n", err);
  return m;
}

/* mock_test_boot, or the test ends: "Bail out! mock host: <reasons>"
 * (TAP's word for a test that could not run) and exit status 1. */
static inline ph_mock *mock_test_boot_or_bail(const char *ini,
                                              const ph_module *mod) {
  char err[1024] = "";
  ph_mock *m = mock_test_boot(ini, mod, err, sizeof(err));
  if (!m) {
    printf("Bail out! mock host: %s\n", err);
    exit(1);
  }
  return m;
}

/* Whether sample (the text of a module's .ini.sample) sets every key mod
 * declares, as a line "\nKEY =": a "# KEY is not in the sample" line for
 * each it misses. mod NULL: 0. */
static inline int mock_test_sample_has_keys(const ph_module *mod,
                                            const char *sample) {
  int documented = mod != NULL;
  for (const ph_conf_key *k = mod ? mod->config : NULL; k && k->name; k++) {
    char line[96];
    snprintf(line, sizeof(line), "\n%s =", k->name);
    if (!strstr(sample, line)) {
      printf("# %s is not in the sample\n", k->name);
      documented = 0;
    }
  }
  return documented;
}

#endif

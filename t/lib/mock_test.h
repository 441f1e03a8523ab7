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

#include <proxyhost/mock.h>

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

#endif

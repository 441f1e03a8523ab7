/* SPDX-License-Identifier: BSD-2-Clause */
/* ph_conf_limits (modules/lib/conf_values.h) through the mock host: a
 * module whose key table declares more than its code holds (as a wrong
 * .ini.sample would, now that tables come from samples through
 * tools/gen_conf_keys.awk) still refuses a value past the bound its check
 * holds, an integer's or a string's length, at once and naming the key;
 * a value at the bound passes. */
#include <stdio.h>
#include <string.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "lib/conf_values.h"
#include "mock_test.h"
#include "tap.h"

/* The table allows more than the code holds: n to 1000 (held 1..10),
 * s to 64 bytes (held 8). */
static const ph_conf_key wide_keys[] = {
    {.name = "n", .type = PH_CONF_INT, .def = "5", .max = 1000},
    {.name = "s", .type = PH_CONF_STRING, .def = "", .max = 64},
    PH_CONF_END};

static const ph_conf_limit held[] = {{"n", 1, 10, 0}, {"s", 0, 8, 1}};

static int wide_check(ph_ctx *ctx, const ph_api *a, const char **key,
                      char *why, size_t whylen) {
  return ph_conf_limits(ctx, a, held, 2, key, why, whylen);
}

static int wide_init(ph_ctx *ctx, const ph_api *a, void **state) {
  (void)ctx;
  (void)a;
  *state = NULL;
  return PH_OK;
}

MOCK_TEST_MODULE(wide_mod, "wide", "1", .config = wide_keys,
                 .init = wide_init, .check = wide_check);

/* Boots the mock with [wide] BODY: PH_OK or the init's status, err. */
static int boot(const char *body, char *err, size_t errlen) {
  char ini[256];
  snprintf(ini, sizeof ini, "[admin]\nlisten =\n[wide]\n%s", body);
  ph_mock *m = ph_mock_new(ini, err, errlen);
  if (!m)
    return PH_EINVAL;
  int rc = ph_mock_add(m, &wide_mod, err, errlen);
  if (rc == PH_OK)
    rc = ph_mock_init(m, err, errlen);
  ph_mock_free(m);
  return rc;
}

int main(void) {
  plan_lazy();
  char err[1024];
  is_int(boot("", err, sizeof err), PH_OK, "defaults inside the held bounds pass");
  is_int(boot("n = 10\ns = 12345678\n", err, sizeof err), PH_OK,
         "an int and a string's length at the held bound pass");
  is_int(boot("n = 11\n", err, sizeof err), PH_EINVAL,
         "an int the table allows but past the held bound is refused");
  ok(strstr(err, "wide.n: outside 1..10, the bounds this module's code holds") != NULL,
     "... naming the key and the bounds");
  is_int(boot("n = 0\n", err, sizeof err), PH_EINVAL,
         "an int below the held bound is refused");
  is_int(boot("s = 123456789\n", err, sizeof err), PH_EINVAL,
         "a string one byte past the held length is refused");
  ok(strstr(err, "wide.s: outside 0..8 bytes") != NULL,
     "... naming the key and the length");
  ok(strstr(err, "123456789") == NULL, "... never the string's value");
  return done_testing();
}

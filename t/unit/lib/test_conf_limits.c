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

#include "conf_wide_test.h"
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

MOCK_TEST_MODULE(wide_mod, "wide", "1", .config = wide_keys,
                 .init = mock_test_init_none, .check = wide_check);

/* The mock host's configuration: [wide] BODY. */
static const char *ini(const char *body) {
  static char text[256];
  snprintf(text, sizeof text, "[admin]\nlisten =\n[wide]\n%s", body);
  return text;
}

int main(void) {
  plan_lazy();
  char err[1024];
  ok(mock_test_inits(ini(""), &wide_mod, err, sizeof err),
     "defaults inside the held bounds pass");
  ok(mock_test_inits(ini("n = 10\ns = 12345678\n"), &wide_mod, err, sizeof err),
     "an int and a string's length at the held bound pass");
  conf_wide_refuses(&wide_mod, ini("n = 11\n"), "wide.n: outside 1..10",
                    "the bounds this module's code holds",
                    "an int the table allows but past the held bound is "
                    "refused, naming the key and the bounds");
  conf_wide_refuses(&wide_mod, ini("n = 0\n"), "wide.n", "outside 1..10",
                    "an int below the held bound is refused");
  conf_wide_refuses(&wide_mod, ini("s = 123456789\n"), "wide.s",
                    "outside 0..8 bytes",
                    "a string one byte past the held length is refused, "
                    "naming the key and the length");
  mock_test_inits(ini("s = 123456789\n"), &wide_mod, err, sizeof err);
  unlike(err, "123456789", "... never the string's value");
  return done_testing();
}

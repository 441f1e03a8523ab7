/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared host setup of unit tests that drive code needing a ph_api and
 * a ph_ctx (a module's parts without the module): a module linked into
 * the test whose init keeps the host's api, ctx and loop in `api`, `hctx`
 * and `loop`.
 *
 *   #define HOST_TEST_SETUP setup   optional: int setup(void), run at the
 *   #include "host_test.h"          end of init (api/hctx/loop are set);
 *   HOST_TEST_MODULE("x_host");     its PH_OK, or init fails with it
 *   ph_mock *m = host_test_start(&host_mod, "[log]\nlevel = warn\n");
 */
#ifndef PH_HOST_TEST_H
#define PH_HOST_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include <proxyhost/mock.h>
#include <proxyhost/module.h>

#include "mock_test.h"

static const ph_api *api;
static ph_ctx *hctx;
static struct ev_loop *loop;

#ifdef HOST_TEST_SETUP
static int HOST_TEST_SETUP(void);
#endif

static int host_init(ph_ctx *ctx, const ph_api *a, void **state) {
  api = a;
  hctx = ctx;
  loop = a->loop(ctx);
  *state = NULL;
#ifdef HOST_TEST_SETUP
  return HOST_TEST_SETUP();
#else
  return PH_OK;
#endif
}

/* The test's module: `host_mod`, named name (its instance and log name). */
#define HOST_TEST_MODULE(name)                                                 \
  static const ph_module host_mod = {PH_MODULE_HEADER(name, "1.0.0"),          \
                                     .init = host_init}

/* A mock host under the configuration ini with mod added, initialised and
 * started (mock_test_boot_or_bail: when any step fails, "Bail out!
 * mock host: <the error>" and the test exits 1). */
static inline ph_mock *host_test_start(const ph_module *mod, const char *ini) {
  return mock_test_boot_or_bail(ini, mod);
}

#endif

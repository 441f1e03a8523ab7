/* SPDX-License-Identifier: BSD-2-Clause */
/* A module's generated key table (tools/gen_conf_keys.awk, from its
 * .ini.sample) as a wrong sample would make it, for a test of the bounds
 * the module's check holds again in C (ph_conf_limits): a copy with every
 * bound dropped (min 0, max 0: unbounded, sdk/proxyhost/config.h), so
 * that the host lets any length, value or count through and only the
 * module can refuse it. The test keeps the module's keys, types,
 * defaults and flags, and declares none of its own.
 *
 *   static ph_conf_key wide[128];
 *   conf_wide(tc_keys, wide, 128);   then the module with .config = wide
 *   conf_wide_refuses(&mod, ini, "tc.key", "outside 1..64", "what");
 */
#ifndef PH_CONF_WIDE_TEST_H
#define PH_CONF_WIDE_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/config.h>

#include "mock_test.h"
#include "tap.h"

/* Copies keys (ended by a NULL name) into wide[0..cap), end entry
 * included, each bound of a string, number or list dropped (bools and
 * enums have none). When wide holds too few, the test ends with
 * "Bail out!" (exit status 1). */
static inline void conf_wide(const ph_conf_key *keys, ph_conf_key *wide,
                             size_t cap) {
  size_t n = 0;
  for (; keys[n].name; n++) {
    if (n + 1 >= cap) {
      printf("Bail out! conf_wide: more than %zu keys\n", cap - 1);
      exit(1);
    }
    wide[n] = keys[n];
    if (wide[n].type != PH_CONF_BOOL && wide[n].type != PH_CONF_ENUM)
      wide[n].min = wide[n].max = 0;
  }
  memset(&wide[n], 0, sizeof(wide[n]));
}

/* One TAP case named name: the mock host does not init under ini with mod,
 * and its reasons name key and why (the bound the module holds); its
 * reasons on a "#" line when not. Returns the case's result. */
static inline int conf_wide_refuses(const ph_module *mod, const char *ini,
                                    const char *key, const char *why,
                                    const char *name) {
  char err[1024];
  int up = mock_test_inits(ini, mod, err, sizeof(err));
  int hit = !up && strstr(err, key) && strstr(err, why);
  if (!ok(hit, name))
    printf("#   %s\n", up ? "the host inits" : err);
  return hit;
}

#endif

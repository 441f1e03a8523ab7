/* SPDX-License-Identifier: BSD-2-Clause */
/* debug.h: API misuse is loud where it can be fixed (debug builds,
 * tests) and harmless where it cannot (release builds). */
#include "debug.h"

#include <stdlib.h>

#include "log.h"

#ifdef PH_DEBUG_BUILD
int debug_checks = 1;
#else
int debug_checks = 0;
#endif

void debug_misuse(const char *module, const char *what) {
  static ph_ratelimit rl = {0, 10, 0, 0}; /* 10 per window */
  ph_log_field f[] = {PH_STR("misuse", what)};
  if (debug_checks) {
    log_write(module, PH_LOG_ERROR, "API misuse by a module: aborting", f, 1);
    abort();
  }
  log_write_rl(module, &rl, PH_LOG_ERROR, "API misuse by a module", f, 1);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared module shim (strat_module.h): init registers the pure
 * vtable, destroy frees the name. Nothing else runs in the host's
 * lifecycle: a strategy has no configuration, timers or metrics. */
#include <stdlib.h>
#include <string.h>

#include "strat.h"
#include "strat_module.h"

const char *const strat_module_provides[] = {PH_STRATEGY_SERVICE, NULL};

typedef struct strat_instance {
  strat_self self; /* first: the vtables' self */
  char *name;
} strat_instance;

int strat_module_init(ph_ctx *ctx, const ph_api *api, void **state,
                      const ph_strategy_v1 *vt) {
  strat_instance *si = calloc(1, sizeof(*si));
  if (!si)
    return PH_ENOMEM;
  *state = si;
  /* The instance's full name ("sticky", or "sticky.eu"): the provider
   * name service_get_named finds and the rules' `strategy`. */
  si->name = strdup(api->module_name(ctx));
  if (!si->name)
    return PH_ENOMEM;
  si->self.name = si->name;
  return api->service_register(ctx, PH_STRATEGY_SERVICE, PH_STRATEGY_MAJOR,
                               PH_STRATEGY_MINOR, vt, &si->self);
}

void strat_module_destroy(void *state) {
  strat_instance *si = state;
  if (!si)
    return;
  free(si->name);
  free(si);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The module boilerplate the five strategy modules share: each module
 * file is one STRAT_MODULE line naming its pure vtable (strat.h). */
#ifndef PH_STRAT_MODULE_H
#define PH_STRAT_MODULE_H

#include <proxyhost/module.h>
#include <proxyhost/strategy.h>

/* Registers vt as "dispatch.strategy" 1.0 with this instance's name as
 * its provider (the strategy's name) and a strat_self naming it as self.
 * PH_OK, PH_ENOMEM, or what service_register returned. */
int strat_module_init(ph_ctx *ctx, const ph_api *api, void **state,
                      const ph_strategy_v1 *vt);
void strat_module_destroy(void *state);

extern const char *const strat_module_provides[];

/* The descriptor of one strategy module: no configuration keys. */
#define STRAT_MODULE(name_, vt_, description_)                            \
  static int strat_init_(ph_ctx *ctx, const ph_api *api, void **state) {   \
    return strat_module_init(ctx, api, state, &(vt_));                     \
  }                                                                        \
  PROXYHOST_MODULE = {                                                     \
      PH_MODULE_HEADER(name_, "1.0.0"),                                    \
      .description = (description_),                                      \
      .provides = strat_module_provides,                                   \
      .init = strat_init_,                                                 \
      .destroy = strat_module_destroy,                                     \
  }

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The weighted module: registers the pure strategy of strat.h as
 * "dispatch.strategy" under its instance name. */
#include "strat.h"
#include "strat_module.h"

STRAT_MODULE("weighted", strat_weighted_v1,
             "dispatch strategy: in proportion to weight, towards free capacity");

/* SPDX-License-Identifier: BSD-2-Clause */
/* The least_active module: registers the pure strategy of strat.h as
 * "dispatch.strategy" under its instance name. */
#include "strat.h"
#include "strat_module.h"

STRAT_MODULE("least_active", strat_least_active_v1,
             "dispatch strategy: the less loaded of two random candidates");

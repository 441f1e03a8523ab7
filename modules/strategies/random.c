/* SPDX-License-Identifier: BSD-2-Clause */
/* The random module: registers the pure strategy of strat.h as
 * "dispatch.strategy" under its instance name. */
#include "strat.h"
#include "strat_module.h"

STRAT_MODULE("random", strat_random_v1,
             "dispatch strategy: uniform over the candidates that can take it");

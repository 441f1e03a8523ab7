/* SPDX-License-Identifier: BSD-2-Clause */
/* The round_robin module: registers the pure strategy of strat.h as
 * "dispatch.strategy" under its instance name. */
#include "strat.h"
#include "strat_module.h"

STRAT_MODULE("round_robin", strat_round_robin_v1,
             "dispatch strategy: each candidate in turn");

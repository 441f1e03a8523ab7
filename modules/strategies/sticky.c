/* SPDX-License-Identifier: BSD-2-Clause */
/* The sticky module: registers the pure strategy of strat.h as
 * "dispatch.strategy" under its instance name. */
#include "strat.h"
#include "strat_module.h"

STRAT_MODULE("sticky", strat_sticky_v1,
             "dispatch strategy: consistent hashing of the session key");

/* SPDX-License-Identifier: BSD-2-Clause */
/* A check's fair time budget (issue 26: the checker's or the controller's
 * lateness is never a verdict on the proxy). The controller sets a task's
 * deadline when it queues the task; what is left of it when the checker
 * gets it is the check's budget. Two rules, both with task.min_budget:
 *  - a task that arrives with its deadline passed is CHECKER_ERROR
 *    deadline_passed; one with less than min_budget left is CHECKER_ERROR
 *    late_task: no check runs (chk_budget_admit);
 *  - a check that timed out but was served less than min_budget (its
 *    budget less the time the checker's loop was late to end it: the
 *    loop did not look at the probe's socket meanwhile) is CHECKER_ERROR
 *    short_budget, not TIMEOUT (chk_budget_short).
 * Times are wall-clock Unix ms. Pure: any thread. */
#ifndef PH_CHK_BUDGET_H
#define PH_CHK_BUDGET_H

#include <stdint.h>

/* CHK_R_NONE: run it; CHK_R_DEADLINE: its deadline passed (at or before
 * now_ms); CHK_R_LATE_TASK: less than min_ms left. */
int chk_budget_admit(int64_t deadline_ms, int64_t now_ms, int64_t min_ms);

/* A probe started at start_ms with budget_ms timed out at now_ms: 1 when
 * it was served less than min_ms (budget_ms minus how late the timeout
 * came, now_ms - (start_ms + budget_ms), when positive), else 0. */
int chk_budget_short(int64_t start_ms, int64_t budget_ms, int64_t now_ms,
                     int64_t min_ms);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* A check's fair time budget (modules/checker/chk_budget.h, issue 26):
 * a task with less than task.min_budget left is refused CHECKER_ERROR
 * late_task, one past its deadline deadline_passed; a timeout that came
 * so late that the probe was served less than min_budget is CHECKER_ERROR
 * short_budget, never a TIMEOUT against the proxy. */
#include <string.h>

#include "checker/chk_budget.h"
#include "checker/chk_probe.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  const int64_t now = 1700000000000, min = 1000;
  is_int(chk_budget_admit(now + 5000, now, min), CHK_R_NONE,
         "a task with its whole budget left runs");
  is_int(chk_budget_admit(now + min, now, min), CHK_R_NONE,
         "exactly min_budget left: it runs");
  is_int(chk_budget_admit(now + min - 1, now, min), CHK_R_LATE_TASK,
         "less than min_budget left: CHECKER_ERROR late_task, no check");
  is_int(chk_budget_admit(now + 1, now, min), CHK_R_LATE_TASK,
         "1 ms left: late_task");
  is_int(chk_budget_admit(now, now, min), CHK_R_DEADLINE,
         "the deadline now: deadline_passed");
  is_int(chk_budget_admit(now - 10, now, min), CHK_R_DEADLINE,
         "the deadline passed: deadline_passed");

  ok(!chk_budget_short(now, 3000, now + 3000, min),
     "a timeout on time after its whole budget: TIMEOUT stands");
  ok(!chk_budget_short(now, 3000, now + 2990, min),
     "a timeout a little early (the loop's cached clock): TIMEOUT stands");
  ok(!chk_budget_short(now, 3000, now + 5000, min),
     "2 s late of 3 s: still served 1 s (min_budget): TIMEOUT stands");
  ok(chk_budget_short(now, 3000, now + 5001, min),
     "served less than min_budget (the loop late): CHECKER_ERROR "
     "short_budget");
  ok(chk_budget_short(now, 1500, now + 4000, min),
     "the loop stalled past the whole budget: short_budget");
  ok(chk_budget_short(now, 500, now + 500, min),
     "a budget below min_budget (the deadline cut it): short_budget");

  is_str(chk_reason_names[CHK_R_LATE_TASK], "late_task",
         "the reason label late_task");
  is_str(chk_reason_names[CHK_R_SHORT_BUDGET], "short_budget",
         "the reason label short_budget");
  return done_testing();
}

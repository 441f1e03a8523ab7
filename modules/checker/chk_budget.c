/* SPDX-License-Identifier: BSD-2-Clause */
/* A check's fair time budget: chk_budget.h. */
#include "chk_budget.h"

#include "chk_probe.h"

int chk_budget_admit(int64_t deadline_ms, int64_t now_ms, int64_t min_ms) {
  if (deadline_ms <= now_ms)
    return CHK_R_DEADLINE;
  if (deadline_ms - now_ms < min_ms)
    return CHK_R_LATE_TASK;
  return CHK_R_NONE;
}

int chk_budget_short(int64_t start_ms, int64_t budget_ms, int64_t now_ms,
                     int64_t min_ms) {
  int64_t late = now_ms - (start_ms + budget_ms);
  int64_t served = late > 0 ? budget_ms - late : budget_ms;
  return served < min_ms;
}

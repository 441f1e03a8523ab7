/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The checker's status panel "checks" (issue 28, SDK 1.7): its session
 * (the first 8 hex digits: the whole id fences its calls),
 * max_concurrency, the checks running, the checks ended and the late
 * ones since start, and a table of the checks ended over the last
 * minutes by tier and result (lib/minute_ring.h). Loop thread only.
 */
#ifndef CHK_STATUS_H
#define CHK_STATUS_H

#include <stdint.h>

#include <proxyhost/module.h>

#include "lib/minute_ring.h"

typedef struct chk_status {
  const char *session;      /* the checker's, "" between sessions */
  const uint32_t *running;  /* checks running now */
  uint32_t max_concurrency;
  uint64_t done, late;      /* checks ended; of them late (the checker's) */
  minute_ring recent;       /* key: (tier - 1) * 4 + (status - 1) */
} chk_status;

/* Counts one check ended with tier (1..3), status (1 OK .. 4
 * CHECKER_ERROR) and late (the checker's lateness: late_task,
 * short_budget, loop_late) at now_ms (monotonic). */
void chk_status_count(chk_status *s, int tier, int status, int late,
                      int64_t now_ms);
/* Init: registers the panel over s (a 1.6 host: nothing). PH_OK or an
 * error. */
int chk_status_register(const ph_api *api, ph_ctx *ctx, chk_status *s);

#endif

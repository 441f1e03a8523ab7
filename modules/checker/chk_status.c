/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's status panel (chk_status.h). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "chk_status.h"
#include "lib/clocks.h"

static const ph_api *api;

static const char *const tiers[] = {"basic", "egress", "target"};
static const char *const results[] = {"ok", "failed", "timeout",
                                      "checker_error"};

void chk_status_count(chk_status *s, int tier, int status, int late,
                      int64_t now_ms) {
  s->done++;
  if (late)
    s->late++;
  if (tier >= 1 && tier <= 3 && status >= 1 && status <= 4)
    minute_ring_add(&s->recent, now_ms, (unsigned)((tier - 1) * 4 + status - 1),
                    1);
}

static void fill(void *arg, ph_panel *p) {
  chk_status *s = arg;
  /* its first 8 hex digits: the whole id fences the checker's calls */
  char sess[9];
  snprintf(sess, sizeof(sess), "%.8s", s->session);
  api->status_field(p, "session", sess);
  api->status_field_int(p, "max_concurrency", s->max_concurrency);
  api->status_field_int(p, "in_flight", *s->running);
  api->status_field_int(p, "tasks_done", (int64_t)s->done);
  api->status_field_int(p, "late", (int64_t)s->late);
  static const char *const cols[] = {"tier", "result", "count", "window_s"};
  if (api->status_table(p, "results", cols, 4,
                        PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3)) != PH_OK)
    return;
  int64_t now = mono_ms();
  char win[16];
  snprintf(win, sizeof(win), "%d", MINUTE_RING_WINDOW_S);
  for (unsigned k = 0; k < 12; k++) {
    uint32_t n = minute_ring_sum(&s->recent, now, k);
    if (!n)
      continue;
    char c[16];
    snprintf(c, sizeof(c), "%" PRIu32, n);
    const char *cells[] = {tiers[k / 4], results[k % 4], c, win};
    if (api->status_row(p, cells, 4) == PH_ELIMIT)
      return;
  }
}

int chk_status_register(const ph_api *a, ph_ctx *ctx, chk_status *s) {
  api = a;
  minute_ring_init(&s->recent);
  if (a->size <= offsetof(ph_api, status_row) || !a->status_register)
    return PH_OK;
  return a->status_register(ctx, "checks", "Checks", fill, s);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The gateway's status panels (issue 28, SDK 1.7), from the pool's own
 * state: "view" (the snapshot view in use: version, valid, age, proxies;
 * per proxy its active and reserved counts and the controller's health
 * verdict) and "failures" (the opens the pool answered with a failure
 * over the last minutes, by stage and code: lib/minute_ring.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "pool_int.h"

static const char *const health_names[] = {"none", "available", "suspect",
                                           "unhealthy"};

_Static_assert(PH_STAGE_COUNT_ * PH_OPEN_CODE_COUNT_ <= MINUTE_RING_KEYS,
               "every (stage, code) has a key");

void pool_status_fail(pool *p, int stage, int code) {
  if (stage >= 0 && stage < PH_STAGE_COUNT_ && code >= 0 &&
      code < PH_OPEN_CODE_COUNT_)
    minute_ring_add(&p->fails, mono_ms(),
                    (unsigned)(stage * PH_OPEN_CODE_COUNT_ + code), 1);
}

static void fill_view(void *arg, ph_panel *pn) {
  pool *p = arg;
  pool_gen *g = pool_gen_current(p);
  const ph_pool_view *v = g ? g->view : NULL;
  int64_t now = wall_ms();
  if (v) {
    pool_api->status_field_int(pn, "version", (int64_t)v->version);
    pool_api->status_field(pn, "valid",
                           p->view->live(v, now) ? "yes" : "no");
    pool_api->status_field_int(pn, "age_s",
                               (now - v->generated_at_ms) / 1000);
    pool_api->status_field_int(pn, "proxies", v->n_proxies);
  } else {
    pool_api->status_field(pn, "version", NULL);
    pool_api->status_field(pn, "valid", "no");
    pool_api->status_field(pn, "age_s", NULL);
    pool_api->status_field_int(pn, "proxies", 0);
  }
  static const char *const cols[] = {"proxy", "active", "reserved", "health"};
  if (pool_api->status_table(pn, "proxies", cols, 4,
                             PH_STATUS_COL_NUM(1) | PH_STATUS_COL_NUM(2)) !=
      PH_OK)
    return;
  for (uint32_t j = 0; v && j < g->n; j++) {
    char a[16], r[16];
    snprintf(a, sizeof(a), "%" PRIu32, g->active[j]);
    snprintf(r, sizeof(r), "%" PRIu32, g->reserved[j]);
    uint8_t h = v->health && v->health[j] <= 3 ? v->health[j] : 0;
    const char *cells[] = {v->proxies[j].proxy_id, a, r, health_names[h]};
    if (pool_api->status_row(pn, cells, 4) == PH_ELIMIT)
      return;
  }
}

static void fill_failures(void *arg, ph_panel *pn) {
  pool *p = arg;
  static const char *const cols[] = {"stage", "code", "count", "window_s"};
  if (pool_api->status_table(pn, "failures", cols, 4,
                             PH_STATUS_COL_NUM(2) | PH_STATUS_COL_NUM(3)) !=
      PH_OK)
    return;
  int64_t now = mono_ms();
  char win[16];
  snprintf(win, sizeof(win), "%d", MINUTE_RING_WINDOW_S);
  for (unsigned k = 0; k < PH_STAGE_COUNT_ * PH_OPEN_CODE_COUNT_; k++) {
    uint32_t n = minute_ring_sum(&p->fails, now, k);
    if (!n)
      continue;
    char c[16];
    snprintf(c, sizeof(c), "%" PRIu32, n);
    const char *cells[] = {ph_open_stage_name((int)(k / PH_OPEN_CODE_COUNT_)),
                           ph_open_code_name((int)(k % PH_OPEN_CODE_COUNT_)),
                           c, win};
    if (pool_api->status_row(pn, cells, 4) == PH_ELIMIT)
      return;
  }
}

int pool_status_register(pool *p) {
  minute_ring_init(&p->fails);
  if (pool_api->size <= offsetof(ph_api, status_row) ||
      !pool_api->status_register)
    return PH_OK; /* a 1.6 host: no status page */
  if (pool_api->status_register(p->ctx, "view", "Snapshot view", fill_view,
                                p) != PH_OK)
    return PH_EINVAL;
  return pool_api->status_register(p->ctx, "failures", "Recent failures",
                                   fill_failures, p);
}

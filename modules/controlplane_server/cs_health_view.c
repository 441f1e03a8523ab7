/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's "cp.health" (contracts/cp_health.h): what the reducer
 * holds on one proxy, for the admin API. */
#include <string.h>

#include "contracts/cp_health.h"
#include "cs.h"
#include "cs_health_int.h"

static int get(void *self, const char *proxy_id, cp_health_info *out) {
  cs *m = self;
  memset(out, 0, sizeof(*out));
  const hc_proxy *p = m->health ? hc_find(m->health, proxy_id) : NULL;
  if (!p)
    return -1;
  out->health = p->shared;
  if (hc_has_opinion(p)) {
    cp_health_item *x = &out->items[out->n_items++];
    x->tier = 0;
    x->target_group = x->egress_ip = x->reason = "";
    x->verdict = p->passive.verdict;
    x->observed_ms = p->passive_fail_ms;
  }
  for (uint32_t i = 0; i < p->n_items && out->n_items < CP_HEALTH_ITEMS_MAX;
       i++) {
    const hc_item *it = &p->items[i];
    cp_health_item *x = &out->items[out->n_items++];
    x->tier = it->tier;
    x->target_group = it->group;
    x->verdict = it->h.verdict;
    x->last_status = it->status;
    x->observed_ms = it->last_ms;
    x->latency_ms = it->latency_ms;
    x->egress_ip = it->egress_ip;
    x->anonymity = it->anonymity;
    x->reason = it->reason;
  }
  return 0;
}

const cp_health_v1 cs_health_service = {get};

/* SPDX-License-Identifier: BSD-2-Clause */
/* One proxy's items in the reducer (cs_health_int.h "pure"): which item an
 * observation or outcome counts in, with what weight, the proxy's verdict
 * (the worst of its items) and the end of a passive verdict. No I/O, no
 * host: t/unit/cp/test_cs_health_item.c runs it alone. */
#include <string.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cs_health.h"
#include "cs_health_int.h"

hc_item *hc_item_of(hc_proxy *p, int tier, const char *group, int add) {
  const char *g = tier == CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET &&
                          group ? group : "";
  if (strlen(g) > PH_POOL_GROUP_MAX || hc_tier_row(tier) < 0)
    return NULL;
  for (uint32_t i = 0; i < p->n_items; i++)
    if (p->items[i].tier == tier && strcmp(p->items[i].group, g) == 0)
      return &p->items[i];
  if (!add || p->n_items >= CS_HEALTH_ITEMS_MAX)
    return NULL;
  hc_item *it = &p->items[p->n_items++];
  memset(it, 0, sizeof(*it));
  it->tier = (uint8_t)tier;
  strcpy(it->group, g);
  return it;
}

/* A checker's string kept for the admin API: [A-Za-z0-9._:-] only (an
 * address or a short code), anything else '_', cut to the buffer. */
static void keep(char *out, size_t cap, const char *in) {
  size_t i = 0;
  for (; in && in[i] && i + 1 < cap; i++) {
    char ch = in[i];
    int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
                ch == ':' || ch == '-';
    out[i] = plain ? ch : '_';
  }
  out[i] = '\0';
}

int hc_observe_kind(const cs_observation *o) {
  if (!o || !o->proxy_id || hc_tier_row(o->tier) < 0)
    return HC_OBS_IGNORED;
  switch (o->status) {
  case CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK:
  case CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_FAILED:
  case CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_TIMEOUT:
    return HC_OBS_ACTIVE;
  case CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_CHECKER_ERROR:
    return HC_OBS_CHECKER_ERROR; /* the checker's fault: never a verdict */
  default:
    return HC_OBS_IGNORED;
  }
}

int hc_observe(hc_proxy *p, const cs_hyst_rules *r, const cs_observation *o) {
  if (hc_observe_kind(o) != HC_OBS_ACTIVE)
    return -1;
  hc_item *it = hc_item_of(p, o->tier, o->target_group, 1);
  if (!it)
    return -1;
  int ok = o->status == CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK;
  it->status = (uint8_t)o->status;
  it->last_ms = o->observed_ms;
  it->latency_ms = o->latency_ms;
  if (o->tier == CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_EGRESS && ok) {
    keep(it->egress_ip, sizeof(it->egress_ip), o->egress_ip);
    it->anonymity =
        (uint8_t)(o->anonymity > 0 && o->anonymity < 16 ? o->anonymity : 0);
  }
  keep(it->reason, sizeof(it->reason), o->reason);
  int changed = cs_hyst_push(&it->h, r, ok, CS_HYST_UNIT);
  /* Active checks bring back what outcomes took out (no traffic reaches
   * such a proxy to clear it): rise BASIC successes in a row, observed
   * after the last failed outcome, end a passive verdict before its
   * hold. */
  if (o->tier == CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC) {
    if (!ok || o->observed_ms < p->passive_fail_ms)
      p->basic_ok = 0;
    else if (++p->basic_ok >= r->rise && p->passive.verdict &&
             p->passive.verdict != CS_H_AVAILABLE) {
      memset(&p->passive, 0, sizeof(p->passive));
      p->basic_ok = 0;
      changed = 1;
    }
  }
  return changed;
}

int hc_outcome_weight(const uint32_t weight[4], int stage, int result,
                      int *ok) {
  *ok = result == CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS;
  int bad = result == CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_FAILURE ||
            result == CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT;
  if ((!*ok && !bad) ||
      stage < CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL ||
      stage > CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL)
    return -1;
  return (int)(*ok ? CS_HYST_UNIT : weight[stage - 1]);
}

int hc_outcome(hc_proxy *p, const cs_hyst_rules *r, int ok, uint32_t w,
               int64_t now_ms) {
  if (!ok && w) {
    p->passive_fail_ms = now_ms;
    p->basic_ok = 0;
  }
  return cs_hyst_push(&p->passive, r, ok, w);
}

uint8_t hc_verdict(const hc_proxy *p) {
  int v = p->passive.verdict;
  for (uint32_t i = 0; i < p->n_items; i++)
    v = cs_hyst_worst(v, p->items[i].h.verdict);
  return (uint8_t)v;
}

int hc_has_opinion(const hc_proxy *p) {
  return p->n_items > 0 || p->passive.verdict || p->passive.up ||
         p->passive.down;
}

int hc_passive_expire(hc_proxy *p, int64_t now_ms, int64_t hold_ms) {
  if (p->passive.verdict != CS_H_SUSPECT &&
      p->passive.verdict != CS_H_UNHEALTHY)
    return 0;
  if (now_ms - p->passive_fail_ms < hold_ms)
    return 0;
  memset(&p->passive, 0, sizeof(p->passive));
  return 1;
}

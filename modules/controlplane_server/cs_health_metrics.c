/* SPDX-License-Identifier: BSD-2-Clause */
/* The reducer's metrics (cs_health_int.h): labels are bounded (state,
 * tier, kind, result), never a proxy id or an address. */
#include "cs.h"
#include "cs_health_int.h"
#include "lib/metric_table.h"

#define api cs_api

static const char *const states[] = {"none", "available", "suspect",
                                     "unhealthy", NULL};
static const char *const tiers[] = {"basic", "egress", "target", "passive",
                                    NULL};
static const char *const kinds[] = {"active", "passive", "checker_error",
                                    "ignored", NULL};
static const char *const results[] = {"ok", "failed", NULL};
static const char *const move_results[] = {"ok", "failed", "timeout", NULL};
static const char *const fwd_results[] = {"sent", "dropped", "failed",
                                          "taken", NULL};

static const ph_label_def state_label[] = {{"state", states}};
static const ph_label_def tier_state[] = {{"tier", tiers}, {"state", states}};
static const ph_label_def to_label[] = {{"to", states}};
static const ph_label_def kind_label[] = {{"kind", kinds}};
static const ph_label_def result_label[] = {{"result", results}};
static const ph_label_def tier_move[] = {{"tier", tiers},
                                         {"result", move_results}};
static const ph_label_def fwd_label[] = {{"result", fwd_results}};

static const ph_metric_table metrics[] = {
    PH_METRIC("proxyhost_cp_controller_health_proxies", PH_METRIC_GAUGE,
              "pool proxies by the health snapshots carry (Redis's)",
              PH_METRIC_LABELS(state_label), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_proxies),
    PH_METRIC("proxyhost_cp_controller_health_items", PH_METRIC_GAUGE,
              "this reducer's items by tier (passive: gateway outcomes) and "
              "state",
              PH_METRIC_LABELS(tier_state), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_items),
    PH_METRIC("proxyhost_cp_controller_health_transitions_total", PH_METRIC_COUNTER,
              "proxy verdict changes by the state moved to",
              PH_METRIC_LABELS(to_label), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_transitions),
    PH_METRIC("proxyhost_cp_controller_health_observations_total", PH_METRIC_COUNTER,
              "observations the reducer got: checks, gateway outcomes, "
              "checker errors (never a verdict), ignored",
              PH_METRIC_LABELS(kind_label), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_obs),
    PH_METRIC("proxyhost_cp_controller_health_moves_total", PH_METRIC_COUNTER,
              "observations that moved an item's verdict, by the item's "
              "tier (passive: gateway outcomes) and what was observed",
              PH_METRIC_LABELS(tier_move), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_moves),
    PH_METRIC("proxyhost_cp_controller_health_writes_total", PH_METRIC_COUNTER,
              "verdict writes to Redis by result", PH_METRIC_LABELS(result_label),
              PH_METRIC_NO_BUCKETS, cs_health_state, m_writes),
    PH_METRIC("proxyhost_cp_controller_health_panic_groups", PH_METRIC_GAUGE,
              "groups whose UNHEALTHY proxies the panic guard keeps SUSPECT",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, cs_health_state,
              m_panic),
    PH_METRIC("proxyhost_cp_controller_health_panic_total", PH_METRIC_COUNTER,
              "groups that entered the panic guard", PH_METRIC_NO_LABELS,
              PH_METRIC_NO_BUCKETS, cs_health_state, m_panic_total),
    PH_METRIC("proxyhost_cp_controller_passive_forwarded_total", PH_METRIC_COUNTER,
              "several controllers: proxies' outcome aggregates handed to "
              "their member through Redis (sent, dropped: no room, failed: "
              "Redis unavailable) and taken by this one as the member",
              PH_METRIC_LABELS(fwd_label), PH_METRIC_NO_BUCKETS,
              cs_health_state, m_fwd),
    PH_METRIC_END};

int cs_health_metrics(cs *m) {
  return ph_metric_table_register(api, m->ctx, metrics, m->health);
}

void cs_health_count(cs *m) {
  cs_health_state *h = m->health;
  uint32_t px[4] = {0}, it[HC_TIERS][4] = {{0}};
  for (uint32_t b = 0; b < h->nb; b++)
    for (const hc_proxy *p = h->buckets[b]; p; p = p->next) {
      px[p->shared & 3]++;
      if (p->passive.verdict || p->passive.up || p->passive.down)
        it[3][p->passive.verdict & 3]++;
      for (uint32_t i = 0; i < p->n_items; i++)
        it[hc_tier_row(p->items[i].tier)][p->items[i].h.verdict & 3]++;
    }
  /* "none": the pool's proxies without a verdict in Redis */
  if (m->pool && m->pool->n_proxies >= px[1] + px[2] + px[3])
    px[0] = (uint32_t)m->pool->n_proxies - px[1] - px[2] - px[3];
  for (int s = 0; s < 4; s++) {
    api->gauge_set(h->m_proxies[s], px[s]);
    for (int t = 0; t < HC_TIERS; t++)
      api->gauge_set(h->m_items[t][s], it[t][s]);
  }
}

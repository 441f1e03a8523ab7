/* SPDX-License-Identifier: BSD-2-Clause */
/* The checkers' state (cs_checker.h): its life and its metrics, whose
 * labels are bounded (tier, result; never a proxy or a checker id). */
#include <stdlib.h>

#include "cs_checker.h"
#include "lib/metric_table.h"

#define api cs_api

static const char *const tiers[] = {"basic", "egress", "target", NULL};
static const char *const task_results[] = {"issued", "answered", "expired",
                                           "released", NULL};
static const char *const obs_results[] = {"accepted", "not_given", "late",
                                          NULL};
static const ph_label_def task_labels[] = {{"tier", tiers},
                                           {"result", task_results}};
static const ph_label_def obs_label[] = {{"result", obs_results}};

static const ph_metric_table metrics[] = {
    PH_METRIC("proxyhost_cp_controller_check_tasks_total", PH_METRIC_COUNTER,
              "check tasks by tier: issued to a checker, answered in time, "
              "expired (the deadline passed: a checker failure, given to "
              "another), released (the checker's stream ended)",
              PH_METRIC_LABELS(task_labels), PH_METRIC_NO_BUCKETS,
              struct cs_checkers, m_tasks),
    PH_METRIC("proxyhost_cp_controller_observations_total", PH_METRIC_COUNTER,
              "observations of accepted batches: accepted (to the "
              "reducer), not_given (no such task of that checker), late "
              "(after its deadline); dropped ones are never a verdict",
              PH_METRIC_LABELS(obs_label), PH_METRIC_NO_BUCKETS,
              struct cs_checkers, m_obs),
    PH_METRIC("proxyhost_cp_controller_checkers", PH_METRIC_GAUGE,
              "checkers with a live WatchCheckTasks stream",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, struct cs_checkers,
              m_checkers),
    PH_METRIC("proxyhost_cp_controller_check_no_credential_total",
              PH_METRIC_COUNTER,
              "check tasks not made: the proxy's secret file cannot be read",
              PH_METRIC_NO_LABELS, PH_METRIC_NO_BUCKETS, struct cs_checkers,
              m_no_credential),
    PH_METRIC_END};

int cs_tier_index(int tier) {
  int i = tier - CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC;
  return i >= 0 && i < CS_TIER_N ? i : 0;
}

int cs_checkers_init(cs *m) {
  struct cs_checkers *k = calloc(1, sizeof(*k));
  if (!k)
    return PH_ENOMEM;
  m->checkers = k;
  k->m = m;
  ilist_init(&k->live);
  const char *why = NULL;
  if (cs_probe_parse(m->conf.target_probes, k->probes, &k->n_probes, &why))
    return PH_EINVAL; /* cs_conf_read said it already */
  return ph_metric_table_register(api, m->ctx, metrics, k);
}

void cs_checkers_stop(cs *m) {
  struct cs_checkers *k = m->checkers;
  if (!k)
    return;
  cs_sched_stop(m);
  for (ilist_node *n; (n = ilist_first(&k->live));) {
    cs_checker *c = ILIST_ENTRY(n, cs_checker, node);
    cs_checker_end(c, CP_GRPC_UNAVAILABLE, "the controller is stopping");
  }
}

void cs_checkers_free(cs *m) {
  struct cs_checkers *k = m->checkers;
  if (!k)
    return;
  free(k->items);
  cs_pool_unref(k->pool);
  free(k);
  m->checkers = NULL;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cs_health.c: the reducer's entry points (cs_health.h). The reducer
 * itself (hysteresis, panic guard, the Redis step) is not written yet:
 * until it is, every proxy has no verdict and observations are dropped.
 */
#include "cs_health.h"

#include "controlplane/v1/controlplane.pb-c.h"

int cs_health_init(cs *m) {
  (void)m;
  return 0;
}

void cs_health_free(cs *m) { (void)m; }

void cs_health_observe(cs *m, const cs_observation *o) {
  (void)m;
  (void)o;
}

void cs_health_outcome(cs *m, const char *proxy_id, int stage, int result,
                       uint32_t latency_ms) {
  (void)m;
  (void)proxy_id;
  (void)stage;
  (void)result;
  (void)latency_ms;
}

int cs_health_changing(const cs *m, const char *proxy_id, int tier,
                       const char *target_group) {
  (void)m;
  (void)proxy_id;
  (void)tier;
  (void)target_group;
  return 0;
}

int cs_health_of(const cs *m, const char *proxy_id) {
  (void)m;
  (void)proxy_id;
  return CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNSPECIFIED;
}

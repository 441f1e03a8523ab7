/* SPDX-License-Identifier: BSD-2-Clause */
/* "cp.health" (issue 26, CP-6-7): what the controller's reducer holds on a
 * proxy, for the admin API (proxyhostctl proxy list/show): the verdict
 * snapshots carry (Redis's, every controller's) and, per tier, what this
 * controller saw last. Provided by controlplane_server (cs_health_view.c);
 * asked by pool_api ([pool_api] credentials names the controller
 * instance). Header only. */
#ifndef PH_CP_HEALTH_H
#define PH_CP_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#define CP_HEALTH_SERVICE "cp.health"
#define CP_HEALTH_MAJOR 1
#define CP_HEALTH_MINOR 0

/* Verdicts: 0 none, 1 AVAILABLE, 2 SUSPECT, 3 UNHEALTHY (ProxyHealth). */

/* One item: a check tier (1 BASIC, 2 EGRESS, 3 TARGET with its group)
 * or the passive one (tier 0: gateway outcomes). */
typedef struct cp_health_item {
  int tier;
  const char *target_group; /* "" unless TARGET */
  int verdict;
  int last_status;          /* HealthStatus of the last observation; 0 */
  int64_t observed_ms;      /* its time (wall ms); 0: none */
  uint32_t latency_ms;
  const char *egress_ip;    /* EGRESS: the last success's; "" */
  int anonymity;            /* EGRESS: Anonymity; 0 */
  const char *reason;       /* "" or the checker's short code */
} cp_health_item;

#define CP_HEALTH_ITEMS_MAX 16

typedef struct cp_health_info {
  int health;  /* what snapshots carry */
  size_t n_items;
  cp_health_item items[CP_HEALTH_ITEMS_MAX];
} cp_health_info;

typedef struct cp_health_v1 {
  /* Fills *out for proxy_id: 0, or -1 when the controller holds nothing
   * on it (no verdict: out->health 0, no items). The strings point into
   * the controller's memory: valid until the caller's callback returns.
   * Loop thread. */
  int (*get)(void *self, const char *proxy_id, cp_health_info *out);
} cp_health_v1;

#endif

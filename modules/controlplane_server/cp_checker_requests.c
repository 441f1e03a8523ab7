/* SPDX-License-Identifier: BSD-2-Clause */
/* The CheckerControlPlane request checks (cp_checker_requests.h). */
#include <string.h>

#include "contracts/cp_status.h"
#include "cp_checker_requests.h"

#define SHORT_MAX 64 /* egress_ip, reason */

#define REFUSE(code, text)                                                     \
  do {                                                                         \
    *why = (text);                                                             \
    return (code);                                                             \
  } while (0)

static int check_checker(const char *id, const char *session,
                         const cp_caller *c, const char **why) {
  if (!cp_id_ok(id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "checker_id is missing or malformed");
  if (c->peer_id && strcmp(id, c->peer_id) != 0)
    REFUSE(CP_GRPC_PERMISSION_DENIED,
           "checker_id is not the one the client certificate names");
  if (session && !cp_id_ok(session))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "session_id is missing or malformed");
  return 0;
}

static int tier_ok(int t) {
  return t >= CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_BASIC &&
         t <= CONTROLPLANE__V1__CHECK_TIER__CHECK_TIER_TARGET;
}

/* Empty, or 1..SHORT_MAX printable bytes without spaces. */
static int short_ok(const char *s) {
  return !s || !*s || (cp_id_ok(s) && strlen(s) <= SHORT_MAX);
}

int cp_check_register_checker(const Controlplane__V1__RegisterCheckerRequest *r,
                              const cp_caller *c, uint32_t max_concurrency_max,
                              uint32_t *tiers, const char **why) {
  int rc = check_checker(r->checker_id, NULL, c, why);
  if (rc)
    return rc;
  if ((rc = cp_check_joining(r->cluster_id, r->instance_id, r->zone,
                             (int)r->supported_protocol_version, c, why)))
    return rc;
  if (r->max_concurrency < 1 || r->max_concurrency > max_concurrency_max)
    REFUSE(CP_GRPC_INVALID_ARGUMENT,
           "max_concurrency must be 1 to the controller's "
           "max_checker_concurrency");
  uint32_t mask = 0;
  for (size_t i = 0; i < r->n_tiers; i++) {
    if (!tier_ok((int)r->tiers[i]))
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "a tier is unknown");
    mask |= CP_TIER_BIT(r->tiers[i]);
  }
  *tiers = mask ? mask : CP_TIERS_ALL;
  return 0;
}

int cp_check_watch_tasks(const Controlplane__V1__WatchCheckTasksRequest *r,
                         const cp_caller *c, const char **why) {
  return check_checker(r->checker_id, r->session_id, c, why);
}

static int observation_ok(const Controlplane__V1__HealthObservation *o,
                          const char **why) {
  if (!cp_id_ok(o->task_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's task_id is malformed");
  if (!cp_id_ok(o->proxy_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's proxy_id is malformed");
  if (!tier_ok((int)o->tier))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's tier is unknown");
  if (o->status < CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK ||
      o->status > CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_CHECKER_ERROR)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's status is unknown");
  if (o->anonymity < 0 ||
      o->anonymity > CONTROLPLANE__V1__ANONYMITY__ANONYMITY_ELITE)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's anonymity is unknown");
  if (o->target_group && *o->target_group && !cp_id_ok(o->target_group))
    REFUSE(CP_GRPC_INVALID_ARGUMENT,
           "an observation's target_group is malformed");
  if (!short_ok(o->egress_ip) || !short_ok(o->reason))
    REFUSE(CP_GRPC_INVALID_ARGUMENT,
           "an observation's egress_ip or reason is malformed");
  if (o->latency && (o->latency->seconds < 0 || o->latency->nanos < 0 ||
                     o->latency->seconds > 86400))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "an observation's latency is malformed");
  if (!cp_timestamp_ok(o->observed_at))
    REFUSE(CP_GRPC_INVALID_ARGUMENT,
           "an observation's observed_at is malformed");
  return 0;
}

int cp_check_observations(const Controlplane__V1__ReportObservationsRequest *r,
                          const Controlplane__V1__ReportObservationsRequest *first,
                          const cp_caller *c, uint32_t n_in_call,
                          const char **why) {
  int rc = check_checker(r->checker_id, r->session_id, c, why);
  if (rc)
    return rc;
  if (first && (strcmp(first->checker_id, r->checker_id) != 0 ||
                strcmp(first->session_id, r->session_id) != 0))
    REFUSE(CP_GRPC_FAILED_PRECONDITION,
           "checker_id or session_id changed inside the stream");
  if (n_in_call > CP_OBSERVATION_BATCHES_PER_CALL)
    REFUSE(CP_GRPC_RESOURCE_EXHAUSTED, "more than 16 batches in one call");
  if (r->sequence == 0)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "sequence is missing");
  if (r->n_observations > CP_OBSERVATIONS_PER_BATCH_MAX)
    REFUSE(CP_GRPC_RESOURCE_EXHAUSTED, "more than 512 observations in a batch");
  for (size_t i = 0; i < r->n_observations; i++)
    if ((rc = observation_ok(r->observations[i], why)))
      return rc;
  return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's keys (chk_conf.h). */
#include <stdio.h>
#include <string.h>

#include <proxyhost/connector.h>

#include "chk_conf.h"
#include "chk_probe.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "lib/conf_values.h"

#define ID_KEY(flag, name, env, help)                                         \
  PH_CONF_KEY_FLAG(flag, name, PH_CONF_STRING, NULL, 1, PH_POOL_ID_MAX,       \
                   PH_CONF_REQUIRED | PH_CONF_RESTART, env, help, NULL)

const ph_conf_key chk_conf_keys[] = {
    PH_CONF_KEY_FLAG("control-plane", "address", PH_CONF_STRING, NULL, 1,
                     CHK_ADDRESS_MAX, PH_CONF_REQUIRED | PH_CONF_RESTART,
                     "PROXY_POOL_CONTROL_PLANE_ADDRESS",
                     "host:port of the controller, or of up to 4 controllers "
                     "(IP literals, comma-separated): the next on failure",
                     NULL),
    ID_KEY("cluster-id", "cluster_id", "PROXY_POOL_CLUSTER_ID",
           "the cluster this checker works for"),
    ID_KEY("checker-id", "checker_id", "PROXY_POOL_CHECKER_ID",
           "the logical checker; the client certificate's SPIFFE id "
           "(.../checker/<checker-id>) names it"),
    ID_KEY("instance-id", "instance_id", "PROXY_POOL_INSTANCE_ID",
           "this process (a new one per restart)"),
    ID_KEY("zone", "zone", "PROXY_POOL_ZONE", "this checker's zone"),
    CP_GRPC_TLS_KEYS,
    CP_GRPC_CLIENT_KEYS,
    PH_CONF_KEY("max_concurrency", PH_CONF_INT, "64", 1, 4096,
                PH_CONF_RESTART, NULL,
                "checks at once, registered with the controller (CP-6-1); "
                "a task beyond it is answered CHECKER_ERROR no_resources",
                NULL),
    PH_CONF_KEY("tiers", PH_CONF_STRING, "basic,egress,target", 1, 64,
                PH_CONF_RESTART, NULL,
                "the tiers this checker runs (comma list of basic, egress, "
                "target)",
                NULL),
    CP_CLIENT_BACKOFF_KEYS,
    PH_CONF_KEY("rpc_timeout", PH_CONF_DURATION, "10s", 100, 300000,
                PH_CONF_RESTART, NULL,
                "deadline of RegisterChecker and of each ReportObservations",
                NULL),
    PH_CONF_KEY("task.max_duration", PH_CONF_DURATION, "30s", 100, 300000,
                PH_CONF_RESTART, NULL,
                "a check ends at its task's deadline or after this, the "
                "sooner",
                NULL),
    PH_CONF_KEY("task.report_margin", PH_CONF_DURATION, "1s", 0, 60000,
                PH_CONF_RESTART, NULL,
                "a check ends this long before its task's deadline, so that "
                "its result (a timeout too) reaches the controller in time "
                "(at least batch.flush)",
                NULL),
    PH_CONF_KEY("task.min_budget", PH_CONF_DURATION, "500ms", 10, 60000,
                PH_CONF_RESTART, NULL,
                "a task with less than this left before its deadline is "
                "answered CHECKER_ERROR late_task, no check; a check that "
                "timed out served less than this (the checker's loop late) "
                "is CHECKER_ERROR short_budget, not TIMEOUT",
                NULL),
    PH_CONF_KEY("response_max", PH_CONF_INT, "65536", 1024, 1048576,
                PH_CONF_RESTART, NULL,
                "largest answer (head and body) a check reads; more: FAILED "
                "response_too_large",
                NULL),
    PH_CONF_KEY("task_batch.max", PH_CONF_INT, "256", 1, 4096,
                PH_CONF_RESTART, NULL,
                "check tasks the controller may send in one WatchCheckTasks "
                "message (1: one each, as older checkers)",
                NULL),
    PH_CONF_KEY("batch.max", PH_CONF_INT, "256", 1, 4096, PH_CONF_RESTART,
                NULL, "observations in one ReportObservations batch", NULL),
    PH_CONF_KEY("batch.flush", PH_CONF_DURATION, "500ms", 10, 60000,
                PH_CONF_RESTART, NULL,
                "a partial batch is sent after this", NULL),
    PH_CONF_KEY("queue.max", PH_CONF_INT, "8192", 16, 1048576,
                PH_CONF_RESTART, NULL,
                "observations waiting to be reported; more are dropped and "
                "counted (the controller re-issues their tasks)",
                NULL),
    PH_CONF_KEY("echo.probe_interval", PH_CONF_DURATION, "10s", 1000,
                600000, PH_CONF_RESTART, NULL,
                "how often the checker fetches its echo endpoint directly "
                "(and at once after an EGRESS failure)",
                NULL),
    PH_CONF_KEY("echo.url", PH_CONF_STRING, NULL, 0, CHK_TARGET_MAX,
                PH_CONF_RESTART, NULL,
                "the echo endpoint to probe directly before any task names "
                "one (http://host:port/path, the host a name only with a "
                "connector; empty: the tasks' echo_url)",
                NULL),
    PH_CONF_KEY("connector", PH_CONF_STRING, NULL, 0, CHK_CONNECTOR_MAX,
                PH_CONF_RESTART, NULL,
                "the connector instance (a `direct`) that resolves and "
                "dials the proxies and the echo endpoint, as the gateway's "
                "pool.upstream_connector; empty: the checker dials address "
                "literals itself and a name is CHECKER_ERROR "
                "name_not_supported",
                NULL),
    PH_CONF_END};

static int read_tiers(const char *s, chk_conf *c) {
  c->n_tiers = 0;
  char buf[65];
  snprintf(buf, sizeof(buf), "%s", s ? s : "");
  char *save = NULL;
  for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
    int v = !strcmp(t, "basic")    ? CHK_TIER_BASIC
            : !strcmp(t, "egress") ? CHK_TIER_EGRESS
            : !strcmp(t, "target") ? CHK_TIER_TARGET
                                   : 0;
    if (!v)
      return -1;
    for (size_t i = 0; i < c->n_tiers; i++)
      if (c->tiers[i] == v)
        return -1;
    if (c->n_tiers == 3)
      return -1;
    c->tiers[c->n_tiers++] = v;
  }
  return c->n_tiers ? 0 : -1;
}

int chk_conf_read(ph_ctx *ctx, const ph_api *a, chk_conf *c,
                  const char **key, char *why, size_t whylen) {
  memset(c, 0, sizeof(*c));
  *key = NULL;
  static const char *const req[] = {"address", "cluster_id", "checker_id",
                                    "instance_id", "zone"};
  char *const dst[] = {c->address, c->cluster_id, c->checker_id,
                       c->instance_id, c->zone};
  const size_t cap[] = {sizeof(c->address), sizeof(c->cluster_id),
                        sizeof(c->checker_id), sizeof(c->instance_id),
                        sizeof(c->zone)};
  int rc = cp_conf_identity(ctx, a, req, dst, cap, 5, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  if (read_tiers(a->conf_str(ctx, "tiers"), c))
    return ph_conf_fail(key, "tiers", why, whylen,
                        "a comma list of basic, egress, target, each once");
  const char *conn = a->conf_str(ctx, "connector");
  snprintf(c->connector, sizeof(c->connector), "%s", conn ? conn : "");
  const char *echo = a->conf_str(ctx, "echo.url");
  if (echo && echo[0]) {
    chk_url u;
    if (chk_url_parse(echo, &u) || (!c->connector[0] && !chk_is_literal(u.host)))
      return ph_conf_fail(key, "echo.url", why, whylen,
                          c->connector[0]
                              ? "must be http://host:port/path"
                              : "must be http://IP:port/path (an address "
                                "literal; a name needs connector)");
    snprintf(c->echo_url, sizeof(c->echo_url), "%s", echo);
  }
  c->max_concurrency = (uint32_t)a->conf_int(ctx, "max_concurrency");
  c->backoff_min_ms = (uint32_t)a->conf_int(ctx, "backoff.min");
  c->backoff_max_ms = (uint32_t)a->conf_int(ctx, "backoff.max");
  c->rpc_timeout_ms = a->conf_int(ctx, "rpc_timeout");
  c->task_max_ms = a->conf_int(ctx, "task.max_duration");
  c->task_min_ms = a->conf_int(ctx, "task.min_budget");
  c->report_margin_ms = a->conf_int(ctx, "task.report_margin");
  c->response_max = (uint32_t)a->conf_int(ctx, "response_max");
  c->batch_max = (uint32_t)a->conf_int(ctx, "batch.max");
  c->flush_ms = a->conf_int(ctx, "batch.flush");
  c->task_batch_max = (uint32_t)a->conf_int(ctx, "task_batch.max");
  c->queue_max = (uint32_t)a->conf_int(ctx, "queue.max");
  c->echo_interval_ms = a->conf_int(ctx, "echo.probe_interval");
  static const ph_conf_order order[] = {
      {"backoff.min", "backoff.max", "backoff.max",
       "must be at least backoff.min"},
      {"batch.max", "queue.max", "queue.max", "must be at least batch.max"},
      {"task.min_budget", "task.max_duration", "task.max_duration",
       "must be at least task.min_budget"},
      {"batch.flush", "task.report_margin", "task.report_margin",
       "must be at least batch.flush: a check's result, a timeout too, "
       "must reach the controller before the task's deadline"}};
  rc = ph_conf_orders(ctx, a, order, 4, key, why, whylen);
  if (rc != PH_OK)
    return rc;
  return cp_grpc_conf_check_client(ctx, a, "address", key, why, whylen);
}

int chk_conf_check_connector(ph_ctx *ctx, const ph_api *a, const char **key,
                             char *why, size_t whylen) {
  const char *v = a->conf_str(ctx, "connector");
  if (!v || !*v)
    return PH_OK;
  if (!strcmp(v, a->module_name(ctx)) ||
      !a->service_provider_loaded(ctx, PH_CONNECTOR_SERVICE, v))
    return ph_conf_fail(key, "connector", why, whylen,
                        "must name a loaded connector instance (a direct "
                        "instance: load it in [proxyhost] modules)");
  return PH_OK;
}

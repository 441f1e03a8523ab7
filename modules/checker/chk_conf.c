/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's keys (chk_conf.h). */
#include <stdio.h>
#include <string.h>

#include <proxyhost/connector.h>

#include "chk_conf.h"
#include "chk_probe.h"
#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/grpc/cp_grpc_held.h"
#include "lib/conf_values.h"

/* chk_conf_keys, the key table, is generated from checker.ini.sample (its
 * "; type:" lines) by tools/gen_conf_keys.awk into chk_conf_keys.c. The
 * bounds this code relies on are held again here, so that a sample
 * declaring more fails the start, closed: the identity strings, the
 * transport's and the backoff by cp_grpc_client_read (cp_grpc_held.h),
 * and below the strings copied into fixed arrays (tiers into 65 bytes,
 * connector, echo.url) and the uint32 counts that size the checks, the
 * answer buffer (response_max), the batches and the observation queue. */
static const ph_conf_limit held[] = {
    {"tiers", 1, 64, 1},
    {"connector", 0, CHK_CONNECTOR_MAX, 1},
    {"echo.url", 0, CHK_TARGET_MAX, 1},
    {"max_concurrency", 1, 4096, 0},
    {"response_max", 1024, 1048576, 0},
    {"task_batch.max", 1, 4096, 0},
    {"batch.max", 1, 4096, 0},
    {"queue.max", 16, 1048576, 0}};

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
  int rc = cp_grpc_client_read(ctx, a, "checker_id", &c->ident, held,
                               sizeof(held) / sizeof(held[0]), key, why,
                               whylen);
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

/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's keys (issue 26): who it is (address, cluster, checker,
 * instance, zone: each required, each with its command-line flag and
 * PROXY_POOL_* environment name, as the gateway's), the transport
 * (cp_grpc_conf.h's TLS and client keys), what it registers
 * (max_concurrency, tiers) and the bounds of its work. Every key is in
 * modules/checker/checker.ini.sample with its bounds. */
#ifndef PH_CHK_CONF_H
#define PH_CHK_CONF_H

#include <stdint.h>

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "cp_common/grpc/cp_grpc_conf.h"
#include "chk_wire.h"

extern const ph_conf_key chk_conf_keys[];

#define CHK_CONNECTOR_MAX 97

typedef struct chk_conf {
  cp_client_ident ident; /* copies; its id is checker_id */
  uint32_t max_concurrency;
  int tiers[3];
  size_t n_tiers;
  uint32_t backoff_min_ms, backoff_max_ms;
  int64_t rpc_timeout_ms;
  uint32_t response_max;
  uint32_t batch_max, queue_max;
  uint32_t task_batch_max; /* tasks per WatchCheckTasks message */
  int64_t flush_ms, task_max_ms, task_min_ms, echo_interval_ms;
  int64_t report_margin_ms; /* task.report_margin */
  char echo_url[CHK_TARGET_MAX + 1]; /* "" until a task names one */
  char connector[CHK_CONNECTOR_MAX + 1]; /* "": literals only */
} chk_conf;

/* The check callback's part that needs the other modules: connector
 * names a loaded connector instance other than the checker. */
int chk_conf_check_connector(ph_ctx *ctx, const ph_api *a, const char **key,
                             char *why, size_t whylen);

int chk_conf_read(ph_ctx *ctx, const ph_api *a, chk_conf *c,
                  const char **key, char *why, size_t whylen);

#endif

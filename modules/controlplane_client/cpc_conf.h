/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's configuration (the 000 design's section 9): who
 * the gateway is (address, cluster, worker, instance, zone: each required,
 * each with its command-line flag and PROXY_POOL_* environment name), the
 * transport (cp_grpc_conf.h's TLS and client keys: CP-9-7, CP-9-9), and
 * the bounds the driver puts on what the controller asks for. */
#ifndef PH_CPC_CONF_H
#define PH_CPC_CONF_H

#include <stdint.h>

#include <proxyhost/module.h>

#include "cp_common/grpc/cp_grpc_conf.h"
#include "cp_common/snapshot/cp_snapshot.h"
#include "cp_supervisor.h"

extern const ph_conf_key cpc_conf_keys[];

typedef struct cpc_conf {
  /* Copies, not conf_str() pointers: those are the host's and freed by
   * the next reload (docs/sdk.md), while the session sends these in every
   * call for as long as it lives (issue 23 item 1). */
  cp_client_ident ident; /* its id is worker_id */
  cp_sup_limits sup;           /* backoff, runtime-interval, max-stale */
  int64_t rpc_timeout_ms;      /* each unary call's deadline */
  cp_snapshot_limits limits;   /* the receiver's counts (CP-8-3) */
} cpc_conf;

/* Reads the keys (the strings copied: they outlive reloads).
 * PH_OK, or PH_EINVAL with *key and why (cross-key rules: backoff and
 * runtime bounds in order, the transport's check). */
int cpc_conf_read(ph_ctx *ctx, const ph_api *a, cpc_conf *c,
                  const char **key, char *why, size_t whylen);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* tunnel_agent's configuration: the key table (every key with its type,
 * the seed's default and its bounds, TM-CFG-25), the cross-key checks
 * (--check-config and start-up), and the values read once at init. */
#ifndef TM_AGENT_CONF_H
#define TM_AGENT_CONF_H

#include <stdint.h>

#include <proxyhost/module.h>

#include "dial_exec.h"
#include "pool_policy.h"
#include "target_guard.h"
#include "tunnel_common/session/tm_session.h"

#define AGENT_URL_MAX 2048
#define AGENT_PATH_MAX 4096
#define AGENT_URLS_MAX 8 /* server_url and up to 7 extra_server_urls */

extern const ph_conf_key agent_conf_keys[];

typedef struct agent_cfg {
  /* server_url, then extra_server_urls: the nodes the connections are
   * spread over (agent_pool.c) */
  char urls[AGENT_URLS_MAX][AGENT_URL_MAX + 1];
  uint32_t n_urls;
  char token_file[AGENT_PATH_MAX + 1]; /* "" : use token */
  char ca_file[AGENT_PATH_MAX + 1];    /* "" : the system store */
  char agent_id[TM_AGENT_MAX + 1];
  char connector[129];                 /* the named connector provider */
  int allow_plain;
  unsigned caps;                       /* TM_CAP_* from capabilities.* */
  pool_policy pool;
  uint32_t reconnect_min_ms, reconnect_max_ms;
  dial_exec_cfg dial;
  int64_t idle_timeout_ms;             /* the relay's */
  size_t buffer_size;
  tm_session_cfg session;              /* caps filled per connection */
  int log_target;
} agent_cfg;

/* Reads the section into c (loop thread, after the host validated every
 * key). The token is not copied here: tunnel_agent reads it per attempt. */
void agent_cfg_read(const ph_api *api, ph_ctx *ctx, agent_cfg *c);
/* The guard targets.allow_host_local describes: the one parser of the
 * key, for check and init. NULL with the key and a reason. */
target_guard *agent_guard_build(const ph_api *api, ph_ctx *ctx,
                                const char **key, char *why, size_t whylen);
/* The module's check: values only the module can judge. */
int agent_cfg_check(ph_ctx *ctx, const ph_api *api, const char **key,
                    char *why, size_t whylen);

#endif

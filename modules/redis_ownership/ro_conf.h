/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_ownership's configuration keys and their reading: the table,
 * the check of what the typed validation cannot judge, and the values
 * the connection and the scripts use. */
#ifndef PH_RO_CONF_H
#define PH_RO_CONF_H

#include <proxyhost/module.h>
#include <proxyhost/pool_store.h>

#include "ro_conn.h"

typedef struct ro_conf {
  ro_conn_conf conn;
  char cluster_id[PH_POOL_ID_MAX + 1];
  int64_t session_ttl_ms, runtime_ttl_ms, lease_ms;
  int hold_fresh; /* hold_fresh_state: assign waits one lease on a fresh Redis */
  int64_t max_owned, max_refs, max_workers;
  int64_t rebalance_max; /* proxies moving to another worker at once */
} ro_conf;

extern const ph_conf_key ro_conf_keys[];

/* 1 when s is 1..max bytes of [A-Za-z0-9._-] (max 0: empty allowed
 * too, for zones). Keys built from it cannot escape their prefix. */
int ro_valid_id(const char *s, size_t max);
/* Reads and checks the section into *c. PH_OK, or PH_EINVAL with *key
 * and a reason in why (never a sensitive value). */
int ro_conf_read(ph_ctx *ctx, const ph_api *api, ro_conf *c,
                 const char **key, char *why, size_t whylen);

#endif

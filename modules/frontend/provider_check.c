/* SPDX-License-Identifier: BSD-2-Clause */
/* The named-provider check (provider_check.h). */
#include "provider_check.h"

#include <stdio.h>

int check_named_provider(ph_ctx *ctx, const ph_api *api, const char *k,
                         const char *service, const char **key, char *why,
                         size_t whylen) {
  const char *name = api->conf_str(ctx, k);
  if (!name || !*name || api->service_provider_loaded(ctx, service, name))
    return PH_OK;
  *key = k;
  snprintf(why, whylen,
           "\"%.100s\" is not a loaded module instance that provides the "
           "\"%s\" service (add it to [proxyhost] modules, or fix the name)",
           name, service);
  return PH_EINVAL;
}

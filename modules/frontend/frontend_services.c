/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontends' service lookup at start (frontend_services.h). */
#include "frontend_services.h"

#include <stddef.h>

/* The provider a key names, NULL for "the only one". */
static const char *named(ph_ctx *ctx, const ph_api *api, const char *key) {
  const char *v = api->conf_str(ctx, key);
  return v && *v ? v : NULL;
}

static void no_provider(ph_ctx *ctx, const ph_api *api, const char *service,
                        const char *key, const char *provider,
                        const char *hint) {
  if (provider)
    PH_LOG(api, ctx, PH_LOG_ERROR,
           "the provider this frontend's key names did not register the "
           "service, or its version does not fit",
           PH_STR("service", service), PH_STR("key", key),
           PH_STR("provider", provider));
  else
    PH_LOG(api, ctx, PH_LOG_ERROR,
           "no single provider of the service: load one, or name one "
           "with the key",
           PH_STR("service", service), PH_STR("key", key),
           PH_STR("hint", hint));
}

int frontend_services_get(ph_ctx *ctx, const ph_api *api, int password,
                          const ph_connector_v1 **connector, void **cself,
                          const ph_authorizer_v1 **authorizer, void **aself) {
  *connector = NULL;
  *cself = NULL;
  *authorizer = NULL;
  *aself = NULL;
  const char *cname = named(ctx, api, "connector");
  *connector = api->service_get_named(ctx, PH_CONNECTOR_SERVICE, cname,
                                      PH_CONNECTOR_MAJOR, 0, cself);
  if (!*connector) {
    no_provider(ctx, api, PH_CONNECTOR_SERVICE, "connector", cname,
                "a connector module (direct)");
    *cself = NULL;
    return PH_ENOENT;
  }
  if (!password)
    return PH_OK;
  const char *aname = named(ctx, api, "authorizer");
  *authorizer = api->service_get_named(ctx, PH_AUTHORIZER_SERVICE, aname,
                                       PH_AUTHORIZER_MAJOR, 0, aself);
  if (!*authorizer) {
    no_provider(ctx, api, PH_AUTHORIZER_SERVICE, "authorizer", aname,
                "auth = password needs an authorizer module (auth_local)");
    api->service_release(ctx, PH_CONNECTOR_SERVICE);
    *connector = NULL;
    *cself = NULL;
    *aself = NULL;
    return PH_ENOENT;
  }
  return PH_OK;
}

int frontend_uses_validation(ph_ctx *ctx, const ph_api *api) {
  return named(ctx, api, "validation") != NULL;
}

const char *frontend_connector_agent(ph_ctx *ctx, const ph_api *api) {
  if (api->size <= offsetof(ph_api, conf_peer_str) || !api->conf_peer_str)
    return NULL;
  const char *sec = named(ctx, api, "connector");
  const char *agent = NULL;
  if (api->conf_peer_str(ctx, sec ? sec : "tunnel_client", "agent",
                         &agent) != PH_OK ||
      !agent || !*agent)
    return NULL;
  return agent;
}

int frontend_validation_get(ph_ctx *ctx, const ph_api *api,
                            const ph_validation_v1 **vt, void **vself) {
  *vt = NULL;
  *vself = NULL;
  const char *name = named(ctx, api, "validation");
  if (!name)
    return PH_OK; /* none configured: no step */
  *vt = api->service_get_named(ctx, PH_VALIDATION_SERVICE, name,
                               PH_VALIDATION_MAJOR, 0, vself);
  if (!*vt) {
    no_provider(ctx, api, PH_VALIDATION_SERVICE, "validation", name, NULL);
    *vself = NULL;
    return PH_ENOENT;
  }
  return PH_OK;
}

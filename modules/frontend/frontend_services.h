/* SPDX-License-Identifier: BSD-2-Clause */
/* The services a frontend uses, looked up once at start (socks5,
 * http_proxy): the connector it opens targets with and, with auth =
 * password, the authorizer. Both are named by the frontend's own keys
 * (frontend.keys): "connector" and "authorizer", a provider's instance
 * name ("direct.lab"), or empty for the only provider of that service. */
#ifndef PH_FRONTEND_SERVICES_H
#define PH_FRONTEND_SERVICES_H

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>
#include <proxyhost/validation.h>

/* Start only (the frontend's start callback), loop thread. Gets the
 * connector named by the "connector" key into *connector and *cself and,
 * when password is non-zero, the authorizer named by the "authorizer" key
 * into *authorizer and *aself; both recorded as the caller's uses
 * (release each with api->service_release by service name). On failure
 * logs one error naming the service and the key, releases what it got,
 * leaves the outputs NULL and returns PH_ENOENT: no such provider, a
 * version that does not fit, or an empty key with several providers
 * loaded (fail closed: the host's log line names them). PH_OK
 * otherwise. */
int frontend_services_get(ph_ctx *ctx, const ph_api *api, int password,
                          const ph_connector_v1 **connector, void **cself,
                          const ph_authorizer_v1 **authorizer, void **aself);

/* Init or later. 1 when the "validation" key names a provider (the
 * frontend then records the remote_validation stage), else 0. */
int frontend_uses_validation(ph_ctx *ctx, const ph_api *api);

/* Start only, loop thread. With a "validation" key that names a
 * provider, gets it into *vt and *vself (release it with
 * api->service_release(ctx, PH_VALIDATION_SERVICE)); with an empty key,
 * leaves both NULL (no validation step). PH_OK, or PH_ENOENT (logged)
 * when the named provider did not register the service or its version
 * does not fit. */
int frontend_validation_get(ph_ctx *ctx, const ph_api *api,
                            const ph_validation_v1 **vt, void **vself);

/* The agent the frontend's connector sends its streams through, for the
 * validation request (TM-P1-37: the agent is part of the question and of
 * the cache key): the "agent" key of the connector's instance (the
 * "connector" key's provider, or "tunnel_client" when that key is empty),
 * read with api->conf_peer_str. NULL when that instance has no such key
 * (direct, pool: no agent), is not loaded, or the host predates
 * conf_peer_str. Host-owned, valid as conf_str's (until the next reload):
 * read it where it is used. Loop thread. */
const char *frontend_connector_agent(ph_ctx *ctx, const ph_api *api);

#endif

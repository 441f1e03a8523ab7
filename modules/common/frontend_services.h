/* SPDX-License-Identifier: BSD-2-Clause */
/* The services a frontend uses, looked up once at start (socks5,
 * http_proxy): the connector it opens targets with and, with auth =
 * password, the authorizer. Both are named by the frontend's own keys
 * (frontend_keys.h): "connector" and "authorizer", a provider's instance
 * name ("direct.lab"), or empty for the only provider of that service. */
#ifndef PH_FRONTEND_SERVICES_H
#define PH_FRONTEND_SERVICES_H

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/module.h>

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

#endif

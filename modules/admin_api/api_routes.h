/* SPDX-License-Identifier: BSD-2-Clause */
/* admin_api's route table: every (method, path template) the module
 * serves, and the match of a request's path against it. The one list:
 * the module dispatches with it, answers GET /v1/routes from it, and
 * t/integration/openapi_routes.sh compares that answer (with pool_api's
 * GET /v1/pool) with docs/api/openapi.yaml. The pool's routes are
 * pool_api's (modules/pool_api/pool_routes.h). Pure. */
#ifndef PH_ADMIN_API_ROUTES_H
#define PH_ADMIN_API_ROUTES_H

#include <stddef.h>

#include <proxyhost/authz_store.h>

#include "admin_kit/admin_http.h"

/* The collections and the prefixes the module registers. */
typedef struct api_collection {
  const char *prefix; /* "/v1/users" */
  int kind;
} api_collection;

extern const api_route api_routes[];
extern const size_t api_n_routes;
extern const api_collection api_collections[];
extern const size_t api_n_collections;

/* Longest path parameter: a name (PH_AZ_NAME_MAX) or an id. */
#define API_KEY_MAX PH_AZ_NAME_MAX
#define API_PATH_KEY_MAX API_KEY_MAX

/* api_route_match over api_routes with API_KEY_MAX: key holds
 * API_PATH_KEY_MAX + 1 bytes. */
const api_route *api_match(const char *method, const char *path, char *key,
                           int *path_known);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_routes.h. */
#include "api_routes.h"

const api_route api_routes[] = {
    {"GET", "/v1/routes", 0, OP_ROUTES},
    {"GET", "/v1/authorize", 0, OP_AUTHORIZE},
    {"GET", "/v1/users", PH_AZ_USER, OP_LIST},
    {"POST", "/v1/users", PH_AZ_USER, OP_CREATE},
    {"GET", "/v1/users/{name}", PH_AZ_USER, OP_GET},
    {"PATCH", "/v1/users/{name}", PH_AZ_USER, OP_UPDATE},
    {"DELETE", "/v1/users/{name}", PH_AZ_USER, OP_DELETE},
    {"GET", "/v1/tokens", PH_AZ_TOKEN, OP_LIST},
    {"POST", "/v1/tokens", PH_AZ_TOKEN, OP_CREATE},
    {"GET", "/v1/tokens/{id}", PH_AZ_TOKEN, OP_GET},
    {"PATCH", "/v1/tokens/{id}", PH_AZ_TOKEN, OP_UPDATE},
    {"DELETE", "/v1/tokens/{id}", PH_AZ_TOKEN, OP_DELETE},
    {"POST", "/v1/tokens/{id}/rotate", PH_AZ_TOKEN, OP_ROTATE},
    {"POST", "/v1/tokens/{id}/revoke", PH_AZ_TOKEN, OP_REVOKE},
    {"GET", "/v1/agents", PH_AZ_AGENT, OP_LIST},
    {"POST", "/v1/agents", PH_AZ_AGENT, OP_CREATE},
    {"GET", "/v1/agents/{name}", PH_AZ_AGENT, OP_GET},
    {"PATCH", "/v1/agents/{name}", PH_AZ_AGENT, OP_UPDATE},
    {"DELETE", "/v1/agents/{name}", PH_AZ_AGENT, OP_DELETE},
    {"GET", "/v1/policies", PH_AZ_POLICY, OP_LIST},
    {"POST", "/v1/policies", PH_AZ_POLICY, OP_CREATE},
    {"GET", "/v1/policies/{id}", PH_AZ_POLICY, OP_GET},
    {"PATCH", "/v1/policies/{id}", PH_AZ_POLICY, OP_UPDATE},
    {"DELETE", "/v1/policies/{id}", PH_AZ_POLICY, OP_DELETE},
};
const size_t api_n_routes = sizeof(api_routes) / sizeof(api_routes[0]);

const api_collection api_collections[] = {
    {"/v1/users", PH_AZ_USER},   {"/v1/tokens", PH_AZ_TOKEN},
    {"/v1/agents", PH_AZ_AGENT}, {"/v1/policies", PH_AZ_POLICY},
    {"/v1/routes", 0},           {"/v1/authorize", 0},
};
const size_t api_n_collections =
    sizeof(api_collections) / sizeof(api_collections[0]);

const api_route *api_match(const char *method, const char *path, char *key,
                           int *path_known) {
  return api_route_match(api_routes, api_n_routes, method, path, key,
                         API_KEY_MAX, path_known);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* See pool_routes.h. */
#include "pool_routes.h"

#include <string.h>

#define PX PH_POOL_KIND_PROXY
#define RT PH_POOL_KIND_ROUTE
#define CR PH_POOL_KIND_CREDENTIAL

const api_route pool_routes[] = {
    {"GET", "/v1/pool", 0, OP_ROUTES},
    {"GET", "/v1/pool/proxies", PX, OP_LIST},
    {"POST", "/v1/pool/proxies", PX, OP_CREATE},
    {"GET", "/v1/pool/proxies/{proxy_id}", PX, OP_GET},
    {"PATCH", "/v1/pool/proxies/{proxy_id}", PX, OP_UPDATE},
    {"DELETE", "/v1/pool/proxies/{proxy_id}", PX, OP_DELETE},
    {"GET", "/v1/pool/proxies/{proxy_id}/extraction", PX, OP_EXTRACTION},
    {"POST", "/v1/pool/proxies/{proxy_id}/extraction", PX, OP_EXTRACT},
    {"DELETE", "/v1/pool/proxies/{proxy_id}/extraction", PX, OP_RETURN},
    {"GET", "/v1/pool/routes", RT, OP_LIST},
    {"POST", "/v1/pool/routes", RT, OP_CREATE},
    {"GET", "/v1/pool/routes/{rule_id}", RT, OP_GET},
    {"PATCH", "/v1/pool/routes/{rule_id}", RT, OP_UPDATE},
    {"DELETE", "/v1/pool/routes/{rule_id}", RT, OP_DELETE},
    {"POST", "/v1/pool/routes/{rule_id}/move", RT, OP_MOVE},
    {"GET", "/v1/pool/credentials", CR, OP_LIST},
    {"POST", "/v1/pool/credentials", CR, OP_CREATE},
    {"GET", "/v1/pool/credentials/{secret_ref}", CR, OP_GET},
    {"DELETE", "/v1/pool/credentials/{secret_ref}", CR, OP_DELETE},
    {"POST", "/v1/pool/credentials/{secret_ref}/rotate", CR, OP_ROTATE},
};
const size_t pool_n_routes = sizeof(pool_routes) / sizeof(pool_routes[0]);

const api_route *pool_match(const char *method, const char *path, char *key,
                            int *path_known) {
  return api_route_match(pool_routes, pool_n_routes, method, path, key,
                         API_POOL_KEY_MAX, path_known);
}

int pool_extraction_path(const char *path) {
  static const char head[] = "/v1/pool/proxies/", tail[] = "/extraction";
  size_t hn = sizeof(head) - 1;
  if (strncmp(path, head, hn) != 0)
    return 0;
  const char *slash = strchr(path + hn, '/');
  return slash && strcmp(slash, tail) == 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* See api_routes.h. */
#include "api_routes.h"

#include <string.h>

#include <proxyhost/pool_store.h>

#define PX (API_POOL_KIND + PH_POOL_KIND_PROXY)
#define RT (API_POOL_KIND + PH_POOL_KIND_ROUTE)
#define CR (API_POOL_KIND + PH_POOL_KIND_CREDENTIAL)

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
const size_t api_n_routes = sizeof(api_routes) / sizeof(api_routes[0]);

const api_collection api_collections[] = {
    {"/v1/users", PH_AZ_USER},   {"/v1/tokens", PH_AZ_TOKEN},
    {"/v1/agents", PH_AZ_AGENT}, {"/v1/policies", PH_AZ_POLICY},
    {"/v1/routes", 0},           {"/v1/authorize", 0},
    {"/v1/pool", PX},
};
const size_t api_n_collections =
    sizeof(api_collections) / sizeof(api_collections[0]);

static int key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

/* Matches path against a template; 1 with the parameter in key. */
static int match_template(const char *tpl, const char *path, char *key,
                          size_t max) {
  while (*tpl) {
    if (*tpl == '{') {
      const char *close = strchr(tpl, '}');
      size_t n = 0;
      while (path[n] && path[n] != '/') {
        if (!key_char(path[n]))
          return 0;
        n++;
      }
      if (n == 0 || n > max)
        return 0;
      memcpy(key, path, n);
      key[n] = '\0';
      path += n;
      tpl = close + 1;
      continue;
    }
    if (*tpl++ != *path++)
      return 0;
  }
  return *path == '\0';
}

const api_route *api_match(const char *method, const char *path, char *key,
                           int *path_known) {
  *path_known = 0;
  key[0] = '\0';
  for (size_t i = 0; i < api_n_routes; i++) {
    char k[API_PATH_KEY_MAX + 1] = "";
    size_t max =
        API_IS_POOL(api_routes[i].kind) ? API_POOL_KEY_MAX : API_KEY_MAX;
    if (!match_template(api_routes[i].path, path, k, max))
      continue;
    *path_known = 1;
    if (strcmp(api_routes[i].method, method) == 0) {
      memcpy(key, k, sizeof(k));
      return &api_routes[i];
    }
  }
  return NULL;
}

int api_extraction_path(const char *path) {
  static const char head[] = "/v1/pool/proxies/", tail[] = "/extraction";
  size_t hn = sizeof(head) - 1;
  if (strncmp(path, head, hn) != 0)
    return 0;
  const char *slash = strchr(path + hn, '/');
  return slash && strcmp(slash, tail) == 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontends' shared check (frontend_check.h). */
#include "frontend_check.h"

#include <stdio.h>
#include <string.h>

#include <proxyhost/authorizer.h>
#include <proxyhost/connector.h>
#include <proxyhost/validation.h>

#include "client_acl.h"
#include "lib/conf_values.h"
#include "listener.h"
#include "provider_check.h"

/* 1 when the listen address (parsed already) is a loopback one. */
static int listen_is_loopback(ph_ctx *ctx, const ph_api *api) {
  struct sockaddr_storage ss;
  socklen_t len;
  char why[8];
  ip_addr a;
  if (api->parse_listen_addr(api->conf_str(ctx, "listen"), &ss, &len, why,
                             sizeof(why)) != PH_OK ||
      ip_addr_from_sa((const struct sockaddr *)&ss, &a, NULL) < 0)
    return 0;
  return ip_addr_loopback(&a);
}

/* Not an open proxy: a listener other hosts can reach, without
 * authentication, takes clients only from networks written out. */
static int check_open(ph_ctx *ctx, const ph_api *api, int password,
                      const char **key, char *why, size_t whylen) {
  if (password || listen_is_loopback(ctx, api) ||
      api->conf_is_set(ctx, CLIENT_ACL_KEY))
    return PH_OK;
  *key = "listen";
  snprintf(why, whylen,
           "\"%.64s\" is not a loopback address and auth = none: anyone who "
           "reaches it could use this proxy. Set auth = password, or list "
           "the client networks in %s (%s = 0.0.0.0/0, ::/0 allows "
           "everyone, on purpose)",
           api->conf_str(ctx, "listen"), CLIENT_ACL_KEY, CLIENT_ACL_KEY);
  return PH_EINVAL;
}

/* The bounds the code needs (frontend_check.h), held again here so that
 * a sample declaring wider ones cannot widen them. */
static const ph_conf_limit held[] = {
    {"backlog", 1, FRONTEND_BACKLOG_MAX, 0},
    {"max_clients", 1, FRONTEND_MAX_CLIENTS_MAX, 0},
    {"buffer_size", FRONTEND_BUFFER_MIN, FRONTEND_BUFFER_MAX, 0},
};

int frontend_check(ph_ctx *ctx, const ph_api *api, const char **key,
                   char *why, size_t whylen) {
  int r = ph_conf_limits(ctx, api, held, sizeof(held) / sizeof(held[0]), key,
                         why, whylen);
  if (r != PH_OK)
    return r;
  r = listener_check_listen(ctx, api, key, why, whylen);
  if (r != PH_OK)
    return r;
  client_acl acl;
  if (client_acl_load(&acl, ctx, api, why, whylen) < 0) {
    *key = CLIENT_ACL_KEY;
    return PH_EINVAL;
  }
  r = check_named_provider(ctx, api, "connector", PH_CONNECTOR_SERVICE, key,
                           why, whylen);
  if (r != PH_OK)
    return r;
  r = check_named_provider(ctx, api, "validation", PH_VALIDATION_SERVICE, key,
                           why, whylen);
  if (r != PH_OK)
    return r;
  const char *auth = api->conf_str(ctx, "auth");
  int password = auth && strcmp(auth, "password") == 0;
  const char *aname = api->conf_str(ctx, "authorizer");
  if (!password && aname && *aname) {
    *key = "authorizer";
    snprintf(why, whylen,
             "names an authorizer, but auth = none: set auth = password, or "
             "remove the key");
    return PH_EINVAL;
  }
  if (password) {
    r = check_named_provider(ctx, api, "authorizer", PH_AUTHORIZER_SERVICE,
                             key, why, whylen);
    if (r != PH_OK)
      return r;
  }
  if (password && !api->service_provided(ctx, PH_AUTHORIZER_SERVICE)) {
    *key = "auth";
    snprintf(why, whylen,
             "password needs a module that provides the \"%s\" service: "
             "load one (auth_local)",
             PH_AUTHORIZER_SERVICE);
    return PH_EINVAL;
  }
  return check_open(ctx, api, password, key, why, whylen);
}

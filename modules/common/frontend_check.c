/* The frontends' shared check (frontend_check.h). */
#include "frontend_check.h"

#include <stdio.h>
#include <string.h>

#include <proxyhost/authorizer.h>

#include "listener.h"

int frontend_check(ph_ctx *ctx, const ph_api *api, const char **key,
                   char *why, size_t whylen) {
  int r = listener_check_listen(ctx, api, key, why, whylen);
  if (r != PH_OK)
    return r;
  const char *auth = api->conf_str(ctx, "auth");
  if (auth && strcmp(auth, "password") == 0 &&
      !api->service_provided(ctx, PH_AUTHORIZER_SERVICE)) {
    *key = "auth";
    snprintf(why, whylen,
             "password needs a module that provides the \"%s\" service: "
             "load one (auth_local)",
             PH_AUTHORIZER_SERVICE);
    return PH_EINVAL;
  }
  return PH_OK;
}

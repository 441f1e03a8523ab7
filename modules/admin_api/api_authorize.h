/* SPDX-License-Identifier: BSD-2-Clause */
/* GET /v1/authorize: what the authorization path answers now for one
 * stream, asked of the "access" provider the stream path uses (auth_cache
 * in front of a store, or the store itself). For operators ("why is this
 * refused?") and for tests that watch a revocation reach another node.
 * Pure: the query read into an access request, the verdict written as
 * JSON. */
#ifndef PH_ADMIN_API_AUTHORIZE_H
#define PH_ADMIN_API_AUTHORIZE_H

#include <proxyhost/access.h>
#include <proxyhost/authz_store.h>

#include "lib/json.h"

typedef struct api_authorize {
  ph_access_request req;
  char token[PH_AZ_ID_LEN + 1];
  char agent[PH_AZ_NAME_MAX + 1];
  char host[256];
} api_authorize;

/* Reads "token=ID&agent=NAME&host=HOST&port=N" (each exactly once; no
 * percent escapes; the host in the normal form of access.h: lower case,
 * no trailing dot, an IPv6 address without brackets) into a. 0, or -1
 * with a static reason for the client in *msg. */
int api_authorize_parse(api_authorize *a, const char *query,
                        const char **msg);

/* {"verdict": "allow"|"deny"|"unavailable", "code": "...", "ttl_ms": N,
 * "revision": N} */
void api_authorize_write(json_w *w, const ph_access_result *res);

#endif

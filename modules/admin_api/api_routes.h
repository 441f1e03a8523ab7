/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin API's route table: every (method, path template) the module
 * serves, and the match of a request's path against it. The one list:
 * the module dispatches with it, answers GET /v1/routes from it, and
 * t/integration/openapi_routes.sh compares that answer with
 * docs/api/openapi.yaml. Pure. */
#ifndef PH_ADMIN_API_ROUTES_H
#define PH_ADMIN_API_ROUTES_H

#include <stddef.h>

#include <proxyhost/authz_store.h>

typedef enum api_op {
  OP_LIST = 1,  /* GET /v1/KIND */
  OP_CREATE,    /* POST /v1/KIND */
  OP_GET,       /* GET /v1/KIND/{key} */
  OP_UPDATE,    /* PATCH /v1/KIND/{key} */
  OP_DELETE,    /* DELETE /v1/KIND/{key} */
  OP_ROTATE,    /* POST /v1/tokens/{id}/rotate */
  OP_REVOKE,    /* POST /v1/tokens/{id}/revoke */
  OP_ROUTES,    /* GET /v1/routes */
  OP_AUTHORIZE, /* GET /v1/authorize */
  OP_MOVE,      /* POST /v1/pool/routes/{rule_id}/move */
  /* Exclusive extraction (api_extract.c), not a pool.store call: */
  OP_EXTRACTION, /* GET /v1/pool/proxies/{proxy_id}/extraction */
  OP_EXTRACT,    /* POST ... : request it */
  OP_RETURN      /* DELETE ... : return it to the pool */
} api_op;

/* The pool's kinds in api_route.kind: API_POOL_KIND + ph_pool_kind
 * (pool_store.h), served by api_pool.c over "pool.store". */
#define API_POOL_KIND 100
#define API_IS_POOL(kind) ((kind) > API_POOL_KIND)

typedef struct api_route {
  const char *method;
  const char *path; /* "/v1/users/{name}": OpenAPI's template form */
  int kind;         /* ph_az_kind; 0 for /v1/routes and /v1/authorize */
  api_op op;
} api_route;

/* The collections and the prefixes the module registers. */
typedef struct api_collection {
  const char *prefix; /* "/v1/users" */
  int kind;
} api_collection;

extern const api_route api_routes[];
extern const size_t api_n_routes;
extern const api_collection api_collections[];
extern const size_t api_n_collections;

/* Longest path parameter of the authorization routes: a name
 * (PH_AZ_NAME_MAX) or an id; of the pool's routes: an id or a secret_ref
 * (PH_POOL_ID_MAX, PH_POOL_SECRET_REF_MAX). api_match's key buffer holds
 * the longer. */
#define API_KEY_MAX PH_AZ_NAME_MAX
#define API_POOL_KEY_MAX 128
#define API_PATH_KEY_MAX API_POOL_KEY_MAX

/* Matches method and path. Returns the route, with the path parameter
 * (if any) copied into key (API_PATH_KEY_MAX + 1 bytes); NULL when nothing
 * matches, with *path_known set when the path matched under another
 * method (405) rather than not at all (404). A parameter must be 1..
 * API_KEY_MAX (a pool route: API_POOL_KEY_MAX) bytes of [a-z0-9._-];
 * anything else (percent escapes,
 * slashes) does not match. */
const api_route *api_match(const char *method, const char *path, char *key,
                           int *path_known);

/* 1 when path has the shape /v1/pool/proxies/SEGMENT/extraction, whatever
 * the segment holds (no '/'; possibly empty): with api_match finding
 * nothing, the id is malformed (400, not "no such route"). */
int api_extraction_path(const char *path);

#endif

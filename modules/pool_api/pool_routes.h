/* SPDX-License-Identifier: BSD-2-Clause */
/* pool_api's route table: every (method, path template) under /v1/pool
 * the module serves, and the match of a request's path against it. The
 * one list: the module dispatches with it, answers GET /v1/pool from it,
 * and t/integration/openapi_routes.sh compares that answer (with
 * admin_api's GET /v1/routes) with docs/api/openapi.yaml. Pure. */
#ifndef PH_POOL_API_ROUTES_H
#define PH_POOL_API_ROUTES_H

#include <stddef.h>

#include <proxyhost/pool_store.h>

#include "admin_kit/admin_http.h"

/* The prefix the module registers. */
#define POOL_API_PREFIX "/v1/pool"

extern const api_route pool_routes[];
extern const size_t pool_n_routes;

/* Longest path parameter: an id or a secret_ref (PH_POOL_ID_MAX,
 * PH_POOL_SECRET_REF_MAX). */
#define API_POOL_KEY_MAX 128

/* api_route_match over pool_routes: key holds API_POOL_KEY_MAX + 1
 * bytes; route.kind is a ph_pool_kind. */
const api_route *pool_match(const char *method, const char *path, char *key,
                            int *path_known);

/* 1 when path has the shape /v1/pool/proxies/SEGMENT/extraction, whatever
 * the segment holds (no '/'; possibly empty): with pool_match finding
 * nothing, the id is malformed (400, not "no such route"). */
int pool_extraction_path(const char *path);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* What the admin listener's JSON modules share (admin_api, pool_api):
 * the operations a route names, a route table and the match of a
 * request's path against it, the {"error": ...} body, the JSON content
 * type check and the {"routes": [...]} listing. Each module keeps its
 * own table under its own /v1/ prefix. Pure. */
#ifndef PH_ADMIN_KIT_HTTP_H
#define PH_ADMIN_KIT_HTTP_H

#include <stddef.h>

typedef enum api_op {
  OP_LIST = 1,  /* GET /v1/KIND */
  OP_CREATE,    /* POST /v1/KIND */
  OP_GET,       /* GET /v1/KIND/{key} */
  OP_UPDATE,    /* PATCH /v1/KIND/{key} */
  OP_DELETE,    /* DELETE /v1/KIND/{key} */
  OP_ROTATE,    /* POST /v1/tokens/{id}/rotate, .../credentials/{ref}/rotate */
  OP_REVOKE,    /* POST /v1/tokens/{id}/revoke */
  OP_ROUTES,    /* GET /v1/routes, GET /v1/pool: a module's route table */
  OP_AUTHORIZE, /* GET /v1/authorize */
  OP_MOVE,      /* POST /v1/pool/routes/{rule_id}/move */
  /* Exclusive extraction (pool_api's api_extract.c): */
  OP_EXTRACTION, /* GET /v1/pool/proxies/{proxy_id}/extraction */
  OP_EXTRACT,    /* POST ... : request it */
  OP_RETURN      /* DELETE ... : return it to the pool */
} api_op;

typedef struct api_route {
  const char *method;
  const char *path; /* "/v1/users/{name}": OpenAPI's template form */
  int kind;         /* the module's record kind; 0 for none */
  api_op op;
} api_route;

/* The longest path parameter any table may take. */
#define API_KEY_LIMIT 255

/* Matches method and path against the n routes of tbl. Returns the route,
 * with the path parameter (if any) copied into key (max + 1 bytes); NULL
 * (max at most API_KEY_LIMIT) when nothing matches, with *path_known set when
 * the path matched under another method (405) rather than not at all (404). A
 * parameter must be 1..max bytes of [a-z0-9._-]; anything else (percent
 * escapes, slashes) does not match. */
const api_route *api_route_match(const api_route *tbl, size_t n,
                                 const char *method, const char *path,
                                 char *key, size_t max, int *path_known);

/* {"routes": [{"method": M, "path": P}, ...]} of the n routes of tbl into
 * buf: its length, or -1 when it does not fit. */
long api_write_routes(const api_route *tbl, size_t n, char *buf, size_t cap);

/* {"error": {"code": code, "message": message}} into buf: its length
 * (cut to a shorter form if cap is too small). */
size_t api_write_error(char *buf, size_t cap, const char *code,
                       const char *message);

/* 1 when the Content-Type t is application/json (parameters allowed). */
int api_is_json_type(const char *t);

#define API_JSON_TYPE "application/json"

/* One name=value pair of a query string (not NUL-terminated). */
typedef struct api_qpair {
  const char *k, *v;
  size_t kl, vl;
} api_qpair;

/* The next pair of the query string at *q (NULL or empty: the end), *q
 * then past it and its '&'. 1 with the pair in *p, 0 at the end, -1 when
 * the pair has no '='. */
int api_query_next(const char **q, api_qpair *p);
/* 1 when the pair's name is name. */
int api_qpair_is(const api_qpair *p, const char *name);

#endif

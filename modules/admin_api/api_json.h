/* SPDX-License-Identifier: BSD-2-Clause */
/* The admin API's JSON: request bodies read into authz.store writes, and
 * records, lists and errors written as the responses of
 * docs/api/openapi.yaml. Pure (json.h); the bodies are checked for shape
 * and types here, the values by the store. */
#ifndef PH_ADMIN_API_JSON_H
#define PH_ADMIN_API_JSON_H

#include <stddef.h>

#include <proxyhost/authz_store.h>

#include "api_routes.h"
#include "lib/json.h"

#define API_BODY_TOKENS 64 /* tokens in a request body */
#define API_BODY_DEPTH 4

/* A write read from a request, with the strings it points to. */
typedef struct api_body {
  char name[PH_AZ_NAME_MAX + 1];
  char owner[PH_AZ_NAME_MAX + 1];
  char user[PH_AZ_NAME_MAX + 1];
  char agent[PH_AZ_NAME_MAX + 1];
  char id[API_KEY_MAX + 1];
  char subject[PH_AZ_NAME_MAX + 1];
  char host[PH_AZ_PATTERN_MAX + 1];
  ph_az_write w;
} api_body;

/* Builds the write for op (create, update, delete, rotate, revoke) on
 * kind, the record named by key (the path parameter; "" for create), from
 * the JSON body (len 0: none; allowed only where no field is needed).
 * 0, or -1 with a static reason for the client in *msg. */
int api_body_parse(api_body *b, int kind, api_op op, const char *key,
                   const char *body, size_t len, const char **msg);

/* A list's query, with the strings it points to. */
#define API_LIST_DEFAULT 100
typedef struct api_query {
  ph_az_list list; /* kind left 0: the caller sets it */
  char after[API_KEY_MAX + 1];
  char user[PH_AZ_NAME_MAX + 1];
  char agent[PH_AZ_NAME_MAX + 1];
} api_query;

/* Reads "after=K&limit=N&user=U&agent=A" (each at most once, values of
 * [a-z0-9._-] only: no percent escapes, limit 1..PH_AZ_LIST_MAX, default
 * API_LIST_DEFAULT) into q. 0, or -1 with a static reason in *msg. */
int api_query_parse(api_query *q, const char *query, const char **msg);

/* One record as a JSON object. */
void api_write_record(json_w *w, const ph_az_record *rec);

/* Scope names, for bodies and output: "stream", "agent". */
uint32_t api_scope_bit(const char *name);

#endif

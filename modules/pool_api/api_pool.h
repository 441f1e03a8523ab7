/* SPDX-License-Identifier: BSD-2-Clause */
/* pool_api's /v1/pool/ routes over "pool.store"
 * (sdk/proxyhost/pool_store.h): proxies, routes and credential
 * references, listed, read, created, changed, moved, drained, rotated and
 * deleted (docs/api/openapi.yaml). pool_api.c matches the route and
 * hands the request here; this file reads the query and the JSON body,
 * makes the store calls and writes the JSON answer.
 *
 * A body may carry only the fields of its kind: anything else ("password",
 * "username", "secret") is refused with 400 and never stored, so no
 * credential material can reach the database through this API (CP-8-5).
 * A PATCH reads the record, applies the fields it names and writes it back
 * with expect_revision: a concurrent change makes it a 409, never a lost
 * update. */
#ifndef PH_POOL_API_POOL_H
#define PH_POOL_API_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/authz_store.h> /* PH_AZ_E* statuses pool.store shares */
#include <proxyhost/pool_store.h>

#include "pool_routes.h"
#include "contracts/cp_credcheck.h"
#include "contracts/cp_health.h"

/* Answers one request: an HTTP status and a JSON body (NULL for 204). */
typedef void (*api_pool_reply_fn)(void *arg, int http, const char *body,
                                  size_t len);

typedef struct api_pool_call {
  const ph_pool_store_v1 *st;
  void *self;
  const cp_credcheck_v1 *cred; /* NULL: credentials not checked */
  void *cred_self;
  const cp_health_v1 *health; /* NULL: no controller here (health null) */
  void *health_self;
  int kind; /* ph_pool_kind */
  api_op op;
  char key[API_POOL_KEY_MAX + 1]; /* an id or a secret_ref, whole */
  int64_t call; /* the store call, > 0 while outstanding */
  char *body;   /* a PATCH's body, kept for after the read */
  size_t body_len;
  ph_pool_write w;
  api_pool_reply_fn reply;
  void *arg;
} api_pool_call;

/* Starts c (st, self, kind, op, key, reply, arg set by the caller) with
 * the request's query and body. Exactly one reply follows, possibly
 * before this returns; after it c is the caller's to free. */
void api_pool_start(api_pool_call *c, const char *query, const char *body,
                    size_t len);
/* The client left: the store call is cancelled, no reply follows. */
void api_pool_cancel(api_pool_call *c);
/* Frees what c holds (after the reply or the cancel). */
void api_pool_free(api_pool_call *c);

#endif

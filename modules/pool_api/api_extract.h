/* SPDX-License-Identifier: BSD-2-Clause */
/* pool_api's exclusive extraction of one proxy (CP-1-5, CP-4-2..5):
 * GET, POST and DELETE /v1/pool/proxies/{proxy_id}/extraction
 * (docs/api/openapi.yaml). The state lives in Redis, behind the
 * "cp.authority" service (modules/contracts/cp_authority.h, minor 2)
 * that [pool_api] authority names; this file checks that the store has
 * the proxy, then asks the authority, and writes the JSON answer:
 *
 *   {"proxy_id": ID, "state": "available"|"reclaiming"|"extracted",
 *    "owner": WORKER (reclaiming only),
 *    "extracted_at": "YYYY-MM-DDTHH:MM:SS.mmmZ" (extracted only)}
 *
 * 200, or 202 for a POST whose proxy is reclaiming (its owner drains it
 * first: poll GET). Errors, in the API's {"error": {code, message}}:
 * 404 no such proxy (asked of the store before Redis); 409 "limit" when
 * Redis holds PH_POOL_PROXIES_MAX reclaiming or extracted proxies; 501
 * when the authority has no extract yet; 503 when Redis or the store is
 * unavailable or busy. pool_api.c answers 501 itself when no authority
 * is configured, and 400 for a malformed id. */
#ifndef PH_POOL_API_EXTRACT_H
#define PH_POOL_API_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#include "api_pool.h" /* api_pool_reply_fn */
#include "pool_routes.h"
#include "contracts/cp_authority.h"

typedef struct api_extract_call {
  const ph_pool_store_v1 *st;
  void *st_self;
  const cp_authority_v1 *auth;
  void *auth_self;
  api_op op; /* OP_EXTRACTION, OP_EXTRACT or OP_RETURN */
  char key[API_POOL_KEY_MAX + 1]; /* the proxy id, checked by pool_match */
  int64_t store_call; /* > 0 while the store's read is outstanding */
  int64_t auth_call;  /* > 0 while the authority's call is */
  api_pool_reply_fn reply;
  void *arg;
} api_extract_call;

/* The extraction op of an api_op: CP_EXTRACT_GET, _REQUEST, _RELEASE; 0
 * for any other op. */
int api_extract_op(api_op op);

/* Starts c (every field but the calls set by the caller; auth non-NULL)
 * for a request with body_len bytes of body (refused: none is taken).
 * Exactly one reply follows, possibly before this returns; after it c
 * is the caller's to free. */
void api_extract_start(api_extract_call *c, size_t body_len);
/* The client left: the outstanding call is cancelled, no reply follows. */
void api_extract_cancel(api_extract_call *c);

/* "2024-05-01T12:00:00.123Z" for Unix ms into out (at least 25 bytes):
 * 0, or -1 when ms is out of gmtime's range. */
int api_extract_time(int64_t ms, char *out, size_t cap);

#endif

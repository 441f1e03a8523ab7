/* SPDX-License-Identifier: BSD-2-Clause */
/* One unary RPC waiting for one authority call: cancelled with the call. */
#ifndef CS_UNARY_H
#define CS_UNARY_H

#include "cs.h"

typedef struct cs_unary {
  cs_link link; /* first */
  cs *m;
  cp_grpc_call *call;
  cs_method method;
  int64_t start_ms, auth_call;
} cs_unary;

/* A cs_unary for call (its cancel callback set), or NULL. */
cs_unary *cs_unary_new(cs *m, cp_grpc_call *call, cs_method meth,
                       int64_t start_ms);
/* The same for a handler's own struct of `size` bytes that starts with a
 * cs_unary (zeroed; freed with it). */
cs_unary *cs_unary_new_size(cs *m, cp_grpc_call *call, cs_method meth,
                            int64_t start_ms, size_t size);
/* The authority call's id: < 0 ends the RPC (and frees u). */
void cs_unary_started(cs_unary *u, int64_t id);
/* The authority answered u's call: counts the result; one that is not
 * OK or a replay ends the RPC with its gRPC status and frees u (1: the
 * caller returns). 0: the caller answers. */
int cs_unary_refused(cs_unary *u, const cp_auth_reply *rep);
/* Ends the RPC and frees u. */
void cs_unary_end(cs_unary *u, int status, const char *msg,
                  const uint8_t *resp, size_t len);
/* The status message of a fence's result (never data). */
const char *cs_auth_why(cp_auth_result r);

#endif

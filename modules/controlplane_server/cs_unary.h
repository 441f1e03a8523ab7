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
/* For a registration handler after its checks (f->st 0): a struct of
 * `size` bytes starting with a cs_unary (as cs_unary_new_size), with a
 * new session id written at byte `session_off` of it; NULL with f->st
 * and f->why set when either failed. */
void *cs_unary_joining(cs_req *f, cs_method meth, size_t size,
                       size_t session_off);
/* The authority call a handler just made for u: id < 0 sets f->st and
 * f->why (INVALID_ARGUMENT or UNAVAILABLE). */
void cs_unary_launch(cs_req *f, cs_unary *u, int64_t id);
/* A handler's last step: frees its request q and, when f->st is set,
 * ends the RPC with it (through u when made, else cs_request_fail). */
void cs_unary_close(cs_req *f, cs_unary *u, cs_method meth, void *q);
/* The status message of a fence's result (never data). */
const char *cs_auth_why(cp_auth_result r);

#endif

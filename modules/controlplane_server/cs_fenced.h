/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fenced client stream: ReportOutcomes (workers) and ReportObservations
 * (checkers, issue 26) are the same mechanism. At most 16 batches a call;
 * each is checked (the same caller and session as the first), digested
 * and put through the authority's (session, sequence, SHA-256) fence
 * before the next is read: an accepted batch is applied, a replay is
 * answered without being applied again, SEQ_CONFLICT ends the call
 * ALREADY_EXISTS, SEQ_SMALLER ABORTED, a stale session
 * FAILED_PRECONDITION. The half-close answers the last acknowledged
 * sequence.
 */
#ifndef CS_FENCED_H
#define CS_FENCED_H

#include "cs.h"

typedef struct cs_fenced_kind {
  cs_method meth;
  const char *role; /* the certificate's SPIFFE role: worker, checker */
  const ProtobufCMessageDescriptor *desc;
  /* q's checks, with first the stream's first batch (NULL for the first)
   * and n this batch's number in the call: 0 or a gRPC status, *why. */
  int (*check)(cs *m, const void *q, const void *first, const cp_caller *c,
               uint32_t n, const char **why);
  /* The batch digest: PH_OK or an error (RESOURCE_EXHAUSTED). */
  int (*digest)(const void *q, uint8_t out[32]);
  /* The authority's fence of q: a call id, or < 0 (cp_authority.h). */
  int64_t (*fence)(cs *m, const void *q, const uint8_t digest[32],
                   cp_auth_cb cb, void *arg);
  /* An accepted batch (never a replay), received at recv_ms (wall clock,
   * Unix ms); NULL: nothing to apply. */
  void (*apply)(cs *m, const void *q, int64_t recv_ms);
  /* The response carrying acknowledged_sequence into buf (32 bytes). */
  size_t (*pack)(uint64_t acked, uint8_t *buf);
} cs_fenced_kind;

/* The handler's body: serves call as k says (m the module). */
void cs_fenced_rpc(cs *m, const cs_fenced_kind *k, cp_grpc_call *call);

#endif

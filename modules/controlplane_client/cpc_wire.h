/* SPDX-License-Identifier: BSD-2-Clause */
/* controlplane_client's messages: the requests it packs and the register
 * answer it reads (times become Unix ms here, at the wire; CP-7-3: an
 * unknown protocol version or a missing duration is refused). Pure. */
#ifndef PH_CPC_WIRE_H
#define PH_CPC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#include "contracts/pool_runtime.h"
#include "cp_common/snapshot/cp_buf.h"

/* The requests are packed into cp_bufs (cp_common/snapshot/cp_buf.h). */

int cpc_pack_register(const char *cluster, const char *worker,
                      const char *instance, const char *zone, cp_buf *out);
int cpc_pack_watch(const char *worker, const char *session,
                   uint64_t last_version, const uint8_t *last_checksum,
                   cp_buf *out);
/* reject_reason 0: ACCEPTED, else REJECTED with that reason. */
int cpc_pack_ack(const char *worker, const char *session, uint64_t version,
                 uint64_t epoch, const uint8_t checksum[32],
                 int reject_reason, cp_buf *out);
/* No counters yet: the dispatch that fills them is issue 13's; the empty
 * list is the complete sparse list of what this module knows (CP-2-14). */
/* counters[0..n-1]: the complete sparse replacement (CP-2-14), from the
 * pool (pool_runtime.h); draining: the whole worker drains. */
int cpc_pack_runtime(const char *worker, const char *session, uint64_t seq,
                     uint64_t version, uint64_t epoch, int64_t now_ms,
                     const pool_runtime_counter *counters, uint32_t n,
                     int draining, cp_buf *out);

/* Calls fn(arg, ids, n) with ReportRuntimeResponse.revoke_proxy_ids
 * (CP-4-7) when msg carries any that are well-formed ids (the others are
 * skipped). PH_OK, PH_EINVAL for a message that does not parse,
 * PH_ENOMEM. */
int cpc_read_revokes(const uint8_t *msg, size_t len,
                     void (*fn)(void *arg, const char *const *ids, size_t n),
                     void *arg);

typedef struct cpc_registered {
  char session_id[PH_POOL_ID_MAX + 1];
  uint64_t epoch;
  uint32_t runtime_interval_ms, max_stale_ms;
  uint32_t max_runtime_counters; /* bounds an outcome batch (CP-5-8) */
} cpc_registered;

/* Reads a RegisterWorkerResponse. PH_OK, or PH_EINVAL with *why (a static
 * text) when it cannot be used: not protobuf, no or bad session id,
 * another protocol version, a duration missing or out of range. */
int cpc_read_registered(const uint8_t *msg, size_t len, cpc_registered *out,
                        const char **why);

/* Reads a ReportOutcomesResponse: PH_OK with its acknowledged_sequence
 * (0: nothing acknowledged), or PH_EINVAL for bytes that are not one. */
int cpc_read_outcomes_ack(const uint8_t *msg, size_t len, uint64_t *acked);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's outcome queue (CP-1-33, CP-5-1, CP-5-7..10, CP-5-15): a
 * bounded ring of outcome records that the hot path pushes into without
 * ever blocking or allocating, cut into numbered batches that are kept
 * exactly as cut until the controller acknowledges them, and the batch
 * digest the controller's fence compares (cp_outcome_digest, the same
 * function on both sides). Pure code for the outcome_reporter module: no
 * I/O, no loop, no lock; one thread (the loop) uses a queue.
 *
 * Life of an outcome:
 *   push -> queued -> cut (a batch: next sequence, digest) -> ready
 *   (handed to a ReportOutcomes call, at most 16 at once) -> ack (freed)
 * A batch handed out and not acknowledged is handed out again, the same
 * records under the same sequence, so it packs to the same bytes and the
 * same digest (CP-5-15). Records stay in their ring slots until their
 * batch is acknowledged: the capacity bounds everything the queue holds,
 * queued or in flight. A full ring drops the new record and counts it
 * (CP-5-10).
 *
 * Sessions (CP-5-18): the controller fences outcomes per session, so a
 * new session (cp_outq_session) numbers batches from 1 again. Batches the
 * old session was sent and did not acknowledge are dropped and counted
 * (dropped_session): the old session may have applied them before its
 * acknowledgement was lost, and the new session's fence cannot recognise
 * them, so sending them again could count them twice; an outcome is an
 * observation (CP-5-6), losing a few is harmless, counting some twice is
 * not. Batches cut but never sent, and records not yet cut, no controller
 * has seen: they are cut again under the new session's numbering.
 *
 * Memory: capacity * (sizeof(cp_outcome) + sizeof(cp_outbatch)), 344
 * bytes a slot on x86-64 (21.5 MiB at the default 65536), and scratch for
 * one batch's message (CP_OUTQ_BATCH_MAX outcomes), all allocated by
 * init. */
#ifndef PH_CP_OUTCOMES_H
#define PH_CP_OUTCOMES_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

#include "controlplane/v1/controlplane.pb-c.h"

/* The queue's capacity, in outcomes (CP-5-7): outcome_reporter's
 * `queue_capacity` key. */
#define CP_OUTQ_CAPACITY_DEFAULT 65536u
#define CP_OUTQ_CAPACITY_MIN 1024u
#define CP_OUTQ_CAPACITY_MAX 1048576u
/* A batch holds at most min(512, max_runtime_counters) outcomes (CP-5-8);
 * one ReportOutcomes call carries at most 16 batches (CP-5-9). */
#define CP_OUTQ_BATCH_MAX 512u
#define CP_OUTQ_BATCHES_PER_CALL 16u

/* One attempt through one proxy (controlplane.v1.Outcome), as the hot
 * path hands it over. Strings are copied by push. */
typedef struct cp_outcome_in {
  uint32_t proxy_index;   /* the view's index (the gateway's own use) */
  const char *proxy_id;   /* 1..PH_POOL_ID_MAX bytes */
  const char *rule_id;    /* 0..PH_POOL_ID_MAX bytes */
  int stage;              /* Controlplane__V1__OutcomeStage, not 0 */
  int result;             /* Controlplane__V1__OutcomeResult, not 0 */
  int64_t latency_us;     /* a duration, in microseconds (sub-ms
                             upstreams are common); >= 0 */
  int64_t observed_at_ms; /* Unix ms */
} cp_outcome_in;

/* A record in the ring (fixed size: push copies, never allocates). */
typedef struct cp_outcome {
  uint32_t proxy_index;
  uint8_t stage, result;
  int64_t latency_us;
  int64_t observed_at_ms;
  char proxy_id[PH_POOL_ID_MAX + 1];
  char rule_id[PH_POOL_ID_MAX + 1];
} cp_outcome;

/* A cut batch: records [first, first + n) of the ring (positions). */
typedef struct cp_outbatch {
  uint64_t sequence;   /* per session, from 1 (CP-5-1) */
  uint64_t first;
  uint32_t n;          /* 1..batch size */
  uint8_t digest[32];  /* cp_outcome_digest of the batch, at the cut */
} cp_outbatch;

typedef struct cp_outq_stats {
  uint64_t queued;          /* records not in a batch yet */
  uint64_t in_batches;      /* records in unacknowledged batches */
  uint64_t batches;         /* unacknowledged batches */
  uint64_t dropped_full;    /* pushes refused by a full ring (CP-5-10) */
  uint64_t dropped_session; /* records of sent, unacknowledged batches a
                               new session dropped */
  uint64_t invalid;         /* pushes refused as malformed */
  uint64_t next_sequence;   /* what the next cut batch gets */
} cp_outq_stats;

typedef struct cp_outq {
  cp_outcome *ring;
  cp_outbatch *batches; /* a ring too: one batch has at least one record */
  uint32_t cap;
  uint32_t batch_size;  /* 0 before the first session: nothing is cut */
  uint64_t head, cut, tail;         /* record positions */
  uint64_t b_head, b_sent, b_tail;  /* batch positions */
  uint64_t next_seq;
  uint64_t dropped_full, dropped_session, invalid;
  /* Scratch for one batch's message. */
  Controlplane__V1__Outcome *msg;
  Controlplane__V1__Outcome **msg_p;
  Google__Protobuf__Duration *lat;
  Google__Protobuf__Timestamp *obs;
} cp_outq;

/* capacity in CP_OUTQ_CAPACITY_MIN..MAX: PH_OK, PH_EINVAL, PH_ENOMEM. */
int cp_outq_init(cp_outq *q, uint32_t capacity);
void cp_outq_free(cp_outq *q);

/* Copies o into the ring: PH_OK; PH_EFULL when the ring is full (the
 * record is dropped and counted, CP-5-10); PH_EINVAL for a malformed one
 * (counted). Constant time; never blocks, never allocates. */
int cp_outq_push(cp_outq *q, const cp_outcome_in *o);

/* A new session (RegisterWorkerResponse): batches of min(512,
 * max_runtime_counters) outcomes from now on, numbered from 1; what
 * happens to the old session's batches is said above. PH_OK, or
 * PH_EINVAL for max_runtime_counters 0 (nothing changes). */
int cp_outq_session(cp_outq *q, uint32_t max_runtime_counters);

/* Cuts queued records into batches: every full batch, and with partial
 * also one last smaller batch of what remains (a flush timer's cut).
 * Each gets the next sequence and its digest now. Returns the number of
 * batches cut (0 before a session). */
uint32_t cp_outq_cut(cp_outq *q, int partial);

/* The oldest unacknowledged batches for one ReportOutcomes call, at most
 * min(max, CP_OUTQ_BATCHES_PER_CALL) of them, into out; they count as
 * sent. Always from the oldest: a call that failed is followed by one
 * with the same batches first. The pointers are valid until the next
 * cut, ack or session. */
uint32_t cp_outq_ready(cp_outq *q, const cp_outbatch **out, uint32_t max);

/* The ReportOutcomesRequest of batch b with worker_id and session_id,
 * packed: its size, then the bytes into out (that many). Deterministic:
 * the same batch packs to the same bytes every time (CP-5-15). */
size_t cp_outq_packed_size(cp_outq *q, const cp_outbatch *b,
                           const char *worker_id, const char *session_id);
size_t cp_outq_pack(cp_outq *q, const cp_outbatch *b, const char *worker_id,
                    const char *session_id, uint8_t *out);

/* ReportOutcomesResponse.acknowledged_sequence: frees every batch up to
 * and including it. Returns how many batches it freed (an old or repeated
 * acknowledgement frees none), or PH_EINVAL when it names a sequence this
 * session never cut (nothing changes: a protocol error). */
int cp_outq_ack(cp_outq *q, uint64_t acknowledged_sequence);

void cp_outq_stats_get(const cp_outq *q, cp_outq_stats *st);

/* The batch digest (docs/api/controlplane.md#digest): SHA-256 over req
 * packed with worker_id and session_id empty, whatever req carries there
 * (req is not changed). The controller computes it over the request it
 * received, the gateway over the batch it cut. PH_OK, or PH_ENOMEM. */
int cp_outcome_digest(const Controlplane__V1__ReportOutcomesRequest *req,
                      uint8_t out[32]);
/* The same digest of a checker's observation batch (issue 26, CP-6-2):
 * SHA-256 over req packed with checker_id and session_id empty. */
int cp_observation_digest(
    const Controlplane__V1__ReportObservationsRequest *req, uint8_t out[32]);

#endif

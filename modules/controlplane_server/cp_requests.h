/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's checks of every request before it reaches Redis
 * (CP-8-2, CP-8-3, CP-7-3, CP-7-4, CP-1-29): field bounds, enum values
 * this build knows, the caller's identity against its certificate, batch
 * sizes. Pure: no I/O, no allocation (the digests pack into a caller's
 * bounded buffer).
 *
 * Each check returns 0 when the request may proceed, or a gRPC status
 * code (CP_GRPC_* of cp_status.h) with *why set to a short,
 * static, operator-facing text that never contains request data: it is
 * sent to the peer as the status message.
 */
#ifndef PH_CP_REQUESTS_H
#define PH_CP_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "controlplane/v1/controlplane.pb-c.h"

/* The protocol version this controller speaks (exactly: a worker that
 * offers another is refused, CP-7-4). */
#define CP_PROTOCOL_VERSION CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_V1

/* Outcomes in one batch: min(512, max_runtime_counters) (CP-5-8). */
#define CP_OUTCOMES_PER_BATCH_MAX 512u
/* Batches in one ReportOutcomes call (CP-5-9). */
#define CP_OUTCOME_BATCHES_PER_CALL 16u

/* An identifier: 1..128 bytes of printable ASCII without spaces. */
int cp_id_ok(const char *s);

/* 1 when t is absent or inside the Timestamp range. */
int cp_timestamp_ok(const Google__Protobuf__Timestamp *t);

/* The request in msg/len unpacked by its descriptor d, or NULL with *st
 * INVALID_ARGUMENT and *why. Before unpacking, the wire is walked: a
 * string field (of d or of a message nested in it) whose bytes hold a NUL
 * is refused, since protobuf-c hands it over as a C string cut at the NUL
 * and every check after this one would see another value than the peer
 * sent ("w1\0w2" as "w1"; issue 22 item 12). The caller frees the result
 * with protobuf_c_message_free_unpacked. */
void *cp_request_unpack(const ProtobufCMessageDescriptor *d,
                        const uint8_t *msg, size_t len, int *st,
                        const char **why);

/* The caller: peer_id is the worker id its certificate names (NULL in
 * plaintext mode, where nothing is compared); cluster_id the controller's
 * own. */
typedef struct cp_caller {
  const char *peer_id;
  const char *cluster_id;
} cp_caller;

int cp_check_register(const Controlplane__V1__RegisterWorkerRequest *r,
                      const cp_caller *c, const char **why);
/* What every registration carries, a worker's or a checker's: the
 * controller's cluster_id, instance_id, zone, protocol version 1. */
int cp_check_joining(const char *cluster_id, const char *instance_id,
                     const char *zone, int protocol_version,
                     const cp_caller *c, const char **why);
int cp_check_watch(const Controlplane__V1__WatchSnapshotsRequest *r,
                   const cp_caller *c, const char **why);
int cp_check_ack(const Controlplane__V1__AcknowledgeSnapshotRequest *r,
                 const cp_caller *c, const char **why);
/* max_counters: the session's max_runtime_counters. */
int cp_check_runtime(const Controlplane__V1__ReportRuntimeRequest *r,
                     const cp_caller *c, uint32_t max_counters,
                     const char **why);
/* One batch of a ReportOutcomes stream. first is the stream's first
 * message (NULL for the first itself): worker and session may not change
 * inside a stream (CP-1-29). n_in_call counts this batch (1..). */
int cp_check_outcomes(const Controlplane__V1__ReportOutcomesRequest *r,
                      const Controlplane__V1__ReportOutcomesRequest *first,
                      const cp_caller *c, uint32_t max_counters,
                      uint32_t n_in_call, const char **why);

/* The runtime report's content digest the fence compares (CP-2-10):
 * SHA-256 of the message packed with worker_id and session_id empty, so
 * it depends only on what was reported (the outcome batches' digest is
 * defined the same way, docs/api/controlplane.md#digest). buf is scratch
 * space of cap bytes; returns 0, or -1 when the packed message does not
 * fit. */
int cp_runtime_digest(const Controlplane__V1__ReportRuntimeRequest *r,
                      uint8_t *buf, size_t cap, uint8_t out[32]);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The controller's request checks (cp_requests.h). */
#include <string.h>

#include <openssl/sha.h>

#include "cp_requests.h"
#include "contracts/cp_status.h"

#define ID_MAX 128
#define ZONE_MAX 64

int cp_id_ok(const char *s) {
  if (!s || !*s)
    return 0;
  size_t n = 0;
  for (; s[n]; n++)
    if (n >= ID_MAX || (unsigned char)s[n] < 0x21 ||
        (unsigned char)s[n] > 0x7e)
      return 0;
  return 1;
}

/* Nesting of the requests: ReportOutcomesRequest > Outcome > Timestamp. */
#define WIRE_DEPTH_MAX 8

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

/* The wire of one message of descriptor d: 0 fine, 1 a string field holds
 * a NUL, -1 malformed (protobuf-c would refuse it too). Fields this build
 * does not know are skipped, as protobuf-c keeps them unread. */
static int wire_strings(const ProtobufCMessageDescriptor *d, const uint8_t *p,
                        size_t len, int depth) {
  const uint8_t *end = p + len;
  while (p < end) {
    uint64_t tag, n;
    if (varint(&p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
      return -1;
    switch (tag & 7) {
    case 0: /* varint */
      if (varint(&p, end, &n))
        return -1;
      break;
    case 1: /* 64-bit */
      if (end - p < 8)
        return -1;
      p += 8;
      break;
    case 5: /* 32-bit */
      if (end - p < 4)
        return -1;
      p += 4;
      break;
    case 2: { /* length-delimited: string, bytes, message, packed */
      if (varint(&p, end, &n) || n > (uint64_t)(end - p))
        return -1;
      const ProtobufCFieldDescriptor *f =
          protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
      if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, n))
        return 1;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        if (depth >= WIRE_DEPTH_MAX)
          return -1;
        int rc = wire_strings(f->descriptor, p, n, depth + 1);
        if (rc)
          return rc;
      }
      p += n;
      break;
    }
    default: /* groups: not proto3 */
      return -1;
    }
  }
  return 0;
}

void *cp_request_unpack(const ProtobufCMessageDescriptor *d,
                        const uint8_t *msg, size_t len, int *st,
                        const char **why) {
  int rc = wire_strings(d, msg ? msg : (const uint8_t *)"", len, 0);
  ProtobufCMessage *q =
      rc == 0 ? protobuf_c_message_unpack(d, NULL, len, msg) : NULL;
  *st = q ? 0 : CP_GRPC_INVALID_ARGUMENT;
  *why = q ? NULL
           : rc == 1 ? "a string field holds a NUL byte"
                     : "malformed request";
  return q;
}

/* Fails the check: a status and its static message. */
#define REFUSE(code, text)                                                     \
  do {                                                                         \
    *why = (text);                                                             \
    return (code);                                                             \
  } while (0)

/* worker_id well formed and, with a certificate, the certificate's. */
static int check_worker(const char *worker_id, const cp_caller *c,
                        const char **why) {
  if (!cp_id_ok(worker_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "worker_id is missing or malformed");
  if (c->peer_id && strcmp(worker_id, c->peer_id) != 0)
    REFUSE(CP_GRPC_PERMISSION_DENIED,
           "worker_id is not the one the client certificate names");
  return 0;
}

static int check_session(const char *worker_id, const char *session_id,
                         const cp_caller *c, const char **why) {
  int rc = check_worker(worker_id, c, why);
  if (rc)
    return rc;
  if (!cp_id_ok(session_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "session_id is missing or malformed");
  return 0;
}

int cp_check_register(const Controlplane__V1__RegisterWorkerRequest *r,
                      const cp_caller *c, const char **why) {
  int rc = check_worker(r->worker_id, c, why);
  if (rc)
    return rc;
  return cp_check_joining(r->cluster_id, r->instance_id, r->zone,
                          (int)r->supported_protocol_version, c, why);
}

int cp_check_joining(const char *cluster_id, const char *instance_id,
                     const char *zone, int protocol_version,
                     const cp_caller *c, const char **why) {
  if (!c->cluster_id || !cluster_id || strcmp(cluster_id, c->cluster_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT,
           "cluster_id is not this controller's cluster");
  if (!cp_id_ok(instance_id))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "instance_id is missing or malformed");
  if (!cp_id_ok(zone) || strlen(zone) > ZONE_MAX)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "zone is missing or malformed");
  if (protocol_version ==
      CONTROLPLANE__V1__PROTOCOL_VERSION__PROTOCOL_VERSION_UNSPECIFIED)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "supported_protocol_version is missing");
  if (protocol_version != CP_PROTOCOL_VERSION)
    REFUSE(CP_GRPC_FAILED_PRECONDITION,
           "protocol version not supported: this controller speaks "
           "version 1 only");
  return 0;
}

int cp_check_watch(const Controlplane__V1__WatchSnapshotsRequest *r,
                   const cp_caller *c, const char **why) {
  int rc = check_session(r->worker_id, r->session_id, c, why);
  if (rc)
    return rc;
  if (r->last_checksum.len != 0 && r->last_checksum.len != 32)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "last_checksum is not 32 bytes");
  return 0;
}

int cp_check_ack(const Controlplane__V1__AcknowledgeSnapshotRequest *r,
                 const cp_caller *c, const char **why) {
  int rc = check_session(r->worker_id, r->session_id, c, why);
  if (rc)
    return rc;
  if (r->version == 0)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "version is missing");
  if (r->checksum.len != 32)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "checksum is not 32 bytes");
  switch (r->result) {
  case CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_ACCEPTED:
    if (r->reject_reason != 0)
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an accepted ACK has no reject_reason");
    return 0;
  case CONTROLPLANE__V1__ACK_RESULT__ACK_RESULT_REJECTED:
    if (r->reject_reason < 1 || r->reject_reason > 5)
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "reject_reason is missing or unknown");
    return 0;
  default: /* UNSPECIFIED or a value from a newer peer (CP-7-3) */
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "result is missing or unknown");
  }
}

int cp_timestamp_ok(const Google__Protobuf__Timestamp *t) {
  /* The Timestamp range: 0001-01-01 .. 9999-12-31, nanos in [0, 1e9). */
  return !t || (t->seconds >= -62135596800LL && t->seconds <= 253402300799LL &&
                t->nanos >= 0 && t->nanos < 1000000000);
}
#define timestamp_ok cp_timestamp_ok

int cp_check_runtime(const Controlplane__V1__ReportRuntimeRequest *r,
                     const cp_caller *c, uint32_t max_counters,
                     const char **why) {
  int rc = check_session(r->worker_id, r->session_id, c, why);
  if (rc)
    return rc;
  if (r->report_sequence == 0)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "report_sequence is missing");
  if (!timestamp_ok(r->observed_at))
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "observed_at is malformed");
  if (r->n_counters > max_counters)
    REFUSE(CP_GRPC_RESOURCE_EXHAUSTED,
           "more counters than max_runtime_counters");
  for (size_t i = 0; i < r->n_counters; i++) {
    const Controlplane__V1__ProxyCounter *k = r->counters[i];
    if (!cp_id_ok(k->proxy_id))
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "a counter's proxy_id is malformed");
    /* Sparse: only non-zero counts are sent (CP-2-14), so a zero entry
     * would be ambiguous (drained, or a stale client?). */
    if (k->active == 0 && k->reserved == 0 && !k->draining)
      REFUSE(CP_GRPC_INVALID_ARGUMENT,
             "a counter with zero active and reserved: leave it out");
    /* Duplicates: quadratic, bounded by max_counters (the operator's
     * bound, at most a few thousand). */
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->counters[j]->proxy_id, k->proxy_id) == 0)
        REFUSE(CP_GRPC_INVALID_ARGUMENT, "a proxy is counted twice");
  }
  return 0;
}

int cp_check_outcomes(const Controlplane__V1__ReportOutcomesRequest *r,
                      const Controlplane__V1__ReportOutcomesRequest *first,
                      const cp_caller *c, uint32_t max_counters,
                      uint32_t n_in_call, const char **why) {
  int rc = check_session(r->worker_id, r->session_id, c, why);
  if (rc)
    return rc;
  if (first && (strcmp(first->worker_id, r->worker_id) != 0 ||
                strcmp(first->session_id, r->session_id) != 0))
    REFUSE(CP_GRPC_FAILED_PRECONDITION,
           "worker_id or session_id changed inside the stream");
  if (n_in_call > CP_OUTCOME_BATCHES_PER_CALL)
    REFUSE(CP_GRPC_RESOURCE_EXHAUSTED, "more than 16 batches in one call");
  if (r->sequence == 0)
    REFUSE(CP_GRPC_INVALID_ARGUMENT, "sequence is missing");
  uint32_t cap = max_counters < CP_OUTCOMES_PER_BATCH_MAX
                     ? max_counters
                     : CP_OUTCOMES_PER_BATCH_MAX;
  if (r->n_outcomes > cap)
    REFUSE(CP_GRPC_RESOURCE_EXHAUSTED,
           "more outcomes in a batch than min(512, max_runtime_counters)");
  for (size_t i = 0; i < r->n_outcomes; i++) {
    const Controlplane__V1__Outcome *o = r->outcomes[i];
    if (!cp_id_ok(o->proxy_id))
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an outcome's proxy_id is malformed");
    if (o->stage < CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL ||
        o->stage > CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL)
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an outcome's stage is unknown");
    if (o->result < CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS ||
        o->result > CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT)
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an outcome's result is unknown");
    if (o->rule_id && *o->rule_id && !cp_id_ok(o->rule_id))
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an outcome's rule_id is malformed");
    if (!timestamp_ok(o->observed_at))
      REFUSE(CP_GRPC_INVALID_ARGUMENT, "an outcome's observed_at is malformed");
  }
  return 0;
}

int cp_runtime_digest(const Controlplane__V1__ReportRuntimeRequest *r,
                      uint8_t *buf, size_t cap, uint8_t out[32]) {
  Controlplane__V1__ReportRuntimeRequest m = *r;
  m.worker_id = (char *)"";
  m.session_id = (char *)"";
  size_t n = controlplane__v1__report_runtime_request__get_packed_size(&m);
  if (n > cap)
    return -1;
  controlplane__v1__report_runtime_request__pack(&m, buf);
  SHA256(buf, n, out);
  return 0;
}

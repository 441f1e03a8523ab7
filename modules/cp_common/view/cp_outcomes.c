/* SPDX-License-Identifier: BSD-2-Clause */
/* The outcome queue, its batches and their digest (cp_outcomes.h). */
#include "cp_outcomes.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <proxyhost/abi.h>

int cp_outq_init(cp_outq *q, uint32_t capacity) {
  memset(q, 0, sizeof *q);
  if (capacity < CP_OUTQ_CAPACITY_MIN || capacity > CP_OUTQ_CAPACITY_MAX)
    return PH_EINVAL;
  q->ring = calloc(capacity, sizeof *q->ring);
  q->batches = calloc(capacity, sizeof *q->batches);
  q->msg = calloc(CP_OUTQ_BATCH_MAX, sizeof *q->msg);
  q->msg_p = calloc(CP_OUTQ_BATCH_MAX, sizeof *q->msg_p);
  q->lat = calloc(CP_OUTQ_BATCH_MAX, sizeof *q->lat);
  q->obs = calloc(CP_OUTQ_BATCH_MAX, sizeof *q->obs);
  if (!q->ring || !q->batches || !q->msg || !q->msg_p || !q->lat ||
      !q->obs) {
    cp_outq_free(q);
    return PH_ENOMEM;
  }
  q->cap = capacity;
  q->next_seq = 1;
  return PH_OK;
}

void cp_outq_free(cp_outq *q) {
  free(q->ring);
  free(q->batches);
  free(q->msg);
  free(q->msg_p);
  free(q->lat);
  free(q->obs);
  memset(q, 0, sizeof *q);
}

/* ---- push: the hot path ---------------------------------------------- */

/* The length of an id, or -1 when it is out of bounds. */
static long id_len(const char *s, int required) {
  if (!s)
    return required ? -1 : 0;
  size_t n = strnlen(s, PH_POOL_ID_MAX + 1);
  return n > PH_POOL_ID_MAX || (required && n == 0) ? -1 : (long)n;
}

static int stage_ok(int s) {
  return s >= CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL &&
         s <= CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_TUNNEL;
}

static int result_ok(int r) {
  return r >= CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS &&
         r <= CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT;
}

int cp_outq_push(cp_outq *q, const cp_outcome_in *o) {
  long pl = o ? id_len(o->proxy_id, 1) : -1;
  long rl = o ? id_len(o->rule_id, 0) : -1;
  if (pl < 0 || rl < 0 || !stage_ok(o->stage) || !result_ok(o->result) ||
      o->latency_us < 0) {
    q->invalid++;
    return PH_EINVAL;
  }
  if (q->tail - q->head >= q->cap) {
    q->dropped_full++;
    return PH_EFULL;
  }
  cp_outcome *r = &q->ring[q->tail % q->cap];
  memcpy(r->proxy_id, o->proxy_id, (size_t)pl);
  r->proxy_id[pl] = '\0';
  if (rl)
    memcpy(r->rule_id, o->rule_id, (size_t)rl);
  r->rule_id[rl] = '\0';
  r->proxy_index = o->proxy_index;
  r->stage = (uint8_t)o->stage;
  r->result = (uint8_t)o->result;
  r->latency_us = o->latency_us;
  r->observed_at_ms = o->observed_at_ms;
  q->tail++;
  return PH_OK;
}

/* ---- batches ---------------------------------------------------------- */

/* Fills the scratch message with batch b (ids empty). */
static void batch_message(cp_outq *q, const cp_outbatch *b,
                          Controlplane__V1__ReportOutcomesRequest *req) {
  controlplane__v1__report_outcomes_request__init(req);
  req->sequence = b->sequence;
  req->n_outcomes = b->n;
  req->outcomes = q->msg_p;
  for (uint32_t i = 0; i < b->n; i++) {
    const cp_outcome *r = &q->ring[(b->first + i) % q->cap];
    Controlplane__V1__Outcome *m = &q->msg[i];
    controlplane__v1__outcome__init(m);
    google__protobuf__duration__init(&q->lat[i]);
    google__protobuf__timestamp__init(&q->obs[i]);
    m->proxy_id = (char *)r->proxy_id;
    m->rule_id = (char *)r->rule_id;
    m->stage = (Controlplane__V1__OutcomeStage)r->stage;
    m->result = (Controlplane__V1__OutcomeResult)r->result;
    q->lat[i].seconds = r->latency_us / 1000000;
    q->lat[i].nanos = (int32_t)(r->latency_us % 1000000) * 1000;
    int64_t ms = r->observed_at_ms > 0 ? r->observed_at_ms : 0;
    q->obs[i].seconds = ms / 1000;
    q->obs[i].nanos = (int32_t)(ms % 1000) * 1000000;
    m->latency = &q->lat[i];
    m->observed_at = &q->obs[i];
    q->msg_p[i] = m;
  }
}

uint32_t cp_outq_cut(cp_outq *q, int partial) {
  if (!q->batch_size)
    return 0;
  uint32_t made = 0;
  while (q->tail > q->cut) {
    uint64_t avail = q->tail - q->cut;
    if (avail < q->batch_size && !partial)
      break;
    cp_outbatch *b = &q->batches[q->b_tail % q->cap];
    memset(b, 0, sizeof *b);
    b->sequence = q->next_seq;
    b->first = q->cut;
    b->n = (uint32_t)(avail < q->batch_size ? avail : q->batch_size);
    Controlplane__V1__ReportOutcomesRequest req;
    batch_message(q, b, &req);
    if (cp_outcome_digest(&req, b->digest) != PH_OK)
      break; /* out of memory: cut it at the next call */
    q->next_seq++;
    q->cut += b->n;
    q->b_tail++;
    made++;
  }
  return made;
}

uint32_t cp_outq_ready(cp_outq *q, const cp_outbatch **out, uint32_t max) {
  if (max > CP_OUTQ_BATCHES_PER_CALL)
    max = CP_OUTQ_BATCHES_PER_CALL;
  uint32_t n = 0;
  for (uint64_t i = q->b_head; i < q->b_tail && n < max; i++)
    out[n++] = &q->batches[i % q->cap];
  if (q->b_sent < q->b_head + n)
    q->b_sent = q->b_head + n;
  return n;
}

static void with_ids(Controlplane__V1__ReportOutcomesRequest *req,
                     const char *worker_id, const char *session_id) {
  req->worker_id = (char *)(worker_id ? worker_id : "");
  req->session_id = (char *)(session_id ? session_id : "");
}

size_t cp_outq_packed_size(cp_outq *q, const cp_outbatch *b,
                           const char *worker_id, const char *session_id) {
  Controlplane__V1__ReportOutcomesRequest req;
  batch_message(q, b, &req);
  with_ids(&req, worker_id, session_id);
  return controlplane__v1__report_outcomes_request__get_packed_size(&req);
}

size_t cp_outq_pack(cp_outq *q, const cp_outbatch *b, const char *worker_id,
                    const char *session_id, uint8_t *out) {
  Controlplane__V1__ReportOutcomesRequest req;
  batch_message(q, b, &req);
  with_ids(&req, worker_id, session_id);
  return controlplane__v1__report_outcomes_request__pack(&req, out);
}

int cp_outq_ack(cp_outq *q, uint64_t acknowledged_sequence) {
  if (acknowledged_sequence >= q->next_seq)
    return PH_EINVAL;
  int freed = 0;
  while (q->b_head < q->b_tail &&
         q->batches[q->b_head % q->cap].sequence <= acknowledged_sequence) {
    const cp_outbatch *b = &q->batches[q->b_head % q->cap];
    q->head = b->first + b->n;
    q->b_head++;
    freed++;
  }
  if (q->b_sent < q->b_head)
    q->b_sent = q->b_head;
  return freed;
}

int cp_outq_session(cp_outq *q, uint32_t max_runtime_counters) {
  if (max_runtime_counters == 0)
    return PH_EINVAL;
  /* Sent and unacknowledged: dropped (see the header for why). */
  while (q->b_head < q->b_sent) {
    const cp_outbatch *b = &q->batches[q->b_head % q->cap];
    q->dropped_session += b->n;
    q->head = b->first + b->n;
    q->b_head++;
  }
  /* Cut, never sent: back to the queue, cut again under new numbers. */
  if (q->b_head < q->b_tail)
    q->cut = q->batches[q->b_head % q->cap].first;
  q->b_head = q->b_sent = q->b_tail = 0;
  q->next_seq = 1;
  q->batch_size = max_runtime_counters < CP_OUTQ_BATCH_MAX
                      ? max_runtime_counters
                      : CP_OUTQ_BATCH_MAX;
  return PH_OK;
}

void cp_outq_stats_get(const cp_outq *q, cp_outq_stats *st) {
  memset(st, 0, sizeof *st);
  st->queued = q->tail - q->cut;
  st->in_batches = q->cut - q->head;
  st->batches = q->b_tail - q->b_head;
  st->dropped_full = q->dropped_full;
  st->dropped_session = q->dropped_session;
  st->invalid = q->invalid;
  st->next_sequence = q->next_seq;
}

/* ---- the digest -------------------------------------------------------- */

/* protobuf-c packs into this buffer, which only feeds the hash: no copy
 * of the packed batch is ever made. */
typedef struct sha_buffer {
  ProtobufCBuffer base;
  EVP_MD_CTX *ctx;
  int failed;
} sha_buffer;

static void sha_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data) {
  sha_buffer *s = (sha_buffer *)buf;
  if (!s->failed && EVP_DigestUpdate(s->ctx, data, len) != 1)
    s->failed = 1;
}

/* SHA-256 of m packed (its id fields already emptied by the caller). */
static int digest_packed(const ProtobufCMessage *m, uint8_t out[32]) {
  sha_buffer s = {{sha_append}, EVP_MD_CTX_new(), 0};
  if (!s.ctx)
    return PH_ENOMEM;
  unsigned int len = 0;
  int rc = PH_ENOMEM;
  if (EVP_DigestInit_ex(s.ctx, EVP_sha256(), NULL) == 1) {
    protobuf_c_message_pack_to_buffer(m, &s.base);
    if (!s.failed && EVP_DigestFinal_ex(s.ctx, out, &len) == 1 && len == 32)
      rc = PH_OK;
  }
  EVP_MD_CTX_free(s.ctx);
  return rc;
}

int cp_outcome_digest(const Controlplane__V1__ReportOutcomesRequest *req,
                      uint8_t out[32]) {
  if (!req)
    return PH_EINVAL;
  Controlplane__V1__ReportOutcomesRequest copy = *req;
  with_ids(&copy, "", "");
  return digest_packed(&copy.base, out);
}

int cp_observation_digest(
    const Controlplane__V1__ReportObservationsRequest *req, uint8_t out[32]) {
  if (!req)
    return PH_EINVAL;
  Controlplane__V1__ReportObservationsRequest copy = *req;
  copy.checker_id = (char *)"";
  copy.session_id = (char *)"";
  return digest_packed(&copy.base, out);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The gateway's outcome queue (modules/cp_common/view/cp_outcomes.c): a full
 * queue only counts drops; batches of min(512, max_runtime_counters);
 * at most 16 batches for one call; a batch resent packs to the same bytes
 * and digest; ack frees; a new session renumbers and drops what the old
 * one was sent; the digest is over the request with the ids empty.
 *
 * `test_cp_outcomes --dump DIR` writes one batch for
 * t/integration/cp_outcome_digest.sh, which checks the digest with
 * Python's hashlib and protobuf: DIR/wire.bin (the request as sent, with
 * ids), DIR/digest_input.bin (packed with the ids empty) and
 * DIR/digest.hex. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "cp_common/view/cp_outcomes.h"
#include "tap.h"

static const int64_t T0 = 1800000000000;

static cp_outcome_in outcome(uint32_t i) {
  static char id[32];
  snprintf(id, sizeof id, "px-%u", i % 7);
  cp_outcome_in o = {
      .proxy_index = i % 7,
      .proxy_id = id,
      .rule_id = "rule-1",
      .stage = CONTROLPLANE__V1__OUTCOME_STAGE__OUTCOME_STAGE_DIAL + (int)(i % 4),
      .result = CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS +
                (int)(i % 3),
      .latency_us = 1500 + i,
      .observed_at_ms = T0 + i,
  };
  return o;
}

static uint32_t push_n(cp_outq *q, uint32_t from, uint32_t n) {
  uint32_t okn = 0;
  for (uint32_t i = 0; i < n; i++) {
    cp_outcome_in o = outcome(from + i);
    okn += cp_outq_push(q, &o) == PH_OK;
  }
  return okn;
}

static void test_bounds(void) {
  cp_outq q;
  is_int(cp_outq_init(&q, CP_OUTQ_CAPACITY_MIN - 1), PH_EINVAL,
         "CP-5-7: capacity below 1024 refused");
  is_int(cp_outq_init(&q, CP_OUTQ_CAPACITY_MAX + 1), PH_EINVAL,
         "CP-5-7: capacity above 1048576 refused");
  is_int(cp_outq_init(&q, CP_OUTQ_CAPACITY_DEFAULT), PH_OK,
         "CP-5-7: the default capacity 65536");
  is_int(q.cap, 65536, "capacity");
  cp_outq_free(&q);
}

static void test_full_drops(void) {
  cp_outq q;
  cp_outq_init(&q, 1024);
  is_int(push_n(&q, 0, 1024), 1024, "1024 pushes fill a 1024 queue");
  cp_outcome_in o = outcome(5000);
  is_int(cp_outq_push(&q, &o), PH_EFULL,
         "CP-5-10: a push into a full queue returns at once (PH_EFULL)");
  is_int(push_n(&q, 5001, 99), 0, "and so do 99 more");
  cp_outq_stats st;
  cp_outq_stats_get(&q, &st);
  is_int(st.dropped_full, 100, "CP-1-33, CP-5-10: each one counted as a drop");
  is_int(st.queued, 1024, "the queued records are kept");
  /* Batches awaiting acknowledgement hold their slots: still full. */
  cp_outq_session(&q, 512);
  is_int(cp_outq_cut(&q, 0), 2, "two batches of 512 cut");
  is_int(cp_outq_push(&q, &o), PH_EFULL,
         "unacknowledged batches keep their records: still full");
  is_int(cp_outq_ack(&q, 1), 1, "ack 1 frees one batch");
  is_int(push_n(&q, 6000, 600), 512, "512 slots free again, the rest drops");
  cp_outq_stats_get(&q, &st);
  is_int(st.dropped_full, 189, "drops counted (100 + 1 + 88)");

  cp_outcome_in bad = outcome(1);
  bad.stage = 0;
  is_int(cp_outq_push(&q, &bad), PH_EINVAL, "stage UNSPECIFIED refused");
  bad = outcome(1);
  bad.result = 9;
  is_int(cp_outq_push(&q, &bad), PH_EINVAL, "an unknown result refused");
  char longid[PH_POOL_ID_MAX + 2];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  bad = outcome(1);
  bad.proxy_id = longid;
  is_int(cp_outq_push(&q, &bad), PH_EINVAL, "a proxy id over 128 refused");
  bad.proxy_id = NULL;
  is_int(cp_outq_push(&q, &bad), PH_EINVAL, "no proxy id refused");
  cp_outq_stats_get(&q, &st);
  is_int(st.invalid, 4, "malformed pushes counted apart from drops");
  cp_outq_free(&q);
}

static void test_batch_size(void) {
  cp_outq q;
  cp_outq_init(&q, 4096);
  push_n(&q, 0, 1100);
  is_int(cp_outq_cut(&q, 1), 0, "nothing is cut before a session");
  cp_outq_session(&q, 100000);
  const cp_outbatch *b[16];
  is_int(cp_outq_cut(&q, 0), 2, "max_runtime_counters 100000: full batches");
  uint32_t n = cp_outq_ready(&q, b, 16);
  ok(n == 2 && b[0]->n == 512 && b[1]->n == 512,
     "CP-5-8: min(512, 100000) = 512 outcomes a batch");
  ok(n == 2 && b[0]->sequence == 1 && b[1]->sequence == 2,
     "CP-5-1: sequences 1 and 2");
  is_int(cp_outq_cut(&q, 0), 0, "76 left: no full batch");
  is_int(cp_outq_cut(&q, 1), 1, "a flush cuts the partial batch");
  n = cp_outq_ready(&q, b, 16);
  ok(n == 3 && b[2]->n == 76 && b[2]->sequence == 3, "of 76, sequence 3");
  cp_outq_free(&q);

  cp_outq_init(&q, 4096);
  cp_outq_session(&q, 100);
  push_n(&q, 0, 350);
  is_int(cp_outq_cut(&q, 0), 3, "max_runtime_counters 100: three batches");
  n = cp_outq_ready(&q, b, 16);
  ok(n == 3 && b[0]->n == 100 && b[2]->n == 100,
     "CP-5-8: min(512, 100) = 100 outcomes a batch");
  is_int(cp_outq_session(&q, 0), PH_EINVAL,
         "max_runtime_counters 0 refused");
  cp_outq_free(&q);
}

static void test_call_cap(void) {
  cp_outq q;
  cp_outq_init(&q, 4096);
  cp_outq_session(&q, 10);
  push_n(&q, 0, 400);
  is_int(cp_outq_cut(&q, 0), 40, "40 batches of 10");
  const cp_outbatch *b[64];
  uint32_t n = cp_outq_ready(&q, b, 64);
  is_int(n, 16, "CP-5-9: at most 16 batches for one call");
  ok(b[0]->sequence == 1 && b[15]->sequence == 16, "the 16 oldest, in order");
  n = cp_outq_ready(&q, b, 64);
  ok(n == 16 && b[0]->sequence == 1,
     "unacknowledged: the next call starts with the same batches");
  is_int(cp_outq_ack(&q, 16), 16, "ack 16 frees 16 batches");
  n = cp_outq_ready(&q, b, 64);
  ok(n == 16 && b[0]->sequence == 17 && b[15]->sequence == 32,
     "then 17..32");
  is_int(cp_outq_ack(&q, 10), 0, "an older ack frees nothing");
  is_int(cp_outq_ack(&q, 41), PH_EINVAL,
         "an ack of a sequence never cut is refused");
  n = cp_outq_ready(&q, b, 3);
  is_int(n, 3, "a smaller max is honoured");
  is_int(cp_outq_ack(&q, 40), 24, "ack 40 frees the rest");
  cp_outq_stats st;
  cp_outq_stats_get(&q, &st);
  ok(st.batches == 0 && st.in_batches == 0 && st.queued == 0,
     "CP-5-1: everything acknowledged is freed");
  is_int(cp_outq_ready(&q, b, 16), 0, "nothing ready");
  cp_outq_free(&q);
}

static void test_resend_identical(void) {
  cp_outq q;
  cp_outq_init(&q, 2048);
  cp_outq_session(&q, 512);
  push_n(&q, 0, 700);
  cp_outq_cut(&q, 1);
  const cp_outbatch *b[16];
  cp_outq_ready(&q, b, 16);
  size_t n1 = cp_outq_packed_size(&q, b[1], "w1", "s1");
  uint8_t *first = malloc(n1);
  ok(first && cp_outq_pack(&q, b[1], "w1", "s1", first) == n1,
     "batch 2 packs");
  uint8_t digest[32];
  memcpy(digest, b[1]->digest, 32);
  /* More traffic, more cuts and a ring that moves on: batch 2 stays. */
  cp_outq_ack(&q, 1);
  push_n(&q, 700, 1300);
  cp_outq_cut(&q, 1);
  cp_outq_ready(&q, b, 16);
  ok(b[0]->sequence == 2, "batch 2 is the oldest unacknowledged");
  size_t n2 = cp_outq_packed_size(&q, b[0], "w1", "s1");
  uint8_t *again = malloc(n2);
  ok(again && n2 == n1 && cp_outq_pack(&q, b[0], "w1", "s1", again) == n2 &&
         memcmp(first, again, n1) == 0,
     "CP-5-15: resent, it packs to exactly the same bytes");
  ok(memcmp(digest, b[0]->digest, 32) == 0, "with the same digest");
  Controlplane__V1__ReportOutcomesRequest *req =
      controlplane__v1__report_outcomes_request__unpack(NULL, n2, again);
  uint8_t d2[32];
  ok(req && cp_outcome_digest(req, d2) == PH_OK && memcmp(d2, digest, 32) == 0,
     "CP-5-12: the controller's digest of what it receives equals the cut's");
  ok(req && strcmp(req->worker_id, "w1") == 0 &&
         strcmp(req->session_id, "s1") == 0 && req->sequence == 2 &&
         req->n_outcomes == 188,
     "the request carries the ids, the sequence and 188 outcomes");
  if (req && req->n_outcomes) {
    const Controlplane__V1__Outcome *o = req->outcomes[0];
    cp_outcome_in want = outcome(512);
    ok(strcmp(o->proxy_id, want.proxy_id) == 0 &&
           strcmp(o->rule_id, "rule-1") == 0 && (int)o->stage == want.stage &&
           (int)o->result == want.result && o->latency &&
           o->latency->seconds == 0 &&
           o->latency->nanos == (int32_t)want.latency_us * 1000 &&
           o->observed_at &&
           o->observed_at->seconds * 1000 + o->observed_at->nanos / 1000000 ==
               want.observed_at_ms,
       "its first outcome is the 513th pushed, every field (CP-5-6)");
  }
  /* The ids are not part of the digest; the content is. */
  if (req) {
    char *own_w = req->worker_id, *own_s = req->session_id;
    req->worker_id = "another";
    req->session_id = "other-session";
    ok(cp_outcome_digest(req, d2) == PH_OK && memcmp(d2, digest, 32) == 0,
       "the digest ignores worker_id and session_id");
    req->outcomes[0]->result =
        CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT ==
                req->outcomes[0]->result
            ? CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_SUCCESS
            : CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT;
    ok(cp_outcome_digest(req, d2) == PH_OK && memcmp(d2, digest, 32) != 0,
       "CP-5-13: a different outcome makes a different digest");
    ok(strcmp(req->worker_id, "another") == 0,
       "the digest leaves the request as it was");
    req->worker_id = own_w; /* protobuf-c's, freed with the message */
    req->session_id = own_s;
    controlplane__v1__report_outcomes_request__free_unpacked(req, NULL);
  }
  free(first);
  free(again);
  cp_outq_free(&q);
}

static void test_session_reset(void) {
  cp_outq q;
  cp_outq_init(&q, 2048);
  cp_outq_session(&q, 100);
  push_n(&q, 0, 550);
  is_int(cp_outq_cut(&q, 0), 5, "five batches of 100 (50 left queued)");
  const cp_outbatch *b[16];
  is_int(cp_outq_ready(&q, b, 2), 2, "batches 1 and 2 handed to a call");
  is_int(cp_outq_ack(&q, 1), 1, "batch 1 acknowledged");
  /* A new session: batch 2 was sent, never acknowledged; 3..5 never sent. */
  is_int(cp_outq_session(&q, 200), PH_OK, "CP-5-18: a new session");
  cp_outq_stats st;
  cp_outq_stats_get(&q, &st);
  is_int(st.dropped_session, 100,
         "the old session's sent, unacknowledged batch is dropped, counted");
  is_int(st.batches, 0, "no batch of the old session remains");
  is_int(st.queued, 350, "its unsent batches and the queued records remain");
  is_int(st.next_sequence, 1, "CP-5-18: sequences start at 1 again");
  is_int(cp_outq_cut(&q, 1), 2, "cut again: 200 + 150");
  uint32_t n = cp_outq_ready(&q, b, 16);
  cp_outcome_in first = outcome(200);
  ok(n == 2 && b[0]->sequence == 1 && b[0]->n == 200 && b[1]->n == 150 &&
         strcmp(q.ring[b[0]->first % q.cap].proxy_id, first.proxy_id) == 0 &&
         q.ring[b[0]->first % q.cap].observed_at_ms == first.observed_at_ms,
     "the new session's batch 1 starts with the first unsent outcome");
  is_int(cp_outq_ack(&q, 2), 2, "acknowledged under the new numbering");
  cp_outq_stats_get(&q, &st);
  ok(st.queued == 0 && st.in_batches == 0, "all freed");
  /* A session change with nothing sent drops nothing. */
  push_n(&q, 0, 10);
  cp_outq_cut(&q, 1);
  cp_outq_session(&q, 200);
  cp_outq_stats_get(&q, &st);
  ok(st.dropped_session == 100 && st.queued == 10,
     "cut but never sent: kept for the new session");
  cp_outq_free(&q);
}

/* push allocates nothing, full or not (glibc's mallinfo2; 0s under ASan). */
static void test_push_no_allocation(void) {
  cp_outq q;
  cp_outq_init(&q, 1024);
  cp_outcome_in o = outcome(3);
  struct mallinfo2 before = mallinfo2();
  uint32_t okn = 0;
  for (int i = 0; i < 3000; i++)
    okn += cp_outq_push(&q, &o) == PH_OK;
  struct mallinfo2 after = mallinfo2();
  is_int(okn, 1024, "1024 accepted, 1976 dropped");
  ok(after.uordblks == before.uordblks && after.hblkhd == before.hblkhd,
     "CP-1-33: push allocates nothing, full or not");
  cp_outq_free(&q);
}

static int write_file(const char *dir, const char *name, const void *p,
                      size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  int rc = fwrite(p, 1, n, f) == n ? 0 : -1;
  return fclose(f) == 0 ? rc : -1;
}

/* One batch of 37 outcomes, with a latency over a second and an
 * observation with sub-second parts, for the shell test. */
static int dump(const char *dir) {
  cp_outq q;
  if (cp_outq_init(&q, 1024) != PH_OK)
    return 1;
  cp_outq_session(&q, 37);
  for (uint32_t i = 0; i < 40; i++) {
    cp_outcome_in o = outcome(i);
    o.latency_us = 1234567 + i;
    cp_outq_push(&q, &o);
  }
  cp_outq_cut(&q, 0);
  const cp_outbatch *b[1];
  if (cp_outq_ready(&q, b, 1) != 1)
    return 1;
  size_t n = cp_outq_packed_size(&q, b[0], "worker-7", "0123456789abcdef");
  size_t m = cp_outq_packed_size(&q, b[0], "", "");
  uint8_t *wire = malloc(n), *input = malloc(m);
  if (!wire || !input)
    return 1;
  cp_outq_pack(&q, b[0], "worker-7", "0123456789abcdef", wire);
  cp_outq_pack(&q, b[0], "", "", input);
  char hex[65];
  for (int i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", b[0]->digest[i]);
  int rc = write_file(dir, "wire.bin", wire, n) ||
           write_file(dir, "digest_input.bin", input, m) ||
           write_file(dir, "digest.hex", hex, 64);
  free(wire);
  free(input);
  cp_outq_free(&q);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--dump") == 0)
    return dump(argv[2]);
  plan_lazy();
  test_bounds();
  test_full_drops();
  test_batch_size();
  test_call_cap();
  test_resend_identical();
  test_session_reset();
  test_push_no_allocation();
  return done_testing();
}

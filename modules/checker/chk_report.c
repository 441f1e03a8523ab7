/* SPDX-License-Identifier: BSD-2-Clause */
/* The observation queue (chk_report.h). */
#include <stdlib.h>
#include <string.h>

#include <proxyhost/abi.h>

#include "chk_report.h"

int chk_report_init(chk_report *r, uint32_t cap, uint32_t batch_max) {
  memset(r, 0, sizeof(*r));
  r->ring = calloc(cap, sizeof(*r->ring));
  r->batch = calloc(batch_max, sizeof(*r->batch));
  if (!r->ring || !r->batch) {
    chk_report_free(r);
    return PH_ENOMEM;
  }
  r->cap = cap;
  r->batch_max = batch_max;
  return PH_OK;
}

void chk_report_free(chk_report *r) {
  free(r->ring);
  free(r->batch);
  cp_buf_free(&r->packed);
  r->ring = r->batch = NULL;
}

int chk_report_push(chk_report *r, const chk_obs *o) {
  if (r->len == r->cap) {
    r->dropped++;
    return -1;
  }
  r->ring[(r->head + r->len) % r->cap] = *o;
  r->len++;
  return 0;
}

void chk_report_session(chk_report *r) {
  /* Back at the head, newest first so that the order stays; what does
   * not fit (the queue filled meanwhile) is dropped. */
  for (uint32_t i = r->batch_n; i-- > 0;) {
    if (r->len == r->cap) {
      r->dropped++;
      continue;
    }
    r->head = (r->head + r->cap - 1) % r->cap;
    r->ring[r->head] = r->batch[i];
    r->len++;
  }
  r->batch_n = 0;
  cp_buf_free(&r->packed);
  r->seq = 0;
}

int chk_report_next(chk_report *r, const char *checker, const char *session,
                    const cp_buf **bytes) {
  if (!r->packed.data) {
    if (!r->len)
      return 0;
    uint32_t n = r->len < r->batch_max ? r->len : r->batch_max;
    for (uint32_t i = 0; i < n; i++)
      r->batch[i] = r->ring[(r->head + i) % r->cap];
    if (chk_pack_observations(checker, session, r->seq + 1, r->batch, n,
                              &r->packed, r->digest) != PH_OK)
      return -1;
    r->head = (r->head + n) % r->cap;
    r->len -= n;
    r->batch_n = n;
    r->seq++;
  }
  *bytes = &r->packed;
  return 1;
}

int chk_report_ack(chk_report *r, uint64_t acked) {
  if (!r->packed.data || acked < r->seq)
    return 0;
  cp_buf_free(&r->packed);
  r->batch_n = 0;
  return 1;
}

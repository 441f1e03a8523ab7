/* SPDX-License-Identifier: BSD-2-Clause */
/* Timestamp and Duration conversions of cp_snapshot_time.h. */
#include "cp_snapshot_time.h"

#include <stddef.h>

int cp_ts_ok(const Google__Protobuf__Timestamp *t) {
  return t && t->nanos >= 0 && t->nanos <= 999999999 &&
         t->seconds >= CP_TS_MIN_SECONDS && t->seconds <= CP_TS_MAX_SECONDS;
}

int cp_ts_to_ms(const Google__Protobuf__Timestamp *t, int64_t *ms) {
  if (!cp_ts_ok(t))
    return 0;
  /* |seconds| < 2^38, so seconds * 1000 fits easily. */
  *ms = t->seconds * 1000 + t->nanos / 1000000;
  return 1;
}

void cp_ms_to_ts(int64_t ms, Google__Protobuf__Timestamp *t) {
  int64_t s = ms / 1000, r = ms % 1000;
  if (r < 0) {
    r += 1000;
    s -= 1;
  }
  t->seconds = s;
  t->nanos = (int32_t)(r * 1000000);
}

int cp_ts_cmp(const Google__Protobuf__Timestamp *a,
              const Google__Protobuf__Timestamp *b) {
  if (a->seconds != b->seconds)
    return a->seconds < b->seconds ? -1 : 1;
  if (a->nanos != b->nanos)
    return a->nanos < b->nanos ? -1 : 1;
  return 0;
}

int cp_dur_ok(const Google__Protobuf__Duration *d) {
  if (!d || d->seconds > CP_DUR_MAX_SECONDS ||
      d->seconds < -CP_DUR_MAX_SECONDS || d->nanos > 999999999 ||
      d->nanos < -999999999)
    return 0;
  return !((d->seconds > 0 && d->nanos < 0) ||
           (d->seconds < 0 && d->nanos > 0));
}

int cp_dur_to_ms(const Google__Protobuf__Duration *d, int64_t *ms) {
  if (!cp_dur_ok(d))
    return 0;
  *ms = d->seconds * 1000 + d->nanos / 1000000;
  return 1;
}

void cp_ms_to_dur(int64_t ms, Google__Protobuf__Duration *d) {
  d->seconds = ms / 1000; /* truncation: nanos takes the sign of seconds */
  d->nanos = (int32_t)((ms % 1000) * 1000000);
}

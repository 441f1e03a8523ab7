/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unix milliseconds (what the C code computes with) to and from the wire's
 * google.protobuf.Timestamp and Duration, and their validity: a Timestamp
 * has nanos in [0, 999999999] and seconds within 0001-01-01 ..
 * 9999-12-31T23:59:59Z; a Duration has |seconds| <= 315576000000 and
 * nanos of the same sign with |nanos| <= 999999999 (the types' own
 * documentation). Pure.
 */
#ifndef PH_CP_SNAPSHOT_TIME_H
#define PH_CP_SNAPSHOT_TIME_H

#include <stdint.h>

#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"

#define CP_TS_MIN_SECONDS (-62135596800LL)
#define CP_TS_MAX_SECONDS 253402300799LL
#define CP_DUR_MAX_SECONDS 315576000000LL

/* 1 when t is present and well-formed. */
int cp_ts_ok(const Google__Protobuf__Timestamp *t);
/* t as Unix ms, rounded down (floor): 1 on success, 0 when t is missing
 * or malformed. */
int cp_ts_to_ms(const Google__Protobuf__Timestamp *t, int64_t *ms);
/* ms into *t (floor division: nanos stays in [0, 1e9)). */
void cp_ms_to_ts(int64_t ms, Google__Protobuf__Timestamp *t);
/* -1, 0, 1 for two well-formed timestamps. */
int cp_ts_cmp(const Google__Protobuf__Timestamp *a,
              const Google__Protobuf__Timestamp *b);

int cp_dur_ok(const Google__Protobuf__Duration *d);
/* d as ms, rounded toward zero: 1, or 0 when missing or malformed. */
int cp_dur_to_ms(const Google__Protobuf__Duration *d, int64_t *ms);
void cp_ms_to_dur(int64_t ms, Google__Protobuf__Duration *d);

#endif

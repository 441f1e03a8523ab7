/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-minute ring of open results (ts_opens.h). */
#include <string.h>

#include "ts_opens.h"

static const char *const codes[TS_OPENS_CODES] = {PH_OPEN_CODE_NAMES,
                                                  "canceled"};

static int stage_ix(const char *s) {
  for (int i = 0; i < TS_OPENS_STAGES; i++)
    if (strcmp(ph_open_stage_name(i), s) == 0)
      return i;
  return PH_STAGE_NONE;
}

static int code_ix(const char *c) {
  for (int i = 0; i < TS_OPENS_CODES; i++)
    if (strcmp(codes[i], c) == 0)
      return i;
  return PH_OPEN_INTERNAL_ERROR;
}

void ts_opens_init(ts_opens *o, int64_t now_s) {
  memset(o, 0, sizeof(*o));
  o->start_s = now_s;
  for (int i = 0; i < TS_OPENS_MINUTES; i++)
    o->minute[i] = -1;
}

void ts_opens_count(ts_opens *o, const char *stage, const char *code,
                    int64_t now_s) {
  int64_t min = now_s / 60;
  int slot = (int)(min % TS_OPENS_MINUTES);
  if (o->minute[slot] != min) {
    memset(o->n[slot], 0, sizeof(o->n[slot]));
    o->minute[slot] = min;
  }
  uint32_t *n = &o->n[slot][stage_ix(stage)][code_ix(code)];
  if (*n < UINT32_MAX)
    (*n)++;
}

void ts_opens_walk(const ts_opens *o, int64_t now_s, int64_t *window_s,
                   int (*row)(void *arg, const char *stage, const char *code,
                              uint32_t count),
                   void *arg) {
  int64_t min = now_s / 60;
  int64_t from = (min - (TS_OPENS_MINUTES - 1)) * 60;
  if (from < o->start_s)
    from = o->start_s;
  *window_s = now_s > from ? now_s - from : 0;
  if (!row)
    return;
  for (int s = 0; s < TS_OPENS_STAGES; s++)
    for (int c = 0; c < TS_OPENS_CODES; c++) {
      uint64_t sum = 0;
      for (int i = 0; i < TS_OPENS_MINUTES; i++)
        if (o->minute[i] >= 0 && o->minute[i] > min - TS_OPENS_MINUTES &&
            o->minute[i] <= min)
          sum += o->n[i][s][c];
      if (sum && row(arg, ph_open_stage_name(s), codes[c],
                     sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum))
        return;
    }
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The open results of the last few minutes, by stage and code, for the
 * status page's `opens` panel (issue 28): a ring of TS_OPENS_MINUTES
 * per-minute counters over the stage x code pairs the stream's end line
 * names (the PH_STAGE_* names; the PH_OPEN_* codes and "canceled"), so
 * its size is fixed: nothing a peer sends grows it. Pure: the caller
 * gives the time (seconds, monotonic). Loop thread only.
 */
#ifndef TS_OPENS_H
#define TS_OPENS_H

#include <stdint.h>

#include <proxyhost/connector.h>

#define TS_OPENS_MINUTES 5
#define TS_OPENS_STAGES PH_STAGE_COUNT_
#define TS_OPENS_CODES (PH_OPEN_CODE_COUNT_ + 1) /* + "canceled" */

typedef struct ts_opens {
  int64_t start_s; /* the first count's time: the window never reaches
                      before it */
  int64_t minute[TS_OPENS_MINUTES]; /* the minute each slot counts, -1 */
  uint32_t n[TS_OPENS_MINUTES][TS_OPENS_STAGES][TS_OPENS_CODES];
} ts_opens;

void ts_opens_init(ts_opens *o, int64_t now_s);
/* One stream ended at stage with code (the end line's names); a name
 * outside the sets counts as "none" / "internal_error". */
void ts_opens_count(ts_opens *o, const char *stage, const char *code,
                    int64_t now_s);
/* The pairs with a count in the window, in stage then code order: calls
 * row(arg, stage, code, count) until it returns nonzero. *window_s: the
 * seconds the counts cover (at most TS_OPENS_MINUTES minutes); row may
 * be NULL (the window only). */
void ts_opens_walk(const ts_opens *o, int64_t now_s, int64_t *window_s,
                   int (*row)(void *arg, const char *stage, const char *code,
                              uint32_t count),
                   void *arg);

#endif

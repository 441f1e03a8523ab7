/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The controller's status panels (issue 28, SDK 1.7): gateways, checkers
 * and proxies, filled on the loop thread from what the controller holds
 * in memory (cs_status.c): its WatchSnapshots streams with the last
 * snapshot each sent and the last runtime report it accepted, its live
 * checkers, the pool's rows and the reducer's items. Nothing is read
 * from Redis or the store on a page view.
 */
#ifndef CS_STATUS_H
#define CS_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cs.h"

/* One proxy's counters from a gateway's accepted runtime report. */
typedef struct cs_count {
  char proxy_id[PH_POOL_ID_MAX + 1];
  uint32_t active, reserved;
} cs_count;

/* One WatchSnapshots stream, as the panels see it. */
typedef struct cs_gw_view {
  const char *worker, *session;
  const char *zone; /* what Redis holds for the session ("": not read yet) */
  int64_t report_ms; /* its last accepted runtime report (mono_ms), 0 none */
  int acked;         /* the worker accepted the last snapshot sent */
  const Controlplane__V1__WorkerSnapshot *last; /* NULL: none sent yet */
  const cs_count *counts; /* sorted by proxy_id */
  size_t n_counts;
} cs_gw_view;

/* Calls fn for each claimed live stream, oldest first, until it returns
 * non-zero (cs_watch.c). */
void cs_watch_each(cs *m, int (*fn)(void *arg, const cs_gw_view *v),
                   void *arg);
/* The authority accepted a runtime report of (worker, session): its
 * streams keep its n counters (copied, at most max_runtime_counters) and
 * the time (cs_watch.c). */
void cs_watch_reported(cs *m, const char *worker, const char *session,
                       const cs_count *counts, size_t n);

/* Registers the panels (init; a 1.6 host has none): PH_OK or an error. */
int cs_status_init(cs *m);

#endif

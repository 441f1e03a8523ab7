/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agents that left this node lately, for the status page's agents
 * table (issue 28: offline agents with when they were last seen): the
 * last TS_GONE_MAX agents whose last connection here closed, one entry
 * per name (a second leave moves it to the newest), the oldest dropped
 * when full, an agent taken out when it connects again. Its size is
 * fixed: nothing a peer sends grows it. Pure: the caller gives the time
 * (Unix seconds, wall clock: shown as a date). Loop thread only.
 */
#ifndef TS_GONE_H
#define TS_GONE_H

#include <stdint.h>

#include <proxyhost/authz_store.h>

#define TS_GONE_MAX 256

typedef struct ts_gone_ent {
  char name[PH_AZ_NAME_MAX + 1];
  int64_t at_s; /* when its last connection here closed (Unix seconds) */
} ts_gone_ent;

typedef struct ts_gone {
  uint32_t n;                /* entries, oldest first */
  ts_gone_ent e[TS_GONE_MAX];
} ts_gone;

/* name left at at_s (a longer name is cut at PH_AZ_NAME_MAX bytes). */
void ts_gone_add(ts_gone *g, const char *name, int64_t at_s);
/* name connected again: no longer listed. */
void ts_gone_drop(ts_gone *g, const char *name);
/* Newest first: row(arg, name, at_s) until it returns nonzero. */
void ts_gone_walk(const ts_gone *g,
                  int (*row)(void *arg, const char *name, int64_t at_s),
                  void *arg);

#endif

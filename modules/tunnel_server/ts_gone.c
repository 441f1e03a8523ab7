/* SPDX-License-Identifier: BSD-2-Clause */
/* See ts_gone.h. */
#include "ts_gone.h"

#include <stdio.h>
#include <string.h>

static void take_out(ts_gone *g, uint32_t i) {
  memmove(&g->e[i], &g->e[i + 1], (g->n - i - 1) * sizeof(g->e[0]));
  g->n--;
}

void ts_gone_drop(ts_gone *g, const char *name) {
  for (uint32_t i = 0; i < g->n; i++)
    if (strncmp(g->e[i].name, name, PH_AZ_NAME_MAX) == 0) {
      take_out(g, i);
      return; /* one entry per name */
    }
}

void ts_gone_add(ts_gone *g, const char *name, int64_t at_s) {
  ts_gone_drop(g, name);
  if (g->n == TS_GONE_MAX)
    take_out(g, 0); /* the oldest */
  ts_gone_ent *e = &g->e[g->n++];
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->at_s = at_s;
}

void ts_gone_walk(const ts_gone *g,
                  int (*row)(void *arg, const char *name, int64_t at_s),
                  void *arg) {
  for (uint32_t i = g->n; i > 0; i--)
    if (row(arg, g->e[i - 1].name, g->e[i - 1].at_s))
      return;
}

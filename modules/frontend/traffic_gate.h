/* SPDX-License-Identifier: BSD-2-Clause */
/* "traffic.gate" (issue 23 item 9, CP-3-18): whether a connector can take
 * new traffic at all, for the frontends in front of it. The pool provides
 * it: closed while its view is past valid_until or max_stale_age (no
 * candidates, /readyz 503), open again with a live view. A frontend whose
 * "connector" key names such a provider stops accepting new connections
 * while the gate is closed (frontend_gate.c: its listener paused); what is
 * in flight drains (the pool's drain_timeout, then cut). Header only,
 * shared by modules/pool and the frontend kit. Loop thread throughout. */
#ifndef PH_TRAFFIC_GATE_H
#define PH_TRAFFIC_GATE_H

#define TRAFFIC_GATE_SERVICE "traffic.gate"
#define TRAFFIC_GATE_MAJOR 1
#define TRAFFIC_GATE_MINOR 0

/* A watcher, in the watcher's memory (no bound on how many). */
typedef struct traffic_gate_watch {
  void (*changed)(void *arg, int open); /* called on each change */
  void *arg;
  struct traffic_gate_watch *next; /* the provider's */
} traffic_gate_watch;

typedef struct traffic_gate_v1 {
  int (*is_open)(void *self); /* 1: new traffic may come in */
  void (*watch)(void *self, traffic_gate_watch *w);
  void (*unwatch)(void *self, traffic_gate_watch *w); /* unknown: no-op */
} traffic_gate_v1;

#endif

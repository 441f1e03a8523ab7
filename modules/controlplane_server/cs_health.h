/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cs_health.h: the controller's reducer (CP-6-6, CP-6-7), the one writer
 * of the pool's health. The CheckerControlPlane (cs_checker_*.c) hands it
 * every observation of a fenced ReportObservations batch; ReportOutcomes
 * hands it every gateway outcome of a fenced batch (passive health, seed
 * 000 section 5); the scheduler asks it which items are changing state
 * (checked faster) and the snapshot build asks it each proxy's verdict.
 *
 * Loop thread only. Nothing here keeps a pointer passed in: strings are
 * copied or compared during the call. A checker's own failure
 * (HEALTH_STATUS_CHECKER_ERROR, a missed deadline) is never a verdict on
 * the proxy.
 */
#ifndef CS_HEALTH_H
#define CS_HEALTH_H

#include <stdint.h>

typedef struct cs cs;

/* One active observation, as a checker reported it (already fenced). */
typedef struct cs_observation {
  const char *proxy_id;
  int tier;                 /* CONTROLPLANE__V1__CHECK_TIER__* */
  const char *target_group; /* "" unless TARGET */
  int status;               /* CONTROLPLANE__V1__HEALTH_STATUS__* */
  uint32_t latency_ms;
  const char *egress_ip;    /* "" unless EGRESS */
  int anonymity;            /* CONTROLPLANE__V1__ANONYMITY__*, EGRESS */
  const char *reason;       /* "" or a short code */
  int64_t observed_ms;      /* wall clock, ms */
} cs_observation;

/* Set up and tear down with the module (init/destroy): init registers
 * the metrics; start (the module's start) arms the timers; stop (the
 * module's stop) drops every pending call. */
int cs_health_init(cs *m);
int cs_health_start(cs *m);
void cs_health_stop(cs *m);
void cs_health_free(cs *m);

/* An active observation (CP-6-6). */
void cs_health_observe(cs *m, const cs_observation *o);

/* A passive one: a gateway outcome (stage and result as
 * CONTROLPLANE__V1__OUTCOME_STAGE__* / __OUTCOME_RESULT__*). */
void cs_health_outcome(cs *m, const char *proxy_id, int stage, int result,
                       uint32_t latency_ms);

/* 1 while (proxy, tier, group) is between states (the scheduler checks it
 * at its faster interval, HAProxy's fastinter), else 0. */
int cs_health_changing(const cs *m, const char *proxy_id, int tier,
                       const char *target_group);

/* The verdict a snapshot carries for a proxy: the worst over its tiers
 * (CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_*; _UNSPECIFIED = no
 * verdict yet). */
int cs_health_of(const cs *m, const char *proxy_id);

#endif

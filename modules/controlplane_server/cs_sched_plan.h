/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler's pure parts (issue 26 "Scheduling"): the jittered next
 * check (HAProxy's spread-checks), the choice of a checker (least loaded
 * with room, supporting the tier, another than the one that just missed
 * the item), the per-group TARGET probes of `target_probes`, and the
 * per-target-host spacing of TARGET tasks. No I/O, no allocation, no
 * clock: times and random numbers are arguments.
 */
#ifndef CS_SCHED_PLAN_H
#define CS_SCHED_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <proxyhost/pool_store.h>

/* The next check of an item checked now: interval, moved by a random
 * share of at most spread_pct percent either way (0..50). rnd: any
 * 32-bit random number. At least 1 ms. */
int64_t cs_sched_jitter(int64_t interval_ms, uint32_t spread_pct,
                        uint32_t rnd);
/* The next check of an item whose check was due at due_ms and answered
 * at now_ms: due_ms + the jittered interval (counted from the due time,
 * so that the checker's report delay does not stretch every interval),
 * now_ms when that has passed already. */
int64_t cs_sched_next_due(int64_t due_ms, int64_t now_ms, int64_t interval_ms,
                          uint32_t spread_pct, uint32_t rnd);

/* One item due now without a task, for the tick's order. */
typedef struct cs_sched_due {
  int64_t due_ms; /* when it was due (a starved item keeps its old time) */
  size_t idx;     /* the item's index */
} cs_sched_due;

/* Sorts v oldest due first, ties to the lower index: the order in which
 * a tick offers its due items to the checkers. When the checkers' room is
 * short (overload) every item is then checked at a lower rate, in turn,
 * never some items always and others never (issue 26: a scan from a
 * slowly moving cursor served the items near it every interval and left
 * the rest without a verdict for minutes). */
void cs_sched_order(cs_sched_due *v, size_t n);

/* What the choice needs of one checker. */
typedef struct cs_sched_load {
  uint32_t outstanding, max; /* tasks given and not answered; its bound */
  uint32_t tiers;            /* CP_TIER_BIT mask */
  int usable;                /* 0: not claimed, missed a deadline, ... */
  uint64_t serial;           /* its identity for `avoid` */
} cs_sched_load;

/* The index of the checker for a task of tier_bit: usable, supporting
 * the tier, with room (outstanding < max); the least loaded (by
 * outstanding / max, then outstanding, then index), other than avoid
 * (a serial; 0 none) unless it is the only one. -1: none has room. */
int cs_sched_pick(const cs_sched_load *l, size_t n, uint32_t tier_bit,
                  uint64_t avoid);

/* One TARGET probe: a routing target group and the host:port to reach. */
#define CS_PROBES_MAX 32
#define CS_PROBE_TARGET_MAX (PH_POOL_HOST_MAX + 7)
typedef struct cs_probe {
  char group[PH_POOL_GROUP_MAX + 1];
  char target[CS_PROBE_TARGET_MAX + 1]; /* host:port */
  size_t host_len;                      /* target[0..host_len) the host */
  int64_t next_ms;                      /* its host's next TARGET task */
} cs_probe;

/* Parses `target_probes`: "" or "group=host:port[,group=host:port...]"
 * (at most CS_PROBES_MAX, each group once, port 1..65535, an IPv6 host in
 * brackets). 0, or -1 with *why (static, never the value). */
int cs_probe_parse(const char *spec, cs_probe *out, size_t *n,
                   const char **why);
/* The probe of group, or NULL. */
cs_probe *cs_probe_of(cs_probe *p, size_t n, const char *group);
/* May a TARGET task to p's host go out at now? Yes (1): every probe of
 * that host is held for spacing_ms. No (0): not before then. */
int cs_probe_take(cs_probe *p, size_t n, cs_probe *probe, int64_t now_ms,
                  int64_t spacing_ms);

/* Rendezvous (highest random weight) hashing (issue 26 "Several
 * controllers"): the index of the member of members[0..n) that key goes
 * to: the one with the highest hash of (member, key), ties to the lower
 * index; -1 when n is 0. Every controller computes the same answer from
 * the same set, and a member that leaves moves only its own keys. */
int cs_hrw_pick(const char *const *members, size_t n, const char *key);

/* A task id: CS_TASK_ID_HEX lowercase hex digits (64 random bits). */
#define CS_TASK_ID_HEX 16
/* A task id's key in its checker's id table (lib/idtab.h): its 64 bits.
 * 1, or 0 (and *key untouched) when task_id is not of that form. */
int cs_task_key(const char *task_id, int64_t *key);

#endif

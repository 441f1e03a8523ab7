/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cs_hyst.h: the reducer's pure rules (CP-6-7), no I/O, no state beyond
 * what the caller passes: one item's hysteresis and the panic guard.
 * docs/user-guide/controller.md ("The reducer") states the same rules.
 *
 * One item is a (proxy, tier, target group) of active checks, or a
 * proxy's passive item (gateway outcomes). Its counters are in units
 * (CS_HYST_UNIT per whole failure or success) so that a weighted outcome
 * may count as part of one:
 *  - a failure of weight w adds w to `down` (at most fall units) and
 *    takes w from `up` (not below 0);
 *  - a success of weight w adds w to `up` (at most rise units) and takes
 *    w from `down` (not below 0).
 * Non-consecutive counters (consul-esm's): a success between two failures
 * pays one back, so a proxy failing one check in three never reaches
 * fall. The verdict moves:
 *  - to UNHEALTHY when down reaches fall (up is reset);
 *  - to SUSPECT when down reaches fall - 1 (only when fall >= 3: with a
 *    smaller fall an item goes straight to UNHEALTHY);
 *  - to AVAILABLE when up reaches rise (down is reset), from any state
 *    (UNSPECIFIED: no verdict yet, until the first rise successes or
 *    fall - 1 failures).
 */
#ifndef CS_HYST_H
#define CS_HYST_H

#include <stddef.h>
#include <stdint.h>

#define CS_HYST_UNIT 100u /* one whole failure or success */

/* The verdicts, in the order "worse" (CONTROLPLANE__V1__PROXY_HEALTH__*
 * values: 0 none, 1 AVAILABLE, 2 SUSPECT, 3 UNHEALTHY). */
enum {
  CS_H_NONE = 0,
  CS_H_AVAILABLE = 1,
  CS_H_SUSPECT = 2,
  CS_H_UNHEALTHY = 3
};

typedef struct cs_hyst_rules {
  uint32_t rise; /* successes up: 1..CS_HYST_MAX */
  uint32_t fall; /* failures down: 1..CS_HYST_MAX */
} cs_hyst_rules;

#define CS_HYST_MAX 100

typedef struct cs_hyst {
  uint32_t up, down; /* units */
  uint8_t verdict;   /* CS_H_* */
} cs_hyst;

/* One result of weight w units (0: nothing changes) into h. Returns 1 when
 * h->verdict changed. */
int cs_hyst_push(cs_hyst *h, const cs_hyst_rules *r, int ok, uint32_t w);

/* 1 while h is between states: some failure or success counted that has
 * not moved the verdict yet (the scheduler's faster interval). */
int cs_hyst_changing(const cs_hyst *h, const cs_hyst_rules *r);

/* The worse of two verdicts (NONE is no verdict: the other wins). */
static inline int cs_hyst_worst(int a, int b) { return a > b ? a : b; }

/* The panic guard: 1 when more than threshold_pct percent of a group's
 * n proxies would be UNHEALTHY at once (n_unhealthy of them). A group of
 * zero proxies never panics. */
int cs_hyst_panic(uint32_t n, uint32_t n_unhealthy, uint32_t threshold_pct);

/* The guard over a pool: verdict[i] is proxy i's verdict before the
 * guard; group_of[k] (k < n_links) names the group index (< n_groups) of
 * link k whose proxy is proxy_of[k]. Every group where more than
 * threshold_pct percent of its proxies would be UNHEALTHY panics, and
 * each UNHEALTHY proxy of such a group is published SUSPECT instead (not
 * ejected: used only when nothing AVAILABLE is left). out[i] is the
 * published verdict; scratch holds 2 * n_groups counters. Returns the
 * number of groups in panic. */
uint32_t cs_hyst_guard(const uint8_t *verdict, size_t n_proxies,
                       const uint32_t *proxy_of, const uint32_t *group_of,
                       size_t n_links, size_t n_groups,
                       uint32_t threshold_pct, uint32_t *scratch,
                       uint8_t *out);

#endif

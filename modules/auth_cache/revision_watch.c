/* SPDX-License-Identifier: BSD-2-Clause */
/* The store's revision, as the cache follows it (auth_cache_int.h).
 *
 * The store answers revision() without I/O (it polls its database
 * itself), so the cache asks on every check: a rise seen there switches
 * generations before the check is looked up, which is how a local write
 * invalidates at once (TM-P1-29). A tick timer asks too, so readiness and
 * the switch do not wait for traffic.
 *
 *   good read, first one          generation for it; ready (TM-P1-26)
 *   good read, higher             new generation (TM-P1-28, TM-TEST-21)
 *   good read, lower              storage consistency error: cleared,
 *                                 not ready (TM-P1-30)
 *   PH_ESTATE (or any error)      no cached allow is served (TM-SEC-4,
 *                                 TM-P1-31), cached denies are until
 *                                 their TTL (TM-P1-33); not ready
 *   good read after either        a fresh generation (denies kept through
 *                                 the outage are bound by it, TM-P1-33),
 *                                 ready again
 *
 * A store reports a missing, overflowed or regressed revision as
 * PH_ESTATE (access.h), so those fail closed through the second-to-last
 * row; a value lower than one seen is caught here as well, in case a
 * store lets one through. */
#include "auth_cache_int.h"

#include <stdlib.h>

#define REAP_BUDGET 4096 /* entries freed per reaper run */

int rw_allows_ok(const acache *s) { return s->cur && s->healthy; }

void rw_update_ready(acache *s) {
  if (!s->started)
    return;
  /* Off, the cache vouches for nothing: the store's readiness rules. */
  s->api->set_ready(s->ctx, !s->enabled || (s->have_rev && s->healthy));
}

static void set_entries(acache *s) {
  s->api->gauge_set(s->m_entries, s->cur ? (double)cache_gen_count(s->cur) : 0);
}

void rw_new_generation(acache *s, uint64_t revision) {
  cache_gen *old = s->cur;
  s->cur = cache_gen_new(revision, s->max_entries);
  s->gen_id++;
  s->api->inc(s->m_generations, 1);
  if (!s->cur)
    PH_LOG_RL(s->api, s->ctx, PH_LOG_ERROR,
              "auth_cache: no memory for a generation; every check goes "
              "to the store",
              PH_UINT("revision", revision));
  if (old) {
    retired *r = malloc(sizeof(*r));
    if (!r) {
      while (!cache_gen_free_some(old, (size_t)-1))
        ;
    } else {
      r->g = old;
      r->next = s->retired;
      s->retired = r;
      s->api->timer_set(s->reap_t, 1, 1);
    }
  }
  set_entries(s);
}

void rw_reap(ph_timer *t, void *arg) {
  acache *s = arg;
  size_t budget = REAP_BUDGET;
  while (s->retired && budget > 0) {
    retired *r = s->retired;
    size_t before = cache_gen_count(r->g);
    size_t take = before < budget ? before : budget;
    if (cache_gen_free_some(r->g, take)) {
      s->retired = r->next;
      free(r);
      budget -= take;
    } else {
      budget = 0;
    }
  }
  if (!s->retired)
    s->api->timer_set(t, 0, 0);
}

void rw_free_all(acache *s) {
  while (s->retired) {
    retired *r = s->retired;
    s->retired = r->next;
    while (!cache_gen_free_some(r->g, (size_t)-1))
      ;
    free(r);
  }
  if (s->cur)
    while (!cache_gen_free_some(s->cur, (size_t)-1))
      ;
  s->cur = NULL;
}

/* Why revision() failed, in words (never a raw status in the log). */
static const char *revision_state(int rc) {
  return rc == PH_ESTATE ? "unvouched" : "error";
}

static void bad_read(acache *s, int rc) {
  if (!s->have_rev && rc == PH_ESTATE) {
    /* At start the store has read no revision yet: expected, not a
     * fault (issue 24 item 12). Said once; "ready" follows. */
    if (!s->suspect)
      PH_LOG(s->api, s->ctx, PH_LOG_INFO,
             "auth_cache: waiting for the store's first revision; not ready "
             "and no cached allow until it is read",
             PH_STR("state", "no_revision_yet"));
  } else if (s->healthy || !s->suspect) {
    PH_LOG_RL(s->api, s->ctx, PH_LOG_WARN,
              "auth_cache: the store cannot vouch for its revision (no "
              "successful poll within its staleness bound, or the revision "
              "is missing, went backwards or overflowed); no cached allow "
              "is served until it can",
              PH_STR("state", revision_state(rc)));
  }
  /* A check from now on does not join a store check started while the
   * revision was good: it gets an answer computed now. */
  if (s->healthy)
    s->gen_id++;
  s->healthy = 0;
  s->suspect = 1;
}

void rw_refresh(acache *s) {
  uint64_t rev = 0;
  int rc = s->store->revision(s->store_self, &rev);
  int was_ok = s->have_rev && s->healthy;
  if (rc != PH_OK) {
    bad_read(s, rc);
  } else if (s->have_rev && rev < s->last_rev) {
    PH_LOG_RL(s->api, s->ctx, PH_LOG_ERROR,
              "auth_cache: the revision went backwards; cache cleared",
              PH_UINT("revision", rev), PH_UINT("previous", s->last_rev));
    rw_new_generation(s, rev);
    s->last_rev = rev;
    s->healthy = 0;
    s->suspect = 1;
  } else if (!s->have_rev || s->suspect || !s->cur ||
             rev > cache_gen_revision(s->cur)) {
    if (s->suspect)
      PH_LOG(s->api, s->ctx, PH_LOG_INFO,
             s->have_rev ? "auth_cache: the store vouches for its revision "
                           "again; cache on"
                         : "auth_cache: the store's first revision is read; "
                           "cache on",
             PH_UINT("revision", rev));
    rw_new_generation(s, rev);
    s->have_rev = 1;
    s->healthy = 1;
    s->suspect = 0;
    s->last_rev = rev;
  } else {
    s->last_rev = rev;
  }
  if (was_ok != (s->have_rev && s->healthy))
    rw_update_ready(s);
}

void rw_tick(ph_timer *t, void *arg) {
  (void)t;
  rw_refresh(arg);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Outcomes between controllers (issue 26 "Several controllers"): a
 * gateway's outcomes reach the controller it talks to, which may not be
 * the proxy's member (cs_members.h), the one controller that writes the
 * proxy's verdict. That controller counts them per proxy (failure units
 * as health_weight_* weigh them, success units: the aggregate the reducer
 * itself keeps) and, every health_sync_interval, adds the counts to the
 * member's hash in Redis (cp.authority passive_push, lua/passive.lua: at
 * most health_forward_max proxies per push, the hash living four
 * health_sync_interval after the last push). The member takes its hash
 * in one atomic step every health_sync_interval and feeds each proxy's
 * counts to its reducer like its own outcomes: successes first, then
 * failures. Nothing raw reaches Redis: no target, client or single
 * outcome, only two counters per proxy, and not for long.
 */
#include <stdlib.h>
#include <string.h>

#include "cp_common/snapshot/cp_snapshot_time.h"

#include "cs.h"
#include "cs_health_int.h"
#include "cs_members.h"

#define api cs_api

static uint32_t add_sat(uint32_t a, uint32_t b) {
  return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

void hc_fwd_count(hc_proxy *p, int ok, uint32_t w) {
  if (ok)
    p->fwd_ok = add_sat(p->fwd_ok, w);
  else
    p->fwd_fail = add_sat(p->fwd_fail, w);
}

static void taken(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  cs_health_state *h = m->health;
  h->fwd_take = 0;
  if (rep->result != CP_AUTH_OK)
    return;
  int64_t now = wall_ms();
  int changed = 0;
  for (size_t i = 0; i < rep->n_passive; i++) {
    const cp_auth_passive *q = &rep->passive[i];
    hc_proxy *p = hc_find_or_add(h, q->proxy_id);
    if (!p)
      continue;
    changed |= hc_outcome(p, &m->conf.health.rules, 1, q->ok_units, now);
    changed |= hc_outcome(p, &m->conf.health.rules, 0, q->fail_units, now);
  }
  api->inc(h->m_fwd[HC_FWD_TAKEN], (double)rep->n_passive);
  if (changed)
    hc_mark(m);
}

/* A push answered: counts what it says. */
static void pushed(void *arg, const cp_auth_reply *rep) {
  hc_fwd_slot *sl = arg;
  cs_health_state *h = sl->m->health;
  sl->call = 0;
  if (rep->result != CP_AUTH_OK) {
    api->inc(h->m_fwd[HC_FWD_FAILED], sl->n);
    return;
  }
  uint32_t d = rep->passive_dropped < sl->n ? rep->passive_dropped : sl->n;
  api->inc(h->m_fwd[HC_FWD_SENT], sl->n - d);
  api->inc(h->m_fwd[HC_FWD_DROPPED], d);
}

/* Pushes the counts of member k's proxies (at most health_forward_max;
 * the rest wait for the next tick). */
static void push_to(cs *m, const char *member, size_t k,
                    cp_auth_passive *buf) {
  cs_health_state *h = m->health;
  size_t n = 0, max = m->conf.health.forward_max;
  for (uint32_t b = 0; b < h->nb && n < max; b++)
    for (hc_proxy *p = h->buckets[b]; p && n < max; p = p->next) {
      if ((!p->fwd_fail && !p->fwd_ok) ||
          cs_members_pick(m, p->id) != (int)k)
        continue;
      buf[n].proxy_id = p->id;
      buf[n].fail_units = p->fwd_fail;
      buf[n].ok_units = p->fwd_ok;
      p->fwd_fail = p->fwd_ok = 0;
      n++;
    }
  if (!n)
    return;
  hc_fwd_slot *sl = &h->fwd[k];
  sl->m = m;
  sl->n = (uint32_t)n;
  int64_t id = m->auth->passive_push(m->auth_self, member, buf, n,
                                     4 * m->conf.health.sync_ms, pushed, sl);
  if (id > 0)
    sl->call = id;
  else
    api->inc(h->m_fwd[HC_FWD_FAILED], (double)n);
}

void hc_fwd_tick(cs *m) {
  cs_health_state *h = m->health;
  if (!m->auth || !m->auth->passive_push || !m->auth->passive_take)
    return;
  const char *self = cs_members_self(m);
  if (cs_members_scheduling(m) && !h->fwd_take && self[0]) {
    int64_t id = m->auth->passive_take(m->auth_self, self, taken, m);
    if (id > 0)
      h->fwd_take = id;
  }
  const char *const *ids;
  size_t n = cs_members_list(m, &ids);
  cp_auth_passive *buf = NULL;
  for (size_t k = 0; k < n && k < CP_AUTH_MEMBERS_MAX; k++) {
    if (h->fwd[k].call || strcmp(ids[k], self) == 0)
      continue;
    if (!buf && !(buf = calloc(m->conf.health.forward_max, sizeof(*buf))))
      return;
    push_to(m, ids[k], k, buf);
  }
  free(buf);
}

void hc_fwd_stop(cs *m) {
  cs_health_state *h = m->health;
  if (!m->auth)
    return;
  if (h->fwd_take > 0)
    m->auth->cancel(m->auth_self, h->fwd_take);
  h->fwd_take = 0;
  for (size_t k = 0; k < CP_AUTH_MEMBERS_MAX; k++) {
    if (h->fwd[k].call > 0)
      m->auth->cancel(m->auth_self, h->fwd[k].call);
    h->fwd[k].call = 0;
  }
}

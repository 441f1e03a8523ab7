/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The periodic assign (CP-1-16, CP-4-1, CP-4-6): every assign_interval the
 * pool's usable proxies (ACTIVE and not expired) go to the authority with
 * the ids that are draining, disabled, expired or removed since the last
 * round, so that their ownership ends once their counts are zero.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

#define api cs_api

static void assigned(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  m->assign_call = 0;
  cs_note_auth(m, rep->result);
  api->inc(m->m_assign[rep->result == CP_AUTH_OK ? 0 : 1], 1);
  if (rep->result == CP_AUTH_OK && rep->extracted > 0)
    PH_LOG(api, m->ctx, PH_LOG_INFO,
           "reclaimed proxies extracted: their owners drained them",
           PH_INT("count", rep->extracted));
  /* What the status panel shows as extractions in progress: Redis's own
   * count, at most assign_interval old (cs_status.c); unknown (null) once
   * an assign failed, never an old count shown as current. */
  m->extract_known = rep->result == CP_AUTH_OK &&
                     rep->size > offsetof(cp_auth_reply, n_extracted);
  if (rep->result != CP_AUTH_OK)
    return;
  m->n_reclaiming = m->extract_known ? rep->n_reclaiming : 0;
  m->n_extracted = m->extract_known ? rep->n_extracted : 0;
  /* Rebalancing (issue 23 item 4): the moves go through the drain, so a
   * worker's share comes back over a few rounds; rebalance_max bounds how
   * many are under way at once. */
  api->inc(m->m_rebalance[0], rep->moving);
  if (rep->moving > 0)
    PH_LOG_RL(api, m->ctx, PH_LOG_INFO,
              "rebalancing: proxies drain on their owner for a worker that "
              "owns less",
              PH_INT("count", rep->moving));
  if (rep->rebalance_limited) {
    api->inc(m->m_rebalance[1], 1);
    PH_LOG_RL(api, m->ctx, PH_LOG_INFO,
              "rebalancing held back: [redis_ownership] rebalance_max "
              "proxies are already moving");
  }
}

static int present(const cs_pool *p, const char *id) {
  size_t lo = 0, hi = p->n_proxies; /* by proxy_id (the store's order) */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(p->proxies[mid].proxy_id, id);
    if (!c)
      return 1;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

static void got_pool(void *arg, cs_pool *p) {
  cs *m = arg;
  if (!p || m->stopping) {
    api->inc(m->m_assign[1], 1);
    return;
  }
  int64_t now = wall_ms();
  size_t n = p->n_proxies;
  cp_auth_proxy *u = calloc(n ? n : 1, sizeof(*u));
  const char **d = calloc(n + m->n_prev_ids + 1, sizeof(*d));
  char(*ids)[PH_POOL_ID_MAX + 1] = calloc(n ? n : 1, sizeof(*ids));
  if (!u || !d || !ids) {
    free(u);
    free(d);
    free(ids);
    api->inc(m->m_assign[1], 1);
    return;
  }
  size_t nu = 0, nd = 0;
  for (size_t i = 0; i < n; i++) {
    const ph_pool_proxy_row *r = &p->proxies[i];
    memcpy(ids[i], r->proxy_id, sizeof(ids[i]));
    int expired = r->expires_at_ms != 0 && r->expires_at_ms <= now;
    if (r->admin_state == PH_POOL_ADMIN_ACTIVE && !expired) {
      u[nu].proxy_id = r->proxy_id;
      u[nu].capacity = r->capacity;
      u[nu].zone = r->zone;
      nu++;
    } else {
      d[nd++] = r->proxy_id;
    }
  }
  for (size_t i = 0; i < m->n_prev_ids; i++)
    if (!present(p, m->prev_ids[i]))
      d[nd++] = m->prev_ids[i];
  int64_t id = m->auth->assign(m->auth_self, u, nu, d, nd, assigned, m);
  if (id > 0)
    m->assign_call = id;
  else
    api->inc(m->m_assign[1], 1);
  free(u);
  free(d);
  /* removed ids are told once, in this round (the authority's ownership
   * index is the memory after that) */
  free(m->prev_ids);
  m->prev_ids = ids;
  m->n_prev_ids = n;
}

void cs_assign_tick(ph_timer *t, void *arg) {
  cs *m = arg;
  (void)t;
  cs_update_ready(m);
  if (m->assign_call > 0 || m->stopping)
    return;
  if (cs_pool_get(m, got_pool, m) != 0)
    api->inc(m->m_assign[1], 1);
}

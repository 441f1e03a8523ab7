/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool's selection for one attempt (CP-1-21..23, CP-3-9): match the
 * first rule of the live view for host, port, the client's identity and
 * the listener (no view or past its validity: no candidates; no rule:
 * forbidden), take the rule's session key, let the rule's strategy pick
 * a candidate that takes it now (strategy.h; the contract checked here),
 * reserve it at once and dial it (pool_dial.c). At most max_attempts
 * proxies per request, never one twice, also across a view swap. No
 * candidate: on_unavailable (pool_wait.c). Loop thread. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pool_int.h"

/* 1 when proxy idx is a candidate of rule r (candidates are ascending). */
int pool_rule_has(const ph_pool_view_rule *r, uint32_t idx) {
  uint32_t lo = 0, hi = r->n_candidates;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r->candidates[mid] == idx)
      return 1;
    if (r->candidates[mid] < idx)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* The session key the rule names ("username", "header:<Name>"), from
 * the request; called while open() runs (headers are borrowed). */
static void take_key(pool_attempt *a, const ph_pool_view_rule *r,
                     const ph_open_request *req) {
  const char *sk = r->sticky_key;
  const char *v = NULL;
  size_t n = 0;
  if (!sk || !*sk)
    return;
  if (strcmp(sk, "username") == 0 && a->has_principal) {
    v = a->principal;
    n = strlen(v);
  } else if (strncasecmp(sk, "header:", 7) == 0 && req && req->headers &&
             req->headers->get) {
    v = req->headers->get(req->headers->arg, sk + 7, &n);
  }
  if (v && n && n <= sizeof(a->key)) {
    memcpy(a->key, v, n);
    a->key_len = (uint32_t)n;
    a->has_key = 1;
  }
}

/* Matches a against the current generation when it has none or an older
 * one. 0: a was answered. */
static int match(pool_attempt *a, const ph_open_request *req) {
  pool *p = a->p;
  pool_gen *g = pool_gen_current(p);
  if (!g || !p->view->live(g->view, wall_ms())) {
    pool_fail(a, PR_NO_VIEW, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1);
    return 0;
  }
  if (a->gen == g)
    return 1;
  /* The proxies already tried stay tried in the new view (by id): a
   * snapshot swap must not give a request a second go at one. */
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->n_tried; i++) {
    uint32_t j = p->view->find(
        g->view, a->gen->view->proxies[a->tried[i]].proxy_id);
    if (j != PH_POOL_VIEW_NONE)
      a->tried[k++] = j;
  }
  a->n_tried = k;
  pool_gen_release(a->gen);
  pool_gen_hold(g);
  a->gen = g;
  uint32_t r = p->view->match(g->view, a->host, a->port,
                              a->has_principal ? a->principal : NULL,
                              a->has_listener ? a->listener : NULL);
  if (r == PH_POOL_VIEW_NONE) {
    pool_fail(a, PR_NO_RULE, PH_STAGE_SELECTION, PH_OPEN_FORBIDDEN, 0);
    return 0;
  }
  a->rule = r;
  const ph_pool_view_rule *rule = &g->view->rules[r];
  snprintf(a->rule_id, sizeof(a->rule_id), "%s", rule->rule_id);
  if (req)
    take_key(a, rule, req);
  return 1;
}

/* Picks the next candidate and dials it, or applies on_unavailable. The
 * caller made sure a holds no reservation. Health (CP-6-7): the strategy
 * first picks among the candidates that are neither UNHEALTHY nor
 * SUSPECT (no verdict counts as AVAILABLE); only when that finds none
 * does it pick again with the SUSPECT ones; never an UNHEALTHY one. */
void pool_select(pool_attempt *a, const ph_open_request *req) {
  pool *p = a->p;
  if (!match(a, req))
    return;
  pool_gen *g = a->gen;
  const ph_pool_view_rule *rule = &g->view->rules[a->rule];
  int s = g->rule_strat[a->rule];
  if (s < 0) {
    pool_fail(a, PR_NO_STRATEGY, PH_STAGE_SELECTION, PH_OPEN_AGENT_OFFLINE, 1);
    return;
  }
  if (a->attempts >= p->conf.max_attempts ||
      a->n_tried >= PH_STRATEGY_TRIED_MAX) {
    pool_wait_leave(a);
    pool_fail(a, PR_UPSTREAM, a->fail_stage, a->fail_code, 1);
    return;
  }
  ph_pool_load ld = g->load;
  ld.revoked = g->avoid[0];
  ph_strategy_pick in = {
      .size = sizeof(in),
      .view = g->view,
      .rule = rule,
      .load = &ld,
      .now_ms = wall_ms(),
      .key = a->has_key ? a->key : NULL,
      .key_len = a->key_len,
      .tried = a->tried,
      .n_tried = a->n_tried,
      .random = pool_random(p),
  };
  const pool_strat *st = &p->strats[s];
  uint32_t idx = st->vt->pick(st->self, g->sstate[s], &in);
  if (idx == PH_POOL_VIEW_NONE && g->n_suspect) {
    ld.revoked = g->avoid[1];
    idx = st->vt->pick(st->self, g->sstate[s], &in);
    if (idx != PH_POOL_VIEW_NONE)
      pool_api->inc(p->m_suspect_picks, 1);
  }
  /* The contract, checked: a strategy's bug must not overbook a proxy. */
  if (idx != PH_POOL_VIEW_NONE &&
      (!pool_rule_has(rule, idx) || !ph_strategy_takes(&in, idx)))
    idx = PH_POOL_VIEW_NONE;
  if (idx == PH_POOL_VIEW_NONE) {
    pool_unavailable(a, rule);
    return;
  }
  pool_wait_leave(a);
  a->pidx = idx;
  a->px = g->px[idx];
  snprintf(a->hop_id, sizeof(a->hop_id), "%s", a->px->id);
  pool_px_add(p, a->px, 0, +1);
  pool_api->gauge_add(p->m_reserved, 1);
  a->tried[a->n_tried++] = idx;
  a->attempts++;
  pool_dial(a);
}

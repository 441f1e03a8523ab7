/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cs_health.c: the reducer (cs_health.h, CP-6-6, CP-6-7). In memory, per
 * proxy: one hysteresis item (cs_hyst.h) per (tier, target group) of
 * active observations and one passive item fed by gateway outcomes
 * (weighted per stage: health_weight_*; it ends health_passive_hold after
 * its last failure). The proxy's verdict is the worst of its items; the
 * panic guard (cs_hyst_guard) then keeps a group's UNHEALTHY proxies
 * SUSPECT when more than health_panic_threshold percent of the group
 * would be ejected at once. Each change of a proxy's published verdict is
 * one atomic step in Redis (cp.authority health_set, lua/health.lua);
 * what Redis holds (written here or read back every health_sync_interval:
 * another controller's verdicts) is what snapshots carry (cs_health_of),
 * and a change wakes every WatchSnapshots stream at once.
 *
 * Bounds: only proxies of the pool are kept (the others are forgotten at
 * the next pass, their Redis field removed), at most PH_POOL_PROXIES_MAX,
 * each with at most CS_HEALTH_ITEMS_MAX active items. Nothing raw (no
 * single outcome or observation) reaches Redis or SQL.
 */
#include <stdlib.h>
#include <string.h>

#include "controlplane/v1/controlplane.pb-c.h"
#include "cs.h"
#include "cs_health.h"
#include "cs_members.h"
#include "cs_health_int.h"

#define api cs_api

static const char *const verdict_names[] = {"none", "available", "suspect",
                                            "unhealthy"};

/* ---- the table ---------------------------------------------------------- */

static uint32_t hash_id(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

hc_proxy *hc_find(const cs_health_state *h, const char *id) {
  if (!h || !h->nb)
    return NULL;
  for (hc_proxy *p = h->buckets[hash_id(id) & (h->nb - 1)]; p; p = p->next)
    if (strcmp(p->id, id) == 0)
      return p;
  return NULL;
}

hc_proxy *hc_find_or_add(cs_health_state *h, const char *id) {
  hc_proxy *p = hc_find(h, id);
  if (p || h->n >= PH_POOL_PROXIES_MAX || strlen(id) > PH_POOL_ID_MAX)
    return p;
  if (!(p = calloc(1, sizeof(*p))))
    return NULL;
  strcpy(p->id, id);
  p->m = h->m;
  uint32_t b = hash_id(id) & (h->nb - 1);
  p->next = h->buckets[b];
  h->buckets[b] = p;
  h->n++;
  return p;
}

static void unlink_free(cs *m, hc_proxy *p) {
  cs_health_state *h = m->health;
  hc_proxy **pp = &h->buckets[hash_id(p->id) & (h->nb - 1)];
  while (*pp && *pp != p)
    pp = &(*pp)->next;
  if (*pp)
    *pp = p->next;
  if (p->write_call > 0 && m->auth)
    m->auth->cancel(m->auth_self, p->write_call);
  h->n--;
  free(p);
}

/* ---- verdicts ----------------------------------------------------------- */

/* Something changed: one publish pass soon (coalesced). */
void hc_mark(cs *m) {
  cs_health_state *h = m->health;
  if (!h->dirty && h->flush) {
    h->dirty = 1;
    api->timer_set(h->flush, 1, 0); /* (0, 0) would stop it */
  }
}

static void written(void *arg, const cp_auth_reply *rep);

static void forgot(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  api->inc(m->health->m_writes[rep->result == CP_AUTH_OK ? 0 : 1], 1);
}

static void write_one(cs *m, hc_proxy *p) {
  if (p->write_call > 0 || !m->auth || !m->auth->health_set)
    return;
  p->writing = p->published;
  int64_t id = m->auth->health_set(m->auth_self, p->id, p->published,
                                   written, p);
  if (id > 0)
    p->write_call = id;
  /* else: left unsynced, retried at the next tick */
}

static void written(void *arg, const cp_auth_reply *rep) {
  hc_proxy *p = arg;
  cs *m = p->m;
  cs_health_state *h = m->health;
  p->write_call = 0;
  int ok = rep->result == CP_AUTH_OK;
  api->inc(h->m_writes[ok ? 0 : 1], 1);
  if (!ok)
    return; /* retried at the next tick */
  p->wrote = ++h->write_seq;
  if (p->shared != p->writing) {
    p->shared = p->writing;
    cs_watch_health_changed(m);
  }
  if (p->published != p->writing)
    write_one(m, p); /* changed again meanwhile */
  else
    p->unsynced = 0;
}

/* The groups of the pool, numbered by a sort of their names. */
typedef struct hc_link {
  const char *group;
  uint32_t proxy;
} hc_link;

static int link_cmp(const void *a, const void *b) {
  return strcmp(((const hc_link *)a)->group, ((const hc_link *)b)->group);
}

/* One pass over the pool: verdicts, the panic guard, the changes. */
static void publish(cs *m) {
  cs_health_state *h = m->health;
  cs_pool *pool = m->pool;
  h->dirty = 0;
  if (!pool)
    return;
  size_t n = pool->n_proxies, nl = 0;
  for (size_t i = 0; i < n; i++)
    nl += pool->proxies[i].n_groups;
  uint8_t *raw = calloc(n ? n : 1, 2);
  hc_proxy **ent = calloc(n ? n : 1, sizeof(*ent));
  hc_link *links = calloc(nl ? nl : 1, sizeof(*links));
  uint32_t *idx = calloc(nl ? nl : 1, 2 * sizeof(*idx));
  uint32_t *scratch = calloc(nl ? 2 * nl : 1, sizeof(*scratch));
  if (!raw || !ent || !links || !idx || !scratch) {
    hc_mark(m); /* try again */
    goto out;
  }
  h->pass++;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    hc_proxy *p = hc_find(h, pool->proxies[i].proxy_id);
    ent[i] = p;
    if (p) {
      p->pass = h->pass;
      raw[i] = hc_verdict(p);
    }
    for (uint32_t g = 0; g < pool->proxies[i].n_groups; g++)
      links[k++] = (hc_link){pool->proxies[i].groups[g], (uint32_t)i};
  }
  qsort(links, nl, sizeof(*links), link_cmp);
  uint32_t *proxy_of = idx, *group_of = idx + nl, ng = 0;
  for (size_t j = 0; j < nl; j++) {
    if (j && strcmp(links[j].group, links[j - 1].group) != 0)
      ng++;
    proxy_of[j] = links[j].proxy;
    group_of[j] = ng;
  }
  if (nl)
    ng++;
  uint8_t *out = raw + n;
  uint32_t panics = cs_hyst_guard(raw, n, proxy_of, group_of, nl, ng,
                                  m->conf.health.panic_pct, scratch, out);
  if (panics && !h->panic_groups)
    PH_LOG(api, m->ctx, PH_LOG_WARN,
           "health panic guard: more of a group's proxies would be "
           "UNHEALTHY at once than health_panic_threshold allows; they are "
           "published SUSPECT, not ejected (a checker or network fault?)",
           PH_INT("groups", panics),
           PH_INT("threshold_pct", m->conf.health.panic_pct));
  else if (!panics && h->panic_groups)
    PH_LOG(api, m->ctx, PH_LOG_INFO, "health panic guard off",
           PH_INT("groups", 0));
  if (panics > h->panic_groups)
    api->inc(h->m_panic_total, panics - h->panic_groups);
  h->panic_groups = panics;
  api->gauge_set(h->m_panic, panics);
  for (size_t i = 0; i < n; i++) {
    hc_proxy *p = ent[i];
    if (!p)
      continue;
    /* Without an opinion of its own (ever, or since its passive hold
     * ended and it said so once) the reducer leaves Redis's verdict,
     * another controller's, alone. */
    /* Several controllers: the proxy's verdict is its member's alone
     * (cs_members.h); the others keep counting but never write it. */
    if (!cs_members_mine(m, p->id)) {
      p->had_opinion = 0;
      continue;
    }
    int mine = hc_has_opinion(p);
    if (!mine && !p->had_opinion)
      continue;
    p->had_opinion = mine;
    if (out[i] == p->published)
      continue;
    PH_LOG_RL(api, m->ctx, PH_LOG_INFO, "proxy health changed",
              PH_STR("proxy_id", p->id),
              PH_STR("from", verdict_names[p->published]),
              PH_STR("to", verdict_names[out[i]]),
              PH_STR("own", verdict_names[raw[i]]));
    api->inc(h->m_transitions[out[i]], 1);
    p->published = out[i];
    p->unsynced = 1;
    write_one(m, p);
  }
  /* Forget the proxies that left the pool (their Redis field too). */
  for (uint32_t b = 0; b < h->nb; b++) {
    hc_proxy *p = h->buckets[b];
    while (p) {
      hc_proxy *next = p->next;
      if (p->pass != h->pass) {
        /* its field goes too; the next read shows what Redis kept */
        if (p->shared && m->auth && m->auth->health_set)
          m->auth->health_set(m->auth_self, p->id, 0, forgot, m);
        unlink_free(m, p);
        h->forgets++;
      }
      p = next;
    }
  }
  cs_health_count(m);
out:
  free(raw);
  free(ent);
  free(links);
  free(idx);
  free(scratch);
}

static void on_flush(ph_timer *t, void *arg) {
  (void)t;
  publish(arg);
}

/* Redis holds another verdict for p (p->shared, 0: none) than the one
 * this reducer published from its own observations: what Redis holds is
 * what snapshots carry, so a Redis that lost it (restarted empty, or a
 * write that failed for us but landed) gets it again at the next tick;
 * before, it stayed "none" for as long as the verdict did not change
 * (issue 26). */
static void resync(cs *m, hc_proxy *p) {
  if (p->published && p->shared != p->published && hc_has_opinion(p) &&
      cs_members_mine(m, p->id))
    p->unsynced = 1;
}

/* Redis's verdicts (every controller's): what snapshots carry. */
static void read_back(void *arg, const cp_auth_reply *rep) {
  cs *m = arg;
  cs_health_state *h = m->health;
  h->read_call = 0;
  if (rep->result != CP_AUTH_OK)
    return;
  int changed = 0;
  /* A read that began before a proxy was forgotten may still list it:
   * it adds no entry then (the next read does, if Redis keeps it). */
  int fresh = h->read_forgets == h->forgets;
  h->pass_read++;
  for (size_t i = 0; i < rep->n_health; i++) {
    const char *id = rep->health[i].proxy_id;
    hc_proxy *p = fresh ? hc_find_or_add(h, id) : hc_find(h, id);
    if (!p)
      continue;
    p->read = h->pass_read;
    /* a write in flight, or answered after the read began, is newer */
    if (p->write_call > 0 || p->wrote > h->read_seq ||
        p->shared == rep->health[i].health)
      continue;
    p->shared = (uint8_t)rep->health[i].health;
    if (!p->unsynced && !hc_has_opinion(p))
      p->published = p->shared; /* another controller's verdict */
    resync(m, p);
    changed = 1;
  }
  for (uint32_t b = 0; b < h->nb; b++)
    for (hc_proxy *p = h->buckets[b]; p; p = p->next)
      if (p->read != h->pass_read && p->shared && !p->write_call &&
          p->wrote <= h->read_seq) {
        p->shared = 0; /* removed in Redis */
        if (!p->unsynced && !hc_has_opinion(p))
          p->published = 0;
        resync(m, p);
        changed = 1;
      }
  if (changed) {
    cs_health_count(m);
    cs_watch_health_changed(m);
  }
}

static void on_tick(ph_timer *t, void *arg) {
  cs *m = arg;
  cs_health_state *h = m->health;
  (void)t;
  int64_t now = wall_ms();
  int expired = 0;
  for (uint32_t b = 0; b < h->nb; b++)
    for (hc_proxy *p = h->buckets[b]; p; p = p->next) {
      expired |= hc_passive_expire(p, now, m->conf.health.passive_hold_ms);
      if (p->unsynced && !p->write_call)
        write_one(m, p);
    }
  if (expired)
    publish(m);
  hc_fwd_tick(m);
  if (!h->read_call && m->auth && m->auth->health_all) {
    int64_t id = m->auth->health_all(m->auth_self, read_back, m);
    if (id > 0) {
      h->read_call = id;
      h->read_forgets = h->forgets;
      h->read_seq = h->write_seq;
    }
  }
  /* the pool's rows (at most one wait of ours): a pass over them
   * forgets the proxies that left it */
  if (!h->pool_wait) {
    h->pool_wait = 1;
    if (cs_pool_get(m, cs_health_pool, h) != 0)
      h->pool_wait = 0;
  }
}

void cs_health_pool(void *arg, cs_pool *pool) {
  cs_health_state *h = arg;
  (void)pool;
  h->pool_wait = 0;
  if (!h->m->stopping)
    hc_mark(h->m);
}

/* ---- the entry points --------------------------------------------------- */

int cs_health_init(cs *m) {
  cs_health_state *h = calloc(1, sizeof(*h));
  if (!h)
    return PH_ENOMEM;
  h->nb = 1024;
  while (h->nb < PH_POOL_PROXIES_MAX / 4)
    h->nb *= 2;
  if (!(h->buckets = calloc(h->nb, sizeof(*h->buckets)))) {
    free(h);
    return PH_ENOMEM;
  }
  h->m = m;
  m->health = h;
  return cs_health_metrics(m);
}

int cs_health_start(cs *m) {
  cs_health_state *h = m->health;
  h->flush = api->timer_new(m->ctx, on_flush, m);
  h->tick = api->timer_new(m->ctx, on_tick, m);
  if (!h->flush || !h->tick)
    return PH_ENOMEM;
  api->timer_set(h->tick, 10, (uint64_t)m->conf.health.sync_ms);
  return PH_OK;
}

void cs_health_stop(cs *m) {
  cs_health_state *h = m->health;
  if (!h)
    return;
  if (h->flush)
    api->timer_free(h->flush);
  if (h->tick)
    api->timer_free(h->tick);
  h->flush = h->tick = NULL;
  cs_pool_forget(m, h);
  h->pool_wait = 0;
  if (h->read_call > 0 && m->auth)
    m->auth->cancel(m->auth_self, h->read_call);
  h->read_call = 0;
  hc_fwd_stop(m);
  for (uint32_t b = 0; b < h->nb; b++)
    for (hc_proxy *p = h->buckets[b]; p; p = p->next)
      if (p->write_call > 0 && m->auth) {
        m->auth->cancel(m->auth_self, p->write_call);
        p->write_call = 0;
      }
}

void cs_health_free(cs *m) {
  cs_health_state *h = m->health;
  if (!h)
    return;
  for (uint32_t b = 0; b < h->nb; b++)
    for (hc_proxy *p = h->buckets[b], *nx; p; p = nx) {
      nx = p->next;
      free(p);
    }
  free(h->buckets);
  free(h);
  m->health = NULL;
}

/* An observation moved an item of tier row `row` (3: passive): counted
 * by what it was (proxyhost_cp_controller_health_moves_total). */
static void moved(cs_health_state *h, int row, int ok, int timeout) {
  if (row >= 0 && row < HC_TIERS)
    api->inc(h->m_moves[row][ok        ? HC_MOVE_OK
                             : timeout ? HC_MOVE_TIMEOUT
                                       : HC_MOVE_FAILED],
             1);
}

void cs_health_observe(cs *m, const cs_observation *o) {
  cs_health_state *h = m->health;
  if (!h)
    return;
  int kind = hc_observe_kind(o);
  hc_proxy *p = kind == HC_OBS_ACTIVE ? hc_find_or_add(h, o->proxy_id) : NULL;
  int changed = p ? hc_observe(p, &m->conf.health.rules, o) : -1;
  if (kind == HC_OBS_ACTIVE && changed < 0)
    kind = HC_OBS_IGNORED; /* no room: bounded */
  api->inc(h->m_obs[kind], 1);
  if (changed > 0) {
    moved(h, hc_tier_row(o->tier),
          o->status == CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_OK,
          o->status == CONTROLPLANE__V1__HEALTH_STATUS__HEALTH_STATUS_TIMEOUT);
    hc_mark(m);
  }
}

void cs_health_outcome(cs *m, const char *proxy_id, int stage, int result,
                       uint32_t latency_ms) {
  cs_health_state *h = m->health;
  (void)latency_ms;
  if (!h || !proxy_id)
    return;
  int ok;
  int w = hc_outcome_weight(m->conf.health.weight, stage, result, &ok);
  api->inc(h->m_obs[w < 0 ? HC_OBS_IGNORED : HC_OBS_PASSIVE], 1);
  hc_proxy *p = w > 0 ? hc_find_or_add(h, proxy_id) : NULL;
  if (!p)
    return;
  p->last_stage = (uint8_t)stage;
  p->last_result = (uint8_t)result;
  if (hc_outcome(p, &m->conf.health.rules, ok, (uint32_t)w, wall_ms())) {
    moved(h, 3, ok,
          result == CONTROLPLANE__V1__OUTCOME_RESULT__OUTCOME_RESULT_TIMEOUT);
    hc_mark(m);
  }
  /* Not its member's: the member's reducer gets it too (cs_health_fwd.c). */
  if (!cs_members_mine(m, proxy_id))
    hc_fwd_count(p, ok, (uint32_t)w);
}

int cs_health_changing(const cs *m, const char *proxy_id, int tier,
                       const char *target_group) {
  hc_proxy *p = hc_find(m->health, proxy_id);
  hc_item *it = p ? hc_item_of(p, tier, target_group, 0) : NULL;
  return it ? cs_hyst_changing(&it->h, &m->conf.health.rules) : 0;
}

int cs_health_of(const cs *m, const char *proxy_id) {
  const hc_proxy *p = hc_find(m->health, proxy_id);
  return p ? p->shared
           : CONTROLPLANE__V1__PROXY_HEALTH__PROXY_HEALTH_UNSPECIFIED;
}

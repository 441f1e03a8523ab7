/* SPDX-License-Identifier: BSD-2-Clause */
/* Generations: what the pool keeps beside each installed view (CP-1-20,
 * CP-3-17). The view is immutable and read with one atomic load; the load
 * (active and reserved per proxy) is the worker's own state (CP-2-14,
 * CP-4-3) and must survive a swap: it lives in pool_px records keyed by
 * proxy_id, mirrored into the arrays the strategies read. A view is
 * installed lazily, by the first open (or runtime report) that sees
 * pool.view publish a new one, and the install walks both views once
 * (cp_view_remap: they are sorted by proxy_id). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clocks.h"
#include "cp_common/view/cp_view.h"
#include "pool_int.h"

/* xorshift64*: strategies get 64 bits per pick; not for secrets. */
uint64_t pool_random(pool *p) {
  uint64_t x = p->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  p->rng = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* ---- proxy records ----------------------------------------------------- */

static void left_unlink(pool *p, pool_px *px) {
  if (px->lprev)
    px->lprev->lnext = px->lnext;
  else
    p->left = px->lnext;
  if (px->lnext)
    px->lnext->lprev = px->lprev;
  px->lprev = px->lnext = NULL;
}

static void left_push(pool *p, pool_px *px) {
  px->lprev = NULL;
  px->lnext = p->left;
  if (p->left)
    p->left->lprev = px;
  p->left = px;
}

void pool_px_add(pool *p, pool_px *px, int d_active, int d_reserved) {
  px->active = (uint32_t)((int64_t)px->active + d_active);
  px->reserved = (uint32_t)((int64_t)px->reserved + d_reserved);
  if (px->idx != PH_POOL_VIEW_NONE) {
    p->cur->active[px->idx] = px->active;
    p->cur->reserved[px->idx] = px->reserved;
  } else if (!px->active && !px->reserved) {
    /* It left the view and now carries nothing: its drain is over. */
    left_unlink(p, px);
    free(px);
  }
}

/* ---- generations --------------------------------------------------------- */

void pool_gen_hold(pool_gen *g) { g->refs++; }

static void gen_free(pool_gen *g) {
  pool *p = g->p;
  for (uint32_t s = 0; s < p->n_strats; s++)
    if (g->sstate[s])
      p->strats[s].vt->detach(p->strats[s].self, g->sstate[s]);
  if (g->view)
    p->view->release(p->view_self, g->view);
  free(g); /* one block with its arrays (gen_alloc) */
}

void pool_gen_release(pool_gen *g) {
  if (g && --g->refs == 0)
    gen_free(g);
}

static int cmp_px(const void *a, const void *b) {
  return strcmp((*(pool_px *const *)a)->id, (*(pool_px *const *)b)->id);
}

/* The records of proxies that left an earlier view and still drain,
 * sorted by id, so a proxy that comes back finds its counts. */
static pool_px **left_sorted(pool *p, size_t *n) {
  size_t k = 0;
  for (pool_px *x = p->left; x; x = x->lnext)
    k++;
  *n = k;
  if (!k)
    return NULL;
  pool_px **a = malloc(k * sizeof(*a));
  if (!a)
    return NULL;
  k = 0;
  for (pool_px *x = p->left; x; x = x->lnext)
    a[k++] = x;
  qsort(a, k, sizeof(*a), cmp_px);
  return a;
}

static pool_px *left_find(pool_px **a, size_t n, const char *id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(a[mid]->id, id);
    if (!c)
      return a[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static int strat_index(pool *p, const char *name) {
  for (uint32_t s = 0; s < p->n_strats; s++)
    if (strcmp(p->strats[s].name, name) == 0)
      return (int)s;
  return -1;
}

/* The half of a generation that needs nothing but v, base and the pool's
 * configuration (CP-3-17, issue 23 item 13): one zeroed block with every
 * array, the map from base's proxies to v's (cp_view_remap) and the rule
 * -> strategy table. Pure: any thread (the provider's build job through
 * pool_view_prepare, or the loop as a fall-back); it reads p->strats, which
 * does not change after start. NULL: no memory. */
static pool_gen *gen_alloc(pool *p, const ph_pool_view *v,
                           const ph_pool_view *base) {
  size_t n = v->n_proxies, nb = base ? base->n_proxies : 0;
  size_t off_px = sizeof(pool_gen);
  size_t off_u32 = off_px + n * sizeof(pool_px *);
  size_t off_u8 = off_u32 + (2 * n + nb) * sizeof(uint32_t);
  pool_gen *g = calloc(1, off_u8 + 3 * n + v->n_rules);
  if (!g)
    return NULL;
  char *blk = (char *)g;
  g->p = p;
  g->base = base;
  g->n = (uint32_t)n;
  g->px = (pool_px **)(blk + off_px);
  g->active = (uint32_t *)(blk + off_u32);
  g->reserved = g->active + n;
  g->map = nb ? g->reserved + n : NULL;
  g->revoked = (uint8_t *)(blk + off_u8);
  g->avoid[0] = g->revoked + n;
  g->avoid[1] = g->avoid[0] + n;
  g->rule_strat = (int8_t *)(g->avoid[1] + n);
  /* The controller's verdicts (pool.view minor 2; NULL: none). */
  const uint8_t *health =
      v->size >= offsetof(ph_pool_view, health) + sizeof(v->health)
          ? v->health
          : NULL;
  for (size_t j = 0; health && j < n; j++) {
    g->avoid[0][j] = health[j] >= PH_POOL_HEALTH_SUSPECT;
    g->avoid[1][j] = health[j] == PH_POOL_HEALTH_UNHEALTHY;
    g->n_suspect += health[j] == PH_POOL_HEALTH_SUSPECT;
  }
  if (g->map)
    cp_view_remap(base, v, g->map);
  for (uint32_t r = 0; r < v->n_rules; r++)
    g->rule_strat[r] = (int8_t)strat_index(p, v->rules[r].strategy);
  g->load.active = g->active;
  g->load.reserved = g->reserved;
  g->load.revoked = g->revoked;
  return g;
}

/* The loop half: g (gen_alloc'd against old's view) takes the proxy
 * records and the strategies' states, and v (holding a reference). 0, or
 * -1 for no memory (g freed, the reference with it). */
static int gen_link(pool *p, pool_gen *g, const ph_pool_view *v,
                    pool_gen *old) {
  g->view = v;
  /* Records: those of the old view that stay, then those that come back
   * from the left list, then new ones. */
  if (old && g->map)
    for (uint32_t i = 0; i < old->n; i++)
      if (g->map[i] != PH_POOL_VIEW_NONE)
        g->px[g->map[i]] = old->px[i];
  size_t n_left = 0;
  pool_px **left = left_sorted(p, &n_left);
  if (n_left && !left)
    goto fail;
  for (uint32_t j = 0; j < g->n; j++) {
    if (g->px[j])
      continue;
    pool_px *x = n_left ? left_find(left, n_left, v->proxies[j].proxy_id) : NULL;
    if (!x) {
      x = calloc(1, sizeof(*x));
      if (!x) {
        free(left);
        goto fail_records;
      }
      memcpy(x->id, v->proxies[j].proxy_id,
             strnlen(v->proxies[j].proxy_id, PH_POOL_ID_MAX));
      x->idx = PH_POOL_VIEW_NONE; /* new: not on the left list */
      ilist_init(&x->streams);
    }
    g->px[j] = x;
  }
  free(left);
  /* Strategies: one state per strategy the rules name (CP-1-22); attach
   * is the loop's (strategy.h), done here, at the swap, not in a request. */
  int used[POOL_STRATS_MAX] = {0};
  for (uint32_t r = 0; r < v->n_rules; r++) {
    int s = g->rule_strat[r];
    if (s >= 0)
      used[s] = 1;
    else
      PH_LOG_RL(pool_api, p->ctx, PH_LOG_WARN,
                "a rule names a strategy the pool does not load: it has no "
                "candidates (add it to [pool] strategies)",
                PH_STR("rule_id", v->rules[r].rule_id),
                PH_STR("strategy", v->rules[r].strategy));
  }
  for (uint32_t s = 0; s < p->n_strats; s++) {
    if (!used[s])
      continue;
    const void *prev = old ? old->sstate[s] : NULL;
    g->sstate[s] = p->strats[s].vt->attach(p->strats[s].self, v, prev,
                                           prev ? old->view : NULL,
                                           prev ? g->map : NULL);
    if (!g->sstate[s]) {
      PH_LOG_RL(pool_api, p->ctx, PH_LOG_ERROR,
                "a strategy could not attach to the new view (memory): its "
                "rules have no candidates",
                PH_STR("strategy", p->strats[s].name));
      for (uint32_t r = 0; r < v->n_rules; r++)
        if (g->rule_strat[r] == (int8_t)s)
          g->rule_strat[r] = -1;
    }
  }
  return 0;
fail_records:
  /* Records made for this view only (not the old view's, not left ones). */
  for (uint32_t j = 0; j < g->n; j++)
    if (g->px[j] && g->px[j]->idx == PH_POOL_VIEW_NONE && !g->px[j]->active &&
        !g->px[j]->reserved && !g->px[j]->lprev && p->left != g->px[j])
      free(g->px[j]);
fail:
  gen_free(g);
  return -1;
}

/* Makes g current: indexes and counts follow the records; what left the
 * view drains on the left list (CP-4-2); the old generation lives on while
 * attempts hold it. */
static void gen_switch(pool *p, pool_gen *g) {
  pool_gen *old = p->cur;
  if (old)
    for (uint32_t i = 0; i < old->n; i++)
      old->px[i]->idx = PH_POOL_VIEW_NONE;
  for (uint32_t j = 0; j < g->n; j++) {
    pool_px *x = g->px[j];
    if (x->lprev || p->left == x)
      left_unlink(p, x); /* came back */
    x->idx = j;
    g->active[j] = x->active;
    g->reserved[j] = x->reserved;
  }
  if (old)
    for (uint32_t i = 0; i < old->n; i++) {
      pool_px *x = old->px[i];
      if (x->idx != PH_POOL_VIEW_NONE)
        continue;
      if (x->active || x->reserved)
        left_push(p, x);
      else
        free(x);
    }
  g->refs = 1;
  p->cur = g;
  pool_gen_release(old);
}

/* Installs v, the view pool.view publishes now, with g (prepared against
 * some base, or NULL): the generation becomes current, the drain looks at
 * who left, the waiters at the new capacity. Loop thread. */
static void install(pool *p, const ph_pool_view *v, pool_gen *g) {
  const ph_pool_view *cur_v = p->cur ? p->cur->view : NULL;
  if (g && (g->p != p || g->base != cur_v || g->n != v->n_proxies)) {
    free(g); /* prepared against another view: build it again */
    g = NULL;
  }
  const ph_pool_view *held = p->view->acquire(p->view_self);
  if (held != v) { /* cannot happen on the loop thread; fail closed */
    p->view->release(p->view_self, held);
    free(g);
    return;
  }
  if (!g)
    g = gen_alloc(p, v, cur_v);
  if (!g || gen_link(p, g, v, p->cur) != 0) {
    if (!g)
      p->view->release(p->view_self, v);
    PH_LOG_RL(pool_api, p->ctx, PH_LOG_ERROR,
              "could not install the new view (memory): the previous one "
              "stays in use until its valid_until");
    return;
  }
  gen_switch(p, g);
  pool_drain_scan(p); /* who left, who is back (issue 22 item 14) */
  pool_wake(p, PH_POOL_VIEW_NONE); /* new capacity for the waiters */
}

void *pool_view_prepare(void *arg, const ph_pool_view *v,
                        const ph_pool_view *base) {
  return gen_alloc(arg, v, base);
}

void pool_view_install(void *arg, const ph_pool_view *v, void *prepared) {
  pool *p = arg;
  if (!v || p->stopping) { /* emptied (the provider stops): keep cur */
    free(prepared);
    return;
  }
  /* answers the new capacity gives wait for the deliver timer, as when a
   * request installed the view */
  guard_enter(&p->entered);
  install(p, v, prepared);
  guard_leave(&p->entered);
}

pool_gen *pool_gen_current(pool *p) {
  if (!p->view)
    return NULL;
  /* The hot path: one atomic load; the generation was installed with the
   * swap (pool_view_install). Built here only when that install failed
   * (memory), so that the next request tries again. */
  const ph_pool_view *v = p->view->current(p->view_self);
  if (!v || (p->cur && p->cur->view == v))
    return p->cur;
  install(p, v, NULL);
  return p->cur;
}

void pool_gen_clear(pool *p) {
  pool_gen *g = p->cur;
  p->cur = NULL;
  if (g) {
    for (uint32_t i = 0; i < g->n; i++)
      if (g->px[i]) {
        g->px[i]->idx = PH_POOL_VIEW_NONE;
        if (g->px[i]->active || g->px[i]->reserved)
          left_push(p, g->px[i]);
        else
          free(g->px[i]);
      }
    pool_gen_release(g);
  }
  while (p->left) {
    pool_px *x = p->left;
    left_unlink(p, x);
    free(x);
  }
}

/* ---- "pool.runtime" ------------------------------------------------------ */

static uint32_t rt_counters(void *self, pool_runtime_counter *out,
                            uint32_t max, int *worker_draining) {
  pool *p = self;
  pool_gen *g = pool_gen_current(p);
  uint32_t k = 0;
  if (worker_draining)
    *worker_draining = p->stopping;
  if (g)
    for (uint32_t j = 0; j < g->n; j++) {
      int draining = g->view->proxies[j].draining || g->revoked[j];
      if (!g->active[j] && !g->reserved[j] && !draining)
        continue;
      if (k < max) {
        out[k].proxy_id = g->view->proxies[j].proxy_id;
        out[k].active = g->active[j];
        out[k].reserved = g->reserved[j];
        out[k].draining = draining;
      }
      k++;
    }
  for (pool_px *x = p->left; x; x = x->lnext) {
    if (k < max) {
      out[k].proxy_id = x->id;
      out[k].active = x->active;
      out[k].reserved = x->reserved;
      out[k].draining = 1;
    }
    k++;
  }
  return k;
}

static void rt_revoke(void *self, const char *const *ids, size_t n) {
  pool *p = self;
  pool_gen *g = pool_gen_current(p);
  if (!g)
    return;
  for (size_t i = 0; i < n; i++) {
    uint32_t j = p->view->find(g->view, ids[i]);
    if (j != PH_POOL_VIEW_NONE)
      g->revoked[j] = g->avoid[0][j] = g->avoid[1][j] = 1;
  }
  pool_drain_scan(p); /* revoked: their streams drain (CP-4-7) */
}

const pool_runtime_v1 pool_runtime_service = {rt_counters, rt_revoke};

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sticky, pure: consistent hashing of the session key (in->key: the user
 * name or a header's value, as the rule's sticky_key says) onto one
 * candidate, through a lookup table per candidate set (strat_slots.h).
 *
 * A key's home is the slot given by the top bits of its SipHash-2-4
 * (strat_hash.h); its proxy is that slot's owner whenever that proxy
 * takes the request. When it does not (full, draining, expired,
 * revoked, already tried), the key probes further slots, its own
 * sequence drawn from its hash (the same for every request of that key,
 * and unrelated to the table's layout, so the keys of a full proxy spread
 * over all the others), at most SK_PROBES slots in all, then one scan of
 * the candidates; it is back on its own proxy with its next request once
 * that proxy takes again.
 *
 * attach() carries each table over from the previous view (prev + map):
 * the set is found again by its target group, the old positions are
 * translated through map, and sk_slots_fill keeps every slot whose proxy
 * is still a candidate. So a proxy removed from the view moves exactly
 * the keys that were on it, and a proxy added takes about 1/n of the
 * keys, all from the most-filled. A request without a key (NULL, or
 * key_len 0): uniform, as random does.
 *
 * The fast path: a fresh table is laid out by a formula (one run of
 * slots a candidate, strat_slots.h), so a pick computes its home
 * candidate from the hash and tests that candidate's entry in the
 * table's own compact copy (cc0), never reading the slot: at 10,000
 * candidates the table is megabytes and a slot read is a cache miss.
 * A bitmap, one bit per 8 slots, marks where carry-overs changed the
 * table from that layout (a removed proxy's run, the slots new
 * candidates took); keys there read the slot as before. Both give the
 * same candidate for every key (sk_base_dirty). When the home does not
 * take, the pick goes on exactly as below.
 *
 * Bounds: one table has at most 2^SK_BITS_MAX slots (8 MiB) and the
 * tables of one view at most SK_TOTAL_SLOTS together; over that, the
 * largest tables are made smaller (down to one slot a candidate), which
 * moves keys only in such an oversized configuration. Building is O(slots)
 * (no Maglev permutation walk), about a millisecond a million slots.
 */
#include <stdlib.h>
#include <string.h>

#include "strat.h"
#include "strat_hash.h"
#include "strat_slots.h"

/* Slots a key tries before the scan. */
#define SK_PROBES 16
/* Slots over all tables of one view: 32 MiB. */
#define SK_TOTAL_SLOTS ((size_t)1 << 23)

typedef struct sk_table {
  uint32_t bits;
  uint32_t *slot; /* 2^bits candidate positions */
  /* The computed layout (strat_slots.h, "sticky's fast path"), or
   * base NULL when the table has none (then every pick reads slot). */
  uint32_t n0, bits0;
  uint32_t *base;  /* n0: base candidate j's position, or NONE */
  strat_cand *cc0; /* n0: base candidate j's compact entry (never takes
                      for a removed one) */
  uint8_t *dirty;  /* sk_dirty_bytes(bits) */
} sk_table;

typedef struct sk_state {
  strat_rules rules;
  sk_table *tables; /* per set of rules */
} sk_state;

static void sk_detach(void *self, void *state) {
  (void)self;
  sk_state *st = state;
  if (!st)
    return;
  for (uint32_t s = 0; st->tables && s < st->rules.n_sets; s++) {
    free(st->tables[s].slot);
    free(st->tables[s].base);
    free(st->tables[s].cc0);
    free(st->tables[s].dirty);
  }
  free(st->tables);
  strat_rules_free(&st->rules);
  free(st);
}

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* For each new set, the old set of the same target group: old_of (new
 * n_sets entries, NONE on entry) gets its index. 0, or -1 out of
 * memory. */
static int match_groups(const strat_rules *new_r, const strat_rules *old_r,
                        uint32_t *old_of) {
  if (!old_r->n_sets)
    return 0;
  size_t cap = 16;
  while (cap < 2 * (size_t)old_r->n_sets)
    cap *= 2;
  uint32_t *h = malloc(cap * sizeof(*h));
  if (!h)
    return -1;
  memset(h, 0xff, cap * sizeof(*h));
  for (uint32_t s = 0; s < old_r->n_sets; s++) {
    size_t j = str_hash(old_r->sets[s].group) & (cap - 1);
    while (h[j] != PH_POOL_VIEW_NONE &&
           strcmp(old_r->sets[h[j]].group, old_r->sets[s].group) != 0)
      j = (j + 1) & (cap - 1);
    if (h[j] == PH_POOL_VIEW_NONE)
      h[j] = s; /* the first of one group (they share one array) */
  }
  for (uint32_t s = 0; s < new_r->n_sets; s++) {
    size_t j = str_hash(new_r->sets[s].group) & (cap - 1);
    while (h[j] != PH_POOL_VIEW_NONE) {
      if (strcmp(old_r->sets[h[j]].group, new_r->sets[s].group) == 0) {
        old_of[s] = h[j];
        break;
      }
      j = (j + 1) & (cap - 1);
    }
  }
  free(h);
  return 0;
}

/* The largest cap (bits) for which the tables, each at most cap but at
 * least a slot a candidate, fit SK_TOTAL_SLOTS; lowers bits[] to it. */
static void fit_budget(uint32_t *bits, const strat_rules *r) {
  for (uint32_t cap = SK_BITS_MAX; cap > SK_BITS_MIN; cap--) {
    size_t total = 0;
    for (uint32_t s = 0; s < r->n_sets; s++) {
      uint32_t b = bits[s] < cap ? bits[s] : cap;
      uint32_t least = sk_bits_least(r->sets[s].n);
      total += (size_t)1 << (b > least ? b : least);
    }
    if (total <= SK_TOTAL_SLOTS || cap == SK_BITS_MIN + 1) {
      for (uint32_t s = 0; s < r->n_sets; s++) {
        uint32_t least = sk_bits_least(r->sets[s].n);
        if (bits[s] > cap)
          bits[s] = cap > least ? cap : least;
      }
      return;
    }
  }
}

/* The position of proxy p in the ascending candidates, or NONE. */
static uint32_t position(const uint32_t *cand, uint32_t n, uint32_t p) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (cand[mid] < p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && cand[lo] == p ? lo : PH_POOL_VIEW_NONE;
}

/* Gives t (slot filled) its computed layout: the old table's base carried
 * through trans (old position -> new, NULL without an old table), or a
 * fresh one of the set's n candidates when there is no old base or the
 * table became smaller than it. No base when it would have fewer than
 * SK_BASE_MIN_SLOTS slots a candidate (picks then read the slot). */
static int set_base(sk_table *t, const strat_set *set, const sk_table *old_t,
                    const uint32_t *trans) {
  int carry = old_t && old_t->base && t->bits >= old_t->bits0 && trans;
  t->n0 = carry ? old_t->n0 : set->n;
  t->bits0 = carry ? old_t->bits0 : t->bits;
  if ((uint64_t)t->n0 * SK_BASE_MIN_SLOTS > ((uint64_t)1 << t->bits0))
    return 0;
  t->base = malloc(t->n0 * sizeof(*t->base));
  t->cc0 = malloc(t->n0 * sizeof(*t->cc0));
  t->dirty = malloc(sk_dirty_bytes(t->bits));
  if (!t->base || !t->cc0 || !t->dirty)
    return -1;
  for (uint32_t j = 0; j < t->n0; j++) {
    uint32_t b = j;
    if (carry)
      b = old_t->base[j] == PH_POOL_VIEW_NONE ? PH_POOL_VIEW_NONE
                                              : trans[old_t->base[j]];
    t->base[j] = b < set->n ? b : PH_POOL_VIEW_NONE;
    if (t->base[j] == PH_POOL_VIEW_NONE) {
      strat_cand never = {STRAT_CAND_NEVER, 0, 0};
      t->cc0[j] = never;
    } else {
      t->cc0[j] = set->cand[b];
    }
  }
  sk_base_dirty(t->dirty, t->slot, t->bits, t->base, t->n0, t->bits0);
  return 0;
}

/* Fills new set s's table, from the old set's when there is one. */
static int fill(sk_table *t, const strat_set *set, const sk_table *old_t,
                const strat_set *old_set, const ph_pool_view *prev_view,
                const uint32_t *map) {
  t->slot = malloc(((size_t)1 << t->bits) * sizeof(*t->slot));
  if (!t->slot)
    return -1;
  if (!old_t) {
    if (sk_slots_fill(t->slot, t->bits, set->n, NULL, 0, NULL, 0) < 0)
      return -1;
    return set_base(t, set, NULL, NULL);
  }
  uint32_t *trans = malloc(old_set->n * sizeof(*trans));
  if (!trans)
    return -1;
  for (uint32_t j = 0; j < old_set->n; j++) {
    uint32_t p = old_set->candidates[j];
    uint32_t np = p < prev_view->n_proxies ? map[p] : PH_POOL_VIEW_NONE;
    trans[j] = np == PH_POOL_VIEW_NONE
                   ? PH_POOL_VIEW_NONE
                   : position(set->candidates, set->n, np);
  }
  int rc = sk_slots_fill(t->slot, t->bits, set->n, old_t->slot, old_t->bits,
                         trans, old_set->n);
  if (rc == 0)
    rc = set_base(t, set, old_t, trans);
  free(trans);
  return rc;
}

static void *sk_attach(void *self, const ph_pool_view *v, const void *prev,
                       const ph_pool_view *prev_view, const uint32_t *map) {
  sk_state *st = calloc(1, sizeof(*st));
  if (!st)
    return NULL;
  if (strat_rules_build(&st->rules, self, v) < 0) {
    free(st);
    return NULL;
  }
  uint32_t ns = st->rules.n_sets;
  const sk_state *old = prev_view && map ? prev : NULL;
  st->tables = calloc(ns ? ns : 1, sizeof(*st->tables));
  uint32_t *old_of = malloc((ns ? ns : 1) * sizeof(*old_of));
  uint32_t *bits = malloc((ns ? ns : 1) * sizeof(*bits));
  if (!st->tables || !old_of || !bits)
    goto fail;
  for (uint32_t s = 0; s < ns; s++)
    old_of[s] = PH_POOL_VIEW_NONE;
  if (old && match_groups(&st->rules, &old->rules, old_of) < 0)
    goto fail;
  for (uint32_t s = 0; s < ns; s++)
    bits[s] = sk_bits_for(st->rules.sets[s].n,
                          old_of[s] == PH_POOL_VIEW_NONE
                              ? 0
                              : old->tables[old_of[s]].bits);
  fit_budget(bits, &st->rules);
  for (uint32_t s = 0; s < ns; s++) {
    st->tables[s].bits = bits[s];
    uint32_t o = old_of[s];
    if (fill(&st->tables[s], &st->rules.sets[s],
             o == PH_POOL_VIEW_NONE ? NULL : &old->tables[o],
             o == PH_POOL_VIEW_NONE ? NULL : &old->rules.sets[o], prev_view,
             map) < 0)
      goto fail;
  }
  free(old_of);
  free(bits);
  return st;
fail:
  free(old_of);
  free(bits);
  sk_detach(self, st);
  return NULL;
}

static uint32_t sk_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  if (!strat_pick_sane(in))
    return PH_POOL_VIEW_NONE;
  const sk_state *st = state;
  uint32_t s = st ? strat_rules_find(&st->rules, in) : PH_POOL_VIEW_NONE;
  if (s == PH_POOL_VIEW_NONE || !in->key || in->key_len == 0) {
    strat_rng r = {in->random};
    return strat_uniform(in, s == PH_POOL_VIEW_NONE ? NULL
                                                    : st->rules.sets[s].cand,
                         &r, STRAT_PROBES);
  }
  const sk_table *t = &st->tables[s];
  const strat_cand *cc = st->rules.sets[s].cand;
  uint64_t h = strat_key_hash(in->key, in->key_len);
  uint32_t u = (uint32_t)(h >> (64 - t->bits));
  if (t->base && !sk_is_dirty(t->dirty, u)) {
    /* The slot is base[j] (sk_base_dirty): the same test as below,
     * from the base's own entry, without reading the slot. */
    const strat_cand *c = &t->cc0[sk_base_of(u, t->bits, t->n0, t->bits0)];
    if (strat_cand_takes(in, c))
      return c->proxy;
  }
  uint32_t p = strat_try_at(in, cc, t->slot[u]);
  if (p != PH_POOL_VIEW_NONE)
    return p;
  /* The key's own sequence of further slots: each a fresh mix of its
   * hash, so its alternatives do not follow the table's layout. */
  strat_rng r = {h};
  for (uint32_t k = 1; k < SK_PROBES; k++) {
    p = strat_try_at(in, cc, t->slot[strat_next(&r) >> (64 - t->bits)]);
    if (p != PH_POOL_VIEW_NONE)
      return p;
  }
  return strat_scan(in, cc, strat_below((uint32_t)strat_next(&r),
                                        in->rule->n_candidates));
}

const ph_strategy_v1 strat_sticky_v1 = {sk_attach, sk_detach, sk_pick};

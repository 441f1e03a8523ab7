/* SPDX-License-Identifier: BSD-2-Clause */
/* first_usable: a dispatch strategy built out of tree against the
 * installed SDK (see Makefile and README.md). It registers the
 * "dispatch.strategy" service (<proxyhost/strategy.h>) under its instance
 * name, "first_usable", the name a routing rule gives in `strategy`, and
 * picks the first candidate, in the rule's order, that can take the
 * request now.
 *
 * The contract in four lines: attach() builds per-view state (none
 * here), detach() frees it, pick() returns an index from
 * in->rule->candidates for which ph_strategy_takes() is 1, or
 * PH_POOL_VIEW_NONE; pick() allocates nothing and does no I/O.
 *
 * A walk from the first candidate costs more the more of the first ones
 * are full, so this is for small groups or a strict order of preference
 * (a primary and its standbys); the in-tree strategies keep a pick O(1).
 */
#include <stddef.h>
#include <stdint.h>

#include <proxyhost/module.h>
#include <proxyhost/strategy.h>

/* attach() must not return NULL unless out of memory: a strategy without
 * state returns any other address. */
static const char no_state;

static void *fu_attach(void *self, const ph_pool_view *v, const void *prev,
                       const ph_pool_view *prev_view, const uint32_t *map) {
  (void)self;
  (void)v;
  (void)prev;
  (void)prev_view;
  (void)map;
  return (void *)&no_state;
}

static void fu_detach(void *self, void *state) {
  (void)self;
  (void)state;
}

static uint32_t fu_pick(void *self, void *state, const ph_strategy_pick *in) {
  (void)self;
  (void)state;
  /* A request from an older pool lacks fields: refuse it (fail closed). */
  if (!in || in->size < sizeof(*in) || !in->view || !in->rule || !in->load)
    return PH_POOL_VIEW_NONE;
  /* An expired view has no candidates (CP-3-9): no walk at all. */
  if (!ph_pool_view_live(in->view, in->now_ms))
    return PH_POOL_VIEW_NONE;
  for (uint32_t i = 0; i < in->rule->n_candidates; i++) {
    uint32_t p = in->rule->candidates[i];
    if (ph_strategy_takes(in, p))
      return p;
  }
  return PH_POOL_VIEW_NONE;
}

static const ph_strategy_v1 first_usable_vt = {fu_attach, fu_detach, fu_pick};

static int fu_init(ph_ctx *ctx, const ph_api *api, void **state) {
  *state = NULL;
  /* Registration only in init. The provider name is this instance's. */
  return api->service_register(ctx, PH_STRATEGY_SERVICE, PH_STRATEGY_MAJOR,
                               PH_STRATEGY_MINOR, &first_usable_vt,
                               (void *)&no_state);
}

static const char *const provides[] = {PH_STRATEGY_SERVICE, NULL};

PROXYHOST_MODULE = {
    PH_MODULE_HEADER("first_usable", "1.0.0"),
    .description = "example dispatch strategy: the first candidate that can take it",
    .provides = provides,
    .init = fu_init,
};

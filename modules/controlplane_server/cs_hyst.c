/* SPDX-License-Identifier: BSD-2-Clause */
/* The reducer's pure rules: cs_hyst.h. */
#include <string.h>

#include "cs_hyst.h"

static uint32_t add_cap(uint32_t v, uint32_t w, uint32_t cap) {
  return v + w > cap ? cap : v + w;
}

static uint32_t sub_floor(uint32_t v, uint32_t w) { return v > w ? v - w : 0; }

int cs_hyst_push(cs_hyst *h, const cs_hyst_rules *r, int ok, uint32_t w) {
  uint32_t fall = r->fall * CS_HYST_UNIT, rise = r->rise * CS_HYST_UNIT;
  uint8_t before = h->verdict;
  if (!w)
    return 0;
  if (ok) {
    h->up = add_cap(h->up, w, rise);
    h->down = sub_floor(h->down, w);
    if (h->up >= rise) {
      h->verdict = CS_H_AVAILABLE;
      h->down = 0;
    }
  } else {
    h->down = add_cap(h->down, w, fall);
    h->up = sub_floor(h->up, w);
    if (h->down >= fall) {
      h->verdict = CS_H_UNHEALTHY;
      h->up = 0;
    } else if (r->fall >= 3 && h->down >= fall - CS_HYST_UNIT &&
               h->verdict != CS_H_UNHEALTHY) {
      h->verdict = CS_H_SUSPECT;
    }
  }
  return h->verdict != before;
}

int cs_hyst_changing(const cs_hyst *h, const cs_hyst_rules *r) {
  (void)r;
  if (h->verdict == CS_H_UNHEALTHY)
    return h->up > 0;
  if (h->verdict == CS_H_AVAILABLE)
    return h->down > 0;
  return h->up > 0 || h->down > 0;
}

int cs_hyst_panic(uint32_t n, uint32_t n_unhealthy, uint32_t threshold_pct) {
  return n > 0 && (uint64_t)n_unhealthy * 100 > (uint64_t)threshold_pct * n;
}

uint32_t cs_hyst_guard(const uint8_t *verdict, size_t n_proxies,
                       const uint32_t *proxy_of, const uint32_t *group_of,
                       size_t n_links, size_t n_groups,
                       uint32_t threshold_pct, uint32_t *scratch,
                       uint8_t *out) {
  uint32_t *total = scratch, *bad = scratch + n_groups;
  memset(scratch, 0, 2 * n_groups * sizeof(*scratch));
  memcpy(out, verdict, n_proxies);
  for (size_t k = 0; k < n_links; k++) {
    if (proxy_of[k] >= n_proxies || group_of[k] >= n_groups)
      continue;
    total[group_of[k]]++;
    if (verdict[proxy_of[k]] == CS_H_UNHEALTHY)
      bad[group_of[k]]++;
  }
  uint32_t panics = 0;
  for (size_t g = 0; g < n_groups; g++) {
    /* reuse total[g] as the group's flag once counted */
    int p = cs_hyst_panic(total[g], bad[g], threshold_pct);
    panics += (uint32_t)p;
    total[g] = (uint32_t)p;
  }
  for (size_t k = 0; k < n_links; k++) {
    if (proxy_of[k] >= n_proxies || group_of[k] >= n_groups)
      continue;
    if (total[group_of[k]] && out[proxy_of[k]] == CS_H_UNHEALTHY)
      out[proxy_of[k]] = CS_H_SUSPECT;
  }
  return panics;
}

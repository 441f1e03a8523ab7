/* SPDX-License-Identifier: BSD-2-Clause */
/* A cache generation (cache_gen.h): a revision and its lib/kcache map. */
#include "cache_gen.h"

#include <stdlib.h>

#include "lib/kcache.h"

struct cache_gen {
  uint64_t revision;
  kcache *m; /* key -> {verdict, code} */
};

typedef struct value {
  int verdict, code;
} value;

cache_gen *cache_gen_new(uint64_t revision, size_t max_entries) {
  if (max_entries == 0)
    return NULL;
  cache_gen *g = calloc(1, sizeof(*g));
  kcache_conf c = {.max_entries = max_entries,
                   .value_size = sizeof(value),
                   .policy = KCACHE_LRU};
  if (!g || !(g->m = kcache_new(&c))) {
    free(g);
    return NULL;
  }
  g->revision = revision;
  return g;
}

uint64_t cache_gen_revision(const cache_gen *g) { return g->revision; }
size_t cache_gen_count(const cache_gen *g) { return kcache_count(g->m); }

int cache_gen_get(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, int64_t now_ms, cache_verdict *out) {
  value v;
  int64_t exp;
  if (!kcache_get(g->m, key, len, hash, now_ms, &v, &exp))
    return 0;
  out->verdict = v.verdict;
  out->code = v.code;
  out->expires_ms = exp;
  return 1;
}

int cache_gen_put(cache_gen *g, const unsigned char *key, size_t len,
                  uint64_t hash, const cache_verdict *v, int64_t now_ms) {
  value x = {v->verdict, v->code};
  int rc = kcache_put(g->m, key, len, hash, &x, v->expires_ms, now_ms);
  return rc < 0 ? -1 : rc == 1;
}

int cache_gen_free_some(cache_gen *g, size_t budget) {
  if (!kcache_free_some(g->m, budget))
    return 0;
  free(g);
  return 1;
}
